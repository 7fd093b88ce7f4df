//! Atomic file output, and the file-name-safe form of a name, shared by the writers.

use crate::AnalysisError;
use std::path::Path;

/// Writes `bytes` to `path` atomically (see [`trace::write_bytes_atomic`]).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), AnalysisError> {
    Ok(trace::write_bytes_atomic(path, bytes)?)
}

/// Writes `path` atomically through a library that opens the file itself (plotters' bitmap
/// backend): `draw` fills the temp path it is given (see [`trace::write_atomic_path`]); its
/// failure, in words, becomes `draw_error(reason)`.
pub(crate) fn write_atomic_path(
    path: &Path,
    draw: impl FnOnce(&Path) -> Result<(), String>,
    draw_error: impl FnOnce(String) -> AnalysisError,
) -> Result<(), AnalysisError> {
    trace::write_atomic_path(
        path,
        |tmp| draw(tmp).map_err(draw_error),
        |p, e| AnalysisError::io(p, e),
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.csv");
        write_atomic(&p, b"x").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"x");
        assert!(!trace::temp_path(&p).exists());
        let bad = dir.path().join("no-such-dir").join("b.csv");
        assert!(write_atomic(&bad, b"x").is_err());
        let e = write_atomic_path(
            &p,
            |_| Err("no pen".into()),
            |r| AnalysisError::Plot {
                path: p.clone(),
                reason: r,
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("no pen"), "{e}");
        assert_eq!(
            std::fs::read(&p).unwrap(),
            b"x",
            "a failed draw keeps the old file"
        );
        assert!(!trace::temp_path(&p).exists());
    }

    #[test]
    fn text_helpers() {
        assert_eq!(slug("16x8_v0,0,0 fence"), "16x8_v0-0-0-fence");
    }
}
