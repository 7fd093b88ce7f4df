//! The embedded builds and run-time compilation with nvcc.
//!
//! Why: hosts launch the embedded PTX/fatbins, the emulator interprets the PTX, the SASS tests
//! disassemble the fatbins, and `warpscope launch x.cu` compiles a user's kernel with the same
//! header and flags. Main types: [`KernelBuild`], [`EntryInfo`], [`CorpusKernel`].
//!
//! ```
//! let corpus = kernels::corpus();
//! assert!(corpus.iter().all(|k| k.ptx.contains(".entry")));
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::KernelsError;
use crate::layout;

/// One kernel entry of a build, with its ptxas resource usage for sm_75.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryInfo {
    /// The entry name as in the PTX (`extern "C"` names are unmangled).
    pub name: &'static str,
    /// Registers per thread (ptxas `-v`, sm_75).
    pub registers: u32,
    /// Static (`__shared__`) bytes per block; dynamic shared memory is the launcher's.
    pub static_shared_bytes: u32,
}

/// One source file compiled in one probe configuration.
#[derive(Debug, Clone, Copy)]
pub struct KernelBuild {
    /// The file stem, e.g. `"probe_test"` for `kernels/probe_test.cu`.
    pub source: &'static str,
    /// `WS_MODE` (0 off … 4 auto).
    pub mode: u32,
    /// `WS_KIND` (0 trace, 1 summary).
    pub kind: u32,
    /// PTX for `.target sm_75`.
    pub ptx: &'static str,
    /// Fatbin: SASS for [`SASS_ARCHS`] and the PTX for JIT on newer GPUs.
    pub fatbin: &'static [u8],
    /// Entries in PTX order.
    pub entries: &'static [EntryInfo],
    /// The nvcc commands that made it (paths relative to the workspace root).
    pub command: &'static str,
}

impl KernelBuild {
    /// The entry named `name`, if this build has it.
    pub fn entry(&self, name: &str) -> Option<&'static EntryInfo> {
        self.entries.iter().find(|e| e.name == name)
    }
}

/// A corpus kernel file (`kernels/corpus/*.cu`), compiled -O3 to PTX without probes.
#[derive(Debug, Clone, Copy)]
pub struct CorpusKernel {
    /// The file stem, e.g. `"reduce_shared"`.
    pub name: &'static str,
    /// PTX for `.target sm_75`.
    pub ptx: &'static str,
    /// Entries in PTX order with their sm_75 resource usage.
    pub entries: &'static [EntryInfo],
    /// The nvcc command that made it.
    pub command: &'static str,
}

/// Architectures with SASS in every fatbin.
pub const SASS_ARCHS: &[u32] = &[75, 80, 86, 89, 90];
/// The virtual architecture of all PTX.
pub const PTX_ARCH: u32 = 75;

include!(concat!(env!("OUT_DIR"), "/builds.rs"));

/// Every embedded build, sorted by source, then mode, then kind.
pub fn builds() -> &'static [KernelBuild] {
    BUILDS
}

/// The build of `source` (file stem) for `mode` and `kind`. Mode off exists only with kind trace.
pub fn find(source: &str, mode: u32, kind: u32) -> Option<&'static KernelBuild> {
    BUILDS
        .iter()
        .find(|b| b.source == source && b.mode == mode && b.kind == kind)
}

/// The corpus kernels, sorted by name.
pub fn corpus() -> &'static [CorpusKernel] {
    CORPUS
}

/// The corpus file with stem `name`.
pub fn find_corpus(name: &str) -> Option<&'static CorpusKernel> {
    CORPUS.iter().find(|k| k.name == name)
}

/// The text of `warpscope.cuh`.
pub fn probe_header() -> &'static str {
    include_str!("../warpscope.cuh")
}

/// The `nvcc --version` release line of the compiler that built the embedded kernels.
pub fn nvcc_version() -> &'static str {
    NVCC_VERSION
}

/// Where nvcc is at run time: `$NVCC`, `$CUDA_HOME/bin/nvcc`, the workspace's `.cuda` folder
/// (made by `scripts/setup-cuda`), then `PATH` — the same order as build.rs.
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

/// PTX compiled at run time, with the command that made it and ptxas's resource usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledPtx {
    pub ptx: String,
    pub command: String,
    /// The most registers per thread of any entry (ptxas `-v` for sm_75); `None` if ptxas could
    /// not assemble the PTX (the PTX itself is still returned).
    pub registers: Option<u32>,
    /// Per entry, in PTX order: (name, registers, static shared bytes), for sm_75.
    pub entries: Vec<(String, u32, u32)>,
}

