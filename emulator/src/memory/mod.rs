//! The memory hierarchy's timing: when does a warp's load return, and which caches did it hit.
//!
//! Why this shape: the scheduler needs one number per memory instruction — the cycle its data is
//! in registers (or its store/atomic is acknowledged) — and it needs it fast. So, in the spirit of
//! GPGPU-Sim/Accel-Sim but much simpler, the latency is computed *at issue* from the state of the
//! caches and from resource queues (next-free-cycle counters), not by ticking a network cycle by
//! cycle. Requests arrive in non-decreasing time per SM, and the L2 and DRAM below answer them in
//! global (cycle, SM) order, which is what makes next-free counters a faithful queue. An SM's
//! side ([`SmMem`]) answers what its caches can at once; what needs the L2 it queues, with a
//! token for the answer (`pending.rs`), and [`MemorySystem::answer_before`] gives the answers in
//! that global order between the engine's rounds.
//!
//! Main types: [`MemorySystem`] (every SM's [`SmMem`] and the [`Below`] they share;
//! [`SmMem::access`] is the one entry point), [`MemRequest`], [`Space`], [`AccessKind`],
//! [`MemCounters`] / [`CacheCounters`].
//!
//! # The model
//! - **Coalescing**: a warp's lane addresses become cache lines with a mask of sectors (32 B,
//!   or the line for unsectored caches). The L1 tag stage handles one line per cycle, so an
//!   instruction touching *n* lines occupies the SM's L1 port for *n* cycles.
//! - **Per-SM caches**: L1 data (global and local loads), texture (a separate cache on Fermi,
//!   the L1 itself from Volta on — `texture.unified_with_l1`), constant (also `ld.param`). Sets
//!   are flat arrays of tags; LRU or FIFO replacement; sectored lines; a miss allocates its sectors
//!   with their arrival cycle, so a later request to a sector in flight is an **MSHR merge** that
//!   completes when the first does. A miss with no free MSHR waits for the earliest to return.
//! - **Stores** are write-through and no-allocate in L1 (a resident line stays valid: the write
//!   updates it); they complete for the warp when they pass the L1 stage (visible to the CTA,
//!   which is what `membar.cta` orders) while the write proceeds to L2 in the background. L2 is
//!   write-back and write-allocate without fetch (byte masks, as GPGPU-Sim's sectored L2); dirty
//!   sectors reach DRAM when evicted.
//! - **Atomics** run at L2: fetched on a miss, and lanes hitting one word serialize one cycle
//!   each.
//! - **L2**: slices chosen by XOR-folding the line number (so power-of-two strides spread), each
//!   a set-associative sectored cache with a bandwidth queue.
//! - **DRAM**: one queue with the configured bandwidth; a request waits while earlier transfers
//!   occupy it, then pays the fixed latency.
//! - **Shared memory**: 32 banks × 4 B; an access takes one cycle per conflict way (distinct words
//!   in the busiest bank; equal words broadcast) on the SM's shared port, plus the latency.
//! - **Constant cache**: one distinct address per cycle: a uniform address is a broadcast, *k*
//!   distinct addresses serialize over *k* cycles.
//!
//! Latencies compose as the config docs describe (L2 hit = L1 latency + L2 latency, …), and the
//! first request on an idle queue pays no transfer time, so an unloaded pointer chase measures
//! exactly the configured end-to-end numbers.
//!
//! ```ignore
//! // (crate-internal API; see the tests at the bottom of this file for runnable cases)
//! let cfg = GpuConfig::preset("h100")?;
//! let mut mem = MemorySystem::new(&cfg);
//! let lanes = [(0u8, 0x1000u64)];
//! let req = MemRequest { space: Space::Global, kind: AccessKind::Load,
//!                        bytes_per_lane: 8, lanes: &lanes, readonly_path: false };
//! assert_eq!(mem.access(0, &req), 650); // cold: DRAM
//! ```

mod cache;
mod coalesce;
mod pending;
mod record;

use crate::config::{CacheConfig, GpuConfig};
use cache::{Cache, Mshrs};
use coalesce::{LineReq, bank_conflict_ways, coalesce, distinct_addresses, max_same_address};
pub(crate) use pending::{Pend, is_token};
use record::AddressRecorder;
pub use record::{AddressEvent, AddressKind};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// PTX state space of a memory instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Space {
    Global,
    Local,
    Shared,
    Const,
    Param,
    Texture,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AccessKind {
    Load,
    Store,
    Atomic,
}

/// One warp memory instruction, as the scheduler issues it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MemRequest<'a> {
    pub space: Space,
    pub kind: AccessKind,
    /// Vector width × element size (textures: texel bytes).
    pub bytes_per_lane: u32,
    /// (lane, byte address) per active lane; textures: one entry per texel fetched.
    pub lanes: &'a [(u8, u64)],
    /// `ld.global.nc` / `__ldg` / `tex`: the read-only (texture) cache path.
    pub readonly_path: bool,
}

