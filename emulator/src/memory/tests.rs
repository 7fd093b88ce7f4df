use super::below::BandwidthQueue;
use super::*;
use crate::config::{AtomicUnit, DramOrder, DramRows, UnitBits};

fn load<'a>(lanes: &'a [(u8, u64)], bytes: u32) -> MemRequest<'a> {
    MemRequest {
        space: Space::Global,
        kind: AccessKind::Load,
        bytes_per_lane: bytes,
        lanes,
        path: LoadPath::Cached,
        lookup_lanes: QUAD,
        scheduler: 0,
    }
}

fn warp(f: impl Fn(u64) -> u64) -> Vec<(u8, u64)> {
    (0..32u8).map(|l| (l, f(u64::from(l)))).collect()
}

#[test]
fn runs_split_a_mask() {
    assert_eq!(runs(0b1011).collect::<Vec<_>>(), vec![(0, 2), (3, 1)]);
    assert_eq!(runs(0).count(), 0);
    assert_eq!(runs(0xff).collect::<Vec<_>>(), vec![(0, 8)]);
}

#[test]
fn unloaded_pointer_chase_sees_configured_latencies_on_every_preset() {
    for name in GpuConfig::preset_names() {
        let cfg = GpuConfig::preset(name).unwrap();
        let want = cfg.unloaded_latencies();
        let mut mem = MemorySystem::new(&cfg);
        let a = [(0u8, 0x10_0000u64)];
        // Cold: DRAM. Then the same address: L1 hit.
        let t0 = 1000;
        let t1 = mem.access(t0, &load(&a, 8));
        assert_eq!(t1 - t0, want.dram, "{name} dram");
        let t2 = mem.access(t1, &load(&a, 8));
        assert_eq!(t2 - t1, want.l1_hit, "{name} l1");
        // L2 hit: the address is in L2 but not in another SM's L1.
        let other = load(&a, 8);
        let t3 = mem.access_on(1, t2, &other);
        assert_eq!(t3 - t2, want.l2_hit, "{name} l2");
        // Texture path: cold fetch misses to DRAM behind the texture pipeline, then hits.
        let tx = [(0u8, 0x20_0000u64)];
        let mut tex = load(&tx, 4);
        tex.space = Space::Texture;
        let t4 = mem.access(t3, &tex);
        assert_eq!(
            t4 - t3,
            want.texture_hit + (want.dram - want.l1_hit),
            "{name} tex miss"
        );
        let t5 = mem.access(t4, &tex);
        assert_eq!(t5 - t4, want.texture_hit, "{name} tex hit");
        // Shared memory, conflict-free.
        let sh = warp(|l| 4 * l);
        let mut s = load(&sh, 4);
        s.space = Space::Shared;
        assert_eq!(mem.access(t5, &s) - t5, want.shared, "{name} shared");
        // Constant: cold miss goes to L2 (then DRAM), then a broadcast hit.
        let c = [(0u8, 0x40u64)];
        let mut k = load(&c, 4);
        k.space = Space::Const;
        let t6 = mem.access(t5 + 100, &k);
        let t7 = mem.access(t6, &k);
        assert_eq!(t7 - t6, want.constant_hit, "{name} constant");
    }
}

#[test]
fn coalesced_warp_counts_four_sectors_strided_counts_thirty_two() {
    let cfg = GpuConfig::preset("v100").unwrap();
    let mut mem = MemorySystem::new(&cfg);
    mem.access(0, &load(&warp(|l| 4 * l), 4));
    let c = mem.counters();
    assert_eq!((c.l1.requests, c.l1.sector_misses), (1, 4));
    assert_eq!(c.dram_bytes_read, 128);
    let mut mem = MemorySystem::new(&cfg);
    mem.access(0, &load(&warp(|l| 4096 * l), 4));
    let c = mem.counters();
    assert_eq!((c.l1.requests, c.l1.sector_misses), (32, 32));
    assert_eq!(c.dram_bytes_read, 32 * 32);
}

#[test]
fn strided_warp_occupies_the_l1_port_one_cycle_per_line() {
    let cfg = GpuConfig::preset("h100").unwrap();
    let mut mem = MemorySystem::new(&cfg);
    let lanes = warp(|l| 128 * l);
    mem.access(0, &load(&lanes, 4)); // warm the lines
    let t = 100_000;
    let done = mem.access(t, &load(&lanes, 4));
    // 32 lines: the last is looked up 31 cycles after the first.
    assert_eq!(done - t, cfg.unloaded_latencies().l1_hit + 31);
}

#[test]
fn a_line_that_fetches_holds_the_l1_port_for_its_miss_cycles_and_a_hit_for_one() {
    let hit = [(0u8, 0x40_0000u64)];
    let cold = warp(|l| 0x10_0000 + 4096 * l);
    for per_miss in [None, Some(1), Some(3)] {
        let mut cfg = GpuConfig::preset("h100").unwrap();
        cfg.l1.miss_line_cycles = per_miss;
        let l1_hit = cfg.unloaded_latencies().l1_hit;
        let mut mem = MemorySystem::new(&cfg);
        let t = mem.access(0, &load(&hit, 4)) + 1000;
        // A hit behind 32 lines that each fetch waits until the port has sent them all.
        mem.access(t, &load(&cold, 4));
        let behind_misses = mem.access(t, &load(&hit, 4)) - t;
        assert_eq!(
            behind_misses,
            32 * u64::from(per_miss.unwrap_or(1)) + l1_hit,
            "{per_miss:?}"
        );
        // The same 32 lines again, all in L1 now: a cycle each.
        let t = t + 100_000;
        mem.access(t, &load(&cold, 4));
        let behind_hits = mem.access(t, &load(&hit, 4)) - t;
        assert_eq!(behind_hits, 32 + l1_hit, "{per_miss:?}");
    }
}

