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
use crate::budget::{EntryUsage, parse_entries, register_budget, with_maxnreg};
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
    /// Bytes of register spill stores plus loads (ptxas `-v`, sm_75); a probed entry's register
    /// budget can force them.
    pub spill_bytes: u32,
}

/// One source file compiled in one probe configuration.
#[derive(Debug, Clone, Copy)]
pub struct KernelBuild {
    /// The file stem, e.g. `"probe_test"` for `kernels/probe_test.cu`.
    pub source: &'static str,
    /// `WS_MODE` (0 off … 4 auto).
    pub mode: u32,
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

/// Every embedded build, sorted by source, then mode.
pub fn builds() -> &'static [KernelBuild] {
    BUILDS
}

/// The build of `source` (file stem) for `mode`.
pub fn find(source: &str, mode: u32) -> Option<&'static KernelBuild> {
    BUILDS.iter().find(|b| b.source == source && b.mode == mode)
}

/// The microbenchmarks (`kernels/micro/*.cu`: the pointer chase and independent loads), every
/// probe mode with a fatbin, sorted by source, then mode. Apart from [`builds`]: their timed
/// windows hold many loads on purpose.
pub fn micro() -> &'static [KernelBuild] {
    MICRO
}

/// The microbenchmark build of `source` (file stem) for `mode`.
pub fn find_micro(source: &str, mode: u32) -> Option<&'static KernelBuild> {
    MICRO.iter().find(|b| b.source == source && b.mode == mode)
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
    /// Per entry, in PTX order, for sm_75.
    pub entries: Vec<EntryUsage>,
}

/// Compiles a user's `.cu` to PTX for `compute_75` with the probe header on the include path and
/// the same flags as the embedded builds (`-O3 -DWS_MODE=..`). A probed build gets the same
/// per-entry register budget as the embedded ones ([`crate::budget`]): the source is compiled
/// with `WS_OFF` first for the bare register counts.
///
/// The header is written next to the output in a temporary directory, so the user's file only
/// needs `#include "warpscope.cuh"`; its own directory is on the include path too.
pub fn compile_ptx(source: &Path, mode: u32) -> Result<CompiledPtx, KernelsError> {
    let nvcc = checked_nvcc(mode)?;
    compile_budgeted(&nvcc, source, mode).map(|(c, _)| c)
}

/// The nvcc to compile a build of `mode` with, once `mode` is known to be one.
fn checked_nvcc(mode: u32) -> Result<PathBuf, KernelsError> {
    if mode > layout::WS_AUTO {
        return Err(KernelsError::BadConfig { mode });
    }
    nvcc_path().ok_or(KernelsError::ToolNotFound { tool: "nvcc" })
}

/// A temporary directory holding a copy of the probe header, where a user's `.cu` is compiled
/// (its `#include "warpscope.cuh"` finds it there).
fn header_dir() -> Result<tempfile::TempDir, KernelsError> {
    let dir = tempfile::tempdir().map_err(|source| KernelsError::Io {
        path: std::env::temp_dir(),
        source,
    })?;
    let header = dir.path().join("warpscope.cuh");
    std::fs::write(&header, probe_header()).map_err(|source| KernelsError::Io {
        path: header.clone(),
        source,
    })?;
    Ok(dir)
}

/// Compiles `source` in `mode` in a temporary directory beside a copy of the header, a probed
/// build with the bare build's register budget; returns the build and nvcc's log.
fn compile_budgeted(
    nvcc: &Path,
    source: &Path,
    mode: u32,
) -> Result<(CompiledPtx, String), KernelsError> {
    let dir = header_dir()?;
    let budgets = if mode == layout::WS_OFF {
        Vec::new()
    } else {
        let (bare, _) = compile_once(nvcc, dir.path(), source, layout::WS_OFF, &[], &[])?;
        bare.entries
            .iter()
            .map(|e| (e.name.clone(), register_budget(e.registers)))
            .collect()
    };
    compile_once(nvcc, dir.path(), source, mode, &budgets, &[])
}

/// Compiles a user's `.cu` without probes (`WS_OFF`) and with `-lineinfo`, so that its PTX
/// carries `.loc` source lines: the input of the PTX rewriter (`instrument::rewrite`), which names
/// the sites it probes by those lines. `entries` holds the bare register counts (the budget of
/// the instrumented entries).
pub fn compile_ptx_lineinfo(source: &Path) -> Result<CompiledPtx, KernelsError> {
    let nvcc = checked_nvcc(layout::WS_OFF)?;
    let dir = header_dir()?;
    compile_once(
        &nvcc,
        dir.path(),
        source,
        layout::WS_OFF,
        &[],
        &["-lineinfo"],
    )
    .map(|(c, _)| c)
}