/// Hit/miss counts of one cache level. Sector counts are per 32-byte sector (per line for an
/// unsectored cache); `requests` counts line lookups.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CacheCounters {
    pub requests: u64,
    pub sector_hits: u64,
    pub sector_misses: u64,
    /// Sectors found in flight: they wait for the outstanding miss instead of a new fetch.
    pub mshr_merges: u64,
    pub evictions: u64,
    /// Sectors written (stores and atomics); not part of the hit rate.
    pub write_sectors: u64,
}

impl CacheCounters {
    /// Fraction of read sectors served without a new fetch from below (hits and MSHR merges);
    /// `None` when nothing was read.
    pub fn hit_rate(&self) -> Option<f64> {
        let total = self.sector_hits + self.sector_misses + self.mshr_merges;
        (total > 0).then(|| (self.sector_hits + self.mshr_merges) as f64 / total as f64)
    }

    fn add(&mut self, o: &CacheCounters) {
        self.requests += o.requests;
        self.sector_hits += o.sector_hits;
        self.sector_misses += o.sector_misses;
        self.mshr_merges += o.mshr_merges;
        self.evictions += o.evictions;
        self.write_sectors += o.write_sectors;
    }

    fn count(&mut self, hit: u8, pending: u8, miss: u8) {
        self.requests += 1;
        self.sector_hits += u64::from(hit.count_ones());
        self.mshr_merges += u64::from(pending.count_ones());
        self.sector_misses += u64::from(miss.count_ones());
    }
}

/// Memory counters of one launch (serialized into `run.json`; keys in declaration order).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MemCounters {
    /// Global and local loads (and read-only loads from Volta on, which the L1 serves).
    pub l1: CacheCounters,
    /// Texture fetches (and read-only loads on GPUs with a separate texture cache); on GPUs where
    /// the L1 serves textures, this counts the texture traffic of that shared cache.
    pub texture: CacheCounters,
    /// Constant and kernel-parameter loads, one lookup per distinct address.
    pub constant: CacheCounters,
    /// Reads from every L1-level cache's misses; stores and atomics count in `write_sectors`.
    pub l2: CacheCounters,
    pub dram_bytes_read: u64,
    pub dram_bytes_written: u64,
    pub shared_accesses: u64,
    /// Extra shared-memory passes caused by bank conflicts (ways − 1 per access).
    pub shared_bank_conflict_replays: u64,
    /// Extra constant-cache passes for distinct addresses in one warp (distinct − 1 per access).
    pub constant_serialization_replays: u64,
    pub atomics: u64,
    /// Fractions 0–1 (hits and MSHR merges over all read sectors); `None` without accesses.
    pub l1_hit_rate: Option<f64>,
    pub tex_hit_rate: Option<f64>,
    pub l2_hit_rate: Option<f64>,
    pub constant_hit_rate: Option<f64>,
}

impl MemCounters {
    /// Adds one SM's per-SM counts (the L2 and DRAM ones live below the SMs).
    fn add(&mut self, o: &MemCounters) {
        self.l1.add(&o.l1);
        self.texture.add(&o.texture);
        self.constant.add(&o.constant);
        self.shared_accesses += o.shared_accesses;
        self.shared_bank_conflict_replays += o.shared_bank_conflict_replays;
        self.constant_serialization_replays += o.constant_serialization_replays;
        self.atomics += o.atomics;
    }
}

/// Sub-cycle resolution of bandwidth queues: bytes/cycle need not divide the transfer size.
const TICKS_PER_CYCLE: u64 = 1 << 16;

/// A resource with a bandwidth: transfers queue behind each other.
#[derive(Debug, Clone)]
struct BandwidthQueue {
    free_at_ticks: u64,
    ticks_per_byte: u64,
}

impl BandwidthQueue {
    fn new(bytes_per_cycle: f64) -> Self {
        let t = (TICKS_PER_CYCLE as f64 / bytes_per_cycle).round();
        BandwidthQueue {
            free_at_ticks: 0,
            ticks_per_byte: if t.is_finite() && t >= 1.0 {
                t as u64
            } else {
                1
            },
        }
    }

    /// Reserves a transfer of `bytes` arriving at `now`; returns the cycle it starts.
    fn reserve(&mut self, now: u64, bytes: u64) -> u64 {
        let start = (now.saturating_mul(TICKS_PER_CYCLE)).max(self.free_at_ticks);
        self.free_at_ticks = start + bytes * self.ticks_per_byte;
        start.div_ceil(TICKS_PER_CYCLE)
    }

    /// Keeps the resource busy `cycles` more (atomic serialization).
    fn extend(&mut self, cycles: u64) {
        self.free_at_ticks += cycles * TICKS_PER_CYCLE;
    }
}

/// A port that handles one unit of work per cycle; returns when this request's first unit starts.
fn reserve_port(free_at: &mut u64, now: u64, units: u64) -> u64 {
    let start = now.max(*free_at);
    *free_at = start + units;
    start
}

