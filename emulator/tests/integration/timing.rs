//! Timing semantics the paper's method relies on: loads do not block, fences wait for them,
//! dependent uses wait for them, and runs are deterministic.

use crate::common::*;

/// One thread per warp reads `p[tid * 64]` between two `%clock64` reads, with `close` (a fence,
/// or nothing) before the second read; `use_it` makes the second read depend on the loaded value
/// instead; `store_first` puts a store to `out` before the load.
fn probe_ptx(close: &str, use_it: bool, store_first: bool) -> String {
    let mid = if use_it {
        "add.s32 %r4, %r3, 1;\n mov.u64 %rd6, %clock64;\n add.s64 %rd6, %rd6, 0;"
    } else {
        close
    };
    let second = if use_it {
        ""
    } else {
        "mov.u64 %rd6, %clock64;"
    };
    let store = if store_first {
        "st.global.u32 [%rd2], %r2;"
    } else {
        ""
    };
    format!(
        r#".version 8.0
.target sm_75
.address_size 64
.visible .entry probe(.param .u64 p, .param .u64 out)
{{
 .reg .b64 %rd<12>;
 .reg .b32 %r<6>;
 ld.param.u64 %rd1, [p];
 ld.param.u64 %rd2, [out];
 mov.u32 %r2, %tid.x;
 mul.wide.u32 %rd3, %r2, 256;
 add.s64 %rd4, %rd1, %rd3;
 mov.u64 %rd5, %clock64;
 {store}
 ld.global.u32 %r3, [%rd4];
 {mid}
 {second}
 sub.s64 %rd7, %rd6, %rd5;
 mul.wide.u32 %rd8, %r2, 8;
 add.s64 %rd9, %rd2, %rd8;
 st.global.u64 [%rd9], %rd7;
 ret;
}}"#
    )
}

fn measure_with(close: &str, use_it: bool, store_first: bool, preset: &str) -> u64 {
    let mut r = Rig::with_preset(&probe_ptx(close, use_it, store_first), preset);
    let p = r.zeros(32 * 256);
    let o = r.zeros(32 * 8);
    r.launch("probe", [1, 1, 1], [32, 1, 1], vec![a64(p), a64(o)]);
    r.get_u64(o)
}

fn measure(close: &str, use_it: bool, preset: &str) -> u64 {
    measure_with(close, use_it, false, preset)
}

#[test]
fn clock_after_load_does_not_wait_but_fence_and_use_do() {
    for preset in ["v100", "h100"] {
        let dram = emulator::GpuConfig::preset(preset)
            .unwrap()
            .unloaded_latencies()
            .dram;
        let naive = measure("", false, preset);
        let fenced = measure("fence.acq_rel.cta;", false, preset);
        let used = measure("", true, preset);
        assert!(
            naive * 10 < fenced,
            "{preset}: naive {naive} vs fenced {fenced}"
        );
        // The fenced time tracks the configured DRAM latency (plus a few issue cycles).
        assert!(
            fenced as f64 >= 0.9 * dram as f64 && (fenced as f64) <= 1.25 * dram as f64,
            "{preset}: fenced {fenced} vs DRAM {dram}"
        );
        assert!(
            used >= fenced.saturating_sub(5),
            "{preset}: dependent use {used} vs fenced {fenced}"
        );
        // Every wider fence waits too.
        for wide in ["membar.gl;", "fence.sc.gpu;", "membar.sys;"] {
            let t = measure(wide, false, preset);
            assert!(
                t >= fenced.saturating_sub(5),
                "{preset}: {wide} {t} vs {fenced}"
            );
        }
    }
}

