//! The issue engine: blocks resident on SMs up to the occupancy limit, warp schedulers issuing
//! in order per warp, a per-warp register scoreboard, functional-unit pipelines, barriers and
//! memory fences — with functional execution happening at issue, so one engine gives both the
//! results and the clocks.
//!
//! Timing rules (the ones the paper's method depends on):
//! - an instruction issues when every register it reads (sources, address, guard predicate —
//!   even if the guard turns it off) and every register it writes is ready;
//! - a load's destinations become ready at the completion cycle the memory model returns; the
//!   warp keeps issuing independent instructions meanwhile, so `%clock` right after a load reads
//!   the issue time, not the arrival time;
//! - `membar`/`fence` issue only after all of the warp's outstanding memory operations completed;
//! - `bar.sync` releases when every live warp of the block (or `count` threads) arrived.
//!
//! Scheduling: `sm.warp_schedulers` schedulers per SM, warp slot `s` belongs to scheduler
//! `s % n`; each picks greedy-then-oldest (the last warp it issued if still ready, else the
//! oldest ready one by launch order). SMs advance in global time order — always the SM with the
//! smallest cycle, ties by SM index — so the shared L2/DRAM model sees requests in a consistent
//! order, and every run is identical. When no warp of an SM can issue, the SM jumps to the next
//! cycle at which one can, charging the skipped cycles to a stall reason.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use crate::config::GpuConfig;
use crate::devmem::DeviceMemory;
use crate::error::EmuError;
use crate::exec::{Ctx, Entry, FULL, Flow, Warp, exec};
use crate::ir::{Class, Op, Program};
use crate::memory::{MemRequest, MemorySystem};
use crate::texture::Texture;
use crate::watch::{Progress, WATCH_INTERVAL, Watch};
use std::time::Instant;

const NCLASS: usize = Class::ALL.len();

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WState {
    Free,
    Run,
    Bar,
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stall {
    Scoreboard,
    Memory,
    Barrier,
    Membar,
    PipeBusy,
    Idle,
}

impl Stall {
    fn name(self) -> &'static str {
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

struct TWarp {
    arch: Warp,
    ready: Vec<u64>,
    from_mem: Vec<bool>,
    state: WState,
    block: usize,
    outstanding: u64,
    next_ok: u64,
    wake: u64,
    reason: Stall,
    class: Class,
    bar_dst: Option<u32>,
    age: u64,
}

/// What the warp schedulers scan, per warp slot and apart from the warp's other state, so a
/// scan walks one small array: the cycle from which the warp can issue as far as it alone
/// decides (`max(wake, next_ok)`; `u64::MAX` when not running), its next instruction's class
/// (for the pipe) and its age. Kept in step with the warp by [`Hot::of`] after every change.
#[derive(Debug, Clone, Copy)]
struct Hot {
    ready: u64,
    age: u64,
    class: Class,
}

impl Hot {
    fn of(w: &TWarp) -> Hot {
        Hot {
            ready: if w.state == WState::Run {
                w.wake.max(w.next_ok)
            } else {
                u64::MAX
            },
            age: w.age,
            class: w.class,
        }
    }
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
}

struct Sm {
    id: u32,
    cycle: u64,
    warps: Vec<TWarp>,
    /// `hot[ws]` mirrors `warps[ws]` for the schedulers.
    hot: Vec<Hot>,
    blocks: Vec<Option<TBlock>>,
    pipe: Vec<[u64; NCLASS]>,
    last: Vec<Option<u32>>,
    live_blocks: u32,
    /// Per scheduler: the earliest cycle one of its warps can issue, and why not before —
    /// cached after a scan that found nothing, until an issue, a barrier release or a block
    /// launch can change it (0 = rescan).
    sched_next: Vec<u64>,
    sched_reason: Vec<Stall>,
}

/// Inputs of one launch.
pub(crate) struct LaunchInput<'a> {
    pub prog: &'a Program,
    pub cfg: &'a GpuConfig,
    pub params: &'a [u8],
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dyn_smem: u32,
    pub blocks_per_sm: u32,
    pub budget: u64,
    pub watch: &'a Watch,
}

/// Raw results of one launch (turned into `LaunchStats` by the API layer).
pub(crate) struct LaunchOutput {
    pub cycles: u64,
    pub sm_cycles: Vec<u64>,
    pub warp_instructions: u64,
    pub thread_instructions: u64,
    pub by_class: BTreeMap<String, u64>,
    pub stalls: BTreeMap<String, u64>,
}

struct Engine<'a> {
    inp: &'a LaunchInput<'a>,
    dev: &'a mut DeviceMemory,
    textures: &'a [Texture],
    mem: &'a mut MemorySystem,
    lanes: Vec<(u8, u64)>,
    warps_per_block: u32,
    shared_total: usize,
    next_block: u64,
    total_blocks: u64,
    /// When the watch's time limit runs out (None: no limit).
    deadline: Option<Instant>,
    age: u64,
    warp_instructions: u64,
    thread_instructions: u64,
    class_counts: [u64; NCLASS],
    flops: u64,
    stalls: [u64; 6],
    deps: Deps,
    /// `lat` and `issue_interval` of every class, looked up once per launch.
    lat: [u64; NCLASS],
    interval: [u64; NCLASS],
}