/// Latencies and geometry every SM's memory path reads.
#[derive(Debug, Clone, Copy)]
struct Lat {
    l1: u64,
    tex: u64,
    tex_pipeline: u64,
    constant: u64,
    shared: u64,
    shared_banks: u32,
    shared_bank_width: u32,
    l2_line_shift: u32,
    l2_sector_shift: u32,
}

/// One request to the L2, queued by an SM and answered in global order (see `pending.rs`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct L2Req {
    /// Issue cycle of the instruction that sent it and the SM's running count of requests:
    /// with the SM's index, the order in which the L2 sees requests.
    pub now: u64,
    pub seq: u64,
    sent: u64,
    addr: u64,
    len: u64,
    base: u64,
    op: L2Op,
    /// The token answered with the completion cycle (0: nobody waits, a store's write).
    token: u64,
}

/// One SM's side of the hierarchy: its caches and ports, and the L2 requests it has sent but
/// not had answered. Owned by the SM while it runs a round.
#[derive(Debug, Clone)]
pub(crate) struct SmMem {
    l1: Cache,
    l1_mshrs: Mshrs,
    l1_port: u64,
    /// Separate texture cache (Fermi); `None` when the L1 serves textures.
    tex: Option<(Cache, Mshrs)>,
    tex_port: u64,
    constant: Cache,
    constant_mshrs: Mshrs,
    constant_port: u64,
    shared_port: u64,
    lat: Lat,
    pub(crate) pend: Pend,
    pub(crate) queue: VecDeque<L2Req>,
    /// Requests sent so far (the next one's `seq`).
    pub(crate) seq: u64,
    counters: MemCounters,
    lines: Vec<LineReq>,
    words: Vec<(u64, u64)>,
    addrs: Vec<u64>,
    /// The optional address recorder (record.rs); `None` unless asked for.
    recorder: Option<AddressRecorder>,
}

/// One L2 slice.
#[derive(Debug, Clone)]
struct Slice {
    cache: Cache,
    port: BandwidthQueue,
}

/// Everything below the SMs: L2 slices and DRAM.
#[derive(Debug, Clone)]
pub(crate) struct Below {
    slices: Vec<Slice>,
    slice_bits: u32,
    line_shift: u32,
    sector_shift: u32,
    l2_latency: u64,
    dram: BandwidthQueue,
    dram_latency: u64,
    l2: CacheCounters,
    dram_bytes_read: u64,
    dram_bytes_written: u64,
    /// Never holds a token: the L2 only sees answered cycles.
    pend: Pend,
}

/// How an L2 line is used by a request from above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum L2Op {
    Read,
    Write,
    /// Read-modify-write at L2; the extra cycles the slice spends on same-word serialization.
    Atomic(u64),
}

impl Below {
    /// XOR-folds the line number in `slice_bits`-wide chunks; (slice, line >> slice_bits) is
    /// unique per line because the low chunk enters the fold once.
    fn slice_of(&self, line: u64) -> usize {
        if self.slice_bits == 0 {
            return 0;
        }
        let mask = (1u64 << self.slice_bits) - 1;
        let mut h = 0;
        let mut x = line;
        while x != 0 {
            h ^= x & mask;
            x >>= self.slice_bits;
        }
        h as usize
    }

    /// Serves the bytes `[addr, addr + len)` for a requester whose own path latency is `base`.
    /// Returns the cycle the requester has its data (or acknowledgement).
    fn access(&mut self, t: u64, addr: u64, len: u64, base: u64, op: L2Op) -> u64 {
        let len = len.max(1);
        let per_line = self.line_shift - self.sector_shift;
        let first = addr >> self.sector_shift;
        let last = (addr + len - 1) >> self.sector_shift;
        let mut done = t + base;
        let mut sector = first;
        while sector <= last {
            let line = sector >> per_line;
            let line_end = ((line + 1) << per_line) - 1;
            let upto = last.min(line_end);
            let mut mask = 0u8;
            for s in sector..=upto {
                mask |= 1 << (s & ((1 << per_line) - 1));
            }
            done = done.max(self.line(t, line, mask, base, op));
            sector = upto + 1;
        }
        done
    }