#[test]
fn a_schedulers_missing_lines_leave_at_its_pace_and_its_hits_and_fetches_do_not_wait() {
    // 8 lanes' cold lines 4 KiB apart, at `base`.
    let cold = |base: u64| -> Vec<(u8, u64)> {
        (0..8u8).map(|l| (l, base + 4096 * u64::from(l))).collect()
    };
    let (a, b, c) = (cold(0x100_0000), cold(0x200_0000), cold(0x300_0000));
    let hit = [(0u8, 0x40_0000u64)];
    // What each request completes in, all issued at cycle `t` with the option at `pace`: `a`
    // from scheduler 0, `b` from scheduler `b_on`, then a hit and a texture fetch of `c` from
    // scheduler 0.
    let run = |pace: Option<u32>, b_on: usize| {
        let mut cfg = GpuConfig::preset("h100").unwrap();
        cfg.sm.scheduler_line_cycles = pace;
        let mut mem = MemorySystem::new(&cfg);
        let t = mem.access(0, &load(&hit, 4)) + 10_000;
        let a_done = mem.access(t, &load(&a, 4)) - t;
        let b_done = mem.access(
            t,
            &MemRequest {
                scheduler: b_on,
                ..load(&b, 4)
            },
        ) - t;
        let hit_done = mem.access(t, &load(&hit, 4)) - t;
        let tex = MemRequest {
            space: Space::Texture,
            ..load(&c, 4)
        };
        let tex_done = mem.access(t, &tex) - t;
        [a_done, b_done, hit_done, tex_done]
    };
    let port = run(None, 0);
    let [a, b_same, hit_same, tex_same] = run(Some(4), 0);
    let [_, b_other, ..] = run(Some(4), 1);
    // The SM's port sends a's lines a cycle apart; its scheduler, 4: the last leaves 21 later.
    assert_eq!(a, port[0] + 7 * 3);
    // b's lines on the same scheduler leave after a's, 4 cycles apart from a's last one; on
    // another they leave at the port's slots and their own scheduler's pace.
    assert_eq!(b_same, a + 8 * 4);
    assert_eq!(b_same - b_other, 8 * 4 - 8);
    // A hit is not held: it waits for the port alone, as the texture fetch's lines do.
    assert_eq!(hit_same, port[2]);
    assert_eq!(tex_same, port[3]);
}

#[test]
fn second_miss_to_a_line_in_flight_merges_and_completes_with_the_first() {
    let cfg = GpuConfig::preset("a100").unwrap();
    let mut mem = MemorySystem::new(&cfg);
    let a = [(0u8, 0x8000u64)];
    let first = mem.access(0, &load(&a, 4));
    let second = mem.access(10, &load(&a, 4));
    assert_eq!(second, first);
    let c = mem.counters();
    assert_eq!((c.l1.sector_misses, c.l1.mshr_merges), (1, 1));
    assert_eq!(c.dram_bytes_read, 32);
}

#[test]
fn a_missed_sector_brings_its_fetch_block_from_dram() {
    // One word per 64 bytes: half of each 64-byte block, the pattern whose DRAM bytes an H100
    // and an H200 doubled (docs/gpu/dram-granularity.cu).
    let every_other = warp(|l| 0x10_0000 + 64 * l);
    let dense = warp(|l| 0x20_0000 + 4 * l);
    for (fetch, want_sparse) in [(None, 32 * 32), (Some(32), 32 * 32), (Some(64), 32 * 64)] {
        let mut cfg = GpuConfig::preset("h100").unwrap();
        cfg.l2.fetch_bytes = fetch;
        let mut mem = MemorySystem::new(&cfg);
        let t = mem.access(0, &load(&every_other, 4));
        assert_eq!(mem.counters().dram_bytes_read, want_sparse, "{fetch:?}");
        // A coalesced warp's four sectors are two whole blocks: nothing extra either way.
        mem.access(t, &load(&dense, 4));
        assert_eq!(
            mem.counters().dram_bytes_read,
            want_sparse + 128,
            "{fetch:?}"
        );
        // The other half of the first block, from another SM: an L2 hit where it was fetched.
        let buddy = [(0u8, 0x10_0000 + 32)];
        let before = mem.counters().l2;
        mem.access_on(1, t + 10_000, &load(&buddy, 4));
        let c = mem.counters();
        let hit = c.l2.sector_hits - before.sector_hits;
        assert_eq!(hit, u64::from(fetch == Some(64)), "{fetch:?}");
        assert_eq!(
            c.dram_bytes_read,
            want_sparse + 128 + 32 * (1 - hit),
            "{fetch:?}"
        );
        // Every DRAM read is one fill of the L2, which Nsight Compute's L2 counts as a lookup:
        // its sectors looked up are the sectors read plus the DRAM bytes read over the block.
        assert_eq!(
            c.l2.fills * u64::from(fetch.unwrap_or(32)),
            c.dram_bytes_read,
            "{fetch:?}"
        );
    }
}

#[test]
fn exhausted_mshrs_delay_the_next_miss() {
    let mut cfg = GpuConfig::preset("v100").unwrap();
    cfg.l1.mshrs = 1;
    let mut mem = MemorySystem::new(&cfg);
    let dram = cfg.unloaded_latencies().dram;
    let a = mem.access(0, &load(&[(0, 0x1_0000)], 4));
    let b = mem.access(1, &load(&[(0, 0x9_0000)], 4));
    assert_eq!(a, dram);
    assert_eq!(b, a + dram, "the second miss leaves when the first returns");
}

#[test]
fn an_l2_only_load_takes_an_l1_mshr_until_its_answer() {
    let mut cfg = GpuConfig::preset("h100").unwrap();
    cfg.l1.mshrs = 1;
    let mut mem = MemorySystem::new(&cfg);
    let dram = cfg.unloaded_latencies().dram;
    let l2_only = |lanes| MemRequest {
        path: LoadPath::L2Only,
        ..load(lanes, 4)
    };
    let a = mem.access(0, &l2_only(&[(0, 0x1_0000)]));
    let b = mem.access(1, &l2_only(&[(0, 0x9_0000)]));
    assert_eq!(a, dram);
    assert_eq!(
        b,
        a + dram,
        "the second read leaves when the first is answered"
    );
    // A cached miss waits for the L1-skipping read's MSHR as well, and a store for none.
    let c = mem.access(2, &l2_only(&[(0, 0x11_0000)]));
    let d = mem.access(3, &load(&[(0, 0x19_0000)], 4));
    assert_eq!(d, c + dram);
    let store = MemRequest {
        kind: AccessKind::Store,
        ..load(&[(0, 0x21_0000)], 4)
    };
    assert!(
        mem.access(4, &store) < c,
        "a store does not wait for an MSHR"
    );
}

#[test]
fn dram_queue_makes_the_second_transfer_wait_bytes_over_bandwidth() {
    let mut cfg = GpuConfig::preset("v100").unwrap();
    cfg.dram.bandwidth_bytes_per_cycle = 16.0;
    let mut mem = MemorySystem::new(&cfg);
    let dram = cfg.unloaded_latencies().dram;
    // Two SMs each miss one 32-byte sector at the same cycle, in different L2 slices.
    let mut r = load(&[(0, 0)], 4);
    let a = mem.access(0, &r);
    let lanes = [(0u8, 128u64)];
    r.lanes = &lanes;
    let b = mem.access_on(1, 0, &r);
    assert_eq!(a, dram);
    assert_eq!(b, dram + 32 / 16);
}

