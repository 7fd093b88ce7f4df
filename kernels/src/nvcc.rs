//! Compiling a user's `.cu` with the project's nvcc and probe header at run time (`warpscope
//! launch x.cu`, `warpscope instrument x.cu`), with the same flags as the embedded builds, and
//! reading ptxas's resource usage.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::KernelsError;
use crate::budget::{EntryUsage, parse_entries, register_budget, with_maxnreg};
use crate::embedded::{PTX_ARCH, probe_header};
use crate::layout;
use crate::toolchain::{nvcc_path, run_tool, temp_input};

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
/// needs `#include "warpscope.cuh"`; its own directory is on the include path too. `sampled`
/// builds the probes with the bare path of an untimed access (`-DWS_SAMPLED=1`), which a launch
/// that times only some warps or some accesses needs.
pub fn compile_ptx(source: &Path, mode: u32, sampled: bool) -> Result<CompiledPtx, KernelsError> {
    let nvcc = checked_nvcc(mode)?;
    compile_budgeted(&nvcc, source, mode, sampled).map(|(c, _)| c)
}

/// The nvcc flag of a sampled build (see [`compile_ptx`]).
pub const SAMPLED_FLAG: &str = "-DWS_SAMPLED=1";

/// The nvcc to compile a build of `mode` with, once `mode` is known to be one.
pub(crate) fn checked_nvcc(mode: u32) -> Result<PathBuf, KernelsError> {
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
pub(crate) fn compile_budgeted(
    nvcc: &Path,
    source: &Path,
    mode: u32,
    sampled: bool,
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
    let extra: &[&str] = if sampled && mode != layout::WS_OFF {
        &[SAMPLED_FLAG]
    } else {
        &[]
    };
    compile_once(nvcc, dir.path(), source, mode, &budgets, extra)
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
    ptx_usage_for(ptx, PTX_ARCH)
}

/// ptxas resource usage of every entry of `ptx` assembled for `sm_{arch}`: the registers a GPU
/// of that target gives each entry, which differ from sm_75's (a kernel of 42 registers there
/// takes 38 on sm_90), and with them how many blocks fit its SM.
pub fn ptx_usage_for(ptx: &str, arch: u32) -> Result<Vec<EntryUsage>, KernelsError> {
    let nvcc = nvcc_path().ok_or(KernelsError::ToolNotFound { tool: "nvcc" })?;
    let (dir, path) = temp_input("in.ptx", ptx.as_bytes())?;
    let command = format!("nvcc -arch=sm_{arch} -cubin -Xptxas -v {}", path.display());
    let o = run_tool(
        Command::new(&nvcc)
            .args([
                format!("-arch=sm_{arch}"),
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
    run_tool(Command::new(nvcc).args(&args), nvcc, &command)?;
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
pub(crate) fn compile_flags(mode: u32, sampled: bool) -> String {
    let flag = if sampled { SAMPLED_FLAG } else { "" };
    format!(
        "-arch=compute_{PTX_ARCH} -ptx -O3 -DWS_MODE={mode} {flag}; ptxas -arch=sm_{PTX_ARCH} -v"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let c = compile_ptx(&src, layout::WS_FENCE, false).expect("nvcc");
        assert!(c.ptx.contains(".entry k(") && c.ptx.contains("fence.acq_rel.cta"));
        assert!(
            c.ptx.contains(".maxnreg "),
            "probed builds carry the register budget"
        );
        assert!(c.command.contains("-DWS_MODE=2"));
        assert_eq!(c.entries.len(), 1);
        assert!(c.registers.is_some_and(|r| r > 0));
        let err = compile_ptx(&dir.path().join("missing.cu"), 0, false);
        assert!(matches!(err, Err(KernelsError::ToolFailed { .. })));
    }

    #[test]
    fn bad_config_is_an_error() {
        let r = compile_ptx(Path::new("x.cu"), 9, false);
        assert!(matches!(r, Err(KernelsError::BadConfig { mode: 9 })));
    }
}