fn lat(cfg: &GpuConfig, c: Class) -> u64 {
    let p = &cfg.pipeline;
    (match c {
        Class::Int => p.int_latency_cycles,
        Class::Fp32 => p.fp32_latency_cycles,
        Class::Fp64 => p.fp64_latency_cycles,
        Class::Sfu => p.sfu_latency_cycles,
        Class::Branch => p.branch_latency_cycles,
        Class::Special => p.special_reg_latency_cycles,
        Class::Shuffle => p.shuffle_latency_cycles,
        _ => 1,
    }) as u64
}

fn issue_interval(cfg: &GpuConfig, c: Class) -> u64 {
    let p = &cfg.pipeline;
    (match c {
        Class::Int => p.int_issue_cycles,
        Class::Fp32 => p.fp32_issue_cycles,
        Class::Fp64 => p.fp64_issue_cycles,
        Class::Sfu => p.sfu_issue_cycles,
        Class::Mem | Class::Tex => p.mem_issue_cycles,
        _ => 1,
    })
    .max(1) as u64
}

/// Runs a whole grid.
pub(crate) fn run(
    inp: &LaunchInput,
    dev: &mut DeviceMemory,
    textures: &[Texture],
    mem: &mut MemorySystem,
) -> Result<LaunchOutput, EmuError> {
    let threads = inp.block[0] * inp.block[1] * inp.block[2];
    let nsm = inp.cfg.sm.count.max(1);
    let nsched = inp.cfg.sm.warp_schedulers.max(1) as usize;
    let mut e = Engine {
        inp,
        dev,
        textures,
        mem,
        lanes: Vec::with_capacity(256),
        warps_per_block: threads.div_ceil(32),
        shared_total: (inp.prog.dyn_shared_offset as usize + inp.dyn_smem as usize)
            .max(inp.prog.shared_static_bytes as usize),
        next_block: 0,
        total_blocks: inp.grid.iter().map(|&g| g as u64).product(),
        deadline: inp
            .watch
            .time_limit
            .and_then(|d| Instant::now().checked_add(d)),
        age: 0,
        warp_instructions: 0,
        thread_instructions: 0,
        class_counts: [0; NCLASS],
        flops: 0,
        stalls: [0; 6],
        deps: Deps::new(inp.prog),
        lat: Class::ALL.map(|c| lat(inp.cfg, c)),
        interval: Class::ALL.map(|c| issue_interval(inp.cfg, c)),
    };
    let mut sms: Vec<Sm> = (0..nsm)
        .map(|id| Sm {
            id,
            cycle: 0,
            warps: Vec::new(),
            hot: Vec::new(),
            blocks: Vec::new(),
            pipe: vec![[0; NCLASS]; nsched],
            last: vec![None; nsched],
            live_blocks: 0,
            sched_next: vec![0; nsched],
            sched_reason: vec![Stall::Idle; nsched],
        })
        .collect();
    // Initial distribution: round-robin over SMs, up to the occupancy limit.
    for _ in 0..inp.blocks_per_sm.max(1) {
        for sm in sms.iter_mut() {
            if e.next_block < e.total_blocks {
                e.launch_block(sm);
            }
        }
    }
    // SMs run in global (cycle, SM index) order. Most steps advance an SM by exactly one
    // cycle, so the SMs due now and those due next cycle live in bit sets (lowest index first
    // gives the index order) and only SMs that jump further ahead go through the heap.
    let mut now_set = SmSet::new(sms.len());
    let mut next_set = SmSet::new(sms.len());
    let mut heap: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new();
    let mut t = u64::MAX;
    for s in sms.iter().filter(|s| s.live_blocks > 0) {
        heap.push(Reverse((s.cycle, s.id)));
    }
    loop {
        let sid = match now_set.pop_lowest() {
            Some(sid) => sid,
            None => {
                let from_next = if next_set.is_empty() { u64::MAX } else { t + 1 };
                let from_heap = heap.peek().map_or(u64::MAX, |Reverse((c, _))| *c);
                let nt = from_next.min(from_heap);
                if nt == u64::MAX {
                    break;
                }
                if nt == from_next {
                    std::mem::swap(&mut now_set, &mut next_set);
                }
                while let Some(Reverse((c, id))) = heap.peek().copied()
                    && c == nt
                {
                    heap.pop();
                    now_set.insert(id as usize);
                }
                t = nt;
                continue;
            }
        };
        let sm = &mut sms[sid];
        e.step(sm)?;
        while sm.live_blocks < inp.blocks_per_sm.max(1) && e.next_block < e.total_blocks {
            e.launch_block(sm);
        }
        if sm.live_blocks == 0 {
            continue;
        }
        if sm.cycle == t + 1 {
            next_set.insert(sid);
        } else {
            heap.push(Reverse((sm.cycle, sm.id)));
        }
    }
    let sm_cycles: Vec<u64> = sms.iter().map(|s| s.cycle).collect();
    let mut by_class = BTreeMap::new();
    for (k, c) in Class::ALL.iter().enumerate() {
        by_class.insert(c.name().to_string(), e.class_counts[k]);
    }
    by_class.insert("flops".to_string(), e.flops);
    let mut stalls = BTreeMap::new();
    for s in [
        Stall::Scoreboard,
        Stall::Memory,
        Stall::Barrier,
        Stall::Membar,
        Stall::PipeBusy,
        Stall::Idle,
    ] {
        stalls.insert(s.name().to_string(), e.stalls[s as usize]);
    }
    Ok(LaunchOutput {
        cycles: sm_cycles.iter().copied().max().unwrap_or(0),
        sm_cycles,
        warp_instructions: e.warp_instructions,
        thread_instructions: e.thread_instructions,
        by_class,
        stalls,
    })
}