/// ptxas resource usage (sm_75) of every entry of `ptx`: registers of a bare `.ptx` input, for
/// the register budget of its instrumented entries.
pub fn ptx_usage(ptx: &str) -> Result<Vec<EntryUsage>, KernelsError> {
    let nvcc = nvcc_path().ok_or(KernelsError::ToolNotFound { tool: "nvcc" })?;
    let (dir, path) = crate::tools::temp_input("in.ptx", ptx.as_bytes())?;
    let command = format!(
        "nvcc -arch=sm_{PTX_ARCH} -cubin -Xptxas -v {}",
        path.display()
    );
    let o = crate::tools::run_tool(
        Command::new(&nvcc)
            .args([
                format!("-arch=sm_{PTX_ARCH}"),
                "-cubin".into(),
                "-Xptxas".into(),
                "-v".into(),
            ])
            .arg(&path)
            .arg("-o")
            .arg(dir.path().join("in.cubin")),
        &nvcc,
        &command,
    )?;
    let mut log = String::from_utf8_lossy(&o.stdout).into_owned();
    log.push_str(&String::from_utf8_lossy(&o.stderr));
    Ok(parse_entries(ptx, &log))
}

/// [`compile_ptx`] through a [`crate::cache::CompileCache`]: an unchanged source (same bytes,
/// same headers, flags and nvcc) is read back from the cache without running nvcc. Returns the
/// result and whether it came from the cache.
pub fn compile_ptx_cached(
    source: &Path,
    mode: u32,
    cache: &crate::cache::CompileCache,
) -> Result<(CompiledPtx, bool), KernelsError> {
    let nvcc = checked_nvcc(mode)?;
    let key = cache.key(&nvcc, source, mode)?;
    if let Some(hit) = cache.get(&key) {
        return Ok((hit, true));
    }
    let (compiled, log) = compile_budgeted(&nvcc, source, mode)?;
    cache.put(&key, &compiled, &log)?;
    Ok((compiled, false))
}

/// Compiles once; also returns the `ptxas -v` log (empty when ptxas failed).
fn compile_once(
    nvcc: &Path,
    dir: &Path,
    source: &Path,
    mode: u32,
    budgets: &[(String, u32)],
    extra: &[&str],
) -> Result<(CompiledPtx, String), KernelsError> {
    let out = dir.join(format!("out_m{mode}.ptx"));
    let src_dir = source
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut args: Vec<String> = vec![
        format!("-arch=compute_{PTX_ARCH}"),
        "-ptx".into(),
        "-O3".into(),
        format!("-DWS_MODE={mode}"),
        "-I".into(),
        dir.to_string_lossy().into_owned(),
        "-I".into(),
        src_dir.to_string_lossy().into_owned(),
        source.to_string_lossy().into_owned(),
        "-o".into(),
        out.to_string_lossy().into_owned(),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    let mut command = format!(
        "nvcc -arch=compute_{PTX_ARCH} -ptx -O3 -DWS_MODE={mode}{} -I <warpscope.cuh dir> -I {} {}",
        extra.iter().map(|a| format!(" {a}")).collect::<String>(),
        src_dir.display(),
        source.display()
    );
    if !budgets.is_empty() {
        command.push_str(" (+ .maxnreg per entry: the bare build's registers, rounded up to 2)");
    }
    crate::tools::run_tool(Command::new(nvcc).args(&args), nvcc, &command)?;
    let raw = std::fs::read_to_string(&out).map_err(|source| KernelsError::Io {
        path: out.clone(),
        source,
    })?;
    let ptx = if budgets.is_empty() {
        raw
    } else {
        let patched = with_maxnreg(&raw, budgets);
        std::fs::write(&out, &patched).map_err(|source| KernelsError::Io {
            path: out.clone(),
            source,
        })?;
        patched
    };
    // Resource usage: assemble the PTX for sm_75 with `ptxas -v` (through nvcc, like build.rs).
    let cubin = dir.join(format!("out_m{mode}.cubin"));
    let log = Command::new(nvcc)
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
            log
        })
        .unwrap_or_default();
    Ok((CompiledPtx::from_parts(ptx, command, &log), log))
}

impl CompiledPtx {
    /// The PTX, its command and the resource usage read from a `ptxas -v` log.
    pub(crate) fn from_parts(ptx: String, command: String, ptxas_log: &str) -> CompiledPtx {
        let entries = parse_entries(&ptx, ptxas_log);
        let registers = entries.iter().map(|e| e.registers).max();
        CompiledPtx {
            ptx,
            command,
            registers,
            entries,
        }
    }
}

