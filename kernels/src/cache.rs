//! The compile cache of [`crate::compile_ptx_cached`]: PTX and the `ptxas -v` log of a user's
//! `.cu`, stored under a key of everything that decides them, so an unchanged source is not
//! compiled again (nvcc plus ptxas take ~0.6 s, more than a short launch).
//!
//! The key is a SHA-256 over: the source's bytes; the bytes of every header it includes with
//! `#include "..."` (found next to the including file or the source, recursively); the probe
//! header; the probe mode and flags; and nvcc's path, size and modification time (which change
//! with any toolkit install or upgrade, without running `nvcc --version` on every launch).
//! Angle-bracket includes are the toolkit's and covered by nvcc's identity.
//!
//! Each entry is a folder `<dir>/<key>/` holding `kernel.ptx`, `ptxas.log` and `command.txt`.
//! It is written in a temporary folder beside it and renamed into place, so concurrent runs
//! never see a partial entry: the first rename wins and a later one finds the folder taken and
//! keeps the existing (identical) entry.
//!
//! ```no_run
//! use kernels::cache::CompileCache;
//! let cache = CompileCache::new(CompileCache::default_dir().unwrap());
//! let (compiled, hit) =
//!     kernels::compile_ptx_cached("k.cu".as_ref(), kernels::layout::WS_OFF, false, &cache).unwrap();
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::KernelsError;
use crate::embedded::probe_header;
use crate::nvcc::{CompiledPtx, checked_nvcc, compile_budgeted, compile_flags};

/// Bumped when the entry layout or the key's contents change.
const FORMAT: &str = "warpscope-compile-cache-1";

/// A folder of compiled sources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileCache {
    dir: PathBuf,
}

impl CompileCache {
    pub fn new(dir: impl Into<PathBuf>) -> CompileCache {
        CompileCache { dir: dir.into() }
    }

    /// `$XDG_CACHE_HOME/warpscope/compile`, else `$HOME/.cache/warpscope/compile`. Hand-written
    /// (two environment variables) rather than a directories crate: warpscope runs where CUDA
    /// does, on Linux, where this is the whole rule.
    pub fn default_dir() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
        Some(base.join("warpscope").join("compile"))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key of `source` compiled in `mode` (`sampled` or not) by `nvcc` (hex SHA-256).
    pub fn key(
        &self,
        nvcc: &Path,
        source: &Path,
        mode: u32,
        sampled: bool,
    ) -> Result<String, KernelsError> {
        let mut h = Sha256::new();
        let mut field = |name: &str, bytes: &[u8]| {
            h.update(name.as_bytes());
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        field("format", FORMAT.as_bytes());
        field("flags", compile_flags(mode, sampled).as_bytes());
        field("probe header", probe_header().as_bytes());
        let meta = std::fs::metadata(nvcc).map_err(|source| KernelsError::Io {
            path: nvcc.to_path_buf(),
            source,
        })?;
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        field(
            "nvcc",
            format!("{} {} {mtime}", nvcc.display(), meta.len()).as_bytes(),
        );
        for (name, bytes) in sources(source)? {
            field(&name, &bytes);
        }
        Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
    }

    /// The entry stored under `key`, if a complete one is there.
    pub fn get(&self, key: &str) -> Option<CompiledPtx> {
        let d = self.dir.join(key);
        let ptx = std::fs::read_to_string(d.join("kernel.ptx")).ok()?;
        let log = std::fs::read_to_string(d.join("ptxas.log")).ok()?;
        let command = std::fs::read_to_string(d.join("command.txt")).ok()?;
        Some(CompiledPtx::from_parts(ptx, command, &log))
    }

    /// Stores an entry (temp folder + rename; an entry already there is kept).
    pub fn put(&self, key: &str, c: &CompiledPtx, ptxas_log: &str) -> Result<(), KernelsError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| KernelsError::Io { path, source }
        };
        std::fs::create_dir_all(&self.dir).map_err(io(&self.dir))?;
        let tmp = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempdir_in(&self.dir)
            .map_err(io(&self.dir))?;
        for (name, text) in [
            ("kernel.ptx", c.ptx.as_str()),
            ("ptxas.log", ptxas_log),
            ("command.txt", c.command.as_str()),
        ] {
            let p = tmp.path().join(name);
            std::fs::write(&p, text).map_err(io(&p))?;
        }
        let dest = self.dir.join(key);
        match std::fs::rename(tmp.path(), &dest) {
            // Renamed: the folder is the entry now and must outlive the guard.
            Ok(()) => {
                let _ = tmp.keep();
                Ok(())
            }
            // Another run stored the same key first; its entry is equivalent.
            Err(_) if dest.join("command.txt").is_file() => Ok(()),
            Err(e) => Err(io(&dest)(e)),
        }
    }
}

