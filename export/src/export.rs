//! Exporting to a file: written under a temporary name beside the target and renamed only when
//! complete, so an interrupted export never leaves a truncated file under the final name.

use crate::error::ExportError;
use crate::formats::chrome::write_chrome;
use crate::formats::clog2_write::write_clog2;
use crate::formats::csv::{write_records_csv, write_warps_csv};
use crate::options::{ExportOptions, ExportSummary, Format};
use crate::source::TraceSource;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

pub use trace::temp_path;

/// Writes `path` atomically through `write` (see [`trace::write_atomic_with`]): on any error, or
/// a panic in `write`, the temp file is removed and `path` is left as it was. The writers hand
/// over 64 KiB chunks (CLOG2 blocks, CSV and JSON batches), which the 64 KiB buffer passes
/// straight through instead of copying.
pub fn write_atomic<T>(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<T, ExportError>,
) -> Result<T, ExportError> {
    trace::write_atomic_with(path, write, |p, source| ExportError::Io {
        path: p.to_path_buf(),
        source,
    })
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
    use std::io::Write;

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