/// Compiles a user's `.cu` to PTX for `compute_75` with the probe header on the include path and
/// the same flags as the embedded builds (`-O3 -DWS_MODE=.. -DWS_KIND=..`).
///
/// The header is written next to the output in a temporary directory, so the user's file only
/// needs `#include "warpscope.cuh"`; its own directory is on the include path too.
pub fn compile_ptx(source: &Path, mode: u32, kind: u32) -> Result<CompiledPtx, KernelsError> {
    if mode > layout::WS_AUTO || kind > layout::WS_KIND_SUMMARY {
        return Err(KernelsError::BadConfig { mode, kind });
    }
    let nvcc = nvcc_path().ok_or(KernelsError::ToolNotFound { tool: "nvcc" })?;
    let dir = tempfile::tempdir().map_err(|source| KernelsError::Io {
        path: std::env::temp_dir(),
        source,
    })?;
    let header = dir.path().join("warpscope.cuh");
    std::fs::write(&header, probe_header()).map_err(|source| KernelsError::Io {
        path: header.clone(),
        source,
    })?;
    let out = dir.path().join("out.ptx");
    let src_dir = source
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let args: Vec<String> = vec![
        format!("-arch=compute_{PTX_ARCH}"),
        "-ptx".into(),
        "-O3".into(),
        format!("-DWS_MODE={mode}"),
        format!("-DWS_KIND={kind}"),
        "-I".into(),
        dir.path().to_string_lossy().into_owned(),
        "-I".into(),
        src_dir.to_string_lossy().into_owned(),
        source.to_string_lossy().into_owned(),
        "-o".into(),
        out.to_string_lossy().into_owned(),
    ];
    let command = format!(
        "nvcc -arch=compute_{PTX_ARCH} -ptx -O3 -DWS_MODE={mode} -DWS_KIND={kind} -I <warpscope.cuh dir> -I {} {}",
        src_dir.display(),
        source.display()
    );
    let o = Command::new(&nvcc)
        .args(&args)
        .output()
        .map_err(|source| KernelsError::Io {
            path: nvcc.clone(),
            source,
        })?;
    if !o.status.success() {
        return Err(KernelsError::ToolFailed {
            command,
            status: o.status.to_string(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        });
    }
    let ptx = std::fs::read_to_string(&out).map_err(|source| KernelsError::Io {
        path: out.clone(),
        source,
    })?;
    // Resource usage: assemble the PTX for sm_75 with `ptxas -v` (through nvcc, like build.rs).
    let cubin = dir.path().join("out.cubin");
    let entries = Command::new(&nvcc)
        .args([
            format!("-arch=sm_{PTX_ARCH}"),
            "-cubin".into(),
            "-Xptxas".into(),
            "-v".into(),
        ])
        .arg(&out)
        .arg("-o")
        .arg(&cubin)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            let mut log = String::from_utf8_lossy(&o.stdout).into_owned();
            log.push_str(&String::from_utf8_lossy(&o.stderr));
            parse_resource_usage(&ptx, &log)
        })
        .unwrap_or_default();
    let registers = entries.iter().map(|e| e.1).max();
    Ok(CompiledPtx {
        ptx,
        command,
        registers,
        entries,
    })
}

