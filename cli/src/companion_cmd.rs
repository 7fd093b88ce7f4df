//! `warpscope roofline`, `reuse` and `compare`: the companion methods that explain *why* the
//! measured memory time is what it is (roofline ceilings, working set and reuse distance,
//! single-reference regression across platforms). The work is in `study` and `analysis`.

use crate::EmuArgs;
use anyhow::{Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct RooflineArgs {
    #[command(flatten)]
    pub emu: EmuArgs,
    /// Output folder: ceilings.csv, benches.json, roofline_ceilings.{png,svg}.
    #[arg(long, default_value = "roofline-out")]
    pub out: PathBuf,
}

pub fn roofline(args: &RooflineArgs) -> Result<()> {
    let cfg = args.emu.gpu_config()?;
    eprintln!(
        "warpscope: roofline microbenchmarks on the emulator ({})",
        cfg.name
    );
    let opts = study::BenchOptions {
        limits: args.emu.limits(false),
        ..Default::default()
    };
    let c = study::roofline_command(&cfg, &opts, &args.out, true)?;
    println!(
        "measured ceilings on {}: {:.1} GFLOP/s ({:.1} % of theoretical), DRAM {:.1} GB/s ({:.1} % of theoretical) -> {}",
        cfg.name,
        c.flops_per_s / 1e9,
        c.pct_of_theoretical_flops,
        c.dram_bytes_per_s / 1e9,
        c.pct_of_theoretical_dram,
        args.out.display()
    );
    Ok(())
}

#[derive(Args, Debug)]
pub struct ReuseArgs {
    #[command(flatten)]
    pub emu: EmuArgs,
    /// Output folder; put it at SWEEP/reuse and `warpscope analyze SWEEP` adds the section.
    #[arg(long, default_value = "reuse-out")]
    pub out: PathBuf,
}

/// Runs the working-set / reuse-distance study (3 block shapes × 3 volume layouts × 6 texture
/// cache sizes on the emulator) into `out`.
pub fn reuse_into(gpu: emulator::GpuConfig, limits: device::EmuLimits, out: &Path) -> Result<()> {
    let cfg = study::ReuseStudyConfig {
        limits,
        ..study::ReuseStudyConfig::demo(gpu)
    };
    let s = study::reuse_study(&cfg, out)
        .with_context(|| format!("reuse study into {}", out.display()))?;
    if let Some(e) = s.mean_abs_error {
        eprintln!(
            "warpscope: reuse study: stack-distance prediction vs simulated hit rate, mean |error| {e:.3} -> {}",
            out.display()
        );
    }
    Ok(())
}

pub fn reuse(args: &ReuseArgs) -> Result<()> {
    reuse_into(args.emu.gpu_config()?, args.emu.limits(false), &args.out)
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Sweep folders; the first is the reference platform (the emulator).
    #[arg(required = true, num_args = 2..)]
    pub sweeps: Vec<PathBuf>,
    /// Output folder: compare.md, compare_times.csv and the figure.
    #[arg(long, default_value = "compare-out")]
    pub out: PathBuf,
}

pub fn compare(args: &CompareArgs) -> Result<()> {
    let s = analysis::compare(&args.sweeps, &args.out)?;
    for w in &s.warnings {
        eprintln!("warpscope: {w}");
    }
    println!(
        "compared {} platforms over {} runs -> {}",
        s.platforms.len(),
        s.runs.len(),
        args.out.join("compare.md").display()
    );
    Ok(())
}
