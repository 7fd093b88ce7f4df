//! Simulated warp instructions per second of the emulator's speed workloads, one launch each
//! (release build): `cargo run --release -p warpscope-benches --example speed [NAME]`, where NAME
//! (collatz, matmul, histogram, volume_render, volume_render_gtx480, volume_render_gtx480_side)
//! runs one alone, e.g. under `valgrind --tool=callgrind`; `RAYON_NUM_THREADS=N` sets the
//! threads. The criterion benchmarks time the same workloads.

fn main() {
    let only = std::env::args().nth(1);
    for name in [
        "collatz",
        "matmul",
        "histogram",
        "volume_render",
        "volume_render_gtx480",
        "volume_render_gtx480_side",
    ] {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let mut w = match name {
            "collatz" => warpscope_benches::collatz(1 << 16),
            "matmul" => warpscope_benches::matmul(256),
            "histogram" => warpscope_benches::histogram(1 << 20),
            "volume_render" => warpscope_benches::volume_render(128, 64),
            "volume_render_gtx480" => warpscope_benches::volume_render_on("gtx480", 128, 256),
            _ => warpscope_benches::volume_render_side("gtx480", 128, 256),
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
}
