//! Exporting to a file: written under a temporary name beside the target and renamed only when
//! complete, so an interrupted export never leaves a truncated file under the final name.

use crate::chrome::write_chrome;
use crate::clog2_write::write_clog2;
use crate::csv_out::{write_records_csv, write_warps_csv};
use crate::error::ExportError;
use crate::options::{ExportOptions, ExportSummary, Format};
use crate::source::TraceSource;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// `dir/.name.tmp`: beside the target so that the rename stays on one file system.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp"))
}

/// Creates `temp_path(path)`, lets `write` fill it, then flushes, syncs and renames it to
/// `path`. On any error (or a panic in `write`) the temp file is removed and `path` is left as
/// it was.
pub fn write_atomic<T>(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<T, ExportError>,
) -> Result<T, ExportError> {
    struct Guard(Option<PathBuf>);
    impl Drop for Guard {
        fn drop(&mut self) {
            if let Some(p) = self.0.take() {
                let _ = std::fs::remove_file(p);
            }
        }
    }
    let tmp = temp_path(path);
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| ExportError::Io {
            path: p.clone(),
            source,
        }
    };
    let file = File::create(&tmp).map_err(io(&tmp))?;
    let mut guard = Guard(Some(tmp.clone()));
    // The writers hand over 64 KiB chunks (CLOG2 blocks, CSV and JSON batches), which a
    // BufWriter of the same size passes straight through instead of copying.
    let mut out = BufWriter::with_capacity(1 << 16, file);
    let value = write(&mut out)?;
    out.flush().map_err(io(&tmp))?;
    let file = out.into_inner().map_err(|e| ExportError::Io {
        path: tmp.clone(),
        source: e.into_error(),
    })?;
    file.sync_all().map_err(io(&tmp))?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(io(path))?;
    guard.0 = None;
    Ok(value)
}

/// Exports `src` in `format` to the file `out` (atomically, see [`write_atomic`]).
pub fn export<S: TraceSource + ?Sized>(
    src: &S,
    format: Format,
    out: &Path,
    opts: &ExportOptions,
) -> Result<ExportSummary, ExportError> {
    opts.validate()?;
    write_atomic(out, |w| match format {
        Format::Csv => write_records_csv(src, w),
        Format::WarpCsv => write_warps_csv(src, w),
        Format::Clog2 => write_clog2(src, w, opts),
        Format::Chrome => write_chrome(src, w, opts),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_write_leaves_neither_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        let r: Result<(), _> = write_atomic(&path, |w| {
            w.write_all(b"partial").unwrap();
            Err(ExportError::BadClock { clock_mhz: 0.0 })
        });
        assert!(r.is_err());
        assert!(!path.exists());
        assert!(!temp_path(&path).exists());
    }

    #[test]
    fn existing_file_survives_a_failed_export_and_is_replaced_by_a_good_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        std::fs::write(&path, "old").unwrap();
        let panicked = std::panic::catch_unwind(|| {
            let _ = write_atomic(&path, |w| -> Result<(), ExportError> {
                w.write_all(b"half").unwrap();
                panic!("interrupted");
            });
        });
        assert!(panicked.is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert!(!temp_path(&path).exists());
        write_atomic(&path, |w| {
            w.write_all(b"new").map_err(|e| ExportError::Io {
                path: path.clone(),
                source: e,
            })
        })
        .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    }
}
