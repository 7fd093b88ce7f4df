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
    write_atomic_path(
        path,
        |tmp| {
            let file = File::create(tmp).map_err(|e| io_error(tmp, e))?;
            let mut out = BufWriter::with_capacity(1 << 16, file);
            let value = write(&mut out)?;
            out.into_inner()
                .map_err(|e| io_error(tmp, e.into_error()))?;
            Ok(value)
        },
        &io_error,
    )
}

/// Like [`write_atomic_with`] for writers that want a file name rather than a stream (a
/// Parquet or bitmap library that opens the file itself): `write` fills the temp path it is
/// given; then the file is synced and renamed to `path`. On any error, or a panic inside `write`,
/// the temp file is removed and `path` is left as it was.
pub fn write_atomic_path<T, E>(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<T, E>,
    io_error: impl Fn(&Path, std::io::Error) -> E,
) -> Result<T, E> {
    if let Some(reason) = unsafe_output(path) {
        return Err(io_error(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, reason),
        ));
    }
    let tmp = temp_path(path);
    let mut guard = Guard(Some(tmp.clone()));
    let value = write(&tmp)?;
    File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(|e| io_error(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io_error(path, e))?;
    guard.0 = None;
    Ok(value)
}

/// Removes the temp file it holds when dropped (on an error or a panic).
struct Guard(Option<PathBuf>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Why `path` must not be replaced by a temp-and-rename write, if it must not: it exists and is
/// not a regular file. Renaming over a device node, a FIFO or a symlink would replace the node
/// or the link itself (as root, `--out /dev/full` would become a regular file); a directory
/// cannot be replaced at all.
fn unsafe_output(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let t = meta.file_type();
    if t.is_file() {
        return None;
    }
    let what = if t.is_symlink() {
        "a symbolic link (name the file it points to instead)"
    } else if t.is_dir() {
        "a directory"
    } else {
        "a device, FIFO or socket, not a regular file"
    };
    Some(format!("refusing to replace it: it is {what}"))
}

/// Checks that `path` may be written by [`write_atomic_with`]: absent or a regular file.
pub fn check_output(path: &Path) -> Result<(), crate::TraceError> {
    match unsafe_output(path) {
        Some(reason) => Err(crate::TraceError::Output {
            path: path.to_path_buf(),
            reason,
        }),
        None => Ok(()),
    }
}

/// Checks that writing `out` cannot destroy one of `inputs`: `out` is not the same file as any
/// input (by name, through links, or as a hard link), and is absent or a regular file.
pub fn check_output_against(out: &Path, inputs: &[&Path]) -> Result<(), crate::TraceError> {
    check_output(out)?;
    let Ok(out_meta) = std::fs::metadata(out) else {
        return Ok(()); // absent: it cannot be an input
    };
    let out_canon = std::fs::canonicalize(out).ok();
    for input in inputs {
        let same_name = out_canon.is_some() && std::fs::canonicalize(input).ok() == out_canon;
        let same_file = std::fs::metadata(input)
            .map(|m| same_inode(&m, &out_meta))
            .unwrap_or(false);
        if same_name || same_file {
            return Err(crate::TraceError::Output {
                path: out.to_path_buf(),
                reason: format!("it is the input {}", input.display()),
            });
        }
    }
    Ok(())
}

#[cfg(unix)]
fn same_inode(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_inode(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    false
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
    fn refuses_directories_links_and_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("trace.wst");
        std::fs::write(&input, b"input").unwrap();
        let e = write_bytes_atomic(dir.path(), b"x").unwrap_err();
        assert!(crate::error_chain(&e).contains("a directory"), "{e}");
        let e = check_output_against(&input, &[&input])
            .unwrap_err()
            .to_string();
        assert!(e.contains("it is the input"), "{e}");
        let via_dots = dir.path().join(".").join("trace.wst");
        assert!(check_output_against(&via_dots, &[&input]).is_err());
        #[cfg(unix)]
        {
            let link = dir.path().join("link.csv");
            std::os::unix::fs::symlink(&input, &link).unwrap();
            let e = write_bytes_atomic(&link, b"x").unwrap_err();
            assert!(crate::error_chain(&e).contains("symbolic link"), "{e}");
            let hard = dir.path().join("hard.csv");
            std::fs::hard_link(&input, &hard).unwrap();
            assert!(check_output_against(&hard, &[&input]).is_err());
            if std::path::Path::new("/dev/null").exists() {
                let e = write_bytes_atomic(std::path::Path::new("/dev/null"), b"x").unwrap_err();
                assert!(crate::error_chain(&e).contains("device"), "{e}");
            }
        }
        assert_eq!(std::fs::read(&input).unwrap(), b"input");
        let fresh = dir.path().join("new.csv");
        check_output_against(&fresh, &[&input]).unwrap();
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