/// A set of SM indices, iterated lowest first.
struct SmSet {
    words: Vec<u64>,
    count: usize,
}

impl SmSet {
    fn new(n: usize) -> SmSet {
        SmSet {
            words: vec![0; n.div_ceil(64)],
            count: 0,
        }
    }
    fn is_empty(&self) -> bool {
        self.count == 0
    }
    fn insert(&mut self, i: usize) {
        if let Some(w) = self.words.get_mut(i / 64) {
            let bit = 1u64 << (i % 64);
            if *w & bit == 0 {
                *w |= bit;
                self.count += 1;
            }
        }
    }
    fn pop_lowest(&mut self) -> Option<usize> {
        if self.count == 0 {
            return None;
        }
        for (k, w) in self.words.iter_mut().enumerate() {
            if *w != 0 {
                let b = w.trailing_zeros() as usize;
                *w &= *w - 1;
                self.count -= 1;
                return Some(k * 64 + b);
            }
        }
        None
    }
}

impl Engine<'_> {
    fn launch_block(&mut self, sm: &mut Sm) {
        let b = self.next_block;
        self.next_block += 1;
        let [gx, gy, _] = self.inp.grid.map(|v| v as u64);
        let id = [
            (b % gx) as u32,
            ((b / gx) % gy) as u32,
            (b / (gx * gy)) as u32,
        ];
        let slot = match sm.blocks.iter().position(Option::is_none) {
            Some(s) => s,
            None => {
                sm.blocks.push(None);
                sm.blocks.len() - 1
            }
        };
        let prog = self.inp.prog;
        let nregs = prog.nregs as usize;
        let threads = self.inp.block.iter().product::<u32>();
        let mut warps = Vec::with_capacity(self.warps_per_block as usize);
        for wib in 0..self.warps_per_block {
            let ws = match sm.warps.iter().position(|w| w.state == WState::Free) {
                Some(s) => s,
                None => {
                    sm.warps.push(TWarp {
                        arch: Warp::default(),
                        ready: Vec::new(),
                        from_mem: Vec::new(),
                        state: WState::Free,
                        block: 0,
                        outstanding: 0,
                        next_ok: 0,
                        wake: 0,
                        reason: Stall::Scoreboard,
                        class: Class::Int,
                        bar_dst: None,
                        age: 0,
                    });
                    sm.hot.push(Hot {
                        ready: u64::MAX,
                        age: 0,
                        class: Class::Int,
                    });
                    sm.warps.len() - 1
                }
            };
            let w = &mut sm.warps[ws];
            let valid_lanes = (threads - wib * 32).min(32);
            let valid = if valid_lanes == 32 {
                FULL
            } else {
                (1u32 << valid_lanes) - 1
            };
            w.arch.regs.clear();
            w.arch.regs.resize(nregs * 32, 0);
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
            w.ready.resize(nregs, 0);
            w.from_mem.clear();
            w.from_mem.resize(nregs, false);
            w.state = WState::Run;
            w.block = slot;
            w.outstanding = sm.cycle;
            w.next_ok = sm.cycle;
            w.bar_dst = None;
            w.age = self.age;
            self.age += 1;
            refresh(w, prog, &self.deps);
            sm.hot[ws] = Hot::of(w);
            warps.push(ws as u32);
        }
        sm.blocks[slot] = Some(TBlock {
            id,
            shared: vec![0; self.shared_total],
            live: warps.len() as u32,
            warps,
            arrived: 0,
            expected: 0,
            red_kind: 0,
            red_acc: 0,
            bar_pc: 0,
        });
        sm.live_blocks += 1;
        sm.sched_next.fill(0);
    }

    /// One scheduling step of an SM: issue in the current cycle, or jump to the next cycle at
    /// which something can issue.
    fn step(&mut self, sm: &mut Sm) -> Result<(), EmuError> {
        let now = sm.cycle;
        let nsched = sm.pipe.len();
        let per = self.inp.cfg.sm.issue_per_scheduler.max(1);
        let mut issued_any = false;
        for s in 0..nsched {
            if sm.sched_next[s] > now {
                debug_assert!(
                    self.pick(sm, s, now).is_err(),
                    "stale scheduler cache at cycle {now}"
                );
                self.stalls[sm.sched_reason[s] as usize] += 1;
                continue;
            }
            let mut issued = 0;
            while issued < per {
                match self.pick(sm, s, now) {
                    Ok(ws) => {
                        self.issue(sm, ws, s, now)?;
                        sm.last[s] = Some(ws as u32);
                        issued += 1;
                    }
                    Err((t, r)) => {
                        if issued == 0 {
                            sm.sched_next[s] = t;
                            sm.sched_reason[s] = r;
                            self.stalls[r as usize] += 1;
                        }
                        break;
                    }
                }
            }
            if issued > 0 {
                issued_any = true;
                sm.sched_next[s] = 0;
            }
        }
        if issued_any {
            sm.cycle = now + 1;
            return Ok(());
        }
        // Nothing issued: jump to the earliest cycle at which some warp can issue.
        let next = sm.sched_next.iter().copied().min().unwrap_or(u64::MAX);
        if next == u64::MAX {
            if sm.live_blocks == 0 {
                return Ok(());
            }
            // Live blocks but no runnable warp: a barrier that can never complete.
            let blk = sm.blocks.iter().flatten().find(|b| b.live > 0);
            let (id, pc) = blk.map_or(([0; 3], 0), |b| (b.id, b.bar_pc));
            let line = self.inp.prog.insts.get(pc as usize).map_or(0, |x| x.line);
            return Err(EmuError::Deadlock {
                kernel: self.inp.prog.name.clone(),
                block: id,
                pc,
                line,
            });
        }
        let skipped = next.saturating_sub(now + 1);
        if skipped > 0 {
            for s in 0..nsched {
                self.stalls[sm.sched_reason[s] as usize] += skipped;
            }
        }
        sm.cycle = next.max(now + 1);
        Ok(())
    }

    fn eligible(sm: &Sm, ws: usize, s: usize, now: u64) -> bool {
        let h = &sm.hot[ws];
        h.ready <= now && sm.pipe[s][h.class as usize] <= now
    }

    /// The warp scheduler `s` issues at `now` (greedy-then-oldest), or, when none can, the
    /// earliest cycle one of its warps can and the reason it cannot before (the limiting one
    /// of scoreboard/memory/fence, pipe and issue slot; `Barrier` or `Idle` with `u64::MAX`
    /// when no warp can become ready by itself). One pass over the warps serves both, since
    /// a cycle without issue would otherwise scan them twice.
    fn pick(&self, sm: &Sm, s: usize, now: u64) -> Result<usize, (u64, Stall)> {
        let nsched = sm.pipe.len();
        if let Some(l) = sm.last[s]
            && Self::eligible(sm, l as usize, s, now)
        {
            return Ok(l as usize);
        }
        let pipes = &sm.pipe[s];
        let mut best: Option<(u64, usize)> = None;
        let (mut best_t, mut best_r) = (u64::MAX, Stall::Idle);
        let mut any_bar = false;
        let mut ws = s;
        while let Some(h) = sm.hot.get(ws) {
            if h.ready == u64::MAX {
                any_bar |= sm.warps[ws].state == WState::Bar;
            } else {
                let pipe = pipes[h.class as usize];
                let t = h.ready.max(pipe);
                if t <= now {
                    if best.is_none_or(|(a, _)| h.age < a) {
                        best = Some((h.age, ws));
                    }
                } else if t < best_t {
                    let w = &sm.warps[ws];
                    best_t = t;
                    best_r = if w.wake >= w.next_ok && w.wake >= pipe {
                        w.reason
                    } else if pipe >= w.next_ok {
                        Stall::PipeBusy
                    } else {
                        Stall::Scoreboard
                    };
                }
            }
            ws += nsched;
        }
        if let Some((_, w)) = best {
            return Ok(w);
        }
        if best_t == u64::MAX && any_bar {
            best_r = Stall::Barrier;
        }
        Err((best_t, best_r))
    }

    /// Every [`WATCH_INTERVAL`] warp instructions: report progress, enforce the deadline.
    fn look_out(
        &self,
        now: u64,
        block: [u32; 3],
        warp: u32,
        pc: u32,
        line: u32,
    ) -> Result<(), EmuError> {
        let watch = self.inp.watch;
        if let Some(report) = &watch.progress {
            report(&Progress {
                warp_instructions: self.warp_instructions,
                cycle: now,
                blocks_started: self.next_block,
                blocks_total: self.total_blocks,
            });
        }
        match self.deadline {
            Some(deadline) if Instant::now() >= deadline => Err(EmuError::TimeLimit {
                kernel: self.inp.prog.name.clone(),
                executed: self.warp_instructions,
                block,
                warp,
                pc,
                line,
            }),
            _ => Ok(()),
        }
    }

    fn issue(&mut self, sm: &mut Sm, ws: usize, s: usize, now: u64) -> Result<(), EmuError> {
        let prog = self.inp.prog;
        let cfg = self.inp.cfg;
        let w = &mut sm.warps[ws];
        let Some(pc) = w.arch.pc() else {
            w.state = WState::Done;
            sm.hot[ws] = Hot::of(w);
            return Ok(());
        };
        let x = &prog.insts[pc as usize];
        if x.op == Op::Invalid {
            let what = prog
                .messages
                .get(x.target as usize)
                .cloned()
                .unwrap_or_default();
            return Err(EmuError::Unsupported {
                line: x.line,
                what: format!("{what} (kernel {}, pc {pc})", prog.name),
            });
        }
        let active = w.arch.active();
        let bslot = w.block;
        let Some(block) = sm.blocks[bslot].as_mut() else {
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
            dev: self.dev,
            textures: self.textures,
            params: self.inp.params,
            shared: &mut block.shared,
            local_bytes: prog.local_bytes,
            block: block.id,
            ntid: self.inp.block,
            nctaid: self.inp.grid,
            smid: sm.id,
            nsm: cfg.sm.count,
            max_warps: cfg.sm.max_warps,
            now,
            clock_mhz: cfg.clock_mhz,
            dyn_smem: self.inp.dyn_smem,
            lanes: &mut self.lanes,
        };
        let flow = exec(x, &mut w.arch, &mut ctx).map_err(|f| EmuError::Fault {
            kernel: prog.name.clone(),
            pc,
            line: x.line,
            block: block.id,
            warp: w.arch.wib,
            thread: w.arch.wib * 32 + f.lane,
            what: f.what.clone(),
        })?;
        self.warp_instructions += 1;
        let lanes = active.count_ones() as u64;
        self.thread_instructions += lanes;
        self.class_counts[x.class as usize] += 1;
        if matches!(x.class, Class::Fp32 | Class::Fp64) {
            match x.op {
                Op::Fma => self.flops += 2 * lanes,
                Op::Add | Op::Sub | Op::Mul | Op::Div => self.flops += lanes,
                _ => {}
            }
        }
        if self.warp_instructions > self.inp.budget {
            return Err(EmuError::Budget {
                kernel: prog.name.clone(),
                limit: self.inp.budget,
                block: block.id,
                warp: w.arch.wib,
                pc,
                line: x.line,
            });
        }
        if self.warp_instructions & (WATCH_INTERVAL - 1) == 0 {
            self.look_out(now, block.id, w.arch.wib, pc, x.line)?;
        }
        let mut done_at = now + self.lat[x.class as usize];
        let mut from_mem = false;
        let mut flow_bar = None;
        match flow {
            Flow::Mem {
                space,
                kind,
                bytes_per_lane,
                readonly,
            } => {
                if !self.lanes.is_empty() {
                    let req = MemRequest {
                        sm: sm.id,
                        warp: ws as u32,
                        space,
                        kind,
                        bytes_per_lane,
                        lanes: &self.lanes,
                        readonly_path: readonly,
                    };
                    done_at = self.mem.access(now, &req).max(now + 1);
                    w.outstanding = w.outstanding.max(done_at);
                    from_mem = true;
                }
            }
            Flow::Bar {
                id,
                expected,
                red,
                contrib,
                dst,
            } => flow_bar = Some((id, expected, red, contrib, dst)),
            Flow::Exited | Flow::Done => {}
        }
        for r in x.writes() {
            w.ready[r as usize] = done_at;
            w.from_mem[r as usize] = from_mem;
        }
        sm.pipe[s][x.class as usize] = now + self.interval[x.class as usize];
        w.next_ok = now
            + if x.op == Op::Bra {
                self.lat[Class::Branch as usize].max(1)
            } else {
                1
            };
        if w.arch.pc().is_none() {
            w.state = WState::Done;
            block.live -= 1;
        } else if let Some((_, expected, red, contrib, dst)) = flow_bar {
            w.state = WState::Bar;
            w.bar_dst = dst;
            block.arrived += 1;
            block.expected = expected;
            block.bar_pc = pc;
            if red != 0 {
                block.red_acc = match (block.arrived, red) {
                    (1, 2) => contrib,
                    (1, 3) => contrib,
                    (1, _) => contrib,
                    (_, 1) => block.red_acc + contrib,
                    (_, 2) => block.red_acc & contrib,
                    _ => block.red_acc | contrib,
                };
                block.red_kind = red;
            }
        }
        refresh(w, prog, &self.deps);
        sm.hot[ws] = Hot::of(w);
        // Barrier release (also when a warp exits while others wait).
        let need = if block.expected > 0 {
            block.expected.div_ceil(32)
        } else {
            block.live
        };
        if block.arrived > 0 && block.arrived >= need {
            sm.sched_next.fill(0);
            let red = block.red_kind;
            let acc = block.red_acc;
            block.arrived = 0;
            block.expected = 0;
            block.red_kind = 0;
            block.red_acc = 0;
            for &m in &block.warps {
                let wm = &mut sm.warps[m as usize];
                if wm.state == WState::Bar {
                    wm.state = WState::Run;
                    wm.next_ok = now + 1;
                    if let (Some(r), true) = (wm.bar_dst.take(), red != 0) {
                        let row = &mut wm.arch.regs[r as usize * 32..r as usize * 32 + 32];
                        row.fill(acc as u64);
                        wm.ready[r as usize] = now + 1;
                    }
                    sm.hot[m as usize] = Hot::of(wm);
                }
            }
        }
        let Some(block) = sm.blocks[bslot].as_mut() else {
            return Ok(());
        };
        if block.live == 0 {
            for &m in &block.warps {
                sm.warps[m as usize].state = WState::Free;
                sm.hot[m as usize] = Hot::of(&sm.warps[m as usize]);
            }
            sm.blocks[bslot] = None;
            sm.live_blocks -= 1;
            for l in sm.last.iter_mut() {
                if l.is_some_and(|v| sm.warps[v as usize].state == WState::Free) {
                    *l = None;
                }
            }
        }
        Ok(())
    }
}

