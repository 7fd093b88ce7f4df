//! One SM: resident blocks up to the occupancy limit, warp schedulers issuing in order per
//! warp, a per-warp register scoreboard, functional-unit pipelines, barriers and memory fences
//! — with functional execution happening at issue, so one engine gives both the results and
//! the clocks. An SM runs a round of cycles alone (mod.rs says how rounds keep the global
//! order); what it cannot know inside the round it leaves as a token (memory/pending.rs) or
//! waits for by parking.
//!
//! Timing rules (the ones the paper's method depends on):
//! - an instruction issues when every register it reads (sources, address, guard predicate —
//!   even if the guard turns it off) and every register it writes is ready;
//! - a load's destinations become ready at the completion cycle the memory model returns; the
//!   warp keeps issuing independent instructions meanwhile, so `%clock` right after a load reads
//!   the issue time, not the arrival time;
//! - `membar`/`fence` issue only after all of the warp's outstanding memory operations completed,
//!   except `membar.cta` / `fence.sc.cta` on a preset whose `sm.cta_sc_fence_waits_for_loads` is
//!   false (h100, as measured on an H200): that one waits for the warp's stores and atomics only;
//! - `bar.sync` releases when every live warp of the block (or `count` threads) arrived.
//!
//! Scheduling: `sm.warp_schedulers` schedulers per SM, warp slot `s` belongs to scheduler
//! `s % n`; each picks greedy-then-oldest (the last warp it issued if still ready, else the
//! oldest ready one by launch order). When no warp of an SM can issue, the SM jumps to the next
//! cycle at which one can, charging the skipped cycles to a stall reason.
//!
//! Files: `sched` (which warp a scheduler issues, or when one can), `scoreboard` (when a warp's
//! next instruction is ready as far as its registers and fences say); this file holds the SM's
//! state, its rounds and the issue of one instruction.

use std::collections::VecDeque;

use crate::config::{InstructionSequence, IntDivision};
use crate::devmem::WriteLog;
use crate::error::EmuError;
use crate::exec::{Ctx, Division, Entry, FULL, Fixed, Flow, Warp, exec};
use crate::ir::{Class, Inst, Op, Opnd, Sp};
use crate::memory::{AccessKind, Key, MemRequest, SmMem, Space, is_token};
use crate::texture::WarpSamples;

use super::LaunchInput;
use super::loads::{LoadEvent, LoadLog, LoadSpace};

mod pipe;
mod sched;
mod scoreboard;
mod sequences;

use pipe::Pipe;
pub(super) use pipe::{NPIPE, intervals};
use sched::{Hot, HotTable, Near};
pub(super) use scoreboard::Deps;
use scoreboard::refresh;
use sequences::{PENDING, Sequences};

pub(super) const NCLASS: usize = Class::ALL.len();

/// No warp (in `Sm::sched_then`).
const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WState {
    Free,
    Run,
    Bar,
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Stall {
    Scoreboard,
    Memory,
    Barrier,
    Membar,
    PipeBusy,
    Idle,
}

impl Stall {
    pub(super) const ALL: [Stall; 6] = [
        Stall::Scoreboard,
        Stall::Memory,
        Stall::Barrier,
        Stall::Membar,
        Stall::PipeBusy,
        Stall::Idle,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            Stall::Scoreboard => "scoreboard",
            Stall::Memory => "memory",
            Stall::Barrier => "barrier",
            Stall::Membar => "membar",
            Stall::PipeBusy => "pipe_busy",
            Stall::Idle => "idle",
        }
    }
}

pub(super) struct TWarp {
    arch: Warp,
    /// Per scoreboard slot, the cycle its last write is ready (or a token), and one more entry
    /// for `Deps::pad`.
    ready: Vec<u64>,
    /// The slots whose `ready` was last set to a token (may repeat, may be stale): what
    /// `take_in` looks at instead of every register of every warp.
    tokens: Vec<u32>,
    from_mem: Vec<bool>,
    state: WState,
    block: usize,
    /// When the warp's memory operations so far complete: all of them, and its stores and
    /// atomics alone (what a fence that does not wait for loads waits for).
    outstanding: u64,
    outstanding_writes: u64,
    /// Before when the warp may not issue: its next instruction is a global atomic past the
    /// SM's atomics in flight (`l2.atomic_unit.in_flight_per_sm`), which waits for the oldest
    /// one's acknowledgement (a cycle or a token).
    gate: u64,
    /// While the warp runs a 64-bit division's routine, a call (`pipeline.int_division.
    /// call_waits_for_scoreboard`): the cycle it returns, or [`PENDING`] while its instructions
    /// have to issue. Nothing after the call issues before it; else 0.
    call_until: u64,
    next_ok: u64,
    wake: u64,
    reason: Stall,
    /// The unit its next instruction issues to.
    pipe: Pipe,
    /// A barrier reduction's destination: its scoreboard slot and its row or predicate.
    bar_dst: Option<(u32, Opnd)>,
    /// The warp's index in the grid when its loads are recorded (`loads.rs`).
    record: Option<u64>,
}

struct TBlock {
    id: [u32; 3],
    shared: Vec<u8>,
    warps: Vec<u32>,
    live: u32,
    arrived: u32,
    expected: u32,
    red_kind: u8,
    red_acc: u32,
    bar_pc: u32,
    /// The cycle the block was launched, and the last cycle one of its warps exited.
    launched: u64,
    last_exit: u64,
}

