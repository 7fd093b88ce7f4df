//! The memory hierarchy's timing: when does a warp's load return, and which caches did it hit.
//!
//! Why this shape: the scheduler needs one number per memory instruction — the cycle its data is
//! in registers (or its store/atomic is acknowledged) — and it needs it fast. So, in the spirit of
//! GPGPU-Sim/Accel-Sim but much simpler, the latency is computed *at issue* from the state of the
//! caches and from resource queues (next-free-cycle counters), not by ticking a network cycle by
//! cycle. Requests arrive in non-decreasing time per SM, and the L2 and DRAM below answer them in
//! global (cycle, SM) order, which is what makes next-free counters a faithful queue. An SM's
//! side ([`SmMem`]) answers what its caches can at once; what needs the L2 it queues, with a
//! token for the answer (`pending.rs`), and [`answer_before`] gives the answers in that global
//! order between the engine's rounds.
//!
//! Main types: [`MemorySystem`] (every SM's [`SmMem`] and the [`Below`] they share;
//! [`SmMem::access`] is the one entry point), [`MemRequest`], [`Space`], [`AccessKind`],
//! and the counters it keeps in run.json's tables ([`MemCounters`] / [`CacheCounters`], defined
//! by the trace crate).
//!
//! # The model
//! - **Coalescing**: a warp's lane addresses become cache lines with a mask of sectors (32 B,
//!   or the line for unsectored caches). The L1 tag stage handles one line per cycle, so an
//!   instruction touching *n* lines occupies the SM's L1 port for *n* cycles; a line that
//!   fetches a sector from the L2 holds the port `miss_line_cycles` (the preset's; 1 when
//!   absent), which bounds the rate at which one SM reads from the L2. A texture fetch holds
//!   the port for its sector lookups at `texture.lookups_per_cycle` when that takes longer.
//!   With `sm.scheduler_line_cycles`, a load's lines that go below the L1 also leave their
//!   warp's scheduler that many cycles apart, its other warps' lines included.
//! - **Per-SM caches**: L1 data (global and local loads), texture (a separate cache on Fermi,
//!   the L1 itself from Volta on — `texture.unified_with_l1`), constant (also `ld.param`). Sets
//!   are flat arrays of tags; LRU or FIFO replacement; sectored lines; a miss allocates its sectors
//!   with their arrival cycle, so a later request to a sector in flight is an **MSHR merge** that
//!   completes when the first does. A miss with no free MSHR waits for the earliest to return;
//!   with `sm.lg_throttle` the engine asks first ([`SmMem::miss_slots_full_until`]), and a load
//!   that would find none free waits unissued instead.
//!   With `texture.in_order` an SM's texture fetches complete in the order it issued them: a
//!   fetch never completes before the one issued before it.
//! - **Stores** are write-through and no-allocate in L1 (a resident line stays valid: the write
//!   updates it); they complete for the warp when the CTA sees them (`sm.store_visible_cycles`
//!   after their L1 slot: the whole L1 stage unless a preset measured less), which is what a
//!   CTA fence orders, while the write proceeds to L2 in the background. L2 is
//!   write-back and write-allocate without fetch (byte masks, as GPGPU-Sim's sectored L2); dirty
//!   sectors reach DRAM when evicted.
//! - **Atomics** run at L2: fetched on a miss, and lanes hitting one word serialize one cycle
//!   each.
//! - **L2**: slices chosen by XOR-folding the line number (so power-of-two strides spread), each
//!   a set-associative sectored cache with a bandwidth queue.
//! - **DRAM**: one queue with the configured bandwidth; a request waits while earlier transfers
//!   occupy it, then pays the fixed latency. An L2 miss reads the aligned `l2.fetch_bytes` block
//!   around its sector, and the slice keeps the block's sectors it lacked.
//! - **Shared memory**: 32 banks × 4 B; an access takes one cycle per conflict way (distinct words
//!   in the busiest bank; equal words broadcast) on the SM's shared port, plus the latency; an
//!   atomic's lanes on one word serialize, `shared.same_word_atomic_cycles` each (default 1).
//! - **Constant cache**: one distinct address per cycle: a uniform address is a broadcast, *k*
//!   distinct addresses serialize over *k* cycles. With `constant_second_level` a line the first
//!   level lacks comes from the SM's second level, and from the L2 when that lacks it too.
//!
//! Latencies compose as the config docs describe (L2 hit = L1 latency + L2 latency, …), and the
//! first request on an idle queue pays no transfer time, so an unloaded pointer chase measures
//! exactly the configured end-to-end numbers.
//!
//! ```ignore
//! // (crate-internal API; see tests.rs for runnable cases)
//! let cfg = GpuConfig::preset("h100")?;
//! let mut mem = MemorySystem::new(&cfg);
//! let lanes = [(0u8, 0x1000u64)];
//! let req = MemRequest { space: Space::Global, kind: AccessKind::Load,
//!                        bytes_per_lane: 8, lanes: &lanes, path: LoadPath::Cached,
//!                        lookup_lanes: 4 };
//! assert_eq!(mem.access(0, &req), 682); // cold: DRAM
//! ```

