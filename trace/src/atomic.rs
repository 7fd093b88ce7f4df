//! Atomic file output, shared by every crate that writes results: write to a temp file beside
//! the target, flush and sync it, then rename it over the target. A reader (or a resumed sweep)
//! never sees a half-written file under the final name; a failed or interrupted write leaves the
//! old file, or none.
//!
//! ```
//! let dir = std::env::temp_dir().join(format!("ws-atomic-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("out.txt");
//! trace::write_bytes_atomic(&path, b"hello").unwrap();
//! assert_eq!(std::fs::read(&path).unwrap(), b"hello");
//! assert!(!trace::temp_path(&path).exists());
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// The temp name beside `path`: `dir/.tmp-NAME`. Hidden, on the same file system (so the rename
/// is atomic), and it keeps NAME's extension last, which libraries that pick a format from the
/// extension (plotters' bitmap backend) rely on.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".tmp-{name}"))
}

/// Creates [`temp_path`]`(path)`, lets `write` fill it through a 64 KiB buffer, then flushes,
/// syncs and renames it to `path`. On any error, or a panic inside `write`, the temp file is
/// removed and `path` is left as it was. `io_error` turns an I/O failure on a file into the
/// caller's error type.
pub fn write_atomic_with<T, E>(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<T, E>,
    io_error: impl Fn(&Path, std::io::Error) -> E,
) -> Result<T, E> {
    struct Guard(Option<PathBuf>);
    impl Drop for Guard {
        fn drop(&mut self) {
            if let Some(p) = self.0.take() {
                let _ = std::fs::remove_file(p);
            }
        }
    }
    let tmp = temp_path(path);
    let file = File::create(&tmp).map_err(|e| io_error(&tmp, e))?;
    let mut guard = Guard(Some(tmp.clone()));
    let mut out = BufWriter::with_capacity(1 << 16, file);
    let value = write(&mut out)?;
    let file = out
        .into_inner()
        .map_err(|e| io_error(&tmp, e.into_error()))?;
    file.sync_all().map_err(|e| io_error(&tmp, e))?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(|e| io_error(path, e))?;
    guard.0 = None;
    Ok(value)
}

/// Writes `bytes` to `path` atomically (see [`write_atomic_with`]).
pub fn write_bytes_atomic(path: &Path, bytes: &[u8]) -> Result<(), crate::TraceError> {
    let tmp = temp_path(path);
    write_atomic_with(
        path,
        |w| {
            w.write_all(bytes)
                .map_err(|e| crate::TraceError::io(&tmp, e))
        },
        crate::TraceError::io,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_inside_the_writer_leaves_neither_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.csv");
        let r: Result<(), String> = write_atomic_with(
            &path,
            |w| {
                w.write_all(b"partial").map_err(|e| e.to_string())?;
                Err("interrupted".into())
            },
            |p, e| format!("{}: {e}", p.display()),
        );
        assert_eq!(r.unwrap_err(), "interrupted");
        assert!(!path.exists());
        assert!(!temp_path(&path).exists());
    }

    #[test]
    fn replaces_an_existing_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.png");
        std::fs::write(&path, b"old").unwrap();
        write_bytes_atomic(&path, b"new contents").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new contents");
        assert_eq!(temp_path(&path).file_name().unwrap(), ".tmp-b.png");
    }
}