/// Why an SM stopped before the end of its round; the coordinator (mod.rs) acts when the SM is
/// first in global order.
#[derive(Debug)]
pub(super) enum Park {
    /// Not parked.
    Run,
    /// A block slot is free and blocks may remain: which block it gets depends on the other
    /// SMs' frees before it.
    Dispatch,
    /// Nothing can issue before `Sm::idle_until`, and how long after depends on tokens: the SM
    /// retries the jump at the start of each round.
    Jump,
    /// The cycle stopped mid-way (`resume`) before an issue that would end stalls whose
    /// reasons need token values: the SM goes on at the start of the round that has them.
    Retry,
    /// The launch failed here.
    Fault(EmuError),
    /// No block left to run or to get.
    Done,
}

/// Counts of one SM, summed over SMs at the end.
#[derive(Debug, Clone, Default)]
pub(super) struct Counts {
    pub warp_instructions: u64,
    pub thread_instructions: u64,
    pub class_counts: [u64; NCLASS],
    pub flops: u64,
    pub stalls: [u64; 6],
    pub residency: Residency,
}

/// The SM's resident warps over time, as Nsight Compute's `sm__warps_active` counts them: a
/// warp is active from its block's launch until it exits, and a cycle is active while any warp
/// is. Counted where a warp exits and a block retires, never per issue, from each warp's and
/// each block's own span, so that the figure does not depend on the order in which launches and
/// exits are seen.
#[derive(Debug, Clone, Default)]
pub(super) struct Residency {
    /// Each exited warp's cycles from its block's launch to its exit, summed.
    pub warp_cycles: u64,
    /// Each retired block's cycles from its launch to its last warp's exit.
    pub blocks: Vec<(u64, u64)>,
}

impl Residency {
    /// Cycles in which at least one of the blocks was resident: the length of the union of
    /// their spans.
    pub fn active_cycles(&mut self) -> u64 {
        self.blocks.sort_unstable();
        let (mut total, mut reach) = (0, 0);
        for &(start, end) in &self.blocks {
            let start = start.max(reach);
            if end > start {
                total += end - start;
                reach = end;
            }
        }
        total
    }
}

pub(super) struct Sm {
    pub id: u32,
    pub cycle: u64,
    warps: Vec<TWarp>,
    /// Mirrors `warps` for the schedulers, by scheduler.
    hot: HotTable,
    blocks: Vec<Option<TBlock>>,
    pipe: Vec<[u64; NPIPE]>,
    /// Per scheduler: its sequences with instructions left to issue (`sequences.rs`).
    sequences: Vec<Sequences>,
    /// Per scheduler: the warp it issued last (its index among the scheduler's warps), which
    /// it keeps issuing while it can (greedy-then-oldest).
    last: Vec<Option<u32>>,
    pub live_blocks: u32,
    /// Per scheduler: the earliest cycle one of its warps can issue, and why not before —
    /// cached after a scan that found nothing, until an issue, a barrier release or a block
    /// launch can change it (0 = rescan).
    sched_next: Vec<u64>,
    sched_reason: Vec<Stall>,
    /// Per scheduler: its cached cycle lies beyond the round while tokens are open, so which
    /// warp comes first, and the reason, are decided when they resolve; the stalled cycles
    /// are owed to that reason meanwhile.
    sched_unsure: Vec<bool>,
    /// How many of `sched_unsure` hold, so that an issue asks one question of a count that is
    /// nearly always 0, not one per scheduler (`set_unsure` keeps it in step).
    unsure_count: u32,
    sched_owed: Vec<u64>,
    /// Per scheduler: the warp that issues at its cached cycle (its index among the
    /// scheduler's warps; `NONE` when no scan cached one): nothing that could change which one
    /// happens before that cycle without clearing the cache, so the scan there is skipped.
    sched_then: Vec<u32>,
    /// Per scheduler: its near warps (sched.rs), which a pick visits instead of all.
    sched_near: Vec<Near>,
    pub writes: WriteLog,
    lanes: Vec<(u8, u64)>,
    /// A volume fetch's per-lane corners and texels, kept between fetches: zeroing 3,840
    /// bytes for every fetch cost a render on the h100 preset 2 % of its host instructions.
    samples: Box<WarpSamples>,
    pub counts: Counts,
    pub park: Park,
    /// Where a cycle stopped mid-way resumes: the scheduler's place in the cycle's order, issues
    /// by it so far, any issue yet.
    resume: Option<(usize, u32, bool)>,
    /// While parked in `Jump`: no warp issues before this cycle.
    idle_until: u64,
    /// Warp instructions issued in the last round: the estimate of the next one's work.
    pub last_work: u64,
    /// The last instruction issued (block, warp in block, pc, line), to say where a budget ran
    /// out.
    pub last_issue: Option<([u32; 3], u32, u32, u32)>,
    /// The recorded warps' loads (`loads.rs`).
    pub loads: LoadLog,
    /// When the SM's latest global atomics are acknowledged (cycles or tokens), oldest first, at
    /// most `l2.atomic_unit.in_flight_per_sm` of them.
    atomics: VecDeque<u64>,
}