mod below;
mod cache;
mod coalesce;
mod parts;
mod pending;
mod record;

use crate::config::{AtomicUnit, GpuConfig};
use below::L2Op;
pub(crate) use below::{Below, L2Lines};
use cache::{Cache, Mshrs};
use coalesce::{
    Lines, address_counts, bank_conflict_ways, coalesce, coalesce_counting, distinct_addresses,
    max_same_address,
};
pub(crate) use parts::{Answering, begin_in_parts, finish_in_parts, lock};
pub(crate) use pending::{Pend, TOKEN, is_token};
use record::AddressRecorder;
pub use record::{AddressEvent, AddressKind};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
pub use trace::{CacheCounters, MemCounters};

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

/// Which caches a load may be served from, as its instruction says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoadPath {
    /// The L1 and below: a plain, `.ca`, `.cs` or CTA-scoped load (and every store or atomic,
    /// which this does not steer).
    Cached,
    /// `ld.global.nc` / `__ldg` / `tex`: the read-only (texture) cache path.
    ReadOnly,
    /// The L2 and below: `.cg`, `.cv`, `.lu`, `ld.volatile` and loads of GPU or system scope.
    /// On an H200 each of these read an L2 hit's 278 cycles a step where a plain load of the
    /// same word read the L1's 48 (docs/gpu/cache-operators.cu); sm_90's SASS makes them
    /// `LDG.E.STRONG.GPU`, `.STRONG.SYS` or `.LU`.
    L2Only,
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
    /// Which caches a load may be served from.
    pub path: LoadPath,
    /// Texture path: how many consecutive lanes' texels one lookup serves, as Nsight Compute
    /// counts the lookups its texture hit rate divides by ([`QUAD`], [`PAIR`] or [`LANE`]).
    pub lookup_lanes: u8,
    /// The issuing warp's scheduler (`sm.scheduler_line_cycles` spaces its lines).
    pub scheduler: usize,
}

/// Lanes per texture lookup of a point sample (and of every load), and of a filtered 1D or 2D
/// sample of a texel under 16 bytes: on an H100, 32 lanes fetching one texel of a cold 2D or 3D
/// texture made 8 sector lookups, one a miss (87.5 %) (docs/gpu/tex-lookup-count.cu); on an
/// H200 so did 32 lanes point-sampling a 1D float4 texture, sampling a 2D u8 one bilinearly and
/// a 1D float one linearly (docs/gpu/tex-footprint.cu, cases 18, 20 and 21).
pub(crate) const QUAD: u8 = 4;
/// Lanes per texture lookup of a trilinear sample of a texel under 16 bytes: 32 lanes sampling
/// one point of a 3D texture trilinearly (two sectors, one per slice) made 32 lookups, two
/// misses (93.75 %); lanes with their own sectors in pairs of lanes counted both lanes' sectors
/// once per pair (docs/gpu/tex-lookup-count.cu); the 14 trilinear footprints of
/// docs/gpu/tex-footprint.cu, lanes sharing sectors or not, straddling sectors and GOBs or not,
/// read as pairs count them on an H100 and an H200.
pub(crate) const PAIR: u8 = 2;
/// Lanes per texture lookup of a filtered 16-byte texel (float4): each lane its own. On an
/// H200, 32 lanes sampling one point of a 1D or a 2D float4 texture linearly made 64 lookups of
/// two sectors (docs/gpu/tex-footprint.cu, cases 17 and 19), where a point sample of the same
/// texture made 8 (case 18). On the paper's geometry, whose transfer function is a filtered 1D
/// float4 texture, pairs left the model's lookups 8 M short of an H100's per frame; lanes, with
/// 1D arrays block-linear, bring them to 0.997-0.999 of silicon's in 14 of the 16 frames
/// (docs/gpu/2026-12-02-texture-lookups.md).
pub(crate) const LANE: u8 = 1;

/// Counts one lookup of `hit`, `pending` (MSHR merges) and `miss` sector masks.
fn count(c: &mut CacheCounters, hit: u8, pending: u8, miss: u8) {
    c.requests += 1;
    c.sector_hits += u64::from(hit.count_ones());
    c.mshr_merges += u64::from(pending.count_ones());
    c.sector_misses += u64::from(miss.count_ones());
}

/// Adds one SM's per-SM counts to `c` (the L2 and DRAM ones live below the SMs).
fn add_sm(c: &mut MemCounters, o: &MemCounters) {
    c.l1.add(&o.l1);
    c.texture.add(&o.texture);
    c.constant.add(&o.constant);
    c.shared_accesses += o.shared_accesses;
    c.shared_bank_conflict_replays += o.shared_bank_conflict_replays;
    c.constant_serialization_replays += o.constant_serialization_replays;
    c.atomics += o.atomics;
}