#[test]
fn a_shuffled_or_front_dram_read_waits_a_drawn_part_of_the_backlog_in_front_of_it() {
    // 64 SMs each miss one line at cycle 0, in order: in arrival order the k-th waits for the
    // k reads before it. Shuffled, each waits for a drawn part of that backlog, never more.
    let times = |order: Option<DramOrder>| {
        let mut cfg = GpuConfig::preset("v100").unwrap();
        cfg.dram.bandwidth_bytes_per_cycle = 16.0;
        cfg.dram.order = order;
        let mut mem = MemorySystem::new(&cfg);
        let done: Vec<u64> = (0..64u64)
            .map(|sm| mem.access_on(sm as usize, 0, &load(&[(0, sm << 12)], 4)))
            .collect();
        (done, mem.counters().dram_bytes_read)
    };
    let dram = GpuConfig::preset("v100").unwrap().unloaded_latencies().dram;
    let (arrival, arrival_bytes) = times(None);
    let (shuffled, shuffled_bytes) = times(Some(DramOrder::Shuffled));
    assert!(arrival.windows(2).all(|w| w[0] < w[1]), "{arrival:?}");
    for (s, a) in shuffled.iter().zip(&arrival) {
        assert!((dram..=*a).contains(s), "{s} outside {dram}..={a}");
    }
    let passed = shuffled.iter().zip(&arrival).filter(|(s, a)| s < a).count();
    assert!(
        passed > 32,
        "only {passed} of 64 reads passed part of the backlog"
    );
    assert_eq!(
        shuffled,
        times(Some(DramOrder::Shuffled)).0,
        "the draw is the same"
    );
    assert_eq!(shuffled_bytes, arrival_bytes);
    // `front` waits the smaller of the same draw and another: never longer than `shuffled`,
    // and a third of the backlog on average rather than half.
    let (front, front_bytes) = times(Some(DramOrder::Front));
    assert!(front.iter().zip(&shuffled).all(|(f, s)| f <= s));
    let waited = |t: &[u64]| t.iter().map(|d| d - dram).sum::<u64>() as f64;
    let (f, s, a) = (waited(&front), waited(&shuffled), waited(&arrival));
    assert!(
        f < 0.8 * s && f < 0.45 * a,
        "front {f}, shuffled {s}, arrival {a}"
    );
    assert_eq!(front_bytes, arrival_bytes);
}

#[test]
fn dram_queue_unit_test() {
    let mut q = BandwidthQueue::new(32.0);
    assert_eq!(q.reserve(10, 128), 10);
    assert_eq!(q.reserve(10, 128), 14);
    assert_eq!(q.reserve(100, 64), 100);
}

#[test]
fn a_read_that_opens_a_dram_page_costs_its_row_miss_bytes_more() {
    // Four SMs each miss one sector at cycle 0: two in one page, then two in another that maps
    // to the same (only) bank. DRAM, 16 bytes a cycle, is the bottleneck; a page opening costs
    // 32 bytes, 2 cycles, which every later transfer waits for.
    let at = [0u64, 128, 4096, 4096 + 128];
    let times = |rows: Option<DramRows>| {
        let mut cfg = GpuConfig::preset("v100").unwrap();
        cfg.dram.bandwidth_bytes_per_cycle = 16.0;
        cfg.dram.rows = rows;
        let mut mem = MemorySystem::new(&cfg);
        let done: Vec<u64> = (at.iter().enumerate())
            .map(|(sm, &a)| mem.access_on(sm, 0, &load(&[(0, a)], 4)))
            .collect();
        (done, mem.counters().dram_bytes_read)
    };
    let (flat, flat_bytes) = times(None);
    let rows = DramRows {
        banks: 1,
        page_bytes: 1024,
        interleave_bytes: None,
        row_miss_bytes: 32,
        reorder_rows: None,
        open_cycles: None,
        permute_per: None,
    };
    let (paged, paged_bytes) = times(Some(rows));
    let later: Vec<u64> = paged.iter().zip(&flat).map(|(p, f)| p - f).collect();
    assert_eq!(later, [0, 2, 2, 4], "{paged:?} against {flat:?}");
    assert_eq!(
        paged_bytes, flat_bytes,
        "opening a page moves no counted bytes"
    );
}

#[test]
fn a_transfer_answered_late_takes_the_free_time_at_its_arrival() {
    let mut q = BandwidthQueue::new(32.0);
    // Answered first but sent later: busy 1000-1004.
    assert_eq!(q.reserve(1000, 128), 1000);
    // Sent at 10, answered after it: the port was free then.
    assert_eq!(q.reserve(10, 128), 10);
    // Sent at 998 and needing 4 cycles: 998-1000, then 1004-1006 after the busy span.
    assert_eq!(q.reserve(998, 128), 998);
    assert_eq!(q.reserve(998, 32), 1006);
    // In time order it is a plain queue: the next starts where the last ended.
    assert_eq!(q.reserve(1006, 64), 1007);
    assert_eq!(q.reserve(1007, 32), 1009);
    // Forgetting the past keeps what is still ahead.
    q.forget_before(1005);
    assert_eq!(q.reserve(1000, 32), 1010);
    // Fractions of a cycle queue too: 48 bytes at 32 per cycle end mid-cycle.
    let mut f = BandwidthQueue::new(32.0);
    assert_eq!(f.reserve(0, 48), 0);
    assert_eq!(
        f.reserve(0, 16),
        2,
        "starts at 1.5 cycles, reported as cycle 2"
    );
    assert_eq!(f.reserve(5, 32), 5);
}

#[test]
fn l2_slice_hash_spreads_consecutive_and_power_of_two_strides() {
    let cfg = GpuConfig::preset("v100").unwrap();
    let mem = MemorySystem::new(&cfg);
    let n = mem.below.parts.iter().map(|p| p.slices.len()).sum();
    for stride in [1u64, 2, 64, 4096] {
        let mut hits = vec![0u32; n];
        for i in 0..(n as u64 * 8) {
            hits[mem.below.slice_of(i * stride)] += 1;
        }
        let (lo, hi) = (hits.iter().min().unwrap(), hits.iter().max().unwrap());
        assert!(*lo >= 1 && hi - lo <= 8, "stride {stride}: {hits:?}");
    }
}