/// What every SM reads while a round runs.
pub(super) struct Shared<'a> {
    pub inp: &'a LaunchInput<'a>,
    /// What the instructions read (device memory, textures, launch shape).
    pub fixed: Fixed<'a>,
    pub deps: &'a Deps,
    /// `lat` of every class and the busy cycles of every unit, looked up once per launch.
    pub lat: [u64; NCLASS],
    pub interval: [u64; NPIPE],
    /// Whether the grid still has blocks to hand out (fixed during a round).
    pub blocks_left: bool,
}

/// The global atomics an SM may have in flight (`l2.atomic_unit.in_flight_per_sm`).
fn atomics_in_flight(sh: &Shared) -> Option<usize> {
    let u = sh.inp.cfg.l2.atomic_unit?;
    u.in_flight_per_sm.map(|n| n as usize)
}

/// Whether `x` waits at issue for one of its SM's miss slots (`sm.lg_throttle`), and in which
/// cache: `Some(false)` for a global, local or generic load through the L1, `Some(true)` for a
/// read-only load (the texture cache's, where it has its own). A texture fetch does not wait:
/// in the 1×128 frame, whose fetches keep the model's miss slots full, an H200's naive window
/// around the renderer's fetch reads 6.3 cycles, where holding fetches at issue read 76.
fn lg_miss_path(x: &Inst) -> Option<bool> {
    match (x.op, x.space) {
        (Op::Ld, Sp::Global | Sp::Local | Sp::Generic) => Some(x.nc),
        _ => None,
    }
}

/// The sequence a GPU runs for division `d`, where its lanes ran any.
fn sequence(t: &IntDivision, d: Division) -> Option<InstructionSequence> {
    let long = if d.signed { t.s64 } else { t.u64 };
    match (d.bits64, d.signed, d.wide, d.narrow) {
        (false, false, _, true) => Some(t.u32),
        (false, true, _, true) => Some(t.s32),
        (true, _, true, true) => Some(t.narrow64.then(long)),
        (true, _, true, false) => Some(long),
        (true, _, false, true) => Some(t.narrow64),
        (_, _, _, false) => None,
    }
}

impl Sm {
    pub(super) fn new(id: u32, nsched: usize) -> Sm {
        Sm {
            id,
            cycle: 0,
            warps: Vec::new(),
            hot: HotTable::new(nsched),
            blocks: Vec::new(),
            pipe: vec![[0; NPIPE]; nsched],
            sequences: (0..nsched).map(|_| Sequences::default()).collect(),
            last: vec![None; nsched],
            live_blocks: 0,
            sched_next: vec![0; nsched],
            sched_reason: vec![Stall::Idle; nsched],
            sched_unsure: vec![false; nsched],
            unsure_count: 0,
            sched_owed: vec![0; nsched],
            sched_then: vec![NONE; nsched],
            sched_near: vec![Near::NONE; nsched],
            writes: WriteLog::default(),
            lanes: Vec::with_capacity(256),
            samples: Box::default(),
            counts: Counts::default(),
            park: Park::Run,
            resume: None,
            idle_until: 0,
            last_work: 0,
            last_issue: None,
            loads: LoadLog::default(),
            atomics: VecDeque::new(),
        }
    }

    /// Starts block number `b` of the grid in a free slot; its warps are the youngest.
    pub(super) fn launch_block(&mut self, inp: &LaunchInput, deps: &Deps, b: u64) {
        let [gx, gy, _] = inp.grid.map(|v| v as u64);
        let id = [
            (b % gx) as u32,
            ((b / gx) % gy) as u32,
            (b / (gx * gy)) as u32,
        ];
        let slot = match self.blocks.iter().position(Option::is_none) {
            Some(s) => s,
            None => {
                self.blocks.push(None);
                self.blocks.len() - 1
            }
        };
        let prog = inp.prog;
        // The program's registers and the padding one.
        let scoreboard = Deps::pad(prog) as usize + 1;
        let rows = prog.rows as usize;
        let pred_rows = prog.pred_rows as usize;
        let threads = inp.block.iter().product::<u32>();
        let warps_per_block = threads.div_ceil(32);
        let shared_total = (prog.dyn_shared_offset as usize + inp.dyn_smem as usize)
            .max(prog.shared_static_bytes as usize);
        let mut warps = Vec::with_capacity(warps_per_block as usize);
        for wib in 0..warps_per_block {
            let ws = match self.warps.iter().position(|w| w.state == WState::Free) {
                Some(s) => s,
                None => {
                    self.warps.push(TWarp {
                        arch: Warp::default(),
                        ready: Vec::new(),
                        tokens: Vec::new(),
                        from_mem: Vec::new(),
                        state: WState::Free,
                        block: 0,
                        outstanding: 0,
                        outstanding_writes: 0,
                        gate: 0,
                        call_until: 0,
                        next_ok: 0,
                        wake: 0,
                        reason: Stall::Scoreboard,
                        pipe: Pipe::of_class(Class::Int),
                        bar_dst: None,
                        record: None,
                    });
                    let ws = self.warps.len() - 1;
                    self.hot
                        .set(ws, Hot::new(u64::MAX, Pipe::of_class(Class::Int)));
                    ws
                }
            };
            let w = &mut self.warps[ws];
            let valid_lanes = (threads - wib * 32).min(32);
            let valid = if valid_lanes == 32 {
                FULL
            } else {
                (1u32 << valid_lanes) - 1
            };
            w.arch.regs.clear();
            w.arch.regs.resize(rows * 32, 0);
            w.arch.preds.clear();
            w.arch.preds.resize(pred_rows, 0);
            w.arch.stack.clear();
            w.arch.stack.push(Entry {
                pc: 0,
                rpc: u32::MAX,
                mask: valid,
            });
            w.arch.carry = 0;
            w.arch.local.clear();
            w.arch.local.resize(prog.local_bytes as usize * 32, 0);
            w.arch.wib = wib;
            w.arch.slot = ws as u32;
            w.ready.clear();
            w.ready.resize(scoreboard, 0);
            w.tokens.clear();
            w.from_mem.clear();
            w.from_mem.resize(scoreboard, false);
            w.state = WState::Run;
            w.block = slot;
            w.outstanding = self.cycle;
            w.outstanding_writes = self.cycle;
            w.gate = 0;
            w.call_until = 0;
            w.next_ok = self.cycle;
            w.bar_dst = None;
            let warp = b * u64::from(warps_per_block) + u64::from(wib);
            w.record = inp.record_loads.filter(|r| r.has(warp)).map(|_| warp);
            refresh(w, deps);
            self.hot.set(ws, Hot::of(w));
            self.hot.youngest(ws);
            warps.push(ws as u32);
        }
        self.blocks[slot] = Some(TBlock {
            id,
            shared: vec![0; shared_total],
            live: warps.len() as u32,
            warps,
            arrived: 0,
            expected: 0,
            red_kind: 0,
            red_acc: 0,
            bar_pc: 0,
            launched: self.cycle,
            last_exit: self.cycle,
        });
        self.live_blocks += 1;
        self.sched_next.fill(0);
        self.sched_then.fill(NONE);
        self.sched_near.fill(Near::NONE);
    }

