//! Emulator speed: simulated warp instructions per second on the speed workloads
//! (`warpscope_benches`), each on one host thread and on two (the SMs of a launch run in
//! parallel rounds; the results are the same), and on runs of the demo. Throughput is in
//! "elements" = warp instructions, so criterion prints warp instructions per second directly.
//! Run with `cargo bench -p warpscope-benches --bench emulator`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::path::Path;
use std::time::Duration;
use study::{BlockShape, Scale, View};
use trace::ProbeMode;
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

/// Runs of `warpscope demo` as it renders them (quick geometry, blobs volume, gtx480, fenced
/// probes, every 61st warp traced), on one host thread, without the bare frame: what the demo's
/// speed line reports, `sim_warp_instructions_per_second` of run.json, whose median over the
/// demo's runs is the figure the emulator's speed is judged by. The slowest kind of the demo's
/// runs, 128×1 blocks at the 90° view where the texture cache mostly misses and the memory
/// model does most of the work, and a fast one, 32×4 head-on.
fn demo_runs(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let sweep = study::demo_config(dir.path(), Scale::Quick).expect("the demo's sweep");
    let volume = sweep.volume.load().expect("the demo's volume");
    for (id, shape, view) in [
        ("128x1_v90-0-90", BlockShape::new(128, 1), View::PAPER[1]),
        ("32x4_v0-0-0", BlockShape::new(32, 4), View::PAPER[0]),
    ] {
        let mut cfg = sweep.run_config(shape, view, ProbeMode::Fence);
        cfg.measure_overhead = false;
        let renders = Renders::new(&cfg, &volume, dir.path());
        renders.bench(c, &format!("demo_run_{id}/threads_1"));
    }
}

/// One render of the demo's reuse study (64³ blobs volume, 128×128 image, head-on, gtx480 with
/// its own texture cache, probes off), on one host thread: the study renders 54 of these and
/// simulates more than twice the sweep's warp instructions, so it is most of a quick demo's
/// time. Its volume fits the texture cache, so unlike the demo runs above it is compute-bound:
/// the issue engine and the texture filter, not the memory model.
fn reuse_run(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let gpu = emulator::GpuConfig::preset("gtx480").expect("the gtx480 preset");
    let reuse = study::ReuseStudyConfig::demo(gpu.clone());
    let volume = reuse.volume.load().expect("the study's volume");
    let cfg = reuse.render_config(BlockShape::new(16, 8), gpu);
    Renders::new(&cfg, &volume, dir.path()).bench(c, "reuse_run_16x8_v0-0-0/threads_1");
}

/// Renders of one configuration, each on a fresh emulator (the configuration's own GPU config)
/// on one host thread, timed by the launches' host seconds (`iter_custom`), not the render
/// around them (volume upload, output files).
struct Renders<'a> {
    pool: rayon::ThreadPool,
    cfg: &'a study::RenderConfig,
    volume: &'a study::Volume,
    dir: &'a Path,
}

impl<'a> Renders<'a> {
    fn new(cfg: &'a study::RenderConfig, volume: &'a study::Volume, dir: &'a Path) -> Self {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("a thread pool");
        Renders {
            pool,
            cfg,
            volume,
            dir,
        }
    }

    /// One render: its warp instructions and the host seconds its launch took.
    fn once(&self) -> (u64, f64) {
        let gpu = self.cfg.emu_config.clone();
        let mut dev = device::EmuDevice::new(gpu.expect("an emulator render names its config"));
        let out = self.dir.join("render");
        let m = self
            .pool
            .install(|| study::render_volume(&mut dev, self.cfg, self.volume, &out))
            .unwrap_or_else(|e| panic!("render: {e}"))
            .metrics;
        let _ = std::fs::remove_dir_all(&out);
        let instructions = m
            .warp_instructions
            .expect("an emulator run counts instructions");
        let rate = m.sim_warp_instructions_per_second.expect("and its speed");
        (instructions, instructions as f64 / rate)
    }

    fn bench(&self, c: &mut Criterion, id: &str) {
        let (instructions, _) = self.once();
        let mut g = c.benchmark_group("emulator");
        g.throughput(Throughput::Elements(instructions));
        g.sample_size(10);
        g.bench_function(id, |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| Duration::from_secs_f64(self.once().1))
                    .sum()
            })
        });
        g.finish();
    }
}

criterion_group!(benches, workloads, demo_runs, reuse_run);
criterion_main!(benches);