/// Every instruction's scoreboard registers (reads, then writes — the order decides which
/// register names the stall reason on a tie), flattened once per launch so that the per-issue
/// `refresh` walks a slice instead of filtering operand enums.
struct Deps {
    start: Vec<u32>,
    regs: Vec<u32>,
}

impl Deps {
    fn new(prog: &Program) -> Deps {
        let mut start = Vec::with_capacity(prog.insts.len() + 1);
        let mut regs = Vec::new();
        for x in &prog.insts {
            start.push(regs.len() as u32);
            regs.extend(x.reads().chain(x.writes()));
        }
        start.push(regs.len() as u32);
        Deps { start, regs }
    }

    #[inline]
    fn of(&self, pc: u32) -> &[u32] {
        let pc = pc as usize;
        match (self.start.get(pc), self.start.get(pc + 1)) {
            (Some(&a), Some(&b)) => self.regs.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// Recomputes when a warp's next instruction can issue (scoreboard and fences).
fn refresh(w: &mut TWarp, prog: &Program, deps: &Deps) {
    let Some(pc) = w.arch.pc() else {
        w.state = WState::Done;
        return;
    };
    let x = &prog.insts[pc as usize];
    let mut t = 0;
    let mut reason = Stall::Scoreboard;
    for &r in deps.of(pc) {
        let rt = w.ready[r as usize];
        if rt > t {
            t = rt;
            reason = if w.from_mem[r as usize] {
                Stall::Memory
            } else {
                Stall::Scoreboard
            };
        }
    }
    if x.op == Op::Membar && w.outstanding > t {
        t = w.outstanding;
        reason = Stall::Membar;
    }
    w.wake = t;
    w.reason = reason;
    w.class = x.class;
}