/// The flags of [`compile_ptx`] besides paths, for the cache key.
pub(crate) fn compile_flags(mode: u32) -> String {
    format!("-arch=compute_{PTX_ARCH} -ptx -O3 -DWS_MODE={mode}; ptxas -arch=sm_{PTX_ARCH} -v")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_source_has_every_mode() {
        let sources: std::collections::BTreeSet<&str> = builds().iter().map(|b| b.source).collect();
        assert!(sources.contains("probe_test"));
        for s in sources {
            for m in layout::WS_OFF..=layout::WS_AUTO {
                let b = find(s, m).unwrap_or_else(|| panic!("{s} mode {m}"));
                assert!(b.command.contains(&format!("-DWS_MODE={m}")));
                assert!(!b.fatbin.is_empty());
            }
        }
    }

    #[test]
    fn probed_entries_stay_within_the_bare_register_budget() {
        // The budget is what keeps the bare kernel's occupancy: every probed entry of every
        // embedded build must meet it, and the PTX must carry the directive that enforces it.
        for b in builds().iter().filter(|b| b.mode != layout::WS_OFF) {
            let off = find(b.source, layout::WS_OFF).expect("off build");
            for e in b.entries {
                let bare = off.entry(e.name).expect("same entries").registers;
                let budget = crate::budget::register_budget(bare);
                assert!(
                    e.registers <= budget,
                    "{} mode {} {}: {} registers, budget {budget}",
                    b.source,
                    b.mode,
                    e.name,
                    e.registers
                );
                assert!(b.ptx.contains(&format!(".maxnreg {budget}")), "{}", e.name);
            }
        }
    }

    #[test]
    fn entries_have_resource_usage() {
        let b = find("probe_test", layout::WS_AUTO).expect("probe_test");
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
        // One instruction (prefix) per feature the corpus is there to cover.
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
        let probe = find("probe_test", layout::WS_OFF).expect("probe_test");
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
                   ptxas info    : Function properties for b_2\n\
                   \x20   8 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads\n\
                   ptxas info    : Used 12 registers, used 1 barriers, 256 bytes smem, 360 bytes cmem[0]\n\
                   ptxas info    : Compiling entry function 'a' for 'sm_75'\n\
                   ptxas info    : Used 7 registers, 352 bytes cmem[0]\n";
        let u = parse_entries(ptx, log);
        assert_eq!(u.len(), 2);
        assert_eq!(
            (u[0].name.as_str(), u[0].registers, u[0].spill_bytes),
            ("a", 7, 0)
        );
        assert_eq!(
            (
                u[1].name.as_str(),
                u[1].registers,
                u[1].static_shared_bytes,
                u[1].spill_bytes
            ),
            ("b_2", 12, 256, 12)
        );
    }

    #[test]
    fn maxnreg_goes_between_parameters_and_body() {
        let ptx = ".visible .entry a(\n.param .u32 p\n)\n{\nret;\n}\n.visible .entry b(\n)\n.maxnreg 20\n{\nret;\n}\n";
        let out = crate::budget::with_maxnreg(ptx, &[("a".into(), 32), ("b".into(), 24)]);
        assert_eq!(
            out,
            ".visible .entry a(\n.param .u32 p\n)\n.maxnreg 32\n{\nret;\n}\n.visible .entry b(\n)\n.maxnreg 20\n{\nret;\n}\n"
        );
        assert_eq!(crate::budget::register_budget(31), 32);
        assert_eq!(crate::budget::register_budget(32), 32);
        assert_eq!(crate::budget::register_budget(5), 24);
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
        let c = compile_ptx(&src, layout::WS_FENCE).expect("nvcc");
        assert!(c.ptx.contains(".entry k(") && c.ptx.contains("fence.acq_rel.cta"));
        assert!(
            c.ptx.contains(".maxnreg "),
            "probed builds carry the register budget"
        );
        assert!(c.command.contains("-DWS_MODE=2"));
        assert_eq!(c.entries.len(), 1);
        assert!(c.registers.is_some_and(|r| r > 0));
        let err = compile_ptx(&dir.path().join("missing.cu"), 0);
        assert!(matches!(err, Err(KernelsError::ToolFailed { .. })));
    }

    #[test]
    fn bad_config_is_an_error() {
        let r = compile_ptx(Path::new("x.cu"), 9);
        assert!(matches!(r, Err(KernelsError::BadConfig { mode: 9 })));
    }
}