    fn line(&mut self, t: u64, line: u64, mask: u8, base: u64, op: L2Op) -> u64 {
        let slice_idx = self.slice_of(line);
        let local = line >> self.slice_bits;
        let sector_shift = self.sector_shift;
        let sector_bytes = 1u64 << sector_shift;
        let bytes = u64::from(mask.count_ones()) * sector_bytes;
        let hit_latency = base + self.l2_latency;
        let miss_latency = hit_latency + self.dram_latency;
        let Below {
            slices,
            dram,
            l2,
            dram_bytes_read,
            dram_bytes_written,
            pend,
            ..
        } = self;
        let Some(slice) = slices.get_mut(slice_idx) else {
            return t + hit_latency;
        };
        // Dirty sectors of an evicted line occupy DRAM bandwidth when they leave.
        let mut evicted = |ev: Option<cache::Evicted>, now: u64, dram: &mut BandwidthQueue| {
            if let Some(ev) = ev {
                if ev.dirty != 0 {
                    let bytes = u64::from(ev.dirty.count_ones()) << sector_shift;
                    dram.reserve(now, bytes);
                    *dram_bytes_written += bytes;
                }
                1
            } else {
                0
            }
        };
        let start = slice.port.reserve(t, bytes);
        let hit_done = start + hit_latency;
        if op == L2Op::Write {
            l2.write_sectors += u64::from(mask.count_ones());
            let ev = slice.cache.fill(local, mask, hit_done, start, true, pend);
            l2.evictions += evicted(ev, start, dram);
            return hit_done;
        }
        if let L2Op::Atomic(extra) = op {
            slice.port.extend(extra);
        }
        let lk = slice.cache.lookup(local, mask, start, pend);
        if op == L2Op::Read {
            l2.count(lk.hit, lk.pending, lk.miss);
        } else {
            l2.write_sectors += u64::from(mask.count_ones());
        }
        let mut done = hit_done;
        if lk.pending != 0 {
            done = done.max(lk.pending_ready);
        }
        if lk.miss != 0 {
            let miss_bytes = u64::from(lk.miss.count_ones()) * sector_bytes;
            let dram_start = dram.reserve(start, miss_bytes);
            *dram_bytes_read += miss_bytes;
            let ready = dram_start + miss_latency;
            let ev = slice.cache.fill(local, lk.miss, ready, start, false, pend);
            l2.evictions += evicted(ev, start, dram);
            done = done.max(ready);
        }
        if let L2Op::Atomic(extra) = op {
            done += extra;
            // The read-modify-write result stays dirty in L2.
            let ev = slice.cache.fill(local, mask, done, start, true, pend);
            l2.evictions += evicted(ev, start, dram);
        }
        done
    }

    /// Answers one queued request: the cycle its sender has the data (or acknowledgement).
    pub(crate) fn answer(&mut self, r: &L2Req) -> u64 {
        self.access(r.sent, r.addr, r.len, r.base, r.op)
    }
}

/// Which per-SM cache a cached load goes through, and whose counters it bumps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    L1,
    /// Texture fetch or read-only load through the L1 (Volta+).
    TexUnified,
    /// Texture fetch or read-only load through the separate texture cache (Fermi).
    TexSeparate,
}

/// An SM's way to the L2 for the accesses of one instruction issued at `now`: its queue of
/// requests, their running count and its pending cycles.
struct Link<'a> {
    queue: &'a mut VecDeque<L2Req>,
    seq: &'a mut u64,
    pend: &'a mut Pend,
    now: u64,
}

impl Link<'_> {
    /// Queues a request for `[addr, addr + len)` sent at `sent` (a cycle or token) by a path
    /// of latency `base`; returns the token its answer will resolve (0 when `answer` is false).
    fn send(&mut self, sent: u64, addr: u64, len: u64, base: u64, op: L2Op, answer: bool) -> u64 {
        let token = if answer { self.pend.given() } else { 0 };
        self.queue.push_back(L2Req {
            now: self.now,
            seq: *self.seq,
            sent,
            addr,
            len,
            base,
            op,
            token,
        });
        *self.seq += 1;
        token
    }

    /// `mask`'s sectors of `line` in an SM-level cache at cycle `t`: hits, merges with sectors
    /// in flight, and the missing sectors fetched from the L2 through an MSHR (waiting for one
    /// when all are busy) and allocated to arrive with the answer. Returns when the line's data
    /// is there.
    #[allow(clippy::too_many_arguments)] // the cache, its MSHRs and counters, and the lookup
    fn read_line(
        &mut self,
        cache: &mut Cache,
        mshrs: &mut Mshrs,
        counters: &mut CacheCounters,
        t: u64,
        line: u64,
        mask: u8,
        base: u64,
    ) -> u64 {
        let lk = cache.lookup(line, mask, t, self.pend);
        counters.count(lk.hit, lk.pending, lk.miss);
        let mut done = t + base;
        if lk.pending != 0 {
            done = self.pend.max(done, lk.pending_ready);
        }
        if lk.miss != 0 {
            let sent = mshrs.acquire(t, self.pend);
            let sector_bytes = 1u64 << cache.sector_shift();
            let line_addr = line << cache.line_shift();
            let mut ready = self.pend.add(sent, base);
            for (first, count) in runs(lk.miss) {
                let addr = line_addr + u64::from(first) * sector_bytes;
                let len = u64::from(count) * sector_bytes;
                let answer = self.send(sent, addr, len, base, L2Op::Read, true);
                ready = self.pend.max(ready, answer);
            }
            mshrs.occupy(ready, self.pend);
            if cache
                .fill(line, lk.miss, ready, t, false, self.pend)
                .is_some()
            {
                counters.evictions += 1;
            }
            done = self.pend.max(done, ready);
        }
        done
    }
}

