//! Golden LaunchStats and output hashes for a fixed set of launches, so that speed work on the
//! interpreter and the issue engine cannot silently change the timing model (which is a spec).
//!
//! The golden file is `tests/fixtures/golden_stats.json`: one entry per launch with its full
//! `LaunchStats` (serde_json) and an FNV-1a hash of every output buffer (image, result, probe log).
//! Regenerate it only when a timing change is intended:
//! `WS_REGEN_GOLDEN=1 cargo test -p warpscope-emulator --release golden`.

use crate::common::*;
use kernels::layout as L;
use std::collections::BTreeMap;

/// FNV-1a over bytes: stable across platforms and versions, unlike `DefaultHasher`.
fn fnv(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn read(r: &Rig, addr: u64, bytes: usize) -> Vec<u8> {
    let mut b = vec![0u8; bytes];
    r.emu.read(addr, &mut b).unwrap();
    b
}

fn entry(stats: &emulator::LaunchStats, outputs: &[Vec<u8>]) -> serde_json::Value {
    serde_json::json!({
        "stats": serde_json::to_value(stats).unwrap(),
        "outputs": outputs.iter().map(|o| fnv(o)).collect::<Vec<_>>(),
    })
}

/// A rig on `preset`, or on `NAME+N`: preset NAME with its L2 and DRAM in N memory partitions
/// (`dram.partitions`).
fn rig(ptx: &str, preset: &str) -> Rig {
    match preset.split_once('+') {
        Some((name, parts)) => {
            let mut cfg = emulator::GpuConfig::preset(name).unwrap();
            cfg.dram.partitions = Some(parts.parse().unwrap());
            Rig::with_config(ptx, cfg)
        }
        None => Rig::with_preset(ptx, preset),
    }
}

fn matmul(preset: &str, n: usize) -> serde_json::Value {
    let mut r = rig(corpus_ptx("matmul"), preset);
    let a: Vec<f32> = (0..n * n).map(|i| (i % 13) as f32).collect();
    let b: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 - 3.0).collect();
    let (da, db) = (r.buf(&a), r.buf(&b));
    let dc = r.zeros(n * n * 4);
    let s = r.launch(
        "matmul",
        [(n / 16) as u32, (n / 16) as u32, 1],
        [16, 16, 1],
        vec![
            a64(da),
            a64(db),
            a64(dc),
            a32(n as i32),
            a32(n as i32),
            a32(n as i32),
        ],
    );
    entry(&s, &[read(&r, dc, n * n * 4)])
}

/// 264 blocks of 256 threads, each thread sending eight `red.global.add` to one of 32 words: 128
/// atomics per SM, past the h100 preset's 64 in flight (`l2.atomic_unit.in_flight_per_sm`),
/// on `cfg`.
fn atomics_past_the_limit(cfg: emulator::GpuConfig) -> serde_json::Value {
    let ptx = r#".version 8.0
.target sm_75
.address_size 64
.visible .entry reds(.param .u64 p)
{
 .reg .b64 %rd<4>;
 .reg .b32 %r<4>;
 .reg .pred %q;
 ld.param.u64 %rd1, [p];
 mov.u32 %r1, %tid.x;
 and.b32 %r2, %r1, 31;
 mul.wide.u32 %rd2, %r2, 4;
 add.s64 %rd3, %rd1, %rd2;
 mov.u32 %r3, 0;
LOOP:
 red.global.add.u32 [%rd3], 1;
 add.u32 %r3, %r3, 1;
 setp.lt.u32 %q, %r3, 8;
 @%q bra LOOP;
 ret;
}"#;
    let mut r = Rig::with_config(ptx, cfg);
    let p = r.zeros(128);
    let s = r.launch("reds", [264, 1, 1], [256, 1, 1], vec![a64(p)]);
    entry(&s, &[read(&r, p, 128)])
}

