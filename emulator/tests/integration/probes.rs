//! The probe header (`kernels/warpscope.cuh`) in every mode and kind, on the emulator: outputs
//! stay correct, every warp's log area is written, and the fenced/dummy probes measure the load
//! while the naive one does not (the paper's effect).

use crate::common::*;
use kernels::layout as L;

struct ProbeRun {
    out: Vec<f32>,
    /// (count, flags, durations of the warp's records)
    warps: Vec<(u32, u32, Vec<u32>)>,
}

fn run_probe_global(mode: u32, kind: u32, shared: bool) -> ProbeRun {
    let b = kernels::find("probe_test", mode, kind)
        .unwrap_or_else(|| panic!("build mode {mode} kind {kind}"));
    let mut r = Rig::new(b.ptx);
    let n = 1000usize;
    let (block, grid) = (128u32, 8u32);
    let p: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
    // strided data so loads miss: each warp touches its own lines
    let dp = r.buf(&p);
    let out = r.zeros(n * 4);
    let slots = 4u32;
    let body = if kind == 0 {
        slots * L::WS_RECORD_BYTES
    } else {
        L::WS_MAX_SITES * L::WS_SUMMARY_SITE_BYTES
    };
    let wpb = block / 32;
    let n_warps = grid * wpb;
    let log_bytes = L::WS_LOG_HEADER_BYTES + n_warps * (L::WS_WARP_HEADER_BYTES + body);
    let log = r.zeros(log_bytes as usize);
    let dyn_shared = if shared {
        wpb * (L::WS_SHARED_WARP_HEADER_BYTES + body)
    } else {
        0
    };
    let mut logarg = Vec::new();
    logarg.extend_from_slice(&log.to_le_bytes());
    logarg.extend_from_slice(&slots.to_le_bytes());
    logarg.extend_from_slice(&0i32.to_le_bytes());
    logarg.extend_from_slice(&(shared as u32).to_le_bytes());
    logarg.extend_from_slice(&0u32.to_le_bytes());
    r.try_launch(
        "probe_global",
        [grid, 1, 1],
        [block, 1, 1],
        dyn_shared,
        vec![a64(dp), a64(out), a32(n as i32), logarg],
    )
    .unwrap_or_else(|e| panic!("mode {mode} kind {kind} shared {shared}: {e}"));
    let words = r.get_u32(log, log_bytes as usize / 4);
    let mut warps = Vec::new();
    for w in 0..n_warps {
        let base = ((L::WS_LOG_HEADER_BYTES + w * (L::WS_WARP_HEADER_BYTES + body)) / 4) as usize;
        let count = words[base + (L::WS_WH_COUNT_OFFSET / 4) as usize];
        let flags = words[base + (L::WS_WH_FLAGS_OFFSET / 4) as usize];
        let rec = base + (L::WS_WARP_HEADER_BYTES / 4) as usize;
        let durs = if kind == 0 {
            (0..count.min(slots) as usize)
                .map(|k| words[rec + k * 4 + 2])
                .collect()
        } else {
            Vec::new()
        };
        warps.push((count, flags, durs));
    }
    ProbeRun {
        out: r.get_f32(out, n),
        warps,
    }
}

#[test]
fn probe_header_in_every_mode_keeps_outputs_and_logs() {
    let p: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5 - 7.0).collect();
    for mode in 0..=4u32 {
        for kind in 0..=1u32 {
            if kernels::find("probe_test", mode, kind).is_none() {
                continue;
            }
            for shared in [false, true] {
                let run = run_probe_global(mode, kind, shared);
                for (i, v) in run.out.iter().enumerate() {
                    assert_eq!(
                        *v,
                        3.0f32 * p[i] + 1.0,
                        "mode {mode} kind {kind} shared {shared} out[{i}]"
                    );
                }
                if mode == 0 {
                    continue;
                }
                for (w, (count, flags, _)) in run.warps.iter().enumerate() {
                    assert_eq!(
                        flags & L::WS_WARP_FLAG_END,
                        L::WS_WARP_FLAG_END,
                        "mode {mode} warp {w} END flag"
                    );
                    // warps whose threads are all past n record nothing
                    let live = (w as u32 * 32) < 1000;
                    if kind == 0 {
                        assert_eq!(*count, live as u32, "mode {mode} warp {w} count");
                    }
                }
            }
        }
    }
}

#[test]
fn fenced_probe_measures_the_load_naive_does_not() {
    let mean = |mode: u32| {
        let run = run_probe_global(mode, 0, false);
        let d: Vec<u32> = run.warps.iter().flat_map(|w| w.2.clone()).collect();
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
        let Some(b) = kernels::find("volume_render", mode, 0) else {
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
        let out = r.zeros((iw * iw * 4) as usize);
        let slots = 64u32;
        let wpb = 256 / 32;
        let n_warps = (iw / 16) * (iw / 16) * wpb;
        let log = r.zeros((64 + n_warps * (32 + slots * 16)) as usize);
        let mut logarg = Vec::new();
        for v in [
            log.to_le_bytes().to_vec(),
            slots.to_le_bytes().to_vec(),
            vec![0; 12],
        ] {
            logarg.extend_from_slice(&v);
        }
        let args = vec![
            a64(out),
            a32(iw as i32),
            a32(iw as i32),
            af(0.05),
            af(1.0),
            af(0.0),
            af(1.0),
            af(0.01),
            a64(vt),
            a64(tt),
            logarg,
        ];
        r.try_launch("d_render", [iw / 16, iw / 16, 1], [16, 16, 1], 0, args)
            .unwrap_or_else(|e| panic!("mode {mode}: {e}"));
        let img = r.get_u32(out, (iw * iw) as usize);
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
