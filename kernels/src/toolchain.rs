//! Where the CUDA tools are at run time, and running them.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::KernelsError;

/// Where nvcc is at run time: `$NVCC`, `$CUDA_HOME/bin/nvcc`, the workspace's `.cuda` folder
/// (made by `scripts/setup-cuda`), `PATH` — the same order as build.rs — then the toolkit's usual
/// home, `/usr/local/cuda/bin`.
pub fn nvcc_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NVCC").map(PathBuf::from)
        && p.is_file()
    {
        return Some(p);
    }
    if let Some(h) = std::env::var_os("CUDA_HOME") {
        let p = PathBuf::from(h).join("bin").join("nvcc");
        if p.is_file() {
            return Some(p);
        }
    }
    let local = workspace_root().join(".cuda/site/nvidia/cu13/bin/nvcc");
    if local.is_file() {
        return Some(local);
    }
    which("nvcc")
        .or_else(|| Some(PathBuf::from("/usr/local/cuda/bin/nvcc")).filter(|p| p.is_file()))
}

pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

pub(crate) fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// Where a toolkit installed from PyPI (`scripts/setup-cuda`) keeps `libcudart_static.a`: `lib/`
/// beside nvcc's `bin/`, which nvcc's own profile does not search, so a link needs it as `-L`.
/// `None` for a toolkit whose nvcc finds its libraries itself.
pub fn cudart_lib_dir(nvcc: &Path) -> Option<PathBuf> {
    let lib = nvcc.parent()?.parent()?.join("lib");
    lib.join("libcudart_static.a").is_file().then_some(lib)
}

/// A CUDA binary tool found next to nvcc, else on `PATH`.
pub fn tool_path(tool: &str) -> Option<PathBuf> {
    if let Some(dir) = nvcc_path().and_then(|p| p.parent().map(|d| d.to_path_buf())) {
        let p = dir.join(tool);
        if p.is_file() {
            return Some(p);
        }
    }
    which(tool)
}

/// A temporary directory holding `bytes` as `name` (the tools read only files); the file's path.
pub(crate) fn temp_input(
    name: &str,
    bytes: &[u8],
) -> Result<(tempfile::TempDir, PathBuf), KernelsError> {
    let dir = tempfile::tempdir().map_err(|source| KernelsError::Io {
        path: std::env::temp_dir(),
        source,
    })?;
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).map_err(|source| KernelsError::Io {
        path: path.clone(),
        source,
    })?;
    Ok((dir, path))
}

/// Runs `cmd` (the tool at `tool`); a failure to start or a non-zero exit is an error showing
/// `command` and the tool's stderr.
pub(crate) fn run_tool(
    cmd: &mut Command,
    tool: &Path,
    command: &str,
) -> Result<std::process::Output, KernelsError> {
    let o = cmd.output().map_err(|source| KernelsError::Io {
        path: tool.to_path_buf(),
        source,
    })?;
    if !o.status.success() {
        return Err(KernelsError::ToolFailed {
            command: command.to_string(),
            status: o.status.to_string(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        });
    }
    Ok(o)
}
