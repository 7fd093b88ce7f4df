//! `warpscope instrument`: probes put into an unmodified kernel's PTX (instrument::rewrite), and
//! the shared step of `warpscope launch --instrument`.

use anyhow::{Context, Result, bail};
use clap::Args;
use instrument::rewrite::{Instrumented, RewriteOptions, SiteSet, instrument_ptx};
use std::path::{Path, PathBuf};
use trace::ProbeMode;

#[derive(Args, Debug)]
pub struct InstrumentArgs {
    /// The kernel source: a .cu (compiled with -lineinfo, without probes) or a .ptx.
    pub input: PathBuf,
    /// Only this entry (default: every entry).
    #[arg(long)]
    pub kernel: Option<String>,
    /// naive, fence, dummy, or auto (fence for writable memory, dummy for read-only memory).
    #[arg(long, default_value = "auto")]
    pub mode: ProbeMode,
    /// Loads to time: global, texture, readonly, constant, shared, local (comma-separated).
    #[arg(long, default_value = "global,texture,readonly,constant")]
    pub sites: SiteSet,
    /// Output PTX (default: IN with extension .ws.ptx).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Reads (or compiles) `input` and instruments it. The probed entries get the header builds'
/// register budget when ptxas can tell the bare entries' registers (else a note says so).
pub fn instrument_source(input: &Path, opts: &RewriteOptions) -> Result<Instrumented> {
    let ext = input.extension().and_then(|e| e.to_str()).unwrap_or("");
    let (ptx, usage) = match ext {
        "cu" => {
            let c = kernels::compile_ptx_lineinfo(input).with_context(|| {
                format!(
                    "compiling {} (run scripts/setup-cuda if nvcc is missing, or give a .ptx)",
                    input.display()
                )
            })?;
            eprintln!("warpscope: {}", c.command);
            (c.ptx, Ok(c.entries))
        }
        "ptx" => {
            let ptx = std::fs::read_to_string(input)
                .with_context(|| format!("cannot read {}", input.display()))?;
            let usage = kernels::ptx_usage(&ptx);
            (ptx, usage)
        }
        _ => bail!("{}: input must be a .cu or .ptx file", input.display()),
    };
    let inst =
        instrument_ptx(&ptx, opts).with_context(|| format!("instrumenting {}", input.display()))?;
    Ok(match usage {
        Ok(entries) if !entries.is_empty() => inst.with_register_budget(&entries),
        other => {
            let why = match other {
                Err(e) => e.to_string(),
                Ok(_) => "ptxas reported no entries".into(),
            };
            eprintln!(
                "warpscope: note: no bare register counts for {} ({why}); the probed entries get no .maxnreg budget",
                input.display()
            );
            inst
        }
    })
}

pub fn run(args: &InstrumentArgs) -> Result<()> {
    let opts = RewriteOptions {
        mode: args.mode,
        sites: args.sites.clone(),
        kernel: args.kernel.clone(),
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.input.with_extension("ws.ptx"));
    trace::check_output_against(&out, &[args.input.as_path()])?;
    let inst = instrument_source(&args.input, &opts)?;
    trace::write_bytes_atomic(&out, inst.ptx.as_bytes())?;
    for k in &inst.kernels {
        println!("{}: {} sites", k.name, k.sites.len());
        for s in &k.sites {
            println!(
                "  site {:>2}  {:<8}  {:<5}  {}",
                s.info.id,
                s.kind.name(),
                s.method.name(),
                s.info.name
            );
        }
    }
    eprintln!(
        "warpscope: wrote {} (launch it with a log = true argument last and --mode {})",
        out.display(),
        inst.mode.name()
    );
    Ok(())
}

/// `launch --instrument MODE`: the spec's kernel instrumented on the fly, with the log argument
/// appended to the spec's arguments (which must not name one).
pub(crate) fn for_launch(
    source: &Path,
    kernel: &str,
    mode: Option<ProbeMode>,
    plans: &mut Vec<crate::spec::ArgPlan>,
) -> Result<crate::launch::Compiled> {
    if plans.contains(&crate::spec::ArgPlan::Log) {
        bail!(
            "--instrument appends the log argument itself; remove the spec's log = true argument"
        );
    }
    let opts = RewriteOptions {
        mode: mode.unwrap_or(ProbeMode::Auto),
        sites: SiteSet::default(),
        kernel: Some(kernel.to_string()),
    };
    let inst = instrument_source(source, &opts)?;
    let sites = inst.kernel(kernel).map(|k| k.site_infos());
    for k in &inst.kernels {
        for s in &k.sites {
            eprintln!(
                "warpscope: {}: site {} {} {} at {}",
                k.name,
                s.info.id,
                s.kind.name(),
                s.method.name(),
                s.info.name
            );
        }
    }
    plans.push(crate::spec::ArgPlan::Log);
    // Registers per thread of the probed entry, for the emulator's occupancy (as for a .cu).
    let regs = kernels::ptx_usage(&inst.ptx).ok().and_then(|u| {
        u.iter()
            .find(|e| e.name == kernel)
            .map(|e| e.registers)
            .filter(|&r| r > 0)
    });
    Ok(crate::launch::Compiled {
        ptx: inst.ptx,
        regs,
        mode: Some(opts.mode),
        sites,
    })
}
