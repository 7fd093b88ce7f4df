//! Atomic file output and small text helpers shared by the writers.

use crate::AnalysisError;
use std::path::{Path, PathBuf};

/// The temp name beside `path` (`dir/.tmp-name.ext`, see [`trace::temp_path`]); it keeps the
/// extension, from which plotters' bitmap backend picks the image format.
pub(crate) fn tmp_path(path: &Path) -> PathBuf {
    trace::temp_path(path)
}

/// Writes `bytes` to a temp file beside `path`, syncs it and renames it over `path`, so a reader
/// never sees a half-written output.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), AnalysisError> {
    Ok(trace::write_bytes_atomic(path, bytes)?)
}

/// Renames `tmp` to `path` when `result` is Ok; removes `tmp` otherwise.
pub(crate) fn commit(
    tmp: &Path,
    path: &Path,
    result: std::io::Result<()>,
) -> Result<(), AnalysisError> {
    match result.and_then(|_| std::fs::rename(tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(tmp);
            Err(AnalysisError::io(path, e))
        }
    }
}

/// A file-name-safe form of `s`: ASCII letters, digits, `-`, `_` and `.` kept, the rest `-`.
pub(crate) fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Escapes text for HTML element content and attribute values.
pub(crate) fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// "16x8" → "16×8", as the paper writes shapes.
pub(crate) fn pretty_shape(shape: &str) -> String {
    shape.replace('x', "×")
}

/// "90,0,90" → "(90,0,90)".
pub(crate) fn pretty_view(view: &str) -> String {
    format!("({view})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.csv");
        write_atomic(&p, b"x").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"x");
        assert!(!tmp_path(&p).exists());
        assert!(tmp_path(&p).to_string_lossy().ends_with(".tmp-a.csv"));
        let bad = dir.path().join("no-such-dir").join("b.csv");
        assert!(write_atomic(&bad, b"x").is_err());
    }

    #[test]
    fn text_helpers() {
        assert_eq!(slug("16x8_v0,0,0 fence"), "16x8_v0-0-0-fence");
        assert_eq!(
            html_escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(pretty_shape("16x8"), "16×8");
        assert_eq!(pretty_view("0,0,0"), "(0,0,0)");
    }
}