impl SmMem {
    fn new(cfg: &GpuConfig, lat: Lat) -> Self {
        SmMem {
            l1: Cache::new(&cfg.l1),
            l1_mshrs: Mshrs::new(cfg.l1.mshrs, 0),
            l1_port: 0,
            tex: match (&cfg.texture.cache, cfg.texture.unified_with_l1) {
                (Some(c), false) => Some((Cache::new(c), Mshrs::new(c.mshrs, 1))),
                _ => None,
            },
            tex_port: 0,
            constant: Cache::new(&cfg.constant),
            constant_mshrs: Mshrs::new(cfg.constant.mshrs, 2),
            constant_port: 0,
            shared_port: 0,
            lat,
            pend: Pend::default(),
            queue: VecDeque::new(),
            seq: 0,
            counters: MemCounters::default(),
            lines: Vec::with_capacity(64),
            words: Vec::with_capacity(128),
            addrs: Vec::with_capacity(32),
            recorder: None,
        }
    }

    /// Completion cycle (or token): when a load's data is in registers / a store or atomic is
    /// acknowledged. Called in non-decreasing `now` order.
    pub(crate) fn access(&mut self, now: u64, req: &MemRequest) -> u64 {
        if req.lanes.is_empty() {
            return now;
        }
        let t = match (req.space, req.kind) {
            (Space::Shared, kind) => self.shared(now, req, kind == AccessKind::Atomic),
            (Space::Const | Space::Param, AccessKind::Load) => self.constant(now, req),
            // No PTX kernel stores to constant space; `st.param` only targets a callee's
            // parameters, which live in registers/local memory on hardware: charge the L1.
            (Space::Const | Space::Param, _) => now + self.lat.l1,
            (Space::Texture, _) => {
                let path = if self.tex.is_some() {
                    Path::TexSeparate
                } else {
                    Path::TexUnified
                };
                self.cached_load(now, req, path)
            }
            (Space::Global | Space::Local, AccessKind::Load) => {
                // Read-only loads take the texture path on Fermi-style GPUs; from Volta on the
                // same L1 serves them at L1 latency (LDG.CONSTANT), counted as L1 traffic.
                let path = if req.readonly_path && self.tex.is_some() {
                    Path::TexSeparate
                } else {
                    Path::L1
                };
                self.cached_load(now, req, path)
            }
            (Space::Global | Space::Local, AccessKind::Store) => self.store(now, req),
            (Space::Global | Space::Local, AccessKind::Atomic) => self.atomic(now, req),
        };
        if let Some(r) = &mut self.recorder {
            r.record(now, req);
        }
        t
    }

    /// Replaces every resolved token this SM's caches and MSHRs hold by its value.
    pub(crate) fn patch(&mut self) {
        let pend = &mut self.pend;
        self.l1.patch(pend);
        self.l1_mshrs.patch(pend);
        if let Some((c, m)) = &mut self.tex {
            c.patch(pend);
            m.patch(pend);
        }
        self.constant.patch(pend);
        self.constant_mshrs.patch(pend);
        // A miss that waited for a free MSHR is sent at a token's cycle.
        for r in self.queue.iter_mut() {
            r.sent = pend.settled(r.sent);
        }
    }

    /// Whether no MSHR table owes symbolic pops (see `Mshrs`): only then can the SM run a
    /// round.
    pub(crate) fn settled(&self) -> bool {
        !self.pend.replaying_any()
    }

    fn cached_load(&mut self, now: u64, req: &MemRequest, path: Path) -> u64 {
        let lat = self.lat;
        let base = match path {
            Path::L1 => lat.l1,
            Path::TexUnified | Path::TexSeparate => lat.tex_pipeline + lat.tex,
        };
        let SmMem {
            l1,
            l1_mshrs,
            l1_port,
            tex,
            tex_port,
            pend,
            queue,
            seq,
            counters,
            lines,
            ..
        } = self;
        let (cache, mshrs, port, counters) = match path {
            Path::L1 => (l1, l1_mshrs, l1_port, &mut counters.l1),
            Path::TexUnified => (l1, l1_mshrs, l1_port, &mut counters.texture),
            Path::TexSeparate => match tex.as_mut() {
                Some((c, m)) => (c, m, tex_port, &mut counters.texture),
                None => (l1, l1_mshrs, l1_port, &mut counters.texture),
            },
        };
        coalesce(
            req.lanes,
            req.bytes_per_lane,
            cache.line_shift(),
            cache.sector_shift(),
            lines,
        );
        let start = reserve_port(port, now, lines.len() as u64);
        let mut link = Link {
            queue,
            seq,
            pend,
            now,
        };
        let mut done = now;
        for (i, lr) in lines.iter().enumerate() {
            let t = start + i as u64;
            let line_done = link.read_line(cache, mshrs, counters, t, lr.line, lr.mask, base);
            done = link.pend.max(done, line_done);
        }
        done
    }

