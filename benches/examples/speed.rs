//! Simulated warp instructions per second of the emulator's speed workloads, one launch each
//! (release build): `cargo run --release -p warpscope-benches --example speed [NAME [SIZE]]`,
//! where NAME (collatz, matmul, histogram, volume_render, volume_render_gtx480,
//! volume_render_gtx480_side, volume_render_h100, volume_render_h100_side) runs one alone, e.g.
//! under `valgrind --tool=callgrind`, and SIZE replaces its default size (collatz's and the
//! histogram's n, matmul's n, the renders' image side); `RAYON_NUM_THREADS=N` sets the threads.
//! The criterion benchmarks time the same workloads; `scripts/speed-cost` runs two sizes of one
//! to count what a warp instruction costs.

use std::process::ExitCode;

const NAMES: [&str; 8] = [
    "collatz",
    "matmul",
    "histogram",
    "volume_render",
    "volume_render_gtx480",
    "volume_render_gtx480_side",
    "volume_render_h100",
    "volume_render_h100_side",
];

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let only = args.next();
    let size = match args.next().map(|s| s.parse::<u32>()) {
        None => None,
        Some(Ok(n)) if n > 0 => Some(n),
        Some(_) => {
            eprintln!("speed: SIZE must be a positive whole number");
            return ExitCode::FAILURE;
        }
    };
    if let Some(o) = only.as_deref().filter(|o| !NAMES.contains(o)) {
        eprintln!(
            "speed: no workload {o}; the workloads: {}",
            NAMES.join(", ")
        );
        return ExitCode::FAILURE;
    }
    if only.as_deref() == Some("matmul") && size.is_some_and(|n| n % 16 != 0) {
        eprintln!("speed: matmul's SIZE must be a multiple of 16 (its tile)");
        return ExitCode::FAILURE;
    }
    for name in NAMES {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let or = |default: u32| size.unwrap_or(default);
        let mut w = match name {
            "collatz" => warpscope_benches::collatz(or(1 << 16) as usize),
            "matmul" => warpscope_benches::matmul(or(256) as usize),
            "histogram" => warpscope_benches::histogram(or(1 << 20) as usize),
            "volume_render" => warpscope_benches::volume_render(or(128), 64),
            "volume_render_gtx480" => warpscope_benches::volume_render_on("gtx480", or(128), 256),
            "volume_render_gtx480_side" => {
                warpscope_benches::volume_render_side("gtx480", or(128), 256)
            }
            "volume_render_h100" => warpscope_benches::volume_render_on("h100", or(128), 256),
            _ => warpscope_benches::volume_render_side("h100", or(128), 256),
        };
        let t = std::time::Instant::now();
        let s = w.launch();
        let secs = t.elapsed().as_secs_f64();
        println!(
            "{}: {} warp instructions, {} cycles, {secs:.3} s, {:.2} M warp instructions/s",
            w.name,
            s.warp_instructions,
            s.cycles,
            s.warp_instructions as f64 / secs / 1e6
        );
    }
    ExitCode::SUCCESS
}
