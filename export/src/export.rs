//! Exporting to a file, or for OTF2 to a folder: written under a temporary name beside the
//! target and renamed only when complete, so an interrupted export never leaves a truncated
//! file or a half-written archive under the final name.

use crate::error::ExportError;
use crate::formats::chrome::write_chrome;
use crate::formats::clog2_write::write_clog2;
use crate::formats::csv::{write_records_csv, write_warps_csv};
use crate::formats::otf2::{ARCHIVE_NAME, write_otf2};
use crate::options::{ExportOptions, ExportSummary, Format};
use crate::source::TraceSource;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

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

/// Writes the folder `path` atomically through `write`, which creates and fills the folder it
/// is given: [`temp_path`]`(path)`, on the same file system. Then every file in it is synced and
/// it is renamed to `path`. An existing `path` (see [`check_archive_output`] for which may be
/// replaced) is first renamed aside to `.old-NAME` and removed once the new folder is in place,
/// so `path` never holds a mix of two exports; if the process dies between the two renames,
/// `path` is missing and the previous export is at `.old-NAME` (until the next export replaces
/// it). On any error, or a panic in `write`, the temp folder is removed and `path` is left as it
/// was.
pub fn write_atomic_dir<T>(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<T, ExportError>,
) -> Result<T, ExportError> {
    check_archive_output(path, &[])?;
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| ExportError::Io { path: p, source }
    };
    let tmp = temp_path(path);
    // A temp folder left by an interrupted export: this name is ours.
    remove_any(&tmp).map_err(io(&tmp))?;
    let mut guard = DirGuard(Some(tmp.clone()));
    let value = write(&tmp)?;
    sync_tree(&tmp).map_err(io(&tmp))?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let old = path.with_file_name(format!(".old-{name}"));
    if std::fs::symlink_metadata(path).is_ok() {
        remove_any(&old).map_err(io(&old))?;
        std::fs::rename(path, &old).map_err(io(path))?;
        if let Err(e) = std::fs::rename(&tmp, path) {
            // Put the previous export back; the temp folder goes with the guard.
            let _ = std::fs::rename(&old, path);
            return Err(io(path)(e));
        }
    } else {
        std::fs::rename(&tmp, path).map_err(io(path))?;
    }
    guard.0 = None;
    // The export replaced, or one an interrupted export left aside: the new one supersedes it.
    remove_any(&old).map_err(io(&old))?;
    Ok(value)
}

/// Removes the temp folder it holds when dropped (on an error or a panic).
struct DirGuard(Option<PathBuf>);

impl Drop for DirGuard {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = remove_any(&p);
        }
    }
}

/// Removes `path` whatever it is (a link itself, not its target); nothing if it is absent.
fn remove_any(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Syncs every file under `dir`, then `dir` itself, as the file exports sync their file
/// before the rename.
fn sync_tree(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            sync_tree(&entry.path())?;
        } else {
            File::open(entry.path())?.sync_all()?;
        }
    }
    File::open(dir)?.sync_all()
}

/// Checks that an OTF2 archive may be written to the folder `path`: it is absent, an empty
/// folder, or the archive of an earlier export (a folder holding `traces.otf2`), which is
/// replaced whole; and none of `inputs` lies inside it. Anything else (a file, a link, another
/// folder, a folder holding an input) is refused.
pub fn check_archive_output(path: &Path, inputs: &[&Path]) -> Result<(), ExportError> {
    let refuse = |reason: String| {
        Err(ExportError::ArchiveOutput {
            path: path.to_path_buf(),
            reason,
        })
    };
    let io = |source| ExportError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(e)),
    };
    if meta.file_type().is_symlink() {
        return refuse("it is a symbolic link (name the folder it points to instead)".into());
    }
    if !meta.is_dir() {
        return refuse("it is a file, and an OTF2 archive is a folder".into());
    }
    let canon = std::fs::canonicalize(path).map_err(io)?;
    for input in inputs {
        if std::fs::canonicalize(input).is_ok_and(|c| c.starts_with(&canon)) {
            return refuse(format!("it holds the input {}", input.display()));
        }
    }
    let empty = std::fs::read_dir(path).map_err(io)?.next().is_none();
    if !empty && !path.join(format!("{ARCHIVE_NAME}.otf2")).is_file() {
        return refuse(format!(
            "it is a folder but not an OTF2 archive (no {ARCHIVE_NAME}.otf2), and the export replaces the folder whole"
        ));
    }
    Ok(())
}