    /// Write-through, no-allocate: coalesced in L2 sectors so a 4-byte store dirties 32 bytes,
    /// not a whole unsectored L1 line.
    ///
    /// Completion is when the store has passed the SM's L1 stage (`l1.latency_cycles` after its
    /// lookup slot): from then on every thread of the CTA sees it, because CTA-mates read through
    /// the same in-order L1 pipeline. That is what `membar.cta` must wait for; the L2
    /// acknowledgement (`+ l2.latency_cycles`) is what a GPU-scope fence (`membar.gl`) would add.
    fn store(&mut self, now: u64, req: &MemRequest) -> u64 {
        self.through_l1(now, req, L2Op::Write)
    }

    /// Atomics run at the L2: done when the last line's read-modify-write is acknowledged.
    fn atomic(&mut self, now: u64, req: &MemRequest) -> u64 {
        self.counters.atomics += 1;
        let serial = u64::from(max_same_address(req.lanes, &mut self.addrs).saturating_sub(1));
        self.through_l1(now, req, L2Op::Atomic(serial))
    }

    /// A store's or atomic's lanes, coalesced in L2 sectors, sent to the L2 one line per L1
    /// lookup slot. A store is done when its last line passed the L1 stage (the L2 write still
    /// happens — slice bandwidth, dirty data — but nobody waits for it); an atomic when its last
    /// line is acknowledged.
    fn through_l1(&mut self, now: u64, req: &MemRequest, op: L2Op) -> u64 {
        let lat = self.lat;
        let wait = op != L2Op::Write;
        coalesce(
            req.lanes,
            req.bytes_per_lane,
            lat.l2_line_shift,
            lat.l2_sector_shift,
            &mut self.lines,
        );
        let start = reserve_port(&mut self.l1_port, now, self.lines.len() as u64);
        let mut link = Link {
            queue: &mut self.queue,
            seq: &mut self.seq,
            pend: &mut self.pend,
            now,
        };
        let mut done = now;
        let sector_bytes = 1u64 << lat.l2_sector_shift;
        for (i, lr) in self.lines.iter().enumerate() {
            let t = start + i as u64;
            if !wait {
                self.counters.l1.write_sectors += u64::from(lr.mask.count_ones());
            }
            let line_addr = lr.line << lat.l2_line_shift;
            for (first, count) in runs(lr.mask) {
                let addr = line_addr + u64::from(first) * sector_bytes;
                let len = u64::from(count) * sector_bytes;
                let ack = link.send(t, addr, len, lat.l1, op, wait);
                if wait {
                    done = link.pend.max(done, ack);
                }
            }
            if !wait {
                done = done.max(t + lat.l1);
            }
        }
        done
    }

    fn shared(&mut self, now: u64, req: &MemRequest, atomic: bool) -> u64 {
        let lat = self.lat;
        let mut ways = bank_conflict_ways(
            req.lanes,
            req.bytes_per_lane,
            lat.shared_banks,
            lat.shared_bank_width,
            &mut self.words,
        )
        .max(1);
        if atomic {
            self.counters.atomics += 1;
            ways = ways.max(max_same_address(req.lanes, &mut self.addrs));
        }
        self.counters.shared_accesses += 1;
        self.counters.shared_bank_conflict_replays += u64::from(ways - 1);
        let start = reserve_port(&mut self.shared_port, now, u64::from(ways));
        start + lat.shared + u64::from(ways - 1)
    }

    fn constant(&mut self, now: u64, req: &MemRequest) -> u64 {
        distinct_addresses(req.lanes, &mut self.addrs);
        let SmMem {
            constant,
            constant_mshrs,
            constant_port,
            lat,
            pend,
            queue,
            seq,
            counters,
            addrs,
            ..
        } = self;
        counters.constant_serialization_replays += addrs.len().saturating_sub(1) as u64;
        let start = reserve_port(constant_port, now, addrs.len() as u64);
        let line_shift = constant.line_shift();
        let sector_shift = constant.sector_shift();
        let mut link = Link {
            queue,
            seq,
            pend,
            now,
        };
        let mut done = now;
        for (i, &addr) in addrs.iter().enumerate() {
            let t = start + i as u64;
            let sector = (addr >> sector_shift) & ((1 << (line_shift - sector_shift)) - 1);
            let d = link.read_line(
                constant,
                constant_mshrs,
                &mut counters.constant,
                t,
                addr >> line_shift,
                1u8 << sector,
                lat.constant,
            );
            done = link.pend.max(done, d);
        }
        done
    }
}

/// A place in global order: issue cycle, SM index, and the SM's count of L2 requests so far.
/// What SMs share (the L2 and DRAM queue, device memory) sees their requests and writes in this
/// order, whatever thread simulated them.
pub(crate) type Key = (u64, u32, u64);

/// After every key.
pub(crate) const END: Key = (u64::MAX, u32::MAX, u64::MAX);

