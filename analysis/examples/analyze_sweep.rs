//! Analyses a sweep directory without the CLI: `analyze_sweep SWEEPDIR [OUTDIR]` (default
//! `SWEEPDIR/analysis`), then prints the findings and where the report is.

use analysis::{AnalyzeOptions, analyze};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(sweep) = args.next().map(PathBuf::from) else {
        eprintln!("usage: analyze_sweep SWEEPDIR [OUTDIR]");
        return ExitCode::from(2);
    };
    let out = args
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| sweep.join("analysis"));
    match analyze(&sweep, &out, &AnalyzeOptions::default()) {
        Ok(s) => {
            for f in &s.findings {
                println!("- {f}");
            }
            for n in s.skipped.iter().chain(&s.excluded_from_correlation) {
                println!("note: {n}");
            }
            println!("report: {}", s.report_html.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