fn collatz(preset: &str, n: usize) -> serde_json::Value {
    let mut r = rig(corpus_ptx("collatz"), preset);
    let start: Vec<u32> = (1..=n as u32).collect();
    let ds = r.buf(&start);
    let o = r.zeros(n * 4);
    let s = r.launch(
        "collatz",
        [(n as u32).div_ceil(256), 1, 1],
        [256, 1, 1],
        vec![a64(ds), a64(o), a32(n as i32), a32(1000)],
    );
    entry(&s, &[read(&r, o, n * 4)])
}

fn reductions(preset: &str) -> serde_json::Value {
    let mut rng = Rng(11);
    let n = 20_000usize;
    let input: Vec<u32> = (0..n).map(|_| rng.next() as u32 >> 8).collect();
    let mut r = rig(corpus_ptx("reduce_shared"), preset);
    let i = r.buf(&input);
    let blocks = (n as u32).div_ceil(256);
    let o = r.zeros(blocks as usize * 4);
    let s1 = r.launch(
        "reduce_shared",
        [blocks, 1, 1],
        [128, 1, 1],
        vec![a64(i), a64(o), a32(n as i32)],
    );
    let out1 = read(&r, o, blocks as usize * 4);
    let mut r = rig(corpus_ptx("reduce_shuffle"), preset);
    let i = r.buf(&input);
    let t = r.zeros(4);
    let s2 = r.launch(
        "reduce_shuffle",
        [16, 1, 1],
        [256, 1, 1],
        vec![a64(i), a64(t), a32(n as i32)],
    );
    serde_json::json!([entry(&s1, &[out1]), entry(&s2, &[read(&r, t, 4)])])
}

fn probe(preset: &str, mode: u32, traced: bool) -> Option<serde_json::Value> {
    let b = kernels::find("probe_test", mode)?;
    let mut r = rig(b.ptx, preset);
    let n = 1000usize;
    let (block, grid) = (128u32, 8u32);
    let p: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
    let dp = r.buf(&p);
    let out = r.zeros(n * 4);
    let plog = ProbeLog::new(grid * block / 32, block / 32, 1, 4, traced);
    let log = r.buf(&plog.initial);
    let s = r
        .try_launch(
            "probe_global",
            [grid, 1, 1],
            [block, 1, 1],
            plog.shared_per_block,
            vec![a64(dp), a64(out), a32(n as i32), plog.arg(log)],
        )
        .unwrap_or_else(|e| panic!("probe_global mode {mode}: {e}"));
    Some(entry(
        &s,
        &[read(&r, out, n * 4), read(&r, log, plog.initial.len())],
    ))
}

fn volume(preset: &str, mode: u32, vw: u32, iw: u32) -> Option<serde_json::Value> {
    volume_in(preset, mode, vw, iw, [16, 16])
}

fn volume_in(
    preset: &str,
    mode: u32,
    vw: u32,
    iw: u32,
    block: [u32; 2],
) -> Option<serde_json::Value> {
    let b = kernels::find("volume_render", mode)?;
    let mut r = rig(b.ptx, preset);
    let (vt, tt) = volume_scene(&mut r, vw, |x, y, z, _| {
        ((x * x + y * y + z * z).sqrt() * 4.0) as u8
    });
    let v = render_volume_in(&mut r, (vt, tt), iw, block);
    let s = v
        .stats
        .unwrap_or_else(|e| panic!("volume mode {mode}: {e}"));
    Some(entry(
        &s,
        &[
            read(&r, v.out, (iw * iw * 4) as usize),
            read(&r, v.log, v.plog.initial.len()),
        ],
    ))
}