    /// Runs this SM from its cycle until `horizon` or until it parks. First takes in the
    /// tokens resolved since it last ran.
    pub(super) fn run_round(&mut self, sh: &Shared, mem: &mut SmMem, horizon: u64) {
        let before = self.counts.warp_instructions;
        self.round(sh, mem, horizon);
        self.last_work = self.counts.warp_instructions - before;
    }

    fn round(&mut self, sh: &Shared, mem: &mut SmMem, horizon: u64) {
        mem.pend.horizon = horizon;
        self.take_in(sh, mem);
        if !mem.settled() {
            // An MSHR table still owes pops whose values are open: sit this round out.
            return;
        }
        if matches!(self.park, Park::Retry) {
            if self.unsure_count > 0 {
                return;
            }
            self.park = Park::Run;
        }
        if matches!(self.park, Park::Jump) {
            if self.unsure(mem, self.next_issue()) {
                return;
            }
            self.park = Park::Run;
            if let Err(e) = self.jump(sh) {
                self.park = Park::Fault(e);
                return;
            }
        }
        self.warm(sh, horizon);
        while matches!(self.park, Park::Run) && self.cycle < horizon {
            if let Err(e) = self.step(sh, mem) {
                self.park = Park::Fault(e);
                return;
            }
            if !matches!(self.park, Park::Run) {
                return;
            }
            if self.live_blocks < sh.inp.blocks_per_sm.max(1) && sh.blocks_left {
                self.park = Park::Dispatch;
            } else if self.live_blocks == 0 {
                self.park = Park::Done;
            }
        }
    }

    /// Reads, for every warp that may issue before `horizon`, its scoreboard and the register
    /// rows its next instruction names, and throws the values away. A round issues only tens to
    /// a few hundred warp instructions, a few per warp, and every other SM's round since this
    /// SM's last one has evicted its state from the host's caches: read one issue at a time, the
    /// misses stall one after the other; read here, back to back, they overlap. (A load rather
    /// than a prefetch instruction, which Rust offers only as `unsafe`.) One thread: the
    /// paper-scale frame 8-16 % faster, tiled matmul 12 %, the other workloads within noise.
    fn warm(&self, sh: &Shared, horizon: u64) {
        let prog = sh.inp.prog;
        let mut x = 0u64;
        for w in &self.warps {
            if Hot::of(w).ready >= horizon {
                continue;
            }
            for line in w.ready.chunks(8) {
                x ^= line[0];
            }
            let Some(pc) = w.arch.pc() else {
                continue;
            };
            // The timing model's record of the instruction too: `issue` reads it first.
            if let Some(step) = sh.deps.step(pc) {
                x ^= u64::from(step.line);
            }
            let Some(x_next) = prog.exec.get(pc as usize) else {
                continue;
            };
            for o in x_next.s.iter().chain(&x_next.d).chain([&x_next.a]) {
                match *o {
                    Opnd::Reg(r) => {
                        if let Some(row) = w.arch.regs.get(r as usize * 32..r as usize * 32 + 32) {
                            x ^= row[0] ^ row[8] ^ row[16] ^ row[24];
                        }
                    }
                    Opnd::Pred(p) | Opnd::NotPred(p) => {
                        x ^= w.arch.preds.get(p as usize).map_or(0, |&b| u64::from(b));
                    }
                    _ => {}
                }
            }
        }
        std::hint::black_box(x);
    }

