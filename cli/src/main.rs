//! `warpscope`: the command line. Arguments become plain config structs here; the work is done
//! by the library crates. This is the only crate that uses `anyhow`; `main` prints an error once,
//! with its chain of causes, and exits non-zero.

mod launch;
mod spec;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "warpscope", version, about = "Measure how long memory accesses inside CUDA kernels really take, warp by warp")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run any kernel described by a launch spec (TOML) on the GPU or the emulator.
    Launch(launch::LaunchArgs),
    /// List the emulator presets, or print one preset's effective configuration as TOML.
    Presets {
        /// Print this preset's configuration.
        name: Option<String>,
    },
}

/// Options shared by every command that can run the emulator.
#[derive(Args, Clone, Debug)]
pub struct EmuArgs {
    /// gpu, emu, or auto (the GPU when one is usable).
    #[arg(long, default_value = "auto")]
    pub backend: instrument::BackendChoice,
    /// Emulator preset: gtx480, v100, a100, h100.
    #[arg(long, default_value = "gtx480", conflicts_with = "config")]
    pub preset: String,
    /// Emulator configuration file (TOML), instead of a preset.
    #[arg(long)]
    pub config: Option<PathBuf>,
}

impl EmuArgs {
    pub fn gpu_config(&self) -> Result<emulator::GpuConfig> {
        match &self.config {
            Some(path) => Ok(emulator::GpuConfig::from_file(path)?),
            None => Ok(emulator::GpuConfig::preset(&self.preset)?),
        }
    }
}

/// Writes `bytes` to `path` through a temp file and a rename, so no reader ever sees a partial file.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let result = std::fs::File::create(&tmp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        })
        .and_then(|_| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.with_context(|| format!("cannot write {}", path.display()))
}

fn run() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Launch(args) => launch::run(&args),
        Command::Presets { name: None } => {
            for name in emulator::GpuConfig::preset_names() {
                println!("{name}");
            }
            Ok(())
        }
        Command::Presets { name: Some(name) } => {
            print!("{}", emulator::GpuConfig::preset(&name)?.to_toml());
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("warpscope: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