#[test]
fn shared_bank_conflicts_add_replays() {
    let cfg = GpuConfig::preset("gtx480").unwrap();
    let mut mem = MemorySystem::new(&cfg);
    let lat = u64::from(cfg.shared.latency_cycles);
    let two_way = warp(|l| 8 * l);
    let mut r = load(&two_way, 4);
    r.space = Space::Shared;
    assert_eq!(mem.access(0, &r), lat + 1);
    let same = warp(|_| 12);
    r.lanes = &same;
    assert_eq!(mem.access(1000, &r) - 1000, lat);
    let c = mem.counters();
    assert_eq!((c.shared_accesses, c.shared_bank_conflict_replays), (2, 1));
}

#[test]
fn shared_atomics_on_one_word_serialize_at_the_presets_cost_per_lane() {
    for (preset, per_lane) in [("gtx480", 1.0), ("h100", 2.2)] {
        let cfg = GpuConfig::preset(preset).unwrap();
        assert_eq!(cfg.shared.same_word_atomic_cycles.unwrap_or(1.0), per_lane);
        let mut mem = MemorySystem::new(&cfg);
        let lat = u64::from(cfg.shared.latency_cycles);
        let same = warp(|_| 12);
        let mut r = load(&same, 4);
        r.space = Space::Shared;
        r.kind = AccessKind::Atomic;
        let serial = (31.0 * per_lane).round() as u64;
        assert_eq!(mem.access(0, &r), lat + serial, "{preset}");
        // The port stays busy meanwhile: the next access waits for it.
        assert_eq!(mem.access(1, &r), 1 + serial + lat + serial, "{preset}");
        // One lane does not serialize.
        r.lanes = &same[..1];
        assert_eq!(mem.access(10_000, &r) - 10_000, lat, "{preset}");
        assert_eq!(mem.counters().shared_bank_conflict_replays, 62, "{preset}");
    }
}

#[test]
fn a_constant_line_the_first_level_lost_comes_from_the_second_and_a_cold_one_from_the_l2() {
    let cfg = GpuConfig::preset("h100").unwrap();
    let first = &cfg.constant;
    let second = cfg.constant_second_level.clone().unwrap();
    let lines = u64::from(second.size_bytes / second.line_bytes);
    assert!(first.size_bytes < second.size_bytes);
    let line = u64::from(first.line_bytes);
    let read = |mem: &mut MemorySystem, t: u64, l: u64| {
        let a = [(0u8, 0x4000 + l * line)];
        let mut r = load(&a, 4);
        r.space = Space::Const;
        mem.access(t, &r) - t
    };
    let mut mem = MemorySystem::new(&cfg);
    let mut without = cfg.clone();
    without.constant_second_level = None;
    let mut alone = MemorySystem::new(&without);
    // Cold: the L2's path, the same with or without a second level.
    let mut t = 1000;
    for l in 0..lines {
        let cold = read(&mut mem, t, l);
        assert_eq!(cold, read(&mut alone, t, l), "line {l}");
        assert!(cold > u64::from(second.latency_cycles), "line {l}: {cold}");
        t += cold;
    }
    // Every line again, last first: the first level kept the last few, the second all of them.
    let kept = u64::from(first.size_bytes / first.line_bytes);
    for l in (0..lines).rev() {
        let want = if l >= lines - kept {
            first.latency_cycles
        } else {
            second.latency_cycles
        };
        assert_eq!(read(&mut mem, t, l), u64::from(want), "line {l}");
        t += 1000;
    }
}

#[test]
fn an_uploaded_constant_line_is_an_l2_hit_by_the_constant_paths_own_way() {
    let h100 = GpuConfig::preset("h100").unwrap();
    let mut global_way = h100.clone();
    global_way.l2.constant_latency_cycles = None;
    let addr = 0x4000;
    let a = [(0u8, addr)];
    for cfg in [&h100, &global_way] {
        let want = cfg.unloaded_latencies();
        let held = || Some(L2Lines::holding(cfg, None, addr, 64));
        let mut r = load(&a, 4);
        r.space = Space::Const;
        assert_eq!(
            MemorySystem::after(cfg, held()).access(0, &r),
            want.constant_l2_hit
        );
        // A cold L2 sends it on to DRAM.
        let cold = MemorySystem::after(cfg, None).access(0, &r);
        assert!(cold > want.constant_l2_hit + u64::from(cfg.dram.latency_cycles) / 2);
        // A global load of the held line is an L2 hit by the L1's way.
        let g = load(&a, 4);
        assert_eq!(MemorySystem::after(cfg, held()).access(0, &g), want.l2_hit);
    }
    let (fast, slow) = (
        h100.unloaded_latencies().constant_l2_hit,
        global_way.unloaded_latencies().constant_l2_hit,
    );
    assert!(fast < slow, "{fast} {slow}");
}

#[test]
fn constant_broadcast_is_one_pass_distinct_addresses_serialize() {
    let cfg = GpuConfig::preset("h100").unwrap();
    let mut mem = MemorySystem::new(&cfg);
    let lat = u64::from(cfg.constant.latency_cycles);
    let eight = warp(|l| 4 * (l % 8));
    let mut r = load(&eight, 4);
    r.space = Space::Const;
    let warm = mem.access(0, &r);
    let t = warm + 10;
    assert_eq!(mem.access(t, &r) - t, lat + 7);
    let uniform = warp(|_| 0);
    r.lanes = &uniform;
    let t = t + 100;
    assert_eq!(mem.access(t, &r) - t, lat);
    assert_eq!(mem.counters().constant_serialization_replays, 14);
}

#[test]
fn stores_complete_at_l1_stage_and_reach_dram_only_when_evicted() {
    let cfg = GpuConfig::preset("gtx480").unwrap();
    let mut mem = MemorySystem::new(&cfg);
    let lanes = warp(|l| 4 * l);
    let mut r = load(&lanes, 4);
    r.kind = AccessKind::Store;
    let ack = mem.access(0, &r);
    assert_eq!(ack, cfg.unloaded_latencies().l1_hit);
    let c = mem.counters();
    assert_eq!(
        (c.l2.write_sectors, c.dram_bytes_written, c.dram_bytes_read),
        (4, 0, 0)
    );
    // A load of the written line is an L2 hit, not a DRAM access.
    let mut l = r;
    l.kind = AccessKind::Load;
    let t = 10_000;
    assert_eq!(mem.access(t, &l) - t, cfg.unloaded_latencies().l2_hit);
    // Streaming far more than the L2 through stores evicts the dirty data to DRAM.
    for i in 0..(2 * cfg.l2.size_bytes / 128) {
        let a = [(0u8, 0x100_0000 + i * 128)];
        mem.access(20_000 + i, &MemRequest { lanes: &a, ..r });
    }
    assert!(mem.counters().dram_bytes_written > 0);
}