    /// Replaces every resolved token the SM stored by its value, and decides the stalls whose
    /// cycle is now known. Cheap when nothing was resolved since the last call.
    pub(super) fn take_in(&mut self, sh: &Shared, mem: &mut SmMem) {
        if mem.pend.fresh() {
            mem.pend.evaluate();
            mem.patch();
            let nsched = self.pipe.len();
            for (ws, w) in self.warps.iter_mut().enumerate() {
                if w.state == WState::Free || w.state == WState::Done {
                    continue;
                }
                let mut changed = false;
                let TWarp {
                    ready,
                    tokens,
                    outstanding,
                    outstanding_writes,
                    gate,
                    ..
                } = w;
                for o in [outstanding, outstanding_writes, gate] {
                    if is_token(*o) {
                        let v = mem.pend.settled(*o);
                        changed |= v != *o;
                        *o = v;
                    }
                }
                tokens.retain(|&r| {
                    let Some(t) = ready.get_mut(r as usize).filter(|t| is_token(**t)) else {
                        return false;
                    };
                    let v = mem.pend.settled(*t);
                    changed |= v != *t;
                    *t = v;
                    is_token(v)
                });
                // Also a warp at a barrier: it needs its next instruction's cycle when released.
                if changed {
                    refresh(w, sh.deps);
                    self.hot.set(ws, Hot::of(w));
                    self.sched_near[ws % nsched] = Near::NONE;
                }
            }
            for a in self.atomics.iter_mut().filter(|a| is_token(**a)) {
                *a = mem.pend.settled(*a);
            }
            self.loads.take_in(&mem.pend);
            mem.pend.settle();
        }
        let now = self.cycle.saturating_sub(1);
        for s in 0..self.sched_next.len() {
            if !self.sched_unsure[s] {
                continue;
            }
            // The scheduler's warps have not changed since the scan: the same scan with the
            // values known gives the cycle and reason the cached ones stand for.
            let (t, r, then) = match self.pick(s, now) {
                Ok(_) => (now, Stall::Scoreboard, NONE),
                Err(wait) => {
                    self.sched_near[s] = wait.near;
                    (wait.at, wait.reason, wait.then)
                }
            };
            self.sched_next[s] = t;
            self.sched_reason[s] = r;
            self.sched_then[s] = then;
            if !self.unsure(mem, t) {
                self.set_unsure(s, false);
                self.counts.stalls[r as usize] += std::mem::take(&mut self.sched_owed[s]);
            }
        }
    }

    /// Marks scheduler `s`'s cached cycle as waiting for token values, or not.
    fn set_unsure(&mut self, s: usize, unsure: bool) {
        let was = std::mem::replace(&mut self.sched_unsure[s], unsure);
        self.unsure_count = self.unsure_count + u32::from(unsure) - u32::from(was);
    }

    fn unsure(&self, mem: &SmMem, t: u64) -> bool {
        t >= mem.pend.horizon && mem.pend.any_unresolved()
    }

    /// Charges one cycle of stall to scheduler `s`'s cached reason (or owes it).
    fn stall(&mut self, s: usize, cycles: u64) {
        if self.sched_unsure[s] {
            self.sched_owed[s] += cycles;
        } else {
            self.counts.stalls[self.sched_reason[s] as usize] += cycles;
        }
    }

    /// One scheduling step: issue in the current cycle, or jump to the next cycle at which
    /// something can issue. May stop mid-cycle (`resume`) or park.
    fn step(&mut self, sh: &Shared, mem: &mut SmMem) -> Result<(), EmuError> {
        let now = self.cycle;
        let nsched = self.pipe.len();
        let per = sh.inp.cfg.sm.issue_per_scheduler.max(1);
        let (first, first_issued, mut issued_any) = self.resume.take().unwrap_or((0, 0, false));
        // Where loads wait at issue for a miss slot, the schedulers take turns at going first,
        // as the L1/TEX unit serves its sub-partitions in turn: otherwise the first scheduler
        // would take every slot freed while the others wait.
        let turn = if sh.inp.cfg.sm.lg_throttle {
            (now % nsched as u64) as usize
        } else {
            0
        };
        for place in first..nsched {
            // `place + turn` is below twice `nsched`: a subtraction, not a division.
            let s = place + turn;
            let s = if s >= nsched { s - nsched } else { s };
            let mut issued = if place == first { first_issued } else { 0 };
            if issued == 0 && self.sequences[s].any() && self.sequence_issues(sh, s, now) {
                issued_any = true;
                continue;
            }
            if issued == 0 && self.sched_next[s] > now {
                debug_assert!(
                    self.pick(s, now).is_err(),
                    "stale scheduler cache at cycle {now}"
                );
                self.stall(s, 1);
                continue;
            }
            while issued < per {
                let then = self.sched_then[s];
                let picked = if issued == 0 && then != NONE && self.sched_next[s] == now {
                    debug_assert_eq!(self.pick(s, now).ok(), Some(then as usize));
                    Ok(then as usize)
                } else {
                    self.pick(s, now)
                };
                match picked {
                    Ok(k) => {
                        let ws = k * nsched + s;
                        if self.must_wait_before(sh, ws, s) {
                            self.resume = Some((place, issued, issued_any));
                            self.park = Park::Retry;
                            return Ok(());
                        }
                        let took_slot = self.issue(sh, mem, s, k, now)?;
                        self.last[s] = Some(k as u32);
                        issued += u32::from(took_slot);
                        if !took_slot {
                            // The cached pick was for the cycle before this instruction: the
                            // scheduler picks afresh in the same cycle.
                            self.sched_then[s] = NONE;
                        }
                    }
                    Err(wait) => {
                        self.sched_near[s] = wait.near;
                        if issued == 0 {
                            self.sched_next[s] = wait.at;
                            self.sched_reason[s] = wait.reason;
                            self.sched_then[s] = wait.then;
                            let unsure = self.unsure(mem, wait.at);
                            self.set_unsure(s, unsure);
                            self.stall(s, 1);
                        }
                        break;
                    }
                }
            }
            if issued > 0 {
                issued_any = true;
                self.sched_next[s] = 0;
                self.sched_then[s] = NONE;
                self.set_unsure(s, false);
            }
        }
        if issued_any {
            self.cycle = now + 1;
            return Ok(());
        }
        self.cycle = now + 1;
        let next = self.next_issue();
        if next != u64::MAX && self.unsure(mem, next) {
            // Nothing issues before the horizon; how long after, the values will say.
            self.park = Park::Jump;
            self.idle_until = mem.pend.horizon;
            return Ok(());
        }
        self.jump(sh)
    }