/// Hundredths of a cycle an atomic request's lanes in `line` hold the slice's atomic unit `u`.
fn unit_hold_centi(
    u: AtomicUnit,
    lanes: &[(u8, u64)],
    line: u64,
    line_shift: u32,
    scratch: &mut Vec<u64>,
) -> u64 {
    let in_line = lanes
        .iter()
        .map(|&(_, a)| a)
        .filter(|a| a >> line_shift == line);
    let (distinct, most) = address_counts(in_line, scratch);
    let cycles = u.same_address_cycles * f64::from(most)
        + u.address_cycles * f64::from(distinct.saturating_sub(1));
    (cycles * 100.0).round() as u64
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
    /// When a store is done for its warp, after its L1 slot (`sm.store_visible_cycles`).
    store_visible: u64,
    tex: u64,
    tex_pipeline: u64,
    /// Texture fetches complete in issue order (`texture.in_order`).
    tex_in_order: bool,
    /// The texture tag stage's sector lookups a cycle (`texture.lookups_per_cycle`; 0: not
    /// modelled).
    tex_lookups_per_cycle: u64,
    /// Port cycles of a texture fetch's line with a sector to fetch in a unified L1
    /// (`texture.miss_line_cycles`; absent: the L1's own).
    tex_miss_line: Option<u64>,
    constant: u64,
    /// The second constant level's hit latency (`constant_second_level`; 0 when absent).
    constant_second: u64,
    /// A constant read's data after an L2 hit, from its first-level lookup.
    constant_l2: u64,
    shared: u64,
    shared_banks: u32,
    shared_bank_width: u32,
    /// Cycles per further lane of a warp's atomic on one shared word.
    shared_same_word_atomic: f64,
    atomic_unit: Option<AtomicUnit>,
    /// The L2's latency to the L1 and texture paths (`l2.latency_cycles`).
    l2: u64,
    l2_line_shift: u32,
    l2_sector_shift: u32,
    /// Cycles a scheduler's loads take per line sent below the L1
    /// (`sm.scheduler_line_cycles`); 0: only the SM's port spaces them.
    scheduler_line: u64,
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
    /// Cycles from sending to the data when the L2 hits: the requester's path and the L2's
    /// latency on it.
    hit: u64,
    op: L2Op,
    /// The token answered with the completion cycle (0: nobody waits, a store's write).
    token: u64,
}

thread_local! {
    /// The coalescer's scratch, one a host thread rather than one an SM. Why: it is an 8 KB
    /// table read at random, and with 132 SMs (h100) each SM's copy was cold whenever its SM's
    /// round came again, 0.048 of the host's L3 misses a warp instruction (docs/PERFORMANCE.md).
    /// What it holds never outlives one access, so which SMs share it changes no result.
    static LINES: std::cell::RefCell<Lines> = std::cell::RefCell::new(Lines::default());
}

/// One SM's side of the hierarchy: its caches and ports, and the L2 requests it has sent but
/// not had answered. Owned by the SM while it runs a round.
#[derive(Debug, Clone)]
pub(crate) struct SmMem {
    l1: Cache,
    l1_mshrs: Mshrs,
    l1_port: u64,
    /// When each scheduler's loads can send their next line below the L1
    /// (`sm.scheduler_line_cycles`; empty when unset).
    scheduler_lines: Vec<u64>,
    /// Separate texture cache (Fermi); `None` when the L1 serves textures.
    tex: Option<(Cache, Mshrs)>,
    tex_port: u64,
    /// When the last texture fetch issued completes (a cycle or token): with
    /// `texture.in_order`, no later fetch completes before it.
    tex_done: u64,
    constant: Cache,
    /// The second constant level (`constant_second_level`), if the preset has one.
    constant_second: Option<Cache>,
    /// The MSHRs of the constant path's misses to the L2, behind its last level.
    constant_mshrs: Mshrs,
    constant_port: u64,
    shared_port: u64,
    lat: Lat,
    pub(crate) pend: Pend,
    pub(crate) queue: VecDeque<L2Req>,
    /// Requests sent so far (the next one's `seq`).
    pub(crate) seq: u64,
    counters: MemCounters,
    words: Vec<(u64, u64)>,
    addrs: Vec<u64>,
    /// The optional address recorder (record.rs); `None` unless asked for.
    recorder: Option<AddressRecorder>,
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
    /// that has an L2 hit's data `hit` cycles after it sends; returns the token its answer will
    /// resolve (0 when `answer` is false).
    fn send(&mut self, sent: u64, addr: u64, len: u64, hit: u64, op: L2Op, answer: bool) -> u64 {
        let token = if answer { self.pend.given() } else { 0 };
        self.queue.push_back(L2Req {
            now: self.now,
            seq: *self.seq,
            sent,
            addr,
            len,
            hit,
            op,
            token,
        });
        *self.seq += 1;
        token
    }