/// `membar.cta` (= `fence.sc.cta`, SASS MEMBAR.SC.CTA) waited for an independent load on the
/// paper's Fermi but not on an H200, where it retired ~29 cycles after a DRAM miss: the h100
/// preset says so (`sm.cta_sc_fence_waits_for_loads = false`), the others keep the paper's
/// behaviour. It still waits for an earlier store everywhere.
#[test]
fn membar_cta_waits_for_loads_where_the_preset_says_so() {
    for (preset, waits) in [("gtx480", true), ("v100", true), ("h100", false)] {
        let cfg = emulator::GpuConfig::preset(preset).unwrap();
        assert_eq!(cfg.sm.cta_sc_fence_waits_for_loads, waits, "{preset}");
        let dram = cfg.unloaded_latencies().dram;
        let naive = measure("", false, preset);
        for close in ["membar.cta;", "fence.sc.cta;"] {
            let t = measure(close, false, preset);
            if waits {
                assert!(
                    t as f64 >= 0.9 * dram as f64,
                    "{preset}: {close} {t} vs {dram}"
                );
            } else {
                assert!(t < naive + 10, "{preset}: {close} {t} vs naive {naive}");
            }
        }
        // With a store before the load, the fence waits for the store (until the CTA sees it)
        // but, on h100, still not for the load.
        let with_store = measure_with("membar.cta;", false, true, preset);
        let visible = cfg.unloaded_latencies().store_visible;
        assert!(with_store >= visible, "{preset}: {with_store} vs {visible}");
        if !waits {
            assert!(
                with_store < dram / 2,
                "{preset}: {with_store} vs DRAM {dram}"
            );
        }
    }
}

/// One thread stores to a line and closes with `close`: the cycles between the `%clock64` reads
/// around the store and the fence (the first read after the store's address is ready: in-order
/// issue puts it behind the add that waits for the parameter).
fn store_window(close: &str, preset: &str) -> u64 {
    let ptx = format!(
        r#".version 8.0
.target sm_75
.address_size 64
.visible .entry probe(.param .u64 p)
{{
 .reg .b64 %rd<8>;
 .reg .b32 %r<2>;
 ld.param.u64 %rd1, [p];
 mov.u32 %r1, %tid.x;
 add.s64 %rd5, %rd1, 256;
 mov.u64 %rd2, %clock64;
 st.global.u32 [%rd5], %r1;
 {close}
 mov.u64 %rd3, %clock64;
 sub.s64 %rd4, %rd3, %rd2;
 st.global.u64 [%rd1], %rd4;
 ret;
}}"#
    );
    let mut r = Rig::with_preset(&ptx, preset);
    let p = r.zeros(512);
    r.launch("probe", [1, 1, 1], [1, 1, 1], vec![a64(p)]);
    r.get_u64(p)
}

/// A GPU- or system-scope fence costs hundreds of cycles on an H100/H200 even with only a store
/// before it (MEMBAR.SC.GPU, ERRBAR, CGAERRBAR, CCTL.IVALL; ~560 and ~1010 cycles over no fence
/// on an H200), where a CTA fence after the same store costs ~15: the h100 preset's
/// `sm.gpu_fence_cycles`, `sm.sys_fence_cycles` and `sm.store_visible_cycles`. Presets without
/// them keep the wait for what is outstanding alone, a store's being its L1 stage.
#[test]
fn wide_fences_take_their_own_time_where_the_preset_says_so() {
    for preset in ["h100", "gtx480"] {
        let cfg = emulator::GpuConfig::preset(preset).unwrap();
        let naive = store_window("", preset);
        let cta = store_window("fence.acq_rel.cta;", preset);
        // A CTA fence waits until the store is visible to the CTA: 15 cycles after the store
        // on an H100/H200 (`sm.store_visible_cycles`), the whole L1 stage where unmeasured.
        let visible = cfg.unloaded_latencies().store_visible;
        assert!(
            cta >= naive + visible && cta <= naive + visible + 3,
            "{preset}: CTA fence {cta} vs naive {naive} + {visible}"
        );
        for (close, own) in [
            ("membar.gl;", cfg.sm.gpu_fence_cycles),
            ("fence.acq_rel.gpu;", cfg.sm.gpu_fence_cycles),
            ("fence.sc.gpu;", cfg.sm.gpu_fence_cycles),
            ("membar.sys;", cfg.sm.sys_fence_cycles),
            ("fence.sc.sys;", cfg.sm.sys_fence_cycles),
        ] {
            let t = store_window(close, preset);
            if own == 0 {
                assert_eq!(t, cta, "{preset}: {close}");
            } else {
                let own = u64::from(own);
                assert!(
                    t >= naive + own && t <= naive + own + 10,
                    "{preset}: {close} {t} vs naive {naive} + {own}"
                );
            }
        }
    }
    let h100 = emulator::GpuConfig::preset("h100").unwrap();
    assert!(h100.sm.gpu_fence_cycles > 500 && h100.sm.sys_fence_cycles > 1000);
}