#[test]
fn atomics_to_one_word_serialize_at_l2() {
    let cfg = GpuConfig::preset("a100").unwrap();
    let mut mem = MemorySystem::new(&cfg);
    let same = warp(|_| 0x100);
    let mut r = load(&same, 4);
    r.kind = AccessKind::Atomic;
    let t0 = mem.access(0, &r);
    // Eight lanes, eight words of the sector the first atomic brought into L2.
    let distinct: Vec<(u8, u64)> = (0..8u8).map(|l| (l, 0x100 + 4 * u64::from(l))).collect();
    r.lanes = &distinct;
    let t1 = mem.access(100_000, &r) - 100_000;
    assert_eq!(t0, cfg.unloaded_latencies().dram + 31);
    assert_eq!(t1, cfg.unloaded_latencies().l2_hit);
    assert_eq!(mem.counters().atomics, 2);
}

#[test]
fn an_atomic_unit_serializes_requests_of_every_warp_on_a_line() {
    let mut cfg = GpuConfig::preset("a100").unwrap();
    cfg.l2.atomic_unit = Some(AtomicUnit {
        same_address_cycles: 1.5,
        address_cycles: 0.25,
        unit_address_bits: None,
        in_flight_per_sm: None,
    });
    let mut mem = MemorySystem::new(&cfg);
    let one = [(0u8, 0x100u64)];
    let mut r = load(&one, 4);
    r.kind = AccessKind::Atomic;
    // Bring the line into L2, then let the unit go idle.
    mem.access(0, &r);
    let t = 100_000;
    let hit = cfg.unloaded_latencies().l2_hit;
    // One lane: the hit plus its operation, rounded up to a whole cycle.
    assert_eq!(mem.access(t, &r) - t, hit + 2);
    // Thirty-two requests from other warps at the same cycle queue behind each other, 1.5
    // cycles each: the fractions add up, not the whole cycles each one is answered at.
    let later = t + 1000;
    let last = (0..32).map(|_| mem.access(later, &r)).max().unwrap();
    assert_eq!(last - later, hit + 48);
    // Eight lanes on eight words of the sector in L2: 1.5 + 7 × 0.25 = 3.25 cycles, not 8 × 1.5.
    let words: Vec<(u8, u64)> = (0..8u8).map(|l| (l, 0x100 + 4 * u64::from(l))).collect();
    let mut w = load(&words, 4);
    w.kind = AccessKind::Atomic;
    let t2 = t + 5000;
    assert_eq!(mem.access(t2, &w) - t2, hit + 4);
}

#[test]
fn the_address_bits_named_pick_a_lines_atomic_unit() {
    // Sixteen one-lane atomics of 8 cycles each on word 0 of four consecutive lines, issued at
    // one cycle after the lines are in L2; the L1 sends one a cycle, in turn to lines 0, 1, 2, 3.
    let last_of = |bits: Option<Vec<Vec<u32>>>| {
        let mut cfg = GpuConfig::preset("a100").unwrap();
        cfg.l2.atomic_unit = Some(AtomicUnit {
            same_address_cycles: 8.0,
            address_cycles: 0.25,
            unit_address_bits: bits.map(|b| UnitBits::try_from(b).unwrap()),
            in_flight_per_sm: None,
        });
        let mut mem = MemorySystem::new(&cfg);
        let reqs: Vec<[(u8, u64); 1]> = (0..4u64).map(|l| [(0u8, 0x10_0000 + 128 * l)]).collect();
        let atomic = |lanes| MemRequest {
            kind: AccessKind::Atomic,
            ..load(lanes, 4)
        };
        for r in &reqs {
            mem.access(0, &atomic(r));
        }
        let t = 100_000;
        let last = (0..16)
            .map(|i| mem.access(t, &atomic(&reqs[i % 4])))
            .max()
            .unwrap();
        last - t - cfg.unloaded_latencies().l2_hit
    };
    // Each line its slice's unit: each unit's four requests queue, the fourth line's last
    // starting at 3 + 24 and done at 35.
    assert_eq!(last_of(None), 35, "four lines, four units");
    // Bits 8 and 9 XORed: lines 0 and 1 on one unit, 2 and 3 on another, whose first request
    // is sent at 2 and whose eight end at 2 + 64.
    assert_eq!(last_of(Some(vec![vec![8, 9]])), 66, "two units");
    // Bit 10 alone, which the four lines share, and the bits above folded onto it: one unit.
    assert_eq!(last_of(Some(vec![vec![10]])), 128, "one unit");
}

#[test]
fn an_l2_only_load_skips_a_line_the_l1_holds() {
    let cfg = GpuConfig::preset("h100").unwrap();
    let lat = cfg.unloaded_latencies();
    let mut mem = MemorySystem::new(&cfg);
    let lanes = [(0u8, 0x4000u64)];
    let plain = load(&lanes, 4);
    mem.access(0, &plain);
    let t = 100_000;
    assert_eq!(
        mem.access(t, &plain) - t,
        lat.l1_hit,
        "the L1 holds the line"
    );
    let strong = MemRequest {
        path: LoadPath::L2Only,
        ..plain
    };
    assert_eq!(mem.access(t + 1000, &strong) - t - 1000, lat.l2_hit);
}

#[test]
fn fermi_readonly_loads_use_the_texture_cache_volta_loads_use_l1() {
    let lanes = warp(|l| 4 * l);
    for (name, tex_path) in [("gtx480", true), ("v100", false)] {
        let cfg = GpuConfig::preset(name).unwrap();
        let mut mem = MemorySystem::new(&cfg);
        let mut r = load(&lanes, 4);
        r.path = LoadPath::ReadOnly;
        mem.access(0, &r);
        let c = mem.counters();
        assert_eq!(c.texture.requests > 0, tex_path, "{name}");
        assert_eq!(c.l1.requests > 0, !tex_path, "{name}");
        assert_eq!(c.tex_hit_rate.is_some(), tex_path);
    }
}

