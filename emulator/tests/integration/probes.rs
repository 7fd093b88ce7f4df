//! The probe header (`kernels/warpscope.cuh`) in every mode, traced or not, on the emulator:
//! outputs stay correct, every warp's log area is written, and the fenced/dummy probes measure the load
//! while the naive one does not (the paper's effect).

use crate::common::*;
use kernels::layout as L;

struct ProbeRun {
    out: Vec<f32>,
    /// (count, flags, site-0 statistics count, durations of the warp's records)
    warps: Vec<(u32, u32, u32, Vec<u32>)>,
}

fn run_probe_global(mode: u32, traced: bool) -> ProbeRun {
    let b = kernels::find("probe_test", mode).unwrap_or_else(|| panic!("build mode {mode}"));
    let mut r = Rig::new(b.ptx);
    let n = 1000usize;
    let (block, grid) = (128u32, 8u32);
    let p: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
    // strided data so loads miss: each warp touches its own lines
    let dp = r.buf(&p);
    let out = r.zeros(n * 4);
    let wpb = block / 32;
    let n_warps = grid * wpb;
    let plog = ProbeLog::new(n_warps, wpb, 1, 4, traced);
    let log = r.buf(&plog.initial);
    r.try_launch(
        "probe_global",
        [grid, 1, 1],
        [block, 1, 1],
        plog.shared_per_block,
        vec![a64(dp), a64(out), a32(n as i32), plog.arg(log)],
    )
    .unwrap_or_else(|e| panic!("mode {mode} traced {traced}: {e}"));
    let mut buf = vec![0u8; plog.initial.len()];
    r.emu.read(log, &mut buf).unwrap();
    let warps = (0..n_warps)
        .map(|w| {
            (
                plog.header(&buf, w, L::WS_WH_COUNT_OFFSET),
                plog.header(&buf, w, L::WS_WH_FLAGS_OFFSET),
                plog.stats(&buf, w, 0).0,
                plog.records(&buf, w).into_iter().map(|r| r.1).collect(),
            )
        })
        .collect();
    ProbeRun {
        out: r.get_f32(out, n),
        warps,
    }
}

#[test]
fn probe_header_in_every_mode_keeps_outputs_and_logs() {
    let p: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5 - 7.0).collect();
    for mode in 0..=4u32 {
        for traced in [false, true] {
            let run = run_probe_global(mode, traced);
            for (i, v) in run.out.iter().enumerate() {
                assert_eq!(
                    *v,
                    3.0f32 * p[i] + 1.0,
                    "mode {mode} traced {traced} out[{i}]"
                );
            }
            if mode == 0 {
                continue;
            }
            for (w, (count, flags, stat, _)) in run.warps.iter().enumerate() {
                assert_eq!(
                    flags & L::WS_WARP_FLAG_END,
                    L::WS_WARP_FLAG_END,
                    "mode {mode} warp {w} END flag"
                );
                // warps whose threads are all past n record nothing
                let live = (w as u32 * 32) < 1000;
                assert_eq!(*stat, live as u32, "mode {mode} warp {w} statistics count");
                assert_eq!(
                    *count,
                    (traced && live) as u32,
                    "mode {mode} warp {w} records"
                );
            }
        }
    }
}

#[test]
fn fenced_probe_measures_the_load_naive_does_not() {
    let mean = |mode: u32| {
        let run = run_probe_global(mode, true);
        let d: Vec<u32> = run.warps.iter().flat_map(|w| w.3.clone()).collect();
        assert!(!d.is_empty(), "mode {mode} recorded nothing");
        d.iter().map(|&x| x as f64).sum::<f64>() / d.len() as f64
    };
    let (naive, fence, dummy) = (mean(L::WS_NAIVE), mean(L::WS_FENCE), mean(L::WS_DUMMY));
    let l2 = emulator::GpuConfig::preset("v100")
        .unwrap()
        .unloaded_latencies()
        .l2_hit as f64;
    eprintln!(
        "v100 probe_global mean access cycles: naive {naive:.1}, fence {fence:.1}, dummy {dummy:.1}"
    );
    assert!(naive * 4.0 < fence, "naive {naive} fence {fence}");
    assert!(naive * 4.0 < dummy, "naive {naive} dummy {dummy}");
    assert!(
        fence >= l2,
        "fence {fence} should at least reach the L2 latency {l2}"
    );
}

/// The paper's workload: the SDK volume renderer (3D texture, linear filtering, transfer
/// function, early ray termination) renders a sphere, in every probe mode.
#[test]
fn volume_render_draws_a_sphere_in_every_mode() {
    let (vw, iw) = (32u32, 32u32);
    let mut images = Vec::new();
    for mode in 0..=4u32 {
        let Some(b) = kernels::find("volume_render", mode) else {
            continue;
        };
        let mut r = Rig::new(b.ptx);
        let (vt, tt) = volume_scene(&mut r, vw, |x, y, z, c| {
            if (x * x + y * y + z * z).sqrt() < c * 0.8 {
                200
            } else {
                0
            }
        });
        let v = render_volume(&mut r, (vt, tt), iw);
        if let Err(e) = v.stats {
            panic!("mode {mode}: {e}");
        }
        let img = r.get_u32(v.out, (iw * iw) as usize);
        let center = img[(iw / 2 * iw + iw / 2) as usize];
        assert!(
            center >> 24 > 0,
            "mode {mode}: centre pixel has no alpha: {center:#x}"
        );
        assert_eq!(img[0], 0, "mode {mode}: corner ray misses the sphere");
        images.push(img);
    }
    assert!(!images.is_empty());
    // The probes never change the picture.
    assert!(images.windows(2).all(|w| w[0] == w[1]));
}