    /// The earliest cycle a scheduler's cache says one of its warps can issue.
    fn next_issue(&self) -> u64 {
        let warps = self.sched_next.iter().copied().min().unwrap_or(u64::MAX);
        self.sequences
            .iter()
            .map(Sequences::next_release)
            .fold(warps, u64::min)
    }

    /// Whether an instruction of one of scheduler `s`'s sequences takes its cycle `now`
    /// (`sequences.rs`), issued if so. When that was a sequence's last, its warp's result is
    /// ready at a known cycle, which may be earlier than the scheduler's cached answer.
    fn sequence_issues(&mut self, sh: &Shared, s: usize, now: u64) -> bool {
        let Some((i, waited)) = self.sequences[s].due(now) else {
            return false;
        };
        if !waited && self.sched_next[s] <= now && self.pick(s, now).is_ok() {
            // A warp can issue, and the sequence has not waited long enough to take its cycle.
            return false;
        }
        if let Some((q, ready)) = self.sequences[s].issue(i, now) {
            let w = &mut self.warps[q.ws as usize];
            // A slot a warp left (or a new block's warp took) holds no pending result.
            for &r in sh.deps.writes(q.pc) {
                if let Some(t) = w.ready.get_mut(r as usize).filter(|t| **t == PENDING) {
                    *t = ready;
                }
            }
            if w.call_until == PENDING {
                w.call_until = ready;
            }
            if matches!(w.state, WState::Run | WState::Bar) {
                refresh(w, sh.deps);
                self.hot.set(q.ws as usize, Hot::of(w));
            }
            self.sched_next[s] = 0;
            self.sched_then[s] = NONE;
            self.sched_near[s] = Near::NONE;
            self.set_unsure(s, false);
        }
        true
    }

    /// After a cycle without issue (the SM's cycle already one past it): on to the earliest
    /// cycle at which some warp can issue, charging the skipped cycles.
    pub(super) fn jump(&mut self, sh: &Shared) -> Result<(), EmuError> {
        let next = self.next_issue();
        if next == u64::MAX {
            if self.live_blocks == 0 {
                return Ok(());
            }
            // Live blocks but no runnable warp: a barrier that can never complete.
            let blk = self.blocks.iter().flatten().find(|b| b.live > 0);
            let (id, pc) = blk.map_or(([0; 3], 0), |b| (b.id, b.bar_pc));
            let prog = sh.inp.prog;
            let line = prog.insts.get(pc as usize).map_or(0, |x| x.line);
            return Err(EmuError::Deadlock {
                kernel: prog.name.clone(),
                block: id,
                pc,
                line,
            });
        }
        let skipped = next.saturating_sub(self.cycle);
        if skipped > 0 {
            for s in 0..self.pipe.len() {
                self.stall(s, skipped);
            }
        }
        self.cycle = next.max(self.cycle);
        Ok(())
    }

    /// Whether issuing `ws` now could change a scheduler whose stall reason still waits for
    /// token values (a barrier release or a block's end resets every scheduler's scan).
    fn must_wait_before(&self, sh: &Shared, ws: usize, s: usize) -> bool {
        debug_assert_eq!(
            self.unsure_count as usize,
            self.sched_unsure.iter().filter(|&&u| u).count(),
            "the count of unsure schedulers is stale"
        );
        if self.unsure_count == u32::from(self.sched_unsure[s]) {
            return false;
        }
        let pc = self.warps[ws].arch.pc();
        pc.and_then(|pc| sh.deps.step(pc))
            .is_some_and(|x| matches!(x.op, Op::Bar | Op::Exit))
    }