/// Visits the front items of per-SM queues in global order while they come before `bound`:
/// `heads` are the first keys of the SMs that have items; `take(sm)` handles SM `sm`'s front
/// item, removes it and returns the next one's (cycle, sequence).
pub(crate) fn in_global_order(
    heads: Vec<Key>,
    bound: Key,
    mut take: impl FnMut(usize) -> Option<(u64, u64)>,
) {
    let mut heap: BinaryHeap<Reverse<Key>> = heads.into_iter().map(Reverse).collect();
    while let Some(Reverse(key)) = heap.pop() {
        if key >= bound {
            break;
        }
        if let Some((now, seq)) = take(key.1 as usize) {
            heap.push(Reverse((now, key.1, seq)));
        }
    }
}

/// The timing state of the whole memory hierarchy for one launch: every SM's side and what is
/// below them.
#[derive(Debug, Clone)]
pub(crate) struct MemorySystem {
    pub(crate) sms: Vec<SmMem>,
    pub(crate) below: Below,
}

impl MemorySystem {
    /// Cold caches and idle queues for a validated config.
    pub(crate) fn new(cfg: &GpuConfig) -> Self {
        let slices = cfg.l2.slices.max(1);
        let slice_cfg = CacheConfig {
            size_bytes: u32::try_from(cfg.l2.size_bytes / u64::from(slices)).unwrap_or(u32::MAX),
            line_bytes: cfg.l2.line_bytes,
            sector_bytes: cfg.l2.sector_bytes,
            ways: cfg.l2.ways,
            latency_cycles: cfg.l2.latency_cycles,
            replacement: cfg.l2.replacement,
            mshrs: 1,
        };
        let slice = Slice {
            cache: Cache::new(&slice_cfg),
            port: BandwidthQueue::new(cfg.l2.bandwidth_bytes_per_cycle),
        };
        let tex = match (&cfg.texture.cache, cfg.texture.unified_with_l1) {
            (Some(c), false) => u64::from(c.latency_cycles),
            _ => u64::from(cfg.l1.latency_cycles),
        };
        let lat = Lat {
            l1: u64::from(cfg.l1.latency_cycles),
            tex,
            tex_pipeline: u64::from(cfg.texture.pipeline_latency_cycles),
            constant: u64::from(cfg.constant.latency_cycles),
            shared: u64::from(cfg.shared.latency_cycles),
            shared_banks: cfg.shared.banks,
            shared_bank_width: cfg.shared.bank_width_bytes,
            l2_line_shift: slice.cache.line_shift(),
            l2_sector_shift: slice.cache.sector_shift(),
        };
        let sm = SmMem::new(cfg, lat);
        MemorySystem {
            sms: vec![sm; cfg.sm.count.max(1) as usize],
            below: Below {
                line_shift: slice.cache.line_shift(),
                sector_shift: slice.cache.sector_shift(),
                slices: vec![slice; slices as usize],
                slice_bits: slices.trailing_zeros(),
                l2_latency: u64::from(cfg.l2.latency_cycles),
                dram: BandwidthQueue::new(cfg.dram.bandwidth_bytes_per_cycle),
                dram_latency: u64::from(cfg.dram.latency_cycles),
                l2: CacheCounters::default(),
                dram_bytes_read: 0,
                dram_bytes_written: 0,
                pend: Pend::default(),
            },
        }
    }

    /// The shortest time from sending an L2 request to its answer, on any path: no answer to
    /// a request sent at cycle `c` can be needed before `c` + this.
    pub(crate) fn min_round_trip(cfg: &GpuConfig) -> u64 {
        let u = cfg.unloaded_latencies();
        u.l1_hit.min(u.texture_hit).min(u.constant_hit) + u64::from(cfg.l2.latency_cycles)
    }

    /// Starts recording the L1/texture-level address stream of every SM (record.rs).
    pub(crate) fn record_addresses(&mut self) {
        for s in &mut self.sms {
            s.recorder = Some(AddressRecorder::default());
        }
    }

    /// The recorded stream per SM (empty when recording was off).
    pub(crate) fn take_addresses(&mut self) -> Vec<Vec<AddressEvent>> {
        if self.sms.iter().all(|s| s.recorder.is_none()) {
            return Vec::new();
        }
        self.sms
            .iter_mut()
            .map(|s| s.recorder.take().map(|r| r.events).unwrap_or_default())
            .collect()
    }

