//! One writer per sweep folder: `sweep.lock`, held with an exclusive advisory lock
//! (`std::fs::File::try_lock`, `flock` on Unix) for as long as a sweep, `--plan` or `merge` writes
//! the folder. The operating system drops the lock when its process ends, however it ends, so a
//! lock file left by a dead process never blocks: the next writer simply takes it. The file's
//! text (pid, host, command) is only there to tell a second writer who holds it.

use crate::StudyError;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The lock file's name inside a sweep folder.
pub const LOCK_FILE: &str = "sweep.lock";

/// A held folder lock; dropping it releases the lock (the file stays, harmlessly).
#[derive(Debug)]
pub struct FolderLock {
    file: File,
    pub path: PathBuf,
}

impl Drop for FolderLock {
    /// Unlocks explicitly rather than by closing: a child that another thread of this process
    /// forks holds a copy of the descriptor until its exec, and while any copy is open a close
    /// alone would leave the folder locked.
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

impl FolderLock {
    /// Takes `dir/sweep.lock` for `what` (e.g. `sweep shard 2/3`), or refuses with who holds it.
    pub fn acquire(dir: &Path, what: &str) -> Result<FolderLock, StudyError> {
        let path = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| StudyError::io(&path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(StudyError::Locked {
                    path,
                    holder: if holder.is_empty() {
                        "a process that has not said who it is".into()
                    } else {
                        holder.to_string()
                    },
                });
            }
            Err(TryLockError::Error(e)) => return Err(StudyError::io(&path, e)),
        }
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "this host".into());
        let note = format!("warpscope {what}, pid {} on {host}\n", std::process::id());
        file.set_len(0)
            .and_then(|_| file.rewind())
            .and_then(|_| file.write_all(note.as_bytes()))
            .map_err(|e| StudyError::io(&path, e))?;
        Ok(FolderLock { file, path })
    }

    /// A reader's lock on `dir` (shared, so readers do not exclude each other): refuses while a
    /// writer holds the folder, and keeps one from starting. Writes nothing: the folder may be
    /// another command's input. None when the folder has no lock file (nothing ever wrote it).
    pub fn share(dir: &Path) -> Result<Option<FolderLock>, StudyError> {
        let path = dir.join(LOCK_FILE);
        let mut file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StudyError::io(&path, e)),
        };
        match file.try_lock_shared() {
            Ok(()) => Ok(Some(FolderLock { file, path })),
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                Err(StudyError::Locked {
                    path,
                    holder: holder.trim().to_string(),
                })
            }
            Err(TryLockError::Error(e)) => Err(StudyError::io(&path, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_refused_with_the_holder_named_until_the_first_ends() {
        let dir = tempfile::tempdir().unwrap();
        let first = FolderLock::acquire(dir.path(), "sweep").unwrap();
        let e = FolderLock::acquire(dir.path(), "merge")
            .unwrap_err()
            .to_string();
        assert!(e.contains("sweep.lock"), "{e}");
        assert!(
            e.contains(&format!("warpscope sweep, pid {}", std::process::id())),
            "{e}"
        );
        let e = FolderLock::share(dir.path()).unwrap_err().to_string();
        assert!(e.contains("warpscope sweep"), "{e}");
        drop(first);
        let reader = FolderLock::share(dir.path()).unwrap();
        assert!(reader.is_some());
        assert!(
            FolderLock::acquire(dir.path(), "sweep").is_err(),
            "a reader keeps writers out"
        );
        drop(reader);
        FolderLock::acquire(dir.path(), "merge").unwrap();
    }

    #[test]
    fn dropping_the_lock_releases_it_while_a_copy_of_the_descriptor_is_open() {
        let dir = tempfile::tempdir().unwrap();
        let first = FolderLock::acquire(dir.path(), "sweep").unwrap();
        // What a child forked by another thread holds until its exec.
        let copy = first.file.try_clone().unwrap();
        drop(first);
        FolderLock::acquire(dir.path(), "merge").unwrap();
        drop(copy);
    }

    #[test]
    fn a_lock_file_left_by_a_dead_process_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(LOCK_FILE),
            "warpscope sweep, pid 999999 on gone\n",
        )
        .unwrap();
        let lock = FolderLock::acquire(dir.path(), "sweep").unwrap();
        let text = std::fs::read_to_string(&lock.path).unwrap();
        assert!(text.contains(&std::process::id().to_string()), "{text}");
    }
}
