//! `warpscope run`'s side: starts the program with the library preloaded and the run's
//! configuration beside it, lets its output and exit status pass through, and writes the index of
//! what its launches became once it has ended.

use crate::{ProfileError, RunConfig};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use trace::{LaunchCounts, ProgramIndex};

/// The injected library's file name, beside the `warpscope` executable.
pub const LIBRARY_FILE: &str = "libwarpscope_inject.so";

/// The configuration's file in the result folder.
pub const CONFIG_FILE: &str = "run-config.json";

/// A program to profile.
#[derive(Debug, Clone)]
pub struct AppRun {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub config: RunConfig,
    /// The library to preload.
    pub library: PathBuf,
}

/// The library beside the executable `exe` (cargo builds both into one folder; the GPU bundle
/// ships both).
pub fn find_library(exe: &Path) -> Result<PathBuf, ProfileError> {
    let lib = exe
        .parent()
        .map(|d| d.join(LIBRARY_FILE))
        .filter(|p| p.is_file())
        .ok_or_else(|| {
            ProfileError::Config(format!(
                "{LIBRARY_FILE} is not beside {} (build the workspace, or use the GPU bundle, which ships both)",
                exe.display()
            ))
        })?;
    Ok(lib)
}

/// Makes `out` ready for a run: created if missing; the files of an earlier run in it removed;
/// refused when it holds anything else, so that nothing of the user's is written over.
fn prepare_out(out: &Path) -> Result<(), ProfileError> {
    let io = |path: &Path, source| ProfileError::Io {
        path: path.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(out).map_err(|e| io(out, e))?;
    let ours = |p: &Path| -> bool {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        [
            trace::LAUNCHES_FILE,
            trace::COUNTS_FILE,
            trace::INDEX_FILE,
            CONFIG_FILE,
            "report.md",
            "report.html",
        ]
        .contains(&name)
            || (p.is_dir()
                && trace::RunMetrics::read(&p.join("run.json")).is_ok_and(|m| m.app.is_some()))
    };
    let entries: Vec<PathBuf> = std::fs::read_dir(out)
        .map_err(|e| io(out, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    if let Some(other) = entries.iter().find(|p| !ours(p)) {
        return Err(ProfileError::Config(format!(
            "--out {}: holds {}, which is not from an earlier `warpscope run`; give an empty or new folder",
            out.display(),
            other.display()
        )));
    }
    for p in entries {
        let removed = if p.is_dir() {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
        removed.map_err(|e| io(&p, e))?;
    }
    Ok(())
}

/// Runs the program to its end with the library preloaded (before any the program's environment
/// already preloads), its standard streams its own, and writes the index. The program's exit
/// status is in the index; a program that does not start is an error.
pub fn run_app(run: &AppRun) -> Result<ProgramIndex, ProfileError> {
    run.config.resolve()?;
    let program = Path::new(&run.program);
    if !(program.is_file() || find_on_path(&run.program)) {
        return Err(ProfileError::Config(format!(
            "{}: no such program",
            program.display()
        )));
    }
    let out = &run.config.out;
    prepare_out(out)?;
    let config_path = out.join(CONFIG_FILE);
    let config = RunConfig {
        out: std::path::absolute(out).map_err(|e| ProfileError::Io {
            path: out.clone(),
            source: e,
        })?,
        ..run.config.clone()
    };
    config.write(&config_path)?;
    let mut preload = run.library.as_os_str().to_os_string();
    if let Some(earlier) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload.push(" ");
        preload.push(earlier);
    }
    let status = std::process::Command::new(&run.program)
        .args(&run.args)
        .env("LD_PRELOAD", preload)
        .env(crate::CONFIG_ENV, &config_path)
        .status()
        .map_err(|e| ProfileError::Io {
            path: PathBuf::from(&run.program),
            source: e,
        })?;
    let (launches, truncated_records) =
        match trace::read_launch_records(&out.join(trace::LAUNCHES_FILE)) {
            Ok(r) => r,
            // A program that never touched the driver leaves no record file.
            Err(trace::TraceError::Io { .. }) => (Vec::new(), 0),
            Err(e) => return Err(e.into()),
        };
    let counts = LaunchCounts::read(&out.join(trace::COUNTS_FILE))
        .ok()
        .map(|c| c.kernels);
    use std::os::unix::process::ExitStatusExt;
    let index = ProgramIndex {
        program: std::iter::once(&run.program)
            .chain(&run.args)
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        exit_code: status.code(),
        signal: status.signal(),
        launches,
        counts,
        truncated_records,
    };
    index.write(&out.join(trace::INDEX_FILE))?;
    Ok(index)
}

/// Whether a bare program name is found on `PATH`, as the shell would run it.
fn find_on_path(program: &OsString) -> bool {
    let name = Path::new(program);
    name.components().count() == 1
        && std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(name).is_file()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_earlier_runs_files_are_cleared_and_anything_else_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join(trace::LAUNCHES_FILE), "old\n").unwrap();
        prepare_out(&out).unwrap();
        assert!(!out.join(trace::LAUNCHES_FILE).exists());
        std::fs::write(out.join("notes.txt"), "mine").unwrap();
        let e = prepare_out(&out).unwrap_err().to_string();
        assert!(e.contains("notes.txt"), "{e}");
        assert!(
            out.join("notes.txt").exists(),
            "nothing of the user's is removed"
        );
    }

    #[test]
    fn the_library_is_looked_for_beside_the_executable() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("warpscope");
        let e = find_library(&exe).unwrap_err().to_string();
        assert!(e.contains(LIBRARY_FILE), "{e}");
        std::fs::write(dir.path().join(LIBRARY_FILE), "").unwrap();
        assert_eq!(find_library(&exe).unwrap(), dir.path().join(LIBRARY_FILE));
    }
}