    /// `mask`'s sectors of `line` in an SM-level cache at cycle `t`, its hit latency `hit`:
    /// hits, merges with sectors in flight, and the missing sectors fetched from `next` and
    /// allocated to arrive with its answer. Returns when the line's data is there, and whether
    /// the line fetched a sector (what its port cycles follow, `Cache::port_cycles`).
    /// `counters`, when given, count the lookup.
    #[allow(clippy::too_many_arguments)] // the cache, its counters and what is below, the lookup
    fn read_line(
        &mut self,
        cache: &mut Cache,
        mut counters: Option<&mut CacheCounters>,
        next: Next,
        t: u64,
        line: u64,
        mask: u8,
        hit: u64,
    ) -> (u64, bool) {
        let lk = cache.lookup(line, mask, t, self.pend);
        if let Some(c) = counters.as_deref_mut() {
            count(c, lk.hit, lk.pending, lk.miss);
        }
        let mut done = t + hit;
        if lk.pending != 0 {
            done = self.pend.max(done, lk.pending_ready);
        }
        if lk.miss != 0 {
            // The latest answer: an answer from below is never before `t` plus this level's
            // hit latency (a level below is no faster, and the L2's answer comes no sooner than
            // its send cycle, not before `t`, plus the path's L2 hit, which `Below::access`
            // starts from and validation keeps no shorter than the levels above), so `t + hit`
            // needs no expression of its own.
            let ready = match next {
                Next::L2 {
                    mshrs,
                    l2_hit,
                    pace,
                } => {
                    let leaves = match pace {
                        Some((free, cycles)) => reserve_port(free, t, cycles),
                        None => t,
                    };
                    let sent = mshrs.acquire(leaves, self.pend);
                    let sector_bytes = 1u64 << cache.sector_shift();
                    let line_addr = line << cache.line_shift();
                    let mut ready = None;
                    for (first, count) in runs(lk.miss) {
                        let addr = line_addr + u64::from(first) * sector_bytes;
                        let len = u64::from(count) * sector_bytes;
                        let answer = self.send(sent, addr, len, l2_hit, L2Op::Read, true);
                        ready = Some(ready.map_or(answer, |r| self.pend.max(r, answer)));
                    }
                    let ready = ready.unwrap_or_else(|| self.pend.add(sent, l2_hit));
                    mshrs.occupy(ready, self.pend);
                    ready
                }
                Next::Level {
                    cache: level,
                    hit: level_hit,
                    mshrs,
                    l2_hit,
                } => {
                    let below = Next::L2 {
                        mshrs,
                        l2_hit,
                        pace: None,
                    };
                    self.read_line(level, None, below, t, line, lk.miss, level_hit)
                        .0
                }
            };
            if cache.fill_missed(&lk, ready, t, self.pend).is_some()
                && let Some(c) = counters
            {
                c.evictions += 1;
            }
            done = if lk.pending != 0 {
                self.pend.max(done, ready)
            } else {
                ready
            };
        }
        (done, lk.miss != 0)
    }
}

/// Where an SM-level cache's missing sectors come from.
enum Next<'a> {
    /// The L2, through `mshrs`, its hit's data `l2_hit` cycles after the send (see
    /// `Link::send`). With `pace`, a scheduler's next free cycle to send a line and its cycles
    /// a line (`sm.scheduler_line_cycles`): a missing line leaves no sooner, and holds it.
    L2 {
        mshrs: &'a mut Mshrs,
        l2_hit: u64,
        pace: Option<(&'a mut u64, u64)>,
    },
    /// A level of hit latency `hit` (`cache`), and behind it the L2 as in `L2`.
    Level {
        cache: &'a mut Cache,
        hit: u64,
        mshrs: &'a mut Mshrs,
        l2_hit: u64,
    },
}