/// Entry names of a PTX module in order, with (registers, static shared bytes) from a `ptxas -v`
/// log (0 where the log does not mention the entry). Same parsing as build.rs.
fn parse_resource_usage(ptx: &str, log: &str) -> Vec<(String, u32, u32)> {
    let mut usage = std::collections::BTreeMap::new();
    let mut current: Option<String> = None;
    for line in log.lines() {
        if let Some(p) = line.find("Compiling entry function '") {
            current = line[p + 26..].split('\'').next().map(str::to_string);
        } else if let (Some(name), Some(p)) = (&current, line.find("Used ")) {
            let tail = &line[p..];
            usage.insert(
                name.clone(),
                (
                    number_before(tail, " registers").unwrap_or(0),
                    number_before(tail, " bytes smem").unwrap_or(0),
                ),
            );
        }
    }
    ptx.lines()
        .filter_map(|l| {
            let rest = &l[l.find(".entry ")? + 7..];
            let name: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .map(|n| {
            let (r, s) = usage.get(&n).copied().unwrap_or((0, 0));
            (n, r, s)
        })
        .collect()
}

fn number_before(s: &str, suffix: &str) -> Option<u32> {
    let head = &s[..s.find(suffix)?];
    let start = head
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    head[start..].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_instrumented_mode_has_both_kinds_and_off_has_trace_only() {
        let sources: std::collections::BTreeSet<&str> = builds().iter().map(|b| b.source).collect();
        assert!(sources.contains("probe_test"));
        for s in sources {
            assert!(find(s, layout::WS_OFF, layout::WS_KIND_TRACE).is_some());
            assert!(find(s, layout::WS_OFF, layout::WS_KIND_SUMMARY).is_none());
            for m in layout::WS_NAIVE..=layout::WS_AUTO {
                for k in [layout::WS_KIND_TRACE, layout::WS_KIND_SUMMARY] {
                    let b = find(s, m, k).unwrap_or_else(|| panic!("{s} mode {m} kind {k}"));
                    assert!(b.command.contains(&format!("-DWS_MODE={m}")));
                    assert!(!b.fatbin.is_empty());
                }
            }
        }
    }

    #[test]
    fn entries_have_resource_usage() {
        let b = find("probe_test", layout::WS_AUTO, layout::WS_KIND_TRACE).expect("probe_test");
        assert!(b.entries.len() >= 5);
        for e in b.entries {
            assert!(b.ptx.contains(&format!(".entry {}(", e.name)), "{}", e.name);
            assert!(e.registers > 0 && e.registers <= 255, "{e:?}");
        }
        assert_eq!(b.entry("nope"), None);
    }

    #[test]
    fn corpus_covers_the_features_the_emulator_must_run() {
        assert!(corpus().len() >= 15, "{} corpus files", corpus().len());
        let all: String = corpus().iter().map(|k| k.ptx).collect();
        // One instruction (prefix) per feature the corpus promises (issue 3 "Done when").
        for needle in [
            "bar.sync",
            "shfl.sync.down",
            "vote.sync.ballot",
            "popc.b32",
            "atom.global.add",
            "atom.shared.add",
            "tex.2d",
            "tex.1d",
            "ld.global.nc",
            "fma.rn.f16",
            "add.f16x2",
            "brev.b32",
            "clz.b32",
            "bfe.u32",
            "bfi.b32",
            "prmt.b32",
            "mul.hi.u32",
            "mad.wide.u32",
            "ex2.approx",
            "sin.approx",
            "rsqrt.approx",
            "lg2.approx",
            "ld.shared",
            "st.shared",
        ] {
            assert!(all.contains(needle), "no corpus kernel uses {needle}");
        }
        for k in corpus() {
            assert!(!k.entries.is_empty(), "{}", k.name);
            assert!(k.command.contains(&format!("kernels/corpus/{}.cu", k.name)));
            assert!(find_corpus(k.name).is_some());
        }
    }

    #[test]
    fn corpus_readme_documents_every_entry() {
        let readme = include_str!("../corpus/README.md");
        for k in corpus() {
            for e in k.entries {
                assert!(
                    readme.contains(&format!("`{}`", e.name)),
                    "{} undocumented",
                    e.name
                );
            }
        }
        let probe = find("probe_test", layout::WS_OFF, layout::WS_KIND_TRACE).expect("probe_test");
        for e in probe.entries {
            assert!(
                readme.contains(&format!("`{}`", e.name)),
                "{} undocumented",
                e.name
            );
        }
    }

    #[test]
    fn static_shared_bytes_are_reported() {
        let k = find_corpus("histogram_shared").expect("histogram_shared");
        assert_eq!(k.entries[0].static_shared_bytes, 256 * 4);
    }

    #[test]
    fn resource_usage_is_parsed_per_entry() {
        let ptx = ".visible .entry a(\n)\n.visible .entry b_2(\n)\n";
        let log = "ptxas info    : Compiling entry function 'b_2' for 'sm_75'\n\
                   ptxas info    : Used 12 registers, used 1 barriers, 256 bytes smem, 360 bytes cmem[0]\n\
                   ptxas info    : Compiling entry function 'a' for 'sm_75'\n\
                   ptxas info    : Used 7 registers, 352 bytes cmem[0]\n";
        assert_eq!(
            parse_resource_usage(ptx, log),
            vec![("a".to_string(), 7, 0), ("b_2".to_string(), 12, 256)]
        );
    }

    #[test]
    fn compile_ptx_builds_a_user_kernel_with_the_header() {
        let dir = tempfile::tempdir().expect("tempdir");
        let src = dir.path().join("user.cu");
        std::fs::write(
            &src,
            "#include \"warpscope.cuh\"\n\
             extern \"C\" __global__ void k(const int* p, int* o, ws::Log log) {\n\
             WS_KERNEL_BEGIN(log);\n o[threadIdx.x] = WS_LOAD(0, WS_GLOBAL, p[threadIdx.x]);\n\
             WS_KERNEL_END(log);\n}\n",
        )
        .expect("write");
        let c = compile_ptx(&src, layout::WS_FENCE, layout::WS_KIND_TRACE).expect("nvcc");
        assert!(c.ptx.contains(".entry k(") && c.ptx.contains("membar.cta"));
        assert!(c.command.contains("-DWS_MODE=2"));
        assert_eq!(c.entries.len(), 1);
        assert!(c.registers.is_some_and(|r| r > 0));
        let err = compile_ptx(&dir.path().join("missing.cu"), 0, 0);
        assert!(matches!(err, Err(KernelsError::ToolFailed { .. })));
    }

    #[test]
    fn bad_config_is_an_error() {
        let r = compile_ptx(Path::new("x.cu"), 9, 0);
        assert!(matches!(
            r,
            Err(KernelsError::BadConfig { mode: 9, kind: 0 })
        ));
    }
}