/// Every launch of the golden set, keyed by a readable name (BTreeMap: stable order in the file).
fn golden_set() -> BTreeMap<String, serde_json::Value> {
    let mut g = BTreeMap::new();
    for preset in ["gtx480", "v100"] {
        g.insert(format!("matmul_64_{preset}"), matmul(preset, 64));
        g.insert(format!("collatz_4096_{preset}"), collatz(preset, 4096));
        g.insert(format!("reductions_{preset}"), reductions(preset));
    }
    for mode in [L::WS_OFF, L::WS_NAIVE, L::WS_FENCE] {
        for traced in [true, false] {
            if let Some(v) = probe("gtx480", mode, traced) {
                let t = if traced { "traced" } else { "summary" };
                g.insert(format!("probe_test_m{mode}_{t}_gtx480"), v);
            }
        }
        if let Some(v) = volume("gtx480", mode, 32, 64) {
            g.insert(format!("volume_render_m{mode}_64x64_32cubed_gtx480"), v);
        }
    }
    // A volume past the caches: texture MSHRs fill up (the engine's replays, pending.rs).
    if let Some(v) = volume("gtx480", L::WS_FENCE, 256, 128) {
        g.insert("volume_render_m2_128x128_256cubed_gtx480".into(), v);
    }
    // The study's block shapes, whose blocks end at different times: a scheduler keeps its
    // greedy warp across another block's end (these moved when the block-end path cleared it by
    // the wrong index).
    for (mode, vw, [bx, by]) in [
        (L::WS_FENCE, 256u32, [16u32, 8u32]),
        (L::WS_FENCE, 256, [8, 16]),
        (L::WS_NAIVE, 64, [16, 8]),
        (L::WS_FENCE, 128, [64, 2]),
    ] {
        if let Some(v) = volume_in("gtx480", mode, vw, 128, [bx, by]) {
            g.insert(
                format!("volume_render_m{mode}_128x128_{vw}cubed_{bx}x{by}_gtx480"),
                v,
            );
        }
    }
    g
}

#[test]
fn golden_stats_and_outputs_are_unchanged() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/golden_stats.json");
    let got = golden_set();
    // A missing probe build would shrink the set silently; the corpus always has these.
    assert!(got.contains_key("matmul_64_gtx480") && got.contains_key("collatz_4096_v100"));
    if std::env::var_os("WS_REGEN_GOLDEN").is_some() {
        let text = serde_json::to_string_pretty(&got).unwrap();
        std::fs::write(&path, text + "\n").unwrap();
        return;
    }
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (WS_REGEN_GOLDEN=1 writes it)", path.display()));
    // Compared as text: floats parsed back (hit rates) need not round-trip bit for bit.
    let got_text = serde_json::to_string_pretty(&got).unwrap() + "\n";
    if got_text != text {
        let want: BTreeMap<String, serde_json::Value> = serde_json::from_str(&text).unwrap();
        let differ: Vec<&String> = got
            .iter()
            .filter(|(k, v)| {
                want.get(*k).map(|w| serde_json::to_string(w).unwrap())
                    != Some(serde_json::to_string(v).unwrap())
            })
            .map(|(k, _)| k)
            .collect();
        panic!("stats or outputs differ from the golden file; first suspects: {differ:?}");
    }
}

/// SMs run their rounds in parallel (engine/mod.rs); the thread count must not change a bit of
/// any launch, counters, timing or output.
#[test]
fn golden_set_is_the_same_on_one_thread_and_on_four() {
    let one = on_threads(1, golden_set);
    let four = on_threads(4, golden_set);
    assert!(one.len() >= 6);
    for (k, v) in &one {
        assert_eq!(Some(v), four.get(k), "{k}");
    }
}