    /// Issues scheduler `s`'s `k`-th warp at `now`; whether that took an issue slot (a move
    /// that vanishes takes none, and the scheduler may issue again in the same cycle).
    fn issue(
        &mut self,
        sh: &Shared,
        mem: &mut SmMem,
        s: usize,
        k: usize,
        now: u64,
    ) -> Result<bool, EmuError> {
        let ws = k * self.pipe.len() + s;
        let prog = sh.inp.prog;
        let w = &mut self.warps[ws];
        let Some(pc) = w.arch.pc() else {
            w.state = WState::Done;
            self.hot.set(ws, Hot::of(w));
            return Ok(true);
        };
        let Some(x) = sh.deps.step(pc) else {
            w.state = WState::Done;
            self.hot.set(ws, Hot::of(w));
            return Ok(true);
        };
        if x.op == Op::Invalid {
            let what = prog
                .messages
                .get(prog.insts[pc as usize].target as usize)
                .cloned()
                .unwrap_or_default();
            return Err(EmuError::Unsupported {
                line: x.line,
                what: format!("{what} (kernel {}, pc {pc})", prog.name),
            });
        }
        // An instruction may wait, unissued, for its SM to free what it needs: a global atomic
        // past the SM's atomics in flight for the oldest one's acknowledgement, a global or local
        // load that finds every miss slot busy for the earliest release. Either is a later
        // cycle, or a token or the horizon where the values are not in yet.
        let limit =
            if matches!(x.op, Op::Atom | Op::Red) && prog.exec[pc as usize].space == Sp::Global {
                atomics_in_flight(sh)
            } else {
                None
            };
        let held = match limit {
            Some(n) if self.atomics.len() >= n => {
                self.atomics.front().copied().filter(|&oldest| oldest > now)
            }
            _ => None,
        }
        .or_else(|| {
            if !sh.inp.cfg.sm.lg_throttle {
                return None;
            }
            let texture = lg_miss_path(&prog.exec[pc as usize])?;
            mem.miss_slots_full_until(now, texture)
        });
        if let Some(until) = held {
            debug_assert!(until > now, "held until {until}, not after {now}");
            w.gate = until;
            refresh(w, sh.deps);
            self.hot.set_in(s, k, Hot::of(w));
            return Ok(false);
        }
        let active = w.arch.active();
        let bslot = w.block;
        let Some(block) = self.blocks[bslot].as_mut() else {
            return Err(EmuError::Fault {
                kernel: prog.name.clone(),
                pc,
                line: x.line,
                block: [0; 3],
                warp: w.arch.wib,
                thread: 0,
                what: "internal: warp without a block".into(),
            });
        };
        let mut ctx = Ctx {
            fixed: &sh.fixed,
            writes: &mut self.writes,
            seq: mem.seq,
            shared: &mut block.shared,
            block: block.id,
            smid: self.id,
            now,
            lanes: &mut self.lanes,
            samples: &mut self.samples,
        };
        let flow =
            exec(&prog.exec[pc as usize], &mut w.arch, &mut ctx).map_err(|f| EmuError::Fault {
                kernel: prog.name.clone(),
                pc,
                line: x.line,
                block: block.id,
                warp: w.arch.wib,
                thread: w.arch.wib * 32 + f.lane,
                what: f.what.clone(),
            })?;
        let c = &mut self.counts;
        c.warp_instructions += 1;
        let lanes = active.count_ones() as u64;
        c.thread_instructions += lanes;
        c.class_counts[x.class as usize] += 1;
        c.flops += sh.deps.flops_per_lane(pc) * lanes;
        self.last_issue = Some((block.id, w.arch.wib, pc, x.line));
        let free = x.slots == 0;
        let mut done_at = if free {
            now
        } else {
            now + sh.lat[x.class as usize]
        };
        // Issue slots the instruction takes from its scheduler: two for an operation the GPU
        // runs as two instructions.
        let slots = u64::from(x.slots);
        let mut from_mem = false;
        let mut flow_bar = None;
        match flow {
            Flow::Mem {
                space,
                kind,
                bytes_per_lane,
                path,
                lookup_lanes,
            } => {
                if !self.lanes.is_empty() {
                    let req = MemRequest {
                        space,
                        kind,
                        bytes_per_lane,
                        lanes: &self.lanes,
                        path,
                        lookup_lanes,
                        scheduler: s,
                    };
                    let t = mem.access(now, &req);
                    done_at = mem.pend.max(t, now + 1);
                    w.outstanding = mem.pend.max(w.outstanding, done_at);
                    if kind != AccessKind::Load {
                        w.outstanding_writes = mem.pend.max(w.outstanding_writes, done_at);
                    }
                    from_mem = true;
                    if let Some(n) = limit {
                        if self.atomics.len() >= n {
                            self.atomics.pop_front();
                        }
                        self.atomics.push_back(done_at);
                    }
                    if let Some(warp) = w.record {
                        let space = match space {
                            Space::Global if kind == AccessKind::Load => Some(LoadSpace::Global),
                            Space::Const => Some(LoadSpace::Constant),
                            Space::Texture => Some(LoadSpace::Texture),
                            _ => None,
                        };
                        if let Some(space) = space {
                            self.loads.push(LoadEvent {
                                warp,
                                pc,
                                space,
                                addr: self.lanes[0].1,
                                issue: now,
                                ready: done_at,
                            });
                        }
                    }
                }
            }
            Flow::Bar {
                id,
                expected,
                red,
                contrib,
                dst,
            } => flow_bar = Some((id, expected, red, contrib, dst)),
            Flow::Division(d) => {
                if let Some(t) = sh.inp.cfg.pipeline.int_division
                    && let Some(q) = sequence(&t, d)
                {
                    done_at = self.sequences[s].start(ws as u32, pc, now, q);
                    if sh.deps.is_call(pc) {
                        w.call_until = done_at;
                    }
                }
            }
            Flow::Exited | Flow::Done => {}
        }
        for &r in sh.deps.writes(pc) {
            w.ready[r as usize] = done_at;
            w.from_mem[r as usize] = from_mem;
            if is_token(done_at) {
                w.tokens.push(r);
            }
        }
        let unit = x.pipe.index();
        if !free {
            self.pipe[s][unit] = now + sh.interval[unit] * u64::from(x.slots);
        }
        w.next_ok = now
            + if x.op == Op::Bra {
                sh.lat[Class::Branch as usize].max(1)
            } else {
                u64::from(!free)
            };
        if slots > 1 {
            // The scheduler issues both one after the other: nothing else between them.
            // Raising a pipe only delays warps, so no pick's cached answer is made too late.
            w.next_ok = now + slots;
            for p in &mut self.pipe[s] {
                *p = (*p).max(now + slots);
            }
        }
        if w.arch.pc().is_none() {
            w.state = WState::Done;
            block.live -= 1;
            block.last_exit = block.last_exit.max(now);
            self.counts.residency.warp_cycles += now.saturating_sub(block.launched);
        } else if let Some((_, expected, red, contrib, dst)) = flow_bar {
            w.state = WState::Bar;
            // The executed instruction names the row, the timing one the register.
            w.bar_dst = dst
                .zip(sh.deps.writes(pc).first())
                .map(|(dst, &r)| (r, dst));
            block.arrived += 1;
            block.expected = expected;
            block.bar_pc = pc;
            if red != 0 {
                // The first warp to arrive starts the reduction: 1 counts, 2 ands, 3 ors.
                block.red_acc = match (block.arrived, red) {
                    (1, _) => contrib,
                    (_, 1) => block.red_acc + contrib,
                    (_, 2) => block.red_acc & contrib,
                    _ => block.red_acc | contrib,
                };
                block.red_kind = red;
            }
        }
        refresh(w, sh.deps);
        self.hot.set_in(s, k, Hot::of(w));
        // Barrier release (also when a warp exits while others wait).
        let need = if block.expected > 0 {
            block.expected.div_ceil(32)
        } else {
            block.live
        };
        // One comparison for `arrived > 0 && arrived >= need`, taken only at a release: the
        // two branched on `arrived > 0`, which holds whenever one of the block's warps waits.
        if block.arrived >= need.max(1) {
            self.sched_next.fill(0);
            self.sched_then.fill(NONE);
            self.sched_near.fill(Near::NONE);
            let red = block.red_kind;
            let acc = block.red_acc;
            block.arrived = 0;
            block.expected = 0;
            block.red_kind = 0;
            block.red_acc = 0;
            for &m in &block.warps {
                let wm = &mut self.warps[m as usize];
                if wm.state == WState::Bar {
                    wm.state = WState::Run;
                    wm.next_ok = now + 1;
                    if let (Some((r, dst)), true) = (wm.bar_dst.take(), red != 0) {
                        wm.arch.fill(dst, u64::from(acc));
                        wm.ready[r as usize] = now + 1;
                    }
                    self.hot.set(m as usize, Hot::of(wm));
                }
            }
        }
        let Some(block) = self.blocks[bslot].as_mut() else {
            return Ok(!free);
        };
        if block.live == 0 {
            self.counts
                .residency
                .blocks
                .push((block.launched, block.last_exit));
            for &m in &block.warps {
                self.warps[m as usize].state = WState::Free;
                self.hot.set(m as usize, Hot::of(&self.warps[m as usize]));
            }
            self.blocks[bslot] = None;
            self.live_blocks -= 1;
            // `last` holds a warp's index among its scheduler's warps, not its slot.
            let nsched = self.pipe.len();
            for (s, l) in self.last.iter_mut().enumerate() {
                if l.is_some_and(|k| self.warps[k as usize * nsched + s].state == WState::Free) {
                    *l = None;
                }
            }
        }
        Ok(!free)
    }

