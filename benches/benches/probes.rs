//! Probe overhead on the demo kernel: the volume renderer's *simulated* kernel time per probe mode,
//! record kind and sampling rate (`--time-warps`: every warp, every 4th, every 16th;
//! `--time-accesses`: every 2nd, 4th and 8th access; all but every warp and access with the
//! sampled build), beside the bare (`WS_OFF`) build, on the emulator's GTX 480 preset
//! at the demo's quick geometry (256³ blobs, 128×128, tstep 0.04), view (0,0,0), 16×8 blocks.
//!
//! What is measured is GPU time, not the emulator's wall time: each sample's duration is the
//! emulated kernel's cycles at the preset's clock (criterion's `iter_custom`). The emulator is
//! deterministic, so one launch per sample gives the exact value and the sample is that value
//! times the iteration count; criterion's spread is then zero and the ratio of two benches is the
//! probe overhead. Run with `cargo bench -p warpscope-benches --bench probes`.

use criterion::{Criterion, criterion_group, criterion_main};
use device::EmuDevice;
use instrument::{AccessPeriod, WarpSelection};
use std::time::Duration;
use study::{BlockShape, RenderConfig, Scale, View, VolumeKind};
use trace::ProbeMode;

/// Simulated seconds of one frame of the demo kernel in `mode`, tracing `trace_warps` and timing
/// `time_warps`, one access in `period`.
fn frame_seconds(
    mode: ProbeMode,
    trace_warps: &WarpSelection,
    time_warps: &WarpSelection,
    period: u32,
) -> f64 {
    let config = emulator::GpuConfig::preset("gtx480").unwrap_or_else(|e| panic!("{e}"));
    let clock_hz = config.clock_mhz * 1e6;
    let mut dev = EmuDevice::new(config.clone());
    let quick = Scale::Quick.geometry();
    let cfg = RenderConfig {
        volume: quick.volume(VolumeKind::Blobs, 1),
        params: quick.params(),
        shape: BlockShape::new(16, 8),
        view: View::new(0.0, 0.0, 0.0),
        mode,
        trace_warps: trace_warps.clone(),
        time_warps: time_warps.clone(),
        time_accesses: AccessPeriod::new(period).unwrap_or_else(|| panic!("period {period}")),
        slots_per_warp: 1024,
        frames: 1,
        measure_overhead: false,
        compare_reference: false,
        ncu: None,
        emu_config: Some(config),
    };
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let r = study::render(&mut dev, &cfg, dir.path()).unwrap_or_else(|e| panic!("{e}"));
    r.metrics.cycles.unwrap_or(0) as f64 / clock_hz
}

fn overhead(c: &mut Criterion) {
    let mut g = c.benchmark_group("volume_render_gtx480_simulated");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_millis(1));
    let all = WarpSelection::all();
    let every = |n: u32| -> WarpSelection {
        format!("every:{n}")
            .parse()
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let none = WarpSelection::none;
    let cases = [
        ("off", ProbeMode::Off, none(), all.clone(), 1),
        ("naive_summary", ProbeMode::Naive, none(), all.clone(), 1),
        ("fence_summary", ProbeMode::Fence, none(), all.clone(), 1),
        ("dummy_summary", ProbeMode::Dummy, none(), all.clone(), 1),
        ("naive_trace", ProbeMode::Naive, all.clone(), all.clone(), 1),
        ("fence_trace", ProbeMode::Fence, all.clone(), all.clone(), 1),
        ("dummy_trace", ProbeMode::Dummy, all.clone(), all.clone(), 1),
        ("naive_time_every4", ProbeMode::Naive, none(), every(4), 1),
        ("fence_time_every4", ProbeMode::Fence, none(), every(4), 1),
        ("naive_time_every16", ProbeMode::Naive, none(), every(16), 1),
        ("fence_time_every16", ProbeMode::Fence, none(), every(16), 1),
        (
            "naive_accesses_every2",
            ProbeMode::Naive,
            none(),
            all.clone(),
            2,
        ),
        (
            "fence_accesses_every2",
            ProbeMode::Fence,
            none(),
            all.clone(),
            2,
        ),
        (
            "naive_accesses_every4",
            ProbeMode::Naive,
            none(),
            all.clone(),
            4,
        ),
        (
            "fence_accesses_every4",
            ProbeMode::Fence,
            none(),
            all.clone(),
            4,
        ),
        (
            "naive_accesses_every8",
            ProbeMode::Naive,
            none(),
            all.clone(),
            8,
        ),
        (
            "fence_accesses_every8",
            ProbeMode::Fence,
            none(),
            all.clone(),
            8,
        ),
    ];
    for (name, mode, trace_warps, time_warps, period) in cases {
        let seconds = frame_seconds(mode, &trace_warps, &time_warps, period);
        g.bench_function(name, |b| {
            b.iter_custom(|iters| Duration::from_secs_f64(seconds * iters as f64))
        });
    }
    g.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);
