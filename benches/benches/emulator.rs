//! Emulator speed: simulated warp instructions per second on the speed workloads
//! (`warpscope_benches`), each on one host thread and on two (the SMs of a launch run in
//! parallel rounds; the results are the same). Throughput is in "elements" = warp
//! instructions, so criterion prints warp instructions per second directly. Run with
//! `cargo bench -p warpscope-benches --bench emulator`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use warpscope_benches::Workload;

fn bench(c: &mut Criterion, id: &str, make: fn() -> Workload) {
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool");
        let mut w = make();
        let instructions = pool.install(|| w.launch().warp_instructions);
        let mut g = c.benchmark_group("emulator");
        g.throughput(Throughput::Elements(instructions));
        g.sample_size(10);
        g.bench_function(format!("{id}/threads_{threads}"), |b| {
            b.iter(|| pool.install(|| w.launch().cycles))
        });
        g.finish();
    }
}

fn workloads(c: &mut Criterion) {
    bench(c, "collatz_64k", || warpscope_benches::collatz(1 << 16));
    bench(c, "matmul_128", || warpscope_benches::matmul(128));
    bench(c, "histogram_shared_1M", || {
        warpscope_benches::histogram(1 << 20)
    });
    bench(c, "volume_render_128_64", || {
        warpscope_benches::volume_render(128, 64)
    });
    bench(c, "volume_render_gtx480_128_256", || {
        warpscope_benches::volume_render_on("gtx480", 128, 256)
    });
    bench(c, "volume_render_gtx480_side_128_256", || {
        warpscope_benches::volume_render_side("gtx480", 128, 256)
    });
}

criterion_group!(benches, workloads);
criterion_main!(benches);