/// After a load that missed to DRAM, a GPU-scope fence retired 130–138 cycles after the CTA
/// fence, which waits for the load alone, on an H200 (`sm.wide_fence_drain_cycles` of the h100
/// preset); its own least time is shorter than that wait, so the drain decides. Presets without
/// a drain retire it with the load, as the CTA fence.
#[test]
fn a_wide_fence_retires_its_drain_after_the_load_it_waits_for() {
    for preset in ["h100", "v100"] {
        let cfg = emulator::GpuConfig::preset(preset).unwrap();
        let drain = u64::from(cfg.sm.wide_fence_drain_cycles.unwrap_or(0));
        assert_eq!(drain > 100, preset == "h100", "{preset}: drain {drain}");
        let cta = measure("fence.acq_rel.cta;", false, preset);
        for wide in [
            "membar.gl;",
            "fence.acq_rel.gpu;",
            "fence.sc.gpu;",
            "membar.sys;",
        ] {
            let own = u64::from(if wide == "membar.sys;" {
                cfg.sm.sys_fence_cycles
            } else {
                cfg.sm.gpu_fence_cycles
            });
            let t = measure(wide, false, preset);
            // The later of the load's data plus the drain and the fence's own time.
            let expect = (cta + drain).max(own);
            assert!(
                t >= expect && t <= expect + 10,
                "{preset}: {wide} {t} vs CTA fence {cta} + drain {drain}, own {own}"
            );
        }
    }
}

#[test]
fn same_launch_twice_is_identical() {
    let run = || {
        let mut r = Rig::new(corpus_ptx("histogram_shared"));
        let mut rng = Rng(11);
        let data: Vec<u8> = (0..50_000).map(|_| rng.below(256) as u8).collect();
        let d = r.buf(&data);
        let h = r.zeros(1024);
        let s = r.launch(
            "histogram_shared",
            [40, 1, 1],
            [128, 1, 1],
            vec![a64(d), a64(h), a32(data.len() as i32)],
        );
        (s, r.get_u32(h, 256))
    };
    let (s1, h1) = run();
    let (s2, h2) = run();
    assert_eq!(h1, h2);
    assert_eq!(s1, s2);
    assert!(s1.cycles > 0 && s1.warp_instructions > 0);
    assert_eq!(
        s1.sm_cycles.len(),
        emulator::GpuConfig::preset("v100").unwrap().sm.count as usize
    );
}

#[test]
fn more_blocks_than_fit_run_in_waves() {
    // 1000 blocks of 1024 threads: only a couple fit per SM at once, the rest wait for slots.
    let mut r = Rig::new(corpus_ptx("reduce_shuffle"));
    let n: i32 = 1000 * 1024;
    let input: Vec<i32> = (0..n).map(|i| i % 7).collect();
    let i = r.buf(&input);
    let t = r.zeros(4);
    let s = r.launch(
        "reduce_shuffle",
        [1000, 1, 1],
        [1024, 1, 1],
        vec![a64(i), a64(t), a32(n)],
    );
    assert_eq!(r.get_u32(t, 1)[0] as i32, input.iter().sum::<i32>());
    assert!(s.blocks_per_sm >= 1 && s.blocks_per_sm <= 2);
}

/// The first warp of a block counts to `n`; the block's other warps exit at once.
const ONE_WARP_SPINS_PTX: &str = ".version 8.0\n.target sm_75\n.address_size 64\n\
.visible .entry spin(.param .u32 n)\n{\n\
 .reg .b32 %r<4>;\n .reg .pred %p<2>;\n\
 ld.param.u32 %r1, [n];\n mov.u32 %r2, %tid.x;\n setp.ge.u32 %p1, %r2, 32;\n @%p1 bra $END;\n\
 mov.u32 %r3, 0;\n$LOOP:\n add.u32 %r3, %r3, 1;\n setp.lt.u32 %p1, %r3, %r1;\n @%p1 bra $LOOP;\n\
$END:\n ret;\n}\n";

#[test]
fn achieved_occupancy_counts_the_warps_resident_per_active_cycle() {
    let slots = f64::from(emulator::GpuConfig::preset("v100").unwrap().sm.max_warps);
    let occupancy = |threads: u32| {
        let mut r = Rig::new(ONE_WARP_SPINS_PTX);
        let s = r.launch("spin", [1, 1, 1], [threads, 1, 1], vec![a32(2000)]);
        s.achieved_occupancy.expect("warps ran")
    };
    // One warp on one SM: resident in every cycle its SM is active; the idle SMs do not count.
    assert_eq!(occupancy(32), 1.0 / slots);
    // A second warp that exits at once adds its few cycles, and no more.
    let two = occupancy(64);
    assert!(two > 1.0 / slots && two < 1.05 / slots, "{two}");
}