#[test]
fn texture_hits_count_per_lookup_of_a_quad_or_a_pair_and_per_request() {
    // The cases of docs/gpu/tex-lookup-count.cu: 32 lanes point-sample one texel of a cold
    // texture, then 32 texels 32 bytes apart, then the first texel again; then 32 lanes sample
    // one point trilinearly (a sector in each of two slices). An H100's ncu read 8 lookups and
    // 87.5 % for the first, 32 lookups and 0 % for the second, 32 and 93.75 % for the last.
    for name in GpuConfig::preset_names() {
        let cfg = GpuConfig::preset(name).unwrap();
        let mut mem = MemorySystem::new(&cfg);
        let fetch = |lanes| MemRequest {
            space: Space::Texture,
            ..load(lanes, 1)
        };
        let same = warp(|_| 0x20_0000);
        let t = mem.access(0, &fetch(&same));
        let c = mem.counters();
        assert_eq!(c.texture.tex_lookups, 8, "{name}");
        assert_eq!(
            c.tex_sector_hit_rate,
            Some(0.0),
            "{name}: one sector, a miss"
        );
        assert_eq!(
            c.tex_hit_rate,
            Some(1.0 - 1.0 / 8.0),
            "{name}: its first lookup misses"
        );
        let apart = warp(|l| 0x30_0000 + 32 * l);
        let t = mem.access(t, &fetch(&apart));
        let c = mem.counters();
        assert_eq!(c.texture.tex_lookups, 40, "{name}");
        assert_eq!(
            c.tex_hit_rate,
            Some(1.0 - 33.0 / 40.0),
            "{name}: 32 more misses"
        );
        let t = mem.access(t, &fetch(&same));
        let c = mem.counters();
        assert_eq!(c.tex_sector_hit_rate, Some(1.0 / 34.0), "{name}");
        assert_eq!(c.tex_hit_rate, Some(1.0 - 33.0 / 48.0), "{name}");
        let slices: Vec<(u8, u64)> = (0..32u8)
            .flat_map(|l| [(l, 0x40_0000), (l, 0x40_1000)])
            .collect();
        mem.access(
            t,
            &MemRequest {
                lookup_lanes: PAIR,
                ..fetch(&slices)
            },
        );
        let c = mem.counters();
        assert_eq!(c.texture.tex_lookups, 48 + 32, "{name}");
        assert_eq!(c.tex_hit_rate, Some(1.0 - 35.0 / 80.0), "{name}");
    }
}

#[test]
fn an_in_order_texture_path_holds_a_hit_until_the_fetches_before_it_complete() {
    let fetch = |lanes| MemRequest {
        space: Space::Texture,
        ..load(lanes, 4)
    };
    let hot = [(0u8, 0x40_0000u64)];
    let cold = [(0u8, 0x80_0000u64)];
    for in_order in [false, true] {
        let mut cfg = GpuConfig::preset("h100").unwrap();
        cfg.texture.in_order = in_order;
        let hit = cfg.unloaded_latencies().texture_hit;
        let mut mem = MemorySystem::new(&cfg);
        let t = mem.access(0, &fetch(&hot)) + 1000;
        let miss_done = mem.access(t, &fetch(&cold));
        assert!(
            miss_done > t + 2 * hit,
            "{in_order}: the cold texel is a miss"
        );
        let hit_done = mem.access(t + 10, &fetch(&hot));
        let want = if in_order { miss_done } else { t + 10 + hit };
        assert_eq!(hit_done, want, "in_order = {in_order}");
        // Loads through the L1 are not texture fetches: a hit is never held for them.
        let global_hit = mem.access(t + 20, &load(&hot, 4));
        assert_eq!(
            global_hit,
            t + 20 + cfg.unloaded_latencies().l1_hit,
            "{in_order}"
        );
    }
}

#[test]
fn a_texture_fetch_holds_the_port_for_its_lookups_at_the_tag_stages_rate() {
    // Every lane looks up its own sector of one resident line: 32 lookups, 1 line.
    let lanes = warp(|l| 0x40_0000 + 32 * (l % 4));
    let fetch = MemRequest {
        space: Space::Texture,
        lookup_lanes: 1,
        ..load(&lanes, 4)
    };
    for rate in [None, Some(2), Some(64)] {
        let mut cfg = GpuConfig::preset("h100").unwrap();
        cfg.texture.in_order = false;
        cfg.texture.lookups_per_cycle = rate;
        let hit = cfg.unloaded_latencies().texture_hit;
        let mut mem = MemorySystem::new(&cfg);
        let t = mem.access(0, &fetch) + 1000;
        let tag_cycles = rate.map_or(1, |r| 32u64.div_ceil(u64::from(r)));
        assert_eq!(mem.access(t, &fetch), t + tag_cycles - 1 + hit, "{rate:?}");
        // The next fetch waits for the port: its own lookups start after the first's.
        assert_eq!(
            mem.access(t, &fetch),
            t + 2 * tag_cycles - 1 + hit,
            "{rate:?}"
        );
    }
}

#[test]
fn a_bigger_cache_never_hits_less_on_a_reuse_pattern() {
    let mut rates = Vec::new();
    for kb in [16u32, 32, 64, 128] {
        let mut cfg = GpuConfig::preset("v100").unwrap();
        cfg.l1.size_bytes = kb * 1024;
        cfg.l1.ways = 4;
        let mut mem = MemorySystem::new(&cfg);
        let mut t = 0;
        // Sweep a 48 KiB working set three times, one coalesced warp load per line.
        for _ in 0..3 {
            for line in 0..(48 * 1024 / 128) {
                let lanes = warp(|l| line * 128 + 4 * l);
                t = mem.access(t, &load(&lanes, 4));
            }
        }
        rates.push(mem.counters().l1_hit_rate.unwrap());
    }
    assert!(rates.windows(2).all(|w| w[1] >= w[0]), "{rates:?}");
    assert!(rates[0] < 0.1 && rates[3] > 0.6, "{rates:?}");
}

