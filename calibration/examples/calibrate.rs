//! Computes the model's value of every row of `docs/calibration/calibration.toml` on the
//! emulator and prints it beside the recorded one and silicon's:
//!
//! ```text
//! cargo run -p warpscope-calibration --example calibrate -- [--write] [--expensive] [--frames-dir DIR] [--only ID-PREFIX,...]
//! ```
//!
//! `--write` records the computed values in the table and writes `docs/validation.md` from it;
//! `--expensive` also computes the paper-scale frames (kernel times, texture and L2 hit rates),
//! the probes' cost over them and the DRAM patterns (about an hour on two cores in a release
//! build, up to 2 GiB of memory for the patterns in the table), which are otherwise left as
//! recorded.
//! The paper-scale frames are swept into `--frames-dir` (default `target/calibration-frames`),
//! where an interrupted sweep resumes. `--only` computes the rows whose id starts with one of the
//! prefixes (`--only h100.dram.rate`) and leaves the others as recorded. Exits with 1 when a computed value differs from the
//! recorded one and the table was not written.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use calibration::{CalibrationError, Options, Table, page};

struct Args {
    write: bool,
    expensive: bool,
    frames_dir: Option<PathBuf>,
    only: Vec<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        write: false,
        expensive: false,
        frames_dir: None,
        only: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--write" => args.write = true,
            "--expensive" => args.expensive = true,
            "--frames-dir" => {
                args.frames_dir = Some(it.next().ok_or("--frames-dir needs a folder")?.into())
            }
            "--only" => {
                let list = it.next().ok_or("--only needs row id prefixes")?;
                args.only = list.split(',').map(str::to_owned).collect();
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?}; use [--write] [--expensive] [--frames-dir DIR] [--only ID-PREFIX,...]"
                ));
            }
        }
    }
    Ok(args)
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Whether every computed value equals the recorded one.
fn run(args: &Args) -> Result<bool, CalibrationError> {
    let root = root();
    let mut table = Table::read(&root)?;
    let opts = Options {
        expensive: args.expensive,
        only: &args.only,
        frames_dir: args
            .frames_dir
            .clone()
            .unwrap_or_else(|| root.join("target/calibration-frames")),
        progress: &|what| eprintln!("calibrate: {what}"),
    };
    let values = calibration::recompute(&root, &table, &opts)?;
    let mut same = true;
    println!(
        "{:<40} {:>12} {:>12} {:>12}  verdict",
        "row", "silicon", "recorded", "computed"
    );
    for (row, value) in table.row.iter_mut().zip(values) {
        let shown = |v: Option<f64>| v.map_or("–".to_string(), calibration::num);
        let changed = value.is_some() && value != row.model;
        same &= !changed;
        println!(
            "{:<40} {:>12} {:>12} {:>12}{}",
            row.id,
            calibration::num(row.silicon),
            shown(row.model),
            shown(value),
            if changed { "  changed" } else { "" }
        );
        if let Some(v) = value {
            row.model = Some(v);
        }
    }
    if args.write {
        table.write(&root)?;
        page::write(&root, &table)?;
        eprintln!(
            "calibrate: wrote {} and {}",
            calibration::TABLE_PATH,
            page::PAGE_PATH
        );
        return Ok(true);
    }
    Ok(same)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("calibrate: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!(
                "calibrate: computed values differ from the recorded ones (--write records them)"
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("calibrate: {}", trace::error_chain(&e));
            ExitCode::FAILURE
        }
    }
}