/// One thread sends eight `red.global.add` to one word between two `%clock64` reads (the first
/// after a store that waits for both parameters), on the h100 preset with the SM's atomics in
/// flight limited to `limit`: its window, and the sum.
fn reductions_window(limit: Option<u32>) -> (u64, u32) {
    let ptx = r#".version 8.0
.target sm_75
.address_size 64
.visible .entry probe(.param .u64 p, .param .u64 out)
{
 .reg .b64 %rd<8>;
 ld.param.u64 %rd1, [p];
 ld.param.u64 %rd2, [out];
 st.global.u64 [%rd2], %rd1;
 mov.u64 %rd3, %clock64;
 red.global.add.u32 [%rd1], 1;
 red.global.add.u32 [%rd1], 1;
 red.global.add.u32 [%rd1], 1;
 red.global.add.u32 [%rd1], 1;
 red.global.add.u32 [%rd1], 1;
 red.global.add.u32 [%rd1], 1;
 red.global.add.u32 [%rd1], 1;
 red.global.add.u32 [%rd1], 1;
 mov.u64 %rd4, %clock64;
 sub.s64 %rd5, %rd4, %rd3;
 st.global.u64 [%rd2], %rd5;
 ret;
}"#;
    let mut cfg = emulator::GpuConfig::preset("h100").unwrap();
    let unit = cfg
        .l2
        .atomic_unit
        .as_mut()
        .expect("the h100 preset has an atomic unit");
    unit.in_flight_per_sm = limit;
    let mut r = Rig::with_config(ptx, cfg);
    let p = r.zeros(128);
    let o = r.zeros(8);
    r.launch("probe", [1, 1, 1], [1, 1, 1], vec![a64(p), a64(o)]);
    (r.get_u64(o), r.get_u32(p, 1)[0])
}

/// An SM's atomics in flight (`l2.atomic_unit.in_flight_per_sm`): below the limit a warp does
/// not wait for atomics whose results it does not read; past it, an atomic waits to be sent
/// for the oldest one's acknowledgement, an L2 round trip; the sums are the same either way.
#[test]
fn a_warp_past_the_atomics_in_flight_waits_for_the_oldest() {
    let l2 = {
        let cfg = emulator::GpuConfig::preset("h100").unwrap();
        u64::from(cfg.l2.latency_cycles)
    };
    let (free, sum_free) = reductions_window(None);
    let (roomy, sum_roomy) = reductions_window(Some(8));
    let (tight, sum_tight) = reductions_window(Some(2));
    assert_eq!((sum_free, sum_roomy, sum_tight), (8, 8, 8));
    assert!(
        free < l2,
        "eight reductions issue in {free} cycles without a limit"
    );
    assert_eq!(
        roomy, free,
        "a limit the warp never reaches changes nothing"
    );
    assert!(
        tight > free + l2,
        "past two in flight the warp waits for acknowledgements: {tight} against {free}"
    );
}

/// The h100 preset with eight miss slots per SM and `sm.lg_throttle` as given.
fn eight_miss_slots(lg_throttle: bool) -> emulator::GpuConfig {
    let mut cfg = emulator::GpuConfig::preset("h100").unwrap();
    cfg.l1.mshrs = 8;
    cfg.sm.lg_throttle = lg_throttle;
    cfg
}