#[test]
fn each_sm_is_released_once_its_requests_before_the_bound_are_answered() {
    let cfg = GpuConfig::preset("gtx480").unwrap();
    let mut mem = MemorySystem::new(&cfg);
    // Cold misses, queued for the L2: SM 0 at cycles 20 and 50, SM 1 at 10.
    let a = mem.sms[0].access(20, &load(&[(0, 0x1000)], 4));
    let b = mem.sms[1].access(10, &load(&[(0, 0x2000)], 4));
    mem.sms[0].access(50, &load(&[(0, 0x3000)], 4));
    let mut twin = mem.clone();
    let bound = (30, 0, 0);
    let mut released = Vec::new();
    let mut sides: Vec<Option<&mut SmMem>> = mem.sms.iter_mut().map(Some).collect();
    answer_releasing(&mut mem.below, &mut sides, bound, |i, side| {
        // Taken away: answering the others must not need it any more.
        let sm = side.take().expect("released once");
        let mine = [(0, a), (1, b)].into_iter().find(|&(s, _)| s == i);
        released.push((i, mine.map(|(_, t)| sm.pend.value(t)), sm.queue.len()));
    });
    // The SMs without requests first, then each as its last request before the bound is
    // answered, in that order; SM 0's request at cycle 50 stays queued.
    let mut want: Vec<_> = (2..cfg.sm.count as usize).map(|i| (i, None, 0)).collect();
    twin.answer_before(bound);
    want.push((1, Some(twin.sms[1].pend.value(b)), 0));
    want.push((0, Some(twin.sms[0].pend.value(a)), 1));
    assert!(want.iter().all(|w| w.1.is_none_or(|v| v.is_some())));
    assert_eq!(released, want);
}

#[test]
fn same_accesses_give_same_cycles_and_counters() {
    let run = || {
        let cfg = GpuConfig::preset("gtx480").unwrap();
        let mut mem = MemorySystem::new(&cfg);
        let mut t = 0;
        let mut out = Vec::new();
        for i in 0..500u64 {
            let lanes = warp(|l| (i * 7919 + l * 40) % 100_000);
            let r = load(&lanes, 4);
            t = mem.access_on((i % 15) as usize, t + 3, &r).min(t + 50);
            out.push(t);
        }
        (out, mem.counters())
    };
    assert_eq!(run(), run());
}

/// The bandwidth queue as its definition says, in bytes and without its array: every cycle
/// carries `per_cycle` bytes, a transfer takes the earliest free bytes from its arrival on
/// (its cycles' first ones), and it starts in the cycle after the byte before its first, so
/// mid-cycle starts round up as the queue's ticks do. Nothing is ever forgotten.
struct ByteCalendar {
    per_cycle: u64,
    used: std::collections::BTreeMap<u64, u64>,
}

impl ByteCalendar {
    fn reserve(&mut self, now: u64, bytes: u64) -> u64 {
        let (mut need, mut c, mut first) = (bytes, now, None);
        loop {
            let used = self.used.entry(c).or_insert(0);
            if *used < self.per_cycle {
                let at = c * self.per_cycle + *used;
                first.get_or_insert(at);
                let take = need.min(self.per_cycle - *used);
                *used += take;
                need -= take;
                if need == 0 {
                    return first.unwrap_or(at).div_ceil(self.per_cycle);
                }
            }
            c += 1;
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// The queue's array (which starts at its first cycle neither past nor full and forgets the
    /// past) answers as the plain calendar does, for arrivals in any order at or after the
    /// floor, with the floor moving up now and then as the L2's answers move it.
    #[test]
    fn bandwidth_queue_is_its_calendar(
        per_cycle in proptest::sample::select(vec![8u64, 16, 32, 64]),
        ops in proptest::collection::vec((0u64..3000, 0u64..600, 0u8..8), 1..300),
    ) {
        let mut q = BandwidthQueue::new(per_cycle as f64);
        let mut r = ByteCalendar { per_cycle, used: Default::default() };
        let mut floor = 0u64;
        for (ahead, bytes, op) in ops {
            if op == 0 {
                floor += ahead / 4;
                q.forget_before(floor);
                continue;
            }
            let now = floor + ahead;
            let start = q.reserve(now, bytes);
            proptest::prop_assert!(start >= now);
            proptest::prop_assert_eq!(start, r.reserve(now, bytes), "{} bytes at {}", bytes, now);
        }
    }

    /// Items of per-SM queues are visited in global order, every one before the bound and none
    /// after it, however the SMs' runs interleave.
    #[test]
    fn queues_are_merged_in_global_order(
        queues in proptest::collection::vec(
            proptest::collection::vec(0u64..40, 0..30), 1..6),
        bound_cycle in 0u64..600,
    ) {
        // Each SM's items: non-decreasing cycles, sequence numbers counting up.
        let queues: Vec<Vec<(u64, u64)>> = queues
            .into_iter()
            .map(|q| {
                let mut now = 0;
                q.into_iter()
                    .enumerate()
                    .map(|(seq, step)| {
                        now += step;
                        (now, seq as u64)
                    })
                    .collect()
            })
            .collect();
        let bound = (bound_cycle, 1, 0);
        let mut all: Vec<Key> = queues
            .iter()
            .enumerate()
            .flat_map(|(sm, q)| q.iter().map(move |&(now, seq)| (now, sm as u32, seq)))
            .filter(|&k| k < bound)
            .collect();
        all.sort_unstable();
        let heads = queues
            .iter()
            .enumerate()
            .filter_map(|(sm, q)| q.first().map(|&(now, seq)| (now, sm as u32, seq)))
            .collect();
        let mut at = vec![0usize; queues.len()];
        let mut seen = Vec::new();
        in_global_order(heads, bound, |sm| {
            let (now, seq) = queues[sm][at[sm]];
            seen.push((now, sm as u32, seq));
            at[sm] += 1;
            queues[sm].get(at[sm]).copied()
        });
        proptest::prop_assert_eq!(seen, all);
    }

    /// Any sequence of requests: completions never precede issue, every read sector is a hit,
    /// a miss or a merge, and DRAM reads are whole sectors.
    #[test]
    fn completions_follow_issue_and_counters_add_up(
        preset in 0usize..4,
        ops in proptest::collection::vec(
            (0u32..4, 0u8..6, 0u8..3, 0u64..1 << 20, 0u64..600, 1u32..5, 1u8..33), 1..60),
    ) {
        let name = GpuConfig::preset_names()[preset];
        let cfg = GpuConfig::preset(name).unwrap();
        let mut mem = MemorySystem::new(&cfg);
        // One clock for every SM: the L2 sees requests in issue order, as the engine gives them.
        let mut now = 0u64;
        let mut read_sectors = 0u64;
        for (sm, space, kind, base, stride, width, nlanes) in ops {
            let space = [Space::Global, Space::Local, Space::Shared, Space::Const,
                Space::Param, Space::Texture][space as usize];
            let kind = [AccessKind::Load, AccessKind::Store, AccessKind::Atomic][kind as usize];
            let bytes = 1u32 << (width - 1).min(3);
            let lanes: Vec<(u8, u64)> = (0..nlanes)
                .map(|l| (l, (base + u64::from(l) * stride) & !u64::from(bytes - 1)))
                .collect();
            let req = MemRequest { space, kind, bytes_per_lane: bytes,
                lanes: &lanes, path: LoadPath::Cached, lookup_lanes: QUAD, scheduler: 0 };
            let t = now;
            let done = mem.access_on(sm as usize, t, &req);
            proptest::prop_assert!(done >= t);
            now = t + 1 + (done - t) % 7;
            if kind == AccessKind::Load
                && matches!(space, Space::Global | Space::Local | Space::Texture)
            {
                read_sectors += 1; // at least one sector per load
            }
        }
        let c = mem.counters();
        let l1 = c.l1.read_sectors();
        let tex = c.texture.read_sectors();
        proptest::prop_assert!(l1 + tex >= read_sectors);
        proptest::prop_assert!(c.l1.requests + c.texture.requests >= read_sectors);
        proptest::prop_assert_eq!(c.dram_bytes_read % u64::from(cfg.l2.sector_bytes), 0);
        for r in [c.l1_hit_rate, c.tex_hit_rate, c.l2_hit_rate, c.constant_hit_rate]
            .into_iter()
            .flatten()
        {
            proptest::prop_assert!((0.0..=1.0).contains(&r));
        }
    }
}

/// The h100 preset with its L2 and DRAM in `parts` memory partitions.
fn partitioned(parts: u32) -> GpuConfig {
    let mut cfg = GpuConfig::preset("h100").unwrap();
    cfg.dram.partitions = Some(parts);
    cfg.validate("test").unwrap();
    cfg
}

/// Answers `mem`'s requests before `bound` partition by partition, `helper` answering what it
/// can before the coordinator's walk; returns the SMs in the order they were released.
fn answer_in_parts(mem: &mut MemorySystem, bound: Key, helper: bool) -> Vec<usize> {
    let mut sides: Vec<Option<&mut SmMem>> = mem.sms.iter_mut().map(Some).collect();
    let (answering, asks) =
        begin_in_parts(&mut mem.below, &mut sides, bound).expect("several partitions");
    if helper {
        while answering.help() {}
    }
    let mut released = Vec::new();
    finish_in_parts(&mut mem.below, &mut sides, &answering, asks, |i, _| {
        released.push(i)
    });
    assert!(answering.done());
    released
}

#[test]
fn partitions_answered_apart_give_the_answers_of_one_global_order() {
    let cfg = partitioned(8);
    let mut mem = MemorySystem::new(&cfg);
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    // Loads, stores and atomics of 16 SMs, scattered over 64 MiB and crowded in 64 KiB, sent
    // over 4,000 cycles, some of 32 lines: misses, hits on lines in flight, write-backs,
    // atomic units, and misses that wait for an MSHR and are sent at an earlier answer.
    let mut tokens = Vec::new();
    for i in 0..3000u64 {
        let sm = (next() % 16) as usize;
        let span = if i % 3 == 0 { 1 << 16 } else { 1 << 26 };
        let base = (next() % span) & !3;
        let step = if i % 5 == 0 { 4096 } else { (next() % 4) * 4 };
        let lanes = warp(|l| base + step * l);
        let mut req = load(&lanes, 4);
        req.kind = match i % 7 {
            0 => AccessKind::Store,
            1 => AccessKind::Atomic,
            _ => AccessKind::Load,
        };
        let t = mem.sms[sm].access(i * 4 / 3, &req);
        tokens.push((sm, t));
    }
    let bound = (2000, 0, 0);
    let mut serial = mem.clone();
    serial.answer_before(bound);
    let values = |m: &mut MemorySystem| -> Vec<Option<u64>> {
        (tokens.iter())
            .map(|&(sm, t)| m.sms[sm].pend.value(t))
            .collect()
    };
    let want = values(&mut serial);
    assert!(want.iter().filter(|v| v.is_some()).count() > 1000);
    for helper in [false, true] {
        let mut mem = mem.clone();
        let released = answer_in_parts(&mut mem, bound, helper);
        assert_eq!(values(&mut mem), want, "helper {helper}");
        assert_eq!(mem.counters(), serial.counters());
        assert_eq!(mem.below.atomics_done(), serial.below.atomics_done());
        assert_eq!(mem.below.partitions(), 8, "every partition back");
        assert!(mem.below.atomics_done() > 0);
        let mut sorted = released.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), released.len(), "each SM released once");
    }
}