/// The source and every header it reaches through `#include "..."`, in a fixed order, as
/// (label, bytes). A header that cannot be found is keyed by its name alone: nvcc will find it
/// [`crate::compile_ptx`] through a [`CompileCache`]: an unchanged source (same bytes,
/// same headers, flags and nvcc) is read back from the cache without running nvcc. Returns the
/// result and whether it came from the cache.
pub fn compile_ptx_cached(
    source: &Path,
    mode: u32,
    sampled: bool,
    cache: &CompileCache,
) -> Result<(CompiledPtx, bool), KernelsError> {
    let nvcc = checked_nvcc(mode)?;
    let key = cache.key(&nvcc, source, mode, sampled)?;
    if let Some(hit) = cache.get(&key) {
        return Ok((hit, true));
    }
    let (compiled, log) = compile_budgeted(&nvcc, source, mode, sampled)?;
    cache.put(&key, &compiled, &log)?;
    Ok((compiled, false))
}

/// on a system path (part of nvcc's identity) or fail.
fn sources(source: &Path) -> Result<Vec<(String, Vec<u8>)>, KernelsError> {
    let src_dir = source
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let first = std::fs::read(source).map_err(|e| KernelsError::Io {
        path: source.to_path_buf(),
        source: e,
    })?;
    let mut out = vec![("source".to_string(), first.clone())];
    // A header found beside the including file is the one nvcc reads (its directory comes
    // before the -I paths), even a local copy of warpscope.cuh; one found nowhere is the
    // embedded probe header (already keyed) or a system header.
    let mut seen = BTreeSet::new();
    let mut todo = vec![(src_dir.clone(), first)];
    while let Some((dir, bytes)) = todo.pop() {
        for name in quoted_includes(&String::from_utf8_lossy(&bytes)) {
            let found = [dir.join(&name), src_dir.join(&name)]
                .into_iter()
                .find(|p| p.is_file());
            let Some(path) = found else {
                out.push((format!("missing {name}"), Vec::new()));
                continue;
            };
            let canon = path.canonicalize().unwrap_or(path.clone());
            if !seen.insert(canon) {
                continue;
            }
            let bytes = std::fs::read(&path).map_err(|e| KernelsError::Io {
                path: path.clone(),
                source: e,
            })?;
            out.push((format!("header {name}"), bytes.clone()));
            let parent = path.parent().unwrap_or(&dir).to_path_buf();
            todo.push((parent, bytes));
        }
    }
    Ok(out)
}

/// The names in `#include "name"` lines (conditional ones too: keying a header that is not
/// compiled in only costs a needless rebuild when it changes).
fn quoted_includes(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix('#')?.trim_start();
            let rest = rest.strip_prefix("include")?.trim_start();
            let rest = rest.strip_prefix('"')?;
            rest.split('"').next().map(str::to_string)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_follows_source_headers_mode_and_nvcc() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("k.cu"), "#include \"a.h\"\n__global__ void k() {}\n").unwrap();
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::write(d.join("a.h"), "#include \"sub/b.h\"\n").unwrap();
        std::fs::write(d.join("sub/b.h"), "#define B 1\n").unwrap();
        let nvcc = d.join("nvcc");
        std::fs::write(&nvcc, "tool").unwrap();
        let c = CompileCache::new(d.join("cache"));
        let k = |mode| c.key(&nvcc, &d.join("k.cu"), mode, false).unwrap();
        let base = k(0);
        assert_eq!(base, k(0), "the key is deterministic");
        assert_eq!(base.len(), 64);
        assert_ne!(base, k(1), "mode");
        let sampled = c.key(&nvcc, &d.join("k.cu"), 2, true).unwrap();
        assert_ne!(k(2), sampled, "a sampled build");
        std::fs::write(d.join("sub/b.h"), "#define B 2\n").unwrap();
        let nested = k(0);
        assert_ne!(base, nested, "a header included by a header");
        std::fs::write(&nvcc, "tool v2").unwrap();
        assert_ne!(nested, k(0), "nvcc");
    }

    #[test]
    fn entries_round_trip_and_a_second_put_keeps_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let c = CompileCache::new(dir.path().join("c"));
        assert!(c.get("abc").is_none());
        let log = "ptxas info    : Compiling entry function 'k' for 'sm_75'\nptxas info    : Used 12 registers, 356 bytes cmem[0]\n";
        let one =
            CompiledPtx::from_parts(".visible .entry k()\n{\n}\n".into(), "nvcc x".into(), log);
        assert_eq!(one.registers, Some(12));
        c.put("abc", &one, log).unwrap();
        assert_eq!(c.get("abc"), Some(one.clone()));
        let other = CompiledPtx::from_parts("other".into(), "nvcc y".into(), "");
        c.put("abc", &other, "").unwrap();
        assert_eq!(c.get("abc"), Some(one));
        // no temporary folders are left behind
        let names: Vec<_> = std::fs::read_dir(c.dir()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn include_lines_are_found() {
        let t = "#include \"a.h\"\n  #  include \"b/c.cuh\" // x\n#include <cuda.h>\n#define X\n";
        assert_eq!(quoted_includes(t), ["a.h", "b/c.cuh"]);
    }
}