    /// Writes an atomic's old value into lane `lane` of register `reg` of warp slot `ws` (the
    /// register is not ready before its token resolves, so nothing read it yet).
    pub(super) fn set_reg(&mut self, ws: u32, reg: u32, lane: u8, v: u64) {
        if let Some(w) = self.warps.get_mut(ws as usize)
            && let Some(x) = w.arch.regs.get_mut(reg as usize * 32 + lane as usize)
        {
            *x = v;
        }
    }

    /// Where this SM stands in global order: its next request or write will come after this
    /// key. `None` when it is done.
    pub(super) fn position(&self, mem: &SmMem) -> Option<Key> {
        match self.park {
            Park::Done => None,
            Park::Jump => Some((self.cycle.max(self.idle_until), self.id, mem.seq)),
            _ => Some((self.cycle, self.id, mem.seq)),
        }
    }

    /// Whether the SM takes part in a round ending at `horizon`.
    pub(super) fn runs_before(&self, horizon: u64) -> bool {
        match self.park {
            Park::Run => self.cycle < horizon,
            Park::Jump | Park::Retry => true,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Residency;

    #[test]
    fn active_cycles_are_the_union_of_the_blocks_spans_in_any_order() {
        let mut r = Residency {
            warp_cycles: 0,
            // Overlapping, nested, touching and apart, out of order: [0, 15) and [20, 30).
            blocks: vec![(20, 30), (5, 15), (0, 10), (6, 8), (15, 15), (25, 30)],
        };
        assert_eq!(r.active_cycles(), 25);
        assert_eq!(Residency::default().active_cycles(), 0);
    }
}