#[test]
fn sends_that_wait_for_answers_are_answered_as_in_one_global_order() {
    let mut mem = MemorySystem::new(&partitioned(8));
    // One SM's loads of 32 lines each, all at once: its MSHRs fill, and the later misses are
    // sent when earlier ones, in any partition, are answered.
    let mut tokens = Vec::new();
    for i in 0..64u64 {
        let lanes = warp(|l| (i * 32 + l) * 4096);
        tokens.push(mem.sms[0].access(0, &load(&lanes, 4)));
    }
    let waiting = mem.sms[0].queue.iter().filter(|r| is_token(r.sent)).count();
    assert!(waiting > 100, "{waiting} sends wait");
    let mut serial = mem.clone();
    serial.answer_before(END);
    answer_in_parts(&mut mem, END, true);
    let values = |m: &mut MemorySystem| -> Vec<Option<u64>> {
        tokens.iter().map(|&t| m.sms[0].pend.value(t)).collect()
    };
    assert_eq!(values(&mut mem), values(&mut serial));
    assert!(values(&mut mem).iter().all(Option::is_some));
}

#[test]
fn one_partition_answers_in_one_global_order() {
    let mut mem = MemorySystem::new(&partitioned(1));
    mem.sms[0].access(20, &load(&[(0, 0x1000)], 4));
    let mut sides: Vec<Option<&mut SmMem>> = mem.sms.iter_mut().map(Some).collect();
    assert!(begin_in_parts(&mut mem.below, &mut sides, END).is_none());
    assert_eq!(mem.sms[0].queue.len(), 1, "nothing taken");
}

#[test]
fn the_banks_spread_lines_evenly_over_the_partitions() {
    let mem = MemorySystem::new(&partitioned(8));
    for stride in [1u64, 2, 977, 4096] {
        let mut count = [0u32; 8];
        for line in (0..1u64 << 16).map(|l| l * stride) {
            count[mem.below.partition_of(line)] += 1;
        }
        let (lo, hi) = (count.iter().min().unwrap(), count.iter().max().unwrap());
        assert!(
            f64::from(*hi) < 1.1 * f64::from(*lo),
            "stride {stride}: {count:?}"
        );
    }
}