/// Memory partitions answered apart on several threads (memory/parts.rs; on one thread they
/// are answered in global order) change nothing either: the h100 preset's 8 partitions by its
/// DRAM banks, gtx480's in 4 by its slices, whose texture fetches fill their MSHRs, so that
/// misses are sent at earlier answers of other partitions.
#[test]
fn partitioned_launches_are_the_same_on_one_thread_and_on_four() {
    let set = || {
        let mut g = BTreeMap::new();
        for preset in ["h100", "gtx480+4"] {
            g.insert(format!("matmul_{preset}"), matmul(preset, 64));
            g.insert(format!("reductions_{preset}"), reductions(preset));
            if let Some(v) = volume_in(preset, L::WS_FENCE, 256, 128, [16, 8]) {
                g.insert(format!("volume_{preset}"), v);
            }
        }
        g
    };
    let one = on_threads(1, set);
    assert_eq!(one, on_threads(4, set));
    // Not the unpartitioned model: each partition's DRAM has its share of the bandwidth.
    assert_ne!(one["matmul_h100"], matmul("h100+1", 64));
}

/// How each host thread spent a launch: one account a thread, the coordinating thread's first
/// and the only one with a part of its own; with partitions answered apart (four threads on the
/// h100 preset) the other threads answer too.
#[test]
fn a_launch_says_how_each_host_thread_spent_it() {
    let threads = |n: usize| {
        on_threads(n, || {
            let mut r = rig(corpus_ptx("matmul"), "h100");
            let n = 64;
            let a: Vec<f32> = (0..n * n).map(|i| (i % 13) as f32).collect();
            let (da, db) = (r.buf(&a), r.buf(&a));
            let dc = r.zeros(n * n * 4);
            let dim = || a32(n as i32);
            r.launch(
                "matmul",
                [(n / 16) as u32, (n / 16) as u32, 1],
                [16, 16, 1],
                vec![a64(da), a64(db), a64(dc), dim(), dim(), dim()],
            );
            let seconds = r.emu.take_thread_seconds();
            assert!(
                r.emu.take_thread_seconds().is_empty(),
                "taking them frees them"
            );
            seconds
        })
    };
    let parts = |t: &trace::ThreadSeconds| [t.sm_rounds, t.answering, t.coordinating, t.waiting];
    let one = threads(1);
    assert_eq!(one.len(), 1);
    assert!(
        one[0].sm_rounds > 0.0 && one[0].coordinating > 0.0,
        "{one:?}"
    );
    assert_eq!(
        one[0].answering, 0.0,
        "one thread answers in global order: {one:?}"
    );
    let four = threads(4);
    assert_eq!(four.len(), 4, "{four:?}");
    assert!(
        four.iter()
            .flat_map(parts)
            .all(|s| s.is_finite() && s >= 0.0)
    );
    assert!(four[0].coordinating > 0.0, "{four:?}");
    assert!(four[1..].iter().all(|t| t.coordinating == 0.0), "{four:?}");
    assert!(
        four.iter().map(|t| t.sm_rounds).sum::<f64>() > 0.0,
        "{four:?}"
    );
    assert!(
        four[1..]
            .windows(2)
            .all(|w| w[0].shared_work() >= w[1].shared_work()),
        "{four:?}"
    );
}

/// Warps that wait for the SM's atomics in flight wait for tokens of answers from below: the
/// thread count changes nothing there either, and the wait is there (without the limit the
/// warps stall less for memory; the launch, which ends when the line's unit has served every
/// atomic, takes as long) while the sums stay the same.
#[test]
fn atomics_past_the_limit_are_the_same_on_one_thread_and_on_four() {
    let h100 = || emulator::GpuConfig::preset("h100").unwrap();
    let one = on_threads(1, || atomics_past_the_limit(h100()));
    assert_eq!(one, on_threads(4, || atomics_past_the_limit(h100())));
    let mut free = h100();
    if let Some(u) = &mut free.l2.atomic_unit {
        u.in_flight_per_sm = None;
    }
    let free = atomics_past_the_limit(free);
    assert_eq!(one["outputs"], free["outputs"]);
    let waits = |v: &serde_json::Value| {
        v["stats"]["stall_cycles"]["memory"]
            .as_u64()
            .expect("memory stalls")
    };
    assert!(
        waits(&one) > waits(&free),
        "{} memory stalls with the limit, {} without",
        waits(&one),
        waits(&free)
    );
}
