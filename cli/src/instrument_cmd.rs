//! `warpscope instrument`: probes put into an unmodified kernel's PTX (the `instrument` crate's
//! rewriter, through the launch library, which `launch --instrument` shares).

use anyhow::Result;
use clap::Args;
use instrument::rewrite::{RewriteOptions, SiteSet};
use std::path::PathBuf;
use trace::ProbeMode;

#[derive(Args, Debug)]
pub struct InstrumentArgs {
    /// The kernel source: a .cu (compiled with -lineinfo, without probes) or a .ptx.
    pub input: PathBuf,
    /// Only this entry (default: every entry).
    #[arg(long)]
    pub kernel: Option<String>,
    /// How the probes time each load: naive, fence, dummy, or auto (fence for writable memory,
    /// dummy for read-only memory).
    #[arg(long, default_value = "auto")]
    pub mode: ProbeMode,
    /// Loads to time: global, texture, readonly, constant, shared, local (comma-separated).
    #[arg(long, default_value = "global,texture,readonly,constant")]
    pub sites: SiteSet,
    /// Output PTX (default: IN with extension .ws.ptx).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Give every probe the bare path of an untimed access, so that a launch of the output may
    /// time only some warps or some accesses (`launch --time-warps`, `--time-accesses`); without
    /// it every warp times every access.
    #[arg(long)]
    pub sampled: bool,
}

pub fn run(args: &InstrumentArgs) -> Result<()> {
    let opts = RewriteOptions {
        mode: args.mode,
        sites: args.sites.clone(),
        kernel: args.kernel.clone(),
        sampled: args.sampled,
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.input.with_extension("ws.ptx"));
    trace::check_output_against(&out, &[args.input.as_path()])?;
    let inst =
        launch::instrument_source(&args.input, &opts, &|note| eprintln!("warpscope: {note}"))?;
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