/// Checks that `out` may receive an export in `format` without destroying one of `inputs`: for
/// a file format, [`trace::check_output_against`]; for OTF2, [`check_archive_output`].
pub fn check_output(format: Format, out: &Path, inputs: &[&Path]) -> Result<(), ExportError> {
    match format {
        Format::Otf2 => check_archive_output(out, inputs),
        _ => Ok(trace::check_output_against(out, inputs)?),
    }
}

/// Exports `src` in `format` to the file `out`, or for OTF2 to the folder `out` (atomically,
/// see [`write_atomic`] and [`write_atomic_dir`]).
pub fn export<S: TraceSource + ?Sized>(
    src: &S,
    format: Format,
    out: &Path,
    opts: &ExportOptions,
) -> Result<ExportSummary, ExportError> {
    opts.validate()?;
    match format {
        Format::Csv => write_atomic(out, |w| write_records_csv(src, w)),
        Format::WarpCsv => write_atomic(out, |w| write_warps_csv(src, w)),
        Format::Clog2 => write_atomic(out, |w| write_clog2(src, w, opts)),
        Format::Chrome => write_atomic(out, |w| write_chrome(src, w, opts)),
        Format::Otf2 => write_atomic_dir(out, |dir| write_otf2(src, dir, opts)),
    }
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

    /// Fills a folder as an OTF2 export would: an anchor file and one location file.
    fn fake_archive(dir: &Path, tag: &str) -> Result<(), ExportError> {
        let io = |source| ExportError::Io {
            path: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir.join(ARCHIVE_NAME)).map_err(io)?;
        std::fs::write(dir.join(format!("{ARCHIVE_NAME}.otf2")), tag).map_err(io)?;
        std::fs::write(dir.join(ARCHIVE_NAME).join("0.evt"), tag).map_err(io)
    }

    #[test]
    fn an_archive_folder_is_replaced_whole_and_a_failed_one_leaves_the_old() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("otf2");
        write_atomic_dir(&out, |d| fake_archive(d, "first")).unwrap();
        let anchor = out.join("traces.otf2");
        assert_eq!(std::fs::read_to_string(&anchor).unwrap(), "first");
        // A failure half-way leaves the first archive as it was, and no temp folder.
        let r: Result<(), _> = write_atomic_dir(&out, |d| {
            fake_archive(d, "partial")?;
            Err(ExportError::BadClock { clock_mhz: 0.0 })
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read_to_string(&anchor).unwrap(), "first");
        std::fs::write(out.join("traces/stale.evt"), "from the first").unwrap();
        write_atomic_dir(&out, |d| fake_archive(d, "second")).unwrap();
        assert_eq!(std::fs::read_to_string(&anchor).unwrap(), "second");
        assert!(!out.join("traces/stale.evt").exists());
        // An export killed between its two renames leaves the previous archive aside and none
        // in place; the next export supersedes both.
        std::fs::rename(&out, dir.path().join(".old-otf2")).unwrap();
        write_atomic_dir(&out, |d| fake_archive(d, "third")).unwrap();
        assert_eq!(std::fs::read_to_string(&anchor).unwrap(), "third");
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["otf2"]);
    }

    #[test]
    fn an_archive_never_replaces_a_file_a_link_another_folder_or_an_input() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir(&run).unwrap();
        let input = run.join("trace.wst");
        std::fs::write(&input, "input").unwrap();
        let refused = |out: &Path, inputs: &[&Path]| match check_archive_output(out, inputs) {
            Err(ExportError::ArchiveOutput { reason, .. }) => reason,
            other => panic!("{}: {other:?}", out.display()),
        };
        assert!(refused(&run, &[&input]).contains("holds the input"));
        assert!(refused(dir.path(), &[&input]).contains("holds the input"));
        assert!(refused(&run, &[]).contains("not an OTF2 archive"));
        assert!(refused(&input, &[]).contains("is a file"));
        #[cfg(unix)]
        {
            let link = dir.path().join("link");
            std::os::unix::fs::symlink(&run, &link).unwrap();
            assert!(refused(&link, &[]).contains("symbolic link"));
        }
        let e = write_atomic_dir(&run, |d| fake_archive(d, "x")).unwrap_err();
        assert!(matches!(e, ExportError::ArchiveOutput { .. }), "{e}");
        assert_eq!(std::fs::read_to_string(&input).unwrap(), "input");
        // Absent and empty folders may be written; a file format's check is the file one.
        check_archive_output(&dir.path().join("new"), &[&input]).unwrap();
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        check_archive_output(&empty, &[&input]).unwrap();
        assert!(check_output(Format::Csv, &run, &[&input]).is_err());
        check_output(Format::Csv, &run.join("records.csv"), &[&input]).unwrap();
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