/// Warp `chaser` of each of four blocks follows a chain of 16 cold lines, 256 bytes apart, and
/// the block's seven other warps stream loads of their own cold lines, four in flight each, on
/// the h100 preset with eight miss slots per SM and `sm.lg_throttle` as given: per block, the
/// chase's window and where the chain ended, and every streaming thread's sum.
fn chase_beside_a_stream(chaser: u32, lg_throttle: bool) -> (Vec<u64>, Vec<u64>, Vec<u32>) {
    let ptx = r#".version 8.0
.target sm_75
.address_size 64
.visible .entry mix(.param .u64 chain, .param .u64 big, .param .u64 out, .param .u64 sums)
{
 .reg .b64 %rd<16>;
 .reg .b32 %r<16>;
 .reg .pred %q;
 ld.param.u64 %rd1, [chain];
 ld.param.u64 %rd2, [big];
 ld.param.u64 %rd3, [out];
 mov.u32 %r1, %tid.x;
 mov.u32 %r2, %ctaid.x;
 shr.u32 %r4, %r1, 5;
 setp.ne.u32 %q, %r4, CHASER;
 @%q bra STREAM;
 mul.wide.u32 %rd4, %r2, 4096;
 mov.u32 %r3, 0;
 mov.u64 %rd5, %clock64;
CHASE:
 add.s64 %rd6, %rd1, %rd4;
 ld.global.u64 %rd4, [%rd6];
 add.u32 %r3, %r3, 1;
 setp.lt.u32 %q, %r3, 16;
 @%q bra CHASE;
 mul.wide.u32 %rd7, %r2, 16;
 add.s64 %rd8, %rd3, %rd7;
 st.global.u64 [%rd8+8], %rd4;
 mov.u64 %rd9, %clock64;
 sub.s64 %rd10, %rd9, %rd5;
 st.global.u64 [%rd8], %rd10;
 ret;
STREAM:
 and.b32 %r5, %r1, 31;
 mad.lo.u32 %r6, %r2, 8, %r4;
 shl.b32 %r6, %r6, 6;
 mul.wide.u32 %rd11, %r6, 128;
 add.s64 %rd11, %rd2, %rd11;
 mul.wide.u32 %rd12, %r5, 4;
 add.s64 %rd11, %rd11, %rd12;
 mov.u32 %r7, 0;
 mov.u32 %r8, 0;
LOOP:
 ld.global.u32 %r9, [%rd11];
 ld.global.u32 %r10, [%rd11+128];
 ld.global.u32 %r11, [%rd11+256];
 ld.global.u32 %r12, [%rd11+384];
 add.u32 %r7, %r7, %r9;
 add.u32 %r7, %r7, %r10;
 add.u32 %r7, %r7, %r11;
 add.u32 %r7, %r7, %r12;
 add.s64 %rd11, %rd11, 512;
 add.u32 %r8, %r8, 1;
 setp.lt.u32 %q, %r8, 16;
 @%q bra LOOP;
 ld.param.u64 %rd13, [sums];
 mad.lo.u32 %r13, %r2, 256, %r1;
 mul.wide.u32 %rd14, %r13, 4;
 add.s64 %rd15, %rd13, %rd14;
 st.global.u32 [%rd15], %r7;
 ret;
}"#
    .replace("CHASER", &chaser.to_string());
    let blocks = 4usize;
    // Block b's step j reads the offset of its step j + 1.
    let chain: Vec<u64> = (0..blocks * 4096 / 8)
        .map(|i| {
            let off = i as u64 * 8;
            if off.is_multiple_of(256) {
                off + 256
            } else {
                0
            }
        })
        .collect();
    let words = blocks * 8 * 64 * 32;
    let big: Vec<u32> = (0..words as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let mut r = Rig::with_config(&ptx, eight_miss_slots(lg_throttle));
    let (c, b) = (r.buf(&chain), r.buf(&big));
    let (o, sums) = (r.zeros(blocks * 16), r.zeros(blocks * 256 * 4));
    let n = blocks as u32;
    r.launch(
        "mix",
        [n, 1, 1],
        [256, 1, 1],
        vec![a64(c), a64(b), a64(o), a64(sums)],
    );
    let window = (0..blocks).map(|i| r.get_u64(o + i as u64 * 16)).collect();
    let end = (0..blocks)
        .map(|i| r.get_u64(o + i as u64 * 16 + 8))
        .collect();
    (window, end, r.get_u32(sums, blocks * 256))
}

/// `sm.lg_throttle`: with the SM's miss slots full, a load waits unissued for a free one, so
/// the chase's load takes the next slot its scheduler gives it instead of queueing behind the
/// stream's misses issued before it. The chase ends sooner, at the same place, whichever
/// scheduler it is on (warp 0 or 1: the schedulers take turns); every sum is the same; and the
/// thread count changes nothing.
#[test]
fn a_load_waits_at_issue_for_a_miss_slot_where_the_preset_says_so() {
    for chaser in [0, 1] {
        let (queued, end_queued, sums_queued) = chase_beside_a_stream(chaser, false);
        let throttled = on_threads(1, || chase_beside_a_stream(chaser, true));
        assert_eq!(
            throttled,
            on_threads(3, || chase_beside_a_stream(chaser, true))
        );
        let (waits, end, sums) = throttled;
        assert_eq!(end, end_queued);
        assert_eq!(end, (0..4u64).map(|b| b * 4096 + 4096).collect::<Vec<_>>());
        assert_eq!(sums, sums_queued);
        for (w, q) in waits.iter().zip(&queued) {
            assert!(
                *w * 5 < *q * 4,
                "warp {chaser}'s chase took {w} cycles waiting at issue, {q} queued behind the stream"
            );
        }
    }
}

/// One block of 8 warps, each making 8 reads whose 32 lanes take 32 cold lines, on the h100
/// preset with 8 miss slots and `sm.lg_throttle`: each warp's naive window (`%clock64` before
/// and after its last read, nothing waiting for the value) in cycles, and the sum of what it
/// read. `tex` reads a 1D texture's texels through `tex.1d`, else the same words through
/// `ld.global.nc`.
fn naive_windows_with_full_miss_slots(tex: bool) -> (Vec<u64>, Vec<f32>) {
    let read = if tex {
        "tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [%rd1, {%r5}];"
    } else {
        "mul.wide.u32 %rd7, %r5, 4;\n add.s64 %rd7, %rd2, %rd7;\n ld.global.nc.f32 %f1, [%rd7];"
    };
    let ptx = r#".version 8.0
.target sm_75
.address_size 64
.visible .entry reads(.param .u64 tex, .param .u64 buf, .param .u64 out)
{
 .reg .b64 %rd<16>;
 .reg .b32 %r<16>;
 .reg .f32 %f<8>;
 .reg .pred %q;
 ld.param.u64 %rd1, [tex];
 ld.param.u64 %rd2, [buf];
 ld.param.u64 %rd3, [out];
 mov.u32 %r1, %tid.x;
 mov.f32 %f5, 0f00000000;
 mov.u32 %r3, 0;
LOOP:
 shl.b32 %r4, %r3, 8;
 add.u32 %r5, %r4, %r1;
 shl.b32 %r5, %r5, 6;
 mov.u64 %rd4, %clock64;
 READ
 mov.u64 %rd5, %clock64;
 add.f32 %f5, %f5, %f1;
 add.u32 %r3, %r3, 1;
 setp.lt.u32 %q, %r3, 8;
 @%q bra LOOP;
 sub.s64 %rd6, %rd5, %rd4;
 mul.wide.u32 %rd8, %r1, 16;
 add.s64 %rd8, %rd3, %rd8;
 st.global.u64 [%rd8], %rd6;
 st.global.f32 [%rd8+8], %f5;
 ret;
}
"#
    .replace("READ", read);
    let mut r = Rig::with_config(&ptx, eight_miss_slots(true));
    let texels = 8 * 256 * 64;
    let words: Vec<f32> = (0..texels).map(|i| (i % 97) as f32).collect();
    let buf = r.buf(&words);
    let desc = emulator::TextureDesc {
        linear_buffer: Some(buf),
        ..emulator::TextureDesc::floats(texels as u32)
    };
    let t = r.emu.create_texture(&desc, &[]).unwrap();
    let out = r.zeros(256 * 16);
    r.launch(
        "reads",
        [1, 1, 1],
        [256, 1, 1],
        vec![a64(t), a64(buf), a64(out)],
    );
    let windows = (0..8).map(|w| r.get_u64(out + w * 32 * 16)).collect();
    let sums = (0..256)
        .map(|t| r.get_f32(out + t * 16 + 8, 1)[0])
        .collect();
    (windows, sums)
}

/// `sm.lg_throttle` holds loads, not texture fetches: with every miss slot taken, a naive
/// window around `ld.global.nc` spans the wait for a slot, one around `tex.1d` of the same
/// words only the fetch's issue, as on an H200, where the renderer's naive window around its
/// fetch reads 6.3 cycles in a frame whose fetches keep the model's miss slots full. Both read
/// the same.
#[test]
fn texture_fetches_do_not_wait_at_issue_for_a_miss_slot() {
    let (fetches, fetched) = naive_windows_with_full_miss_slots(true);
    let (loads, loaded) = naive_windows_with_full_miss_slots(false);
    assert_eq!(fetched, loaded);
    let dram = u64::from(
        emulator::GpuConfig::preset("h100")
            .unwrap()
            .dram
            .latency_cycles,
    );
    assert!(
        fetches.iter().all(|&c| c < 64),
        "texture fetches' windows {fetches:?}"
    );
    assert!(
        loads.iter().filter(|&&c| c > dram / 2).count() >= 4,
        "loads' windows {loads:?}, DRAM {dram} cycles"
    );
}