impl SmMem {
    fn new(cfg: &GpuConfig, lat: Lat) -> Self {
        SmMem {
            l1: Cache::new(&cfg.l1),
            l1_mshrs: Mshrs::new(cfg.l1.mshrs, 0),
            l1_port: 0,
            scheduler_lines: if lat.scheduler_line == 0 {
                Vec::new()
            } else {
                vec![0; cfg.sm.warp_schedulers as usize]
            },
            tex: match (&cfg.texture.cache, cfg.texture.unified_with_l1) {
                (Some(c), false) => Some((Cache::new(c), Mshrs::new(c.mshrs, 1))),
                _ => None,
            },
            tex_port: 0,
            tex_done: 0,
            constant: Cache::new(&cfg.constant),
            constant_second: cfg.constant_second_level.as_ref().map(Cache::new),
            constant_mshrs: Mshrs::new(
                cfg.constant_second_level
                    .as_ref()
                    .unwrap_or(&cfg.constant)
                    .mshrs,
                2,
            ),
            constant_port: 0,
            shared_port: 0,
            lat,
            pend: Pend::default(),
            queue: VecDeque::new(),
            seq: 0,
            counters: MemCounters::default(),
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
                match req.path {
                    LoadPath::ReadOnly if self.tex.is_some() => {
                        self.cached_load(now, req, Path::TexSeparate)
                    }
                    LoadPath::L2Only => self.through_l1(now, req, L2Op::Read),
                    _ => self.cached_load(now, req, Path::L1),
                }
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
        if let Some(c) = &mut self.constant_second {
            c.patch(pend);
        }
        self.constant_mshrs.patch(pend);
        self.tex_done = pend.settled(self.tex_done);
        // A miss that waited for a free MSHR is sent at a token's cycle.
        for r in self.queue.iter_mut() {
            r.sent = pend.settled(r.sent);
        }
    }

    /// Until when a global or local load (`texture`: a read-only load) issued
    /// at `now` finds no free miss slot in the cache it reads through (see
    /// `sm.lg_throttle`); `None` while one is free.
    pub(crate) fn miss_slots_full_until(&mut self, now: u64, texture: bool) -> Option<u64> {
        let mshrs = match &mut self.tex {
            Some((_, m)) if texture => m,
            _ => &mut self.l1_mshrs,
        };
        mshrs.full_until(now, &self.pend)
    }

    /// Whether no MSHR table owes symbolic pops (see `Mshrs`): only then can the SM run a
    /// round.
    pub(crate) fn settled(&self) -> bool {
        !self.pend.replaying_any()
    }

    fn cached_load(&mut self, now: u64, req: &MemRequest, path: Path) -> u64 {
        LINES.with_borrow_mut(|lines| self.cached_load_into(now, req, path, lines))
    }

    /// [`SmMem::cached_load`] with the thread's line table.
    fn cached_load_into(
        &mut self,
        now: u64,
        req: &MemRequest,
        path: Path,
        lines: &mut Lines,
    ) -> u64 {
        let lat = self.lat;
        let base = match path {
            Path::L1 => lat.l1,
            Path::TexUnified | Path::TexSeparate => lat.tex_pipeline + lat.tex,
        };
        let SmMem {
            l1,
            l1_mshrs,
            l1_port,
            scheduler_lines,
            tex,
            tex_port,
            tex_done,
            pend,
            queue,
            seq,
            counters,
            ..
        } = self;
        // A load's lines that miss leave at its scheduler's pace as well; a texture fetch's
        // only at the port's.
        let mut scheduler = match path {
            Path::L1 => scheduler_lines.get_mut(req.scheduler),
            Path::TexUnified | Path::TexSeparate => None,
        };
        let (cache, mshrs, port, counters) = match path {
            Path::L1 => (l1, l1_mshrs, l1_port, &mut counters.l1),
            Path::TexUnified => (l1, l1_mshrs, l1_port, &mut counters.texture),
            Path::TexSeparate => match tex.as_mut() {
                Some((c, m)) => (c, m, tex_port, &mut counters.texture),
                None => (l1, l1_mshrs, l1_port, &mut counters.texture),
            },
        };
        let (line_shift, sector_shift) = (cache.line_shift(), cache.sector_shift());
        let lookups = if path == Path::L1 {
            coalesce(
                req.lanes,
                req.bytes_per_lane,
                line_shift,
                sector_shift,
                lines,
            );
            0
        } else {
            coalesce_counting::<true>(
                req.lanes,
                req.bytes_per_lane,
                line_shift,
                sector_shift,
                req.lookup_lanes,
                lines,
            )
        };
        counters.tex_lookups += lookups;
        let mut link = Link {
            queue,
            seq,
            pend,
            now,
        };
        // The port takes the lines one after another, a line that fetches for longer.
        let start = now.max(*port);
        let mut t = start;
        let mut done = now;
        for lr in lines.iter() {
            let next = Next::L2 {
                mshrs: &mut *mshrs,
                l2_hit: base + lat.l2,
                pace: scheduler
                    .as_deref_mut()
                    .map(|free| (free, lat.scheduler_line)),
            };
            let (line_done, fetched) =
                link.read_line(cache, Some(&mut *counters), next, t, lr.line, lr.mask, base);
            done = link.pend.max(done, line_done);
            t += match lat.tex_miss_line {
                Some(cycles) if fetched && path == Path::TexUnified => cycles,
                _ => cache.port_cycles(fetched),
            };
        }
        // A texture fetch's tag stage may take longer than its lines: its last lookup's data
        // follows a hit's latency after it.
        if lat.tex_lookups_per_cycle != 0 && lookups != 0 {
            let tagged = start + lookups.div_ceil(lat.tex_lookups_per_cycle);
            if tagged > t {
                t = tagged;
                done = link.pend.max(done, tagged - 1 + base);
            }
        }
        *port = t;
        if path != Path::L1 && lat.tex_in_order {
            done = link.pend.max(done, *tex_done);
            *tex_done = done;
        }
        done
    }

    /// Write-through, no-allocate: coalesced in L2 sectors so a 4-byte store dirties 32 bytes,
    /// not a whole unsectored L1 line.
    ///
    /// Completion is when every thread of the CTA sees the store, because CTA-mates read through
    /// the same in-order L1 pipeline: `sm.store_visible_cycles` after its lookup slot (by default
    /// `l1.latency_cycles`, the whole L1 stage; on an H100 and an H200 a CTA fence retired 14–15
    /// cycles after a store). That is what `membar.cta` must wait for. A GPU-scope fence does not
    /// wait for the L2's acknowledgement in this model; it takes `sm.gpu_fence_cycles` instead,
    /// which silicon showed whether or not a store preceded it.
    fn store(&mut self, now: u64, req: &MemRequest) -> u64 {
        self.through_l1(now, req, L2Op::Write)
    }

    /// Atomics run at the L2: done when the last line's read-modify-write is acknowledged.
    fn atomic(&mut self, now: u64, req: &MemRequest) -> u64 {
        self.counters.atomics += 1;
        let extra = if self.lat.atomic_unit.is_some() {
            0
        } else {
            u64::from(max_same_address(req.lanes, &mut self.addrs).saturating_sub(1))
        };
        self.through_l1(
            now,
            req,
            L2Op::Atomic {
                extra,
                unit_centi: 0,
            },
        )
    }

    /// A store's, atomic's or L1-skipping load's lanes, coalesced in L2 sectors, sent to the L2
    /// one line per L1 lookup slot (a load's line holds the slot as a miss does). A store is
    /// done when its last line is visible to the CTA (the L2 write still happens — slice
    /// bandwidth, dirty data — but nobody waits for it); an atomic or a load when its last line
    /// is answered.
    ///
    /// An L1-skipping load's line takes one of the L1's MSHRs until its answer, as a miss does:
    /// the SM tracks every read it has in flight through the L1/TEX unit, cached or not, and on
    /// silicon one SM's stream of `ld.global.cg` stops at a bound on those reads
    /// (`h200.sm_stream.*` in the calibration table). Stores and atomics do not wait for an
    /// answer there; the SM's atomics in flight have their own bound.
    fn through_l1(&mut self, now: u64, req: &MemRequest, op: L2Op) -> u64 {
        LINES.with_borrow_mut(|lines| self.through_l1_into(now, req, op, lines))
    }

    /// [`SmMem::through_l1`] with the thread's line table.
    fn through_l1_into(&mut self, now: u64, req: &MemRequest, op: L2Op, lines: &mut Lines) -> u64 {
        let lat = self.lat;
        let wait = op != L2Op::Write;
        coalesce(
            req.lanes,
            req.bytes_per_lane,
            lat.l2_line_shift,
            lat.l2_sector_shift,
            lines,
        );
        // A read fetches every line it sends; a store or an atomic fetches nothing for the L1.
        let per_line = self.l1.port_cycles(op == L2Op::Read);
        let start = reserve_port(&mut self.l1_port, now, lines.len() as u64 * per_line);
        let mut link = Link {
            queue: &mut self.queue,
            seq: &mut self.seq,
            pend: &mut self.pend,
            now,
        };
        let mut done = now;
        let sector_bytes = 1u64 << lat.l2_sector_shift;
        let read = op == L2Op::Read;
        let mut scheduler = self.scheduler_lines.get_mut(req.scheduler).filter(|_| read);
        for (i, lr) in lines.iter().enumerate() {
            let mut slot = start + i as u64 * per_line;
            if let Some(free) = scheduler.as_deref_mut() {
                slot = reserve_port(free, slot, lat.scheduler_line);
            }
            let t = if read {
                self.l1_mshrs.acquire(slot, link.pend)
            } else {
                slot
            };
            let mut answered = None;
            if !wait {
                self.counters.l1.write_sectors += u64::from(lr.mask.count_ones());
            }
            let line_addr = lr.line << lat.l2_line_shift;
            // An atomic unit is held once per line, by the line's first run of sectors.
            let mut unit_centi = match (op, lat.atomic_unit) {
                (L2Op::Atomic { .. }, Some(u)) => {
                    unit_hold_centi(u, req.lanes, lr.line, lat.l2_line_shift, &mut self.addrs)
                }
                _ => 0,
            };
            for (first, count) in runs(lr.mask) {
                let addr = line_addr + u64::from(first) * sector_bytes;
                let len = u64::from(count) * sector_bytes;
                let op = match op {
                    L2Op::Atomic { extra, .. } => L2Op::Atomic {
                        extra,
                        unit_centi: std::mem::take(&mut unit_centi),
                    },
                    other => other,
                };
                let ack = link.send(t, addr, len, lat.l1 + lat.l2, op, wait);
                if wait {
                    done = link.pend.max(done, ack);
                    answered = Some(answered.map_or(ack, |a| link.pend.max(a, ack)));
                }
            }
            if read && let Some(a) = answered {
                self.l1_mshrs.occupy(a, link.pend);
            }
            if !wait {
                done = done.max(t + lat.store_visible);
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
        // The port is busy a cycle per conflict way, or while lanes adding to one word
        // serialize, whichever is longer.
        let mut cycles = u64::from(ways);
        if atomic {
            self.counters.atomics += 1;
            let same = max_same_address(req.lanes, &mut self.addrs).max(1);
            ways = ways.max(same);
            let serial = (f64::from(same - 1) * lat.shared_same_word_atomic).round() as u64;
            cycles = cycles.max(1 + serial);
        }
        self.counters.shared_accesses += 1;
        self.counters.shared_bank_conflict_replays += u64::from(ways - 1);
        let start = reserve_port(&mut self.shared_port, now, cycles);
        start + lat.shared + cycles - 1
    }

    fn constant(&mut self, now: u64, req: &MemRequest) -> u64 {
        distinct_addresses(req.lanes, &mut self.addrs);
        let SmMem {
            constant,
            constant_second,
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
        let line_shift = constant.line_shift();
        let sector_shift = constant.sector_shift();
        let mut link = Link {
            queue,
            seq,
            pend,
            now,
        };
        let mut t = now.max(*constant_port);
        let mut done = now;
        for &addr in addrs.iter() {
            let sector = (addr >> sector_shift) & ((1 << (line_shift - sector_shift)) - 1);
            let next = match constant_second.as_mut() {
                Some(level) => Next::Level {
                    cache: level,
                    hit: lat.constant_second,
                    mshrs: &mut *constant_mshrs,
                    l2_hit: lat.constant_l2,
                },
                None => Next::L2 {
                    mshrs: &mut *constant_mshrs,
                    l2_hit: lat.constant_l2,
                    pace: None,
                },
            };
            let (d, fetched) = link.read_line(
                constant,
                Some(&mut counters.constant),
                next,
                t,
                addr >> line_shift,
                1u8 << sector,
                lat.constant,
            );
            done = link.pend.max(done, d);
            t += constant.port_cycles(fetched);
        }
        *constant_port = t;
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
        // An SM's items come in runs (a texture fetch sends several lines at one cycle): while
        // its next one still comes before every other SM's, it is taken without the heap.
        let limit = heap.peek().map_or(bound, |r| r.0.min(bound));
        let sm = key.1;
        while let Some((now, seq)) = take(sm as usize) {
            let next = (now, sm, seq);
            if next >= limit {
                heap.push(Reverse(next));
                break;
            }
        }
    }
}

/// Answers, in global (issue cycle, SM, sequence) order, every queued L2 request of the SMs'
/// sides `sms` that comes before `bound`; each answer resolves its SM's token.
pub(crate) fn answer_before(below: &mut Below, sms: &mut [Option<&mut SmMem>], bound: Key) {
    answer_releasing(below, sms, bound, |_, _| {});
}

/// [`answer_before`] over SMs' sides lent one by one: `release(sm, side)` is
/// called once per SM, as soon as nothing of it comes before `bound` any more, and may take the
/// side away, so that the SM can run on while later requests of others are answered. Only
/// its own requests touch an SM's side, so what the others see does not change.
pub(crate) fn answer_releasing<'a>(
    below: &mut Below,
    sms: &mut [Option<&'a mut SmMem>],
    bound: Key,
    mut release: impl FnMut(usize, &mut Option<&'a mut SmMem>),
) {
    let mut heads = Vec::new();
    for (i, slot) in sms.iter_mut().enumerate() {
        let head = slot
            .as_ref()
            .and_then(|s| s.queue.front())
            .map(|r| (r.now, i as u32, r.seq))
            .filter(|&k| k < bound);
        match head {
            Some(k) => heads.push(k),
            None => release(i, slot),
        }
    }
    in_global_order(heads, bound, |i| {
        let slot = &mut sms[i];
        let sm = slot.as_mut()?;
        if let Some(r) = sm.queue.pop_front() {
            // A miss that waited for a free MSHR was sent at an earlier request's answer.
            let sent = sm.pend.value(r.sent);
            debug_assert!(
                sent.is_some(),
                "a waiting miss is sent after answers that came first"
            );
            let sent = sent.unwrap_or(r.now);
            let v = below.answer(&L2Req { sent, ..r });
            debug_assert!(v >= sent + r.hit, "an answer comes after its request");
            if r.token != 0 {
                sm.pend.give(r.token, v);
            }
        }
        let next = sm.queue.front().map(|n| (n.now, n.seq));
        if next.is_none_or(|(now, seq)| (now, i as u32, seq) >= bound) {
            release(i, slot);
            return None;
        }
        next
    })
}

/// The timing state of the whole memory hierarchy for one launch: every SM's side and what is
/// below them.
#[derive(Debug, Clone)]
pub(crate) struct MemorySystem {
    pub(crate) sms: Vec<SmMem>,
    pub(crate) below: Below,
}

impl MemorySystem {
    /// Cold caches and idle queues for a validated config (unit tests).
    #[cfg(test)]
    pub(crate) fn new(cfg: &GpuConfig) -> Self {
        Self::after(cfg, None)
    }

    /// Cold SM caches, an L2 holding `lines` (what the previous launch on the device left;
    /// cold without) and idle queues, for a validated config.
    pub(crate) fn after(cfg: &GpuConfig, lines: Option<L2Lines>) -> Self {
        let below = Below::new(cfg, lines);
        let tex = match (&cfg.texture.cache, cfg.texture.unified_with_l1) {
            (Some(c), false) => u64::from(c.latency_cycles),
            _ => u64::from(cfg.l1.latency_cycles),
        };
        let lat = Lat {
            l1: u64::from(cfg.l1.latency_cycles),
            store_visible: cfg.unloaded_latencies().store_visible,
            tex,
            tex_pipeline: u64::from(cfg.texture.pipeline_latency_cycles),
            tex_in_order: cfg.texture.in_order,
            tex_lookups_per_cycle: cfg.texture.lookups_per_cycle.map_or(0, u64::from),
            tex_miss_line: cfg.texture.miss_line_cycles.map(u64::from),
            constant: u64::from(cfg.constant.latency_cycles),
            constant_second: cfg
                .constant_second_level
                .as_ref()
                .map_or(0, |c| u64::from(c.latency_cycles)),
            constant_l2: cfg.unloaded_latencies().constant_l2_hit,
            shared: u64::from(cfg.shared.latency_cycles),
            shared_banks: cfg.shared.banks,
            shared_bank_width: cfg.shared.bank_width_bytes,
            shared_same_word_atomic: cfg.shared.same_word_atomic_cycles.unwrap_or(1.0),
            atomic_unit: cfg.l2.atomic_unit,
            l2: u64::from(cfg.l2.latency_cycles),
            l2_line_shift: below.line_shift,
            l2_sector_shift: below.sector_shift,
            scheduler_line: cfg.sm.scheduler_line_cycles.map_or(0, u64::from),
        };
        let sm = SmMem::new(cfg, lat);
        MemorySystem {
            sms: vec![sm; cfg.sm.count.max(1) as usize],
            below,
        }
    }

    /// The L2 this launch leaves for the next one on the same device.
    pub(crate) fn into_l2(self) -> L2Lines {
        self.below.into_lines()
    }

    /// The shortest time from sending an L2 request to its answer, on any path: no answer to
    /// a request sent at cycle `c` can be needed before `c` + this.
    pub(crate) fn min_round_trip(cfg: &GpuConfig) -> u64 {
        let u = cfg.unloaded_latencies();
        let l2 = u64::from(cfg.l2.latency_cycles);
        (u.l1_hit.min(u.texture_hit) + l2).min(u.constant_l2_hit)
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

    /// [`answer_before`] over every SM's side (unit tests).
    #[cfg(test)]
    pub(crate) fn answer_before(&mut self, bound: Key) {
        let mut sms: Vec<Option<&mut SmMem>> = self.sms.iter_mut().map(Some).collect();
        answer_before(&mut self.below, &mut sms, bound);
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
            add_sm(&mut c, &s.counters);
        }
        (c.l2, c.dram_bytes_read, c.dram_bytes_written) = self.below.counters();
        c.l1_hit_rate = c.l1.hit_rate();
        c.tex_hit_rate = c.texture.lookup_hit_rate();
        c.tex_sector_hit_rate = c.texture.hit_rate();
        c.l2_hit_rate = c.l2.hit_rate();
        c.constant_hit_rate = c.constant.hit_rate();
        c
    }
}

/// Drops the first `*head` items of `v`, those already consumed, once they are at least as many
/// as the rest, and returns how many it dropped (0 when it waits). Why this rule: the queues
/// read at a moving head (a calendar, the pending values, a replay's operations) are vectors
/// rather than `VecDeque`s, which pay wrap-around arithmetic on every index; dropping only then
/// moves each item a bounded number of times and keeps memory proportional to what is live.
fn forget_front<T>(v: &mut Vec<T>, head: &mut usize) -> usize {
    if *head * 2 < v.len() {
        return 0;
    }
    let dropped = std::mem::take(head);
    v.drain(..dropped);
    dropped
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
mod tests;
