//! Single-reference comparison of sweeps (the first is the reference): ranked features per
//! platform, R², and crossovers. What `warpscope compare` does.
//!
//! `cargo run -p warpscope-analysis --example compare -- OUT SWEEP_A SWEEP_B …`

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(
        args.next()
            .ok_or("usage: compare OUT SWEEP_A [SWEEP_B …]")?,
    );
    let sweeps: Vec<PathBuf> = args.map(PathBuf::from).collect();
    let s = analysis::compare(&sweeps, &out)?;
    for sel in &s.selections {
        let f: Vec<String> = sel
            .steps
            .iter()
            .map(|st| format!("{} (R² {:.3})", st.feature, st.r2))
            .collect();
        println!(
            "{}: {} → R² {:.3}, adj {:.3}",
            sel.target,
            f.join(", "),
            sel.r2,
            sel.adj_r2
        );
    }
    for c in &s.crossovers {
        println!(
            "crossover {} vs {}: between {} and {} the faster becomes {}",
            c.platform_a, c.platform_b, c.before_run, c.after_run, c.faster_after
        );
    }
    for w in &s.warnings {
        println!("warning: {w}");
    }
    Ok(())
}