    /// Answers, in global (issue cycle, SM, sequence) order, every queued L2 request that
    /// comes before `bound`; each answer resolves its SM's token.
    pub(crate) fn answer_before(&mut self, bound: Key) {
        let heads = self
            .sms
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.queue.front().map(|r| (r.now, i as u32, r.seq)))
            .collect();
        let (sms, below) = (&mut self.sms, &mut self.below);
        in_global_order(heads, bound, |i| {
            let sm = &mut sms[i];
            if let Some(r) = sm.queue.pop_front() {
                // A miss that waited for a free MSHR was sent at an earlier request's answer.
                let sent = sm.pend.value(r.sent);
                debug_assert!(
                    sent.is_some(),
                    "a waiting miss is sent after answers that came first"
                );
                let sent = sent.unwrap_or(r.now);
                let v = below.answer(&L2Req { sent, ..r });
                if r.token != 0 {
                    sm.pend.give(r.token, v);
                }
            }
            sm.queue.front().map(|n| (n.now, n.seq))
        });
    }

    /// Completion cycle of one request answered at once: what every SM sees when requests come
    /// one at a time in global time order (unit tests).
    #[cfg(test)]
    pub(crate) fn access(&mut self, now: u64, req: &MemRequest) -> u64 {
        self.access_on(0, now, req)
    }

    /// [`MemorySystem::access`] from SM `sm`.
    #[cfg(test)]
    pub(crate) fn access_on(&mut self, sm: usize, now: u64, req: &MemRequest) -> u64 {
        let n = self.sms.len();
        let t = self.sms[sm % n].access(now, req);
        self.answer_before(END);
        let s = &mut self.sms[sm % n];
        let v = s.pend.value(t).unwrap_or(t);
        s.pend.evaluate();
        s.patch();
        s.pend.settle();
        v
    }

    /// The counters so far, with hit rates filled in.
    pub fn counters(&self) -> MemCounters {
        let mut c = MemCounters::default();
        for s in &self.sms {
            c.add(&s.counters);
        }
        c.l2 = self.below.l2;
        c.dram_bytes_read = self.below.dram_bytes_read;
        c.dram_bytes_written = self.below.dram_bytes_written;
        c.l1_hit_rate = c.l1.hit_rate();
        c.tex_hit_rate = c.texture.hit_rate();
        c.l2_hit_rate = c.l2.hit_rate();
        c.constant_hit_rate = c.constant.hit_rate();
        c
    }
}

/// Contiguous runs of set bits in a sector mask: (first sector, count).
fn runs(mask: u8) -> impl Iterator<Item = (u32, u32)> {
    let mut m = mask;
    std::iter::from_fn(move || {
        if m == 0 {
            return None;
        }
        let first = m.trailing_zeros();
        let count = (m >> first).trailing_ones();
        m &= !(((1u16 << count) - 1) << first) as u8;
        Some((first, count))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load<'a>(lanes: &'a [(u8, u64)], bytes: u32) -> MemRequest<'a> {
        MemRequest {
            space: Space::Global,
            kind: AccessKind::Load,
            bytes_per_lane: bytes,
            lanes,
            readonly_path: false,
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
    fn dram_queue_unit_test() {
        let mut q = BandwidthQueue::new(32.0);
        assert_eq!(q.reserve(10, 128), 10);
        assert_eq!(q.reserve(10, 128), 14);
        assert_eq!(q.reserve(100, 64), 100);
    }

    #[test]
    fn l2_slice_hash_spreads_consecutive_and_power_of_two_strides() {
        let cfg = GpuConfig::preset("v100").unwrap();
        let mem = MemorySystem::new(&cfg);
        let n = mem.below.slices.len();
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
    fn fermi_readonly_loads_use_the_texture_cache_volta_loads_use_l1() {
        let lanes = warp(|l| 4 * l);
        for (name, tex_path) in [("gtx480", true), ("v100", false)] {
            let cfg = GpuConfig::preset(name).unwrap();
            let mut mem = MemorySystem::new(&cfg);
            let mut r = load(&lanes, 4);
            r.readonly_path = true;
            mem.access(0, &r);
            let c = mem.counters();
            assert_eq!(c.texture.requests > 0, tex_path, "{name}");
            assert_eq!(c.l1.requests > 0, !tex_path, "{name}");
            assert_eq!(c.tex_hit_rate.is_some(), tex_path);
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

    #[test]
    fn counters_serialize_with_stable_keys() {
        let cfg = GpuConfig::preset("v100").unwrap();
        let mem = MemorySystem::new(&cfg);
        let c = mem.counters();
        assert_eq!(c.tex_hit_rate, None);
        let v = toml::to_string(&Wrapper { c }).unwrap();
        let l1 = v.find("[c.l1]").unwrap();
        let l2 = v.find("[c.l2]").unwrap();
        assert!(l1 < l2);
    }

    #[derive(Serialize)]
    struct Wrapper {
        c: MemCounters,
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
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
            let mut now = [0u64; 4];
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
                    lanes: &lanes, readonly_path: false };
                let t = now[sm as usize];
                let done = mem.access_on(sm as usize, t, &req);
                proptest::prop_assert!(done >= t);
                now[sm as usize] = t + 1 + (done - t) % 7;
                if kind == AccessKind::Load
                    && matches!(space, Space::Global | Space::Local | Space::Texture)
                {
                    read_sectors += 1; // at least one sector per load
                }
            }
            let c = mem.counters();
            let l1 = c.l1.sector_hits + c.l1.sector_misses + c.l1.mshr_merges;
            let tex = c.texture.sector_hits + c.texture.sector_misses + c.texture.mshr_merges;
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
}
