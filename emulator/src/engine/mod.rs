//! The issue engine of one launch: every SM simulated on its own (sm.rs), in rounds that may run
//! in parallel, with the numbers of one global (cycle, SM) order.
//!
//! Why rounds: an SM's own state (warps, scoreboard, pipes, L1, shared memory) is its alone;
//! what SMs share is the L2/DRAM below them, device memory and the grid's block counter. The
//! engine was exact in global (cycle, SM) order because the L2 saw requests in that order. It
//! still does: a round lets every SM run up to a horizon `H` = (the earliest SM's cycle) + the
//! shortest L2 round trip, queueing its L2 requests with a token for each answer
//! (memory/pending.rs). No answer to a request sent in the round is due before `H`, so no SM
//! needs one. Between rounds the coordinator answers every queued request that comes before the
//! earliest SM's position, in (cycle, SM, sequence) order — the order a sequential engine would
//! have used — and applies global writes the same way (devmem.rs `Write`). The next round
//! starts while it answers: an SM whose own requests are all answered is handed to the threads
//! (`answer_and_run`).
//!
//! An SM parks where a decision depends on what is not known yet. A free block slot (which
//! block it gets depends on frees elsewhere) waits until the SM is first in global order, when
//! everything before it is answered; the coordinator then hands out blocks for it alone. An idle
//! stretch whose end is a token, and an issue that would end stalls whose reasons hinge on one,
//! are retried at the start of each round until the values are there.
//!
//! Determinism: an SM's round depends only on its state and the horizon, and everything shared
//! is applied in one order between rounds, so any number of threads gives the same bytes. The
//! difference from one global interleaving: a load sees other SMs' stores and every atomic's
//! result from the next round on (its own stores at once) — CUDA gives threads of different
//! blocks no more without a fence-and-flag protocol, which still works, a round later.

mod sm;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use crate::config::GpuConfig;
use crate::devmem::{DeviceMemory, WriteKind};
use crate::error::EmuError;
use crate::exec::{Fixed, atomic_value};
use crate::ir::{Class, Program};
use crate::memory::{END, Key, MemorySystem, SmMem, answer_releasing, in_global_order};
use crate::texture::Texture;
use crate::watch::{Progress, WATCH_INTERVAL, Watch};

use sm::{Deps, NCLASS, Park, Shared, Sm, Stall};

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

/// Runs a whole grid.
pub(crate) fn run(
    inp: &LaunchInput,
    dev: &mut DeviceMemory,
    textures: &[Texture],
    mem: &mut MemorySystem,
) -> Result<LaunchOutput, EmuError> {
    // On a worker of the thread pool, so that each round hands its SMs to the pool's other
    // workers by work stealing rather than by waking them from outside.
    rayon::scope(|_| run_rounds(inp, dev, textures, mem))
}

fn run_rounds(
    inp: &LaunchInput,
    dev: &mut DeviceMemory,
    textures: &[Texture],
    mem: &mut MemorySystem,
) -> Result<LaunchOutput, EmuError> {
    let nsm = inp.cfg.sm.count.max(1);
    let nsched = inp.cfg.sm.warp_schedulers.max(1) as usize;
    let deps = Deps::new(inp.prog);
    let lat = Class::ALL.map(|c| sm::lat(inp.cfg, c));
    let interval = Class::ALL.map(|c| sm::issue_interval(inp.cfg, c));
    // A round may not be longer than the shortest L2 round trip (see the module doc).
    let round = MemorySystem::min_round_trip(inp.cfg).max(1);
    let total_blocks: u64 = inp.grid.iter().map(|&g| g as u64).product();
    let deadline = inp
        .watch
        .time_limit
        .and_then(|d| Instant::now().checked_add(d));
    let mut sms: Vec<Sm> = (0..nsm).map(|id| Sm::new(id, nsched)).collect();
    let mut next_block = 0u64;
    // Initial distribution: round-robin over SMs, up to the occupancy limit.
    for _ in 0..inp.blocks_per_sm.max(1) {
        for sm in sms.iter_mut() {
            if next_block < total_blocks {
                sm.launch_block(inp, &deps, next_block);
                next_block += 1;
            }
        }
    }
    for sm in sms.iter_mut().filter(|s| s.live_blocks == 0) {
        sm.park = Park::Done;
    }
    let mut watched = 0u64;
    // Until every SM is done: the earliest position in global order bounds what is answered.
    while let Some(first) = sms
        .iter()
        .zip(&mem.sms)
        .filter_map(|(s, m)| s.position(m))
        .min()
    {
        // Independent of the answers: stores and atomics touch device memory and registers,
        // answers only the SMs' memory sides.
        apply_writes_before(first, &mut sms, dev);
        let i = first.1 as usize;
        let cfg = inp.cfg;
        let sh = Shared {
            inp,
            fixed: Fixed {
                dev,
                textures,
                params: inp.params,
                local_bytes: inp.prog.local_bytes,
                ntid: inp.block,
                nctaid: inp.grid,
                nsm: cfg.sm.count,
                max_warps: cfg.sm.max_warps,
                clock_mhz: cfg.clock_mhz,
                dyn_smem: inp.dyn_smem,
            },
            deps: &deps,
            lat,
            interval,
            blocks_left: next_block < total_blocks,
        };
        if !matches!(sms[i].park, Park::Run | Park::Jump | Park::Retry) {
            mem.answer_before(first);
            let sm = &mut sms[i];
            let sm_mem = &mut mem.sms[i];
            sm.take_in(&sh, sm_mem);
            match std::mem::replace(&mut sm.park, Park::Run) {
                Park::Run | Park::Jump | Park::Retry | Park::Done => {}
                Park::Dispatch => {
                    while sm.live_blocks < inp.blocks_per_sm.max(1) && next_block < total_blocks {
                        sm.launch_block(inp, &deps, next_block);
                        next_block += 1;
                    }
                    if sm.live_blocks == 0 {
                        sm.park = Park::Done;
                    }
                }
                Park::Fault(e) => return Err(e),
            }
            continue;
        }
        let horizon = first.0.saturating_add(round);
        answer_and_run(&mut sms, mem, &sh, first, horizon);
        let executed: u64 = sms.iter().map(|s| s.counts.warp_instructions).sum();
        if executed > inp.budget {
            let (block, warp, pc, line) = last_issue(&sms);
            return Err(EmuError::Budget {
                kernel: inp.prog.name.clone(),
                limit: inp.budget,
                block,
                warp,
                pc,
                line,
            });
        }
        if executed / WATCH_INTERVAL > watched {
            watched = executed / WATCH_INTERVAL;
            look_out(
                inp,
                &sms,
                deadline,
                executed,
                first.0,
                next_block,
                total_blocks,
            )?;
        }
    }
    mem.answer_before(END);
    apply_writes_before(END, &mut sms, dev);
    Ok(output(&sms))
}

/// Answers the L2 requests that come before `first` and runs the round to `horizon` of every
/// SM that takes part, on one thread or many alike. On several threads the two overlap: an SM is handed to the threads as
/// soon as nothing of its own is left to answer (at once when it sent nothing), while the
/// coordinating thread answers the others' requests and then joins in. Neither the order of
/// answers nor what an SM's round sees depends on this: answers touch only their own SM's
/// memory side, and a round depends only on its SM's state and the horizon.
fn answer_and_run(sms: &mut [Sm], mem: &mut MemorySystem, sh: &Shared, first: Key, horizon: u64) {
    let mut due: Vec<Option<&mut Sm>> = sms
        .iter_mut()
        .map(|s| s.runs_before(horizon).then_some(s))
        .collect();
    // No more helpers than SMs: each may run one while the coordinator still answers.
    let helpers = (rayon::current_num_threads().max(1) - 1).min(due.iter().flatten().count());
    let mut sides: Vec<Option<&mut SmMem>> = mem.sms.iter_mut().map(Some).collect();
    let ready = Ready::default();
    let below = &mut mem.below;
    rayon::scope(|sc| {
        for _ in 0..helpers {
            sc.spawn(|_| ready.work(sh, horizon));
        }
        // Closed however answering ends, so that a panic there cannot leave the others
        // waiting for SMs that never come.
        let close = Close(&ready);
        answer_releasing(below, &mut sides, first, |i, side| {
            if let Some(s) = due[i].take()
                && let Some(m) = side.take()
            {
                ready.push(s, m);
            }
        });
        drop(close);
        ready.work(sh, horizon);
    });
}

/// The SMs of a round whose answers are in, not yet taken by a thread. A waiting thread reads
/// only the two atomics, and locks the list when they say there is something to take, so that
/// many waiting threads do not contend for the lock the coordinator needs to hand SMs over.
#[derive(Default)]
struct Ready<'a> {
    sms: Mutex<Vec<(&'a mut Sm, &'a mut SmMem)>>,
    /// How many SMs the list holds.
    queued: AtomicUsize,
    /// Every SM of the round was handed over.
    closed: AtomicBool,
}

/// Closes a round's [`Ready`] when dropped.
struct Close<'r, 'a>(&'r Ready<'a>);

impl Drop for Close<'_, '_> {
    fn drop(&mut self) {
        self.0.closed.store(true, Ordering::Release);
    }
}

impl<'a> Ready<'a> {
    fn list(&self) -> MutexGuard<'_, Vec<(&'a mut Sm, &'a mut SmMem)>> {
        // A panic in a round ends the launch, so a poisoned lock is never used again.
        self.sms.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, s: &'a mut Sm, m: &'a mut SmMem) {
        let mut list = self.list();
        list.push((s, m));
        self.queued.fetch_add(1, Ordering::Release);
    }

    /// The heaviest SM of the list (by its last round's work), so that no thread is left with
    /// a heavy one at the end.
    fn take(&self) -> Option<(&'a mut Sm, &'a mut SmMem)> {
        let mut list = self.list();
        let k = (0..list.len()).max_by_key(|&k| list[k].0.last_work)?;
        self.queued.fetch_sub(1, Ordering::Relaxed);
        Some(list.swap_remove(k))
    }

    /// Runs ready SMs until the round has none left. Waits by spinning: the wait lasts only
    /// while the coordinating thread answers (microseconds), and a thread put to sleep took
    /// longer to wake than that.
    fn work(&self, sh: &Shared, horizon: u64) {
        let mut idle = 0u32;
        loop {
            if self.queued.load(Ordering::Acquire) > 0
                && let Some((s, m)) = self.take()
            {
                idle = 0;
                s.run_round(sh, m, horizon);
                continue;
            }
            // Every push comes before the close, so a closed list seen empty stays empty.
            if self.closed.load(Ordering::Acquire) && self.queued.load(Ordering::Acquire) == 0 {
                return;
            }
            if idle < 64 {
                idle += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// Applies, in global order, every SM's pending global writes that come before `bound`; an
/// atomic's old value goes to its warp's register.
fn apply_writes_before(bound: Key, sms: &mut [Sm], dev: &mut DeviceMemory) {
    let heads = sms
        .iter()
        .filter_map(|s| s.writes.front().map(|w| (w.now, s.id, w.seq)))
        .collect();
    in_global_order(heads, bound, |i| {
        let sm = &mut sms[i];
        if let Some(w) = sm.writes.pop_front() {
            match w.what {
                WriteKind::Store { len, value } => {
                    // The address was checked when the store issued.
                    let _ = dev.write(w.addr, &value.to_le_bytes()[..len as usize]);
                }
                WriteKind::Atomic {
                    op,
                    ty,
                    line,
                    p,
                    q,
                    ret,
                } => {
                    // A register holds 8 bytes of a wider operand, as the direct path did.
                    let n = (ty.bytes().max(1) as usize).min(8);
                    let mut buf = [0u8; 8];
                    if dev.read(w.addr, &mut buf[..n]).is_ok() {
                        let o = u64::from_le_bytes(buf);
                        let new = atomic_value(op, ty, line, o, p, q);
                        let _ = dev.write(w.addr, &new.to_le_bytes()[..n]);
                        if let Some((ws, reg, lane)) = ret {
                            sm.set_reg(ws, reg, lane, o & ty.mask());
                        }
                    }
                }
            }
        }
        sm.writes.front().map(|w| (w.now, w.seq))
    });
}

/// Where a launch stopped by a guard was (block, warp in block, pc, line): the last issue of
/// the lowest-numbered SM that issued, the same for every thread count.
fn last_issue(sms: &[Sm]) -> ([u32; 3], u32, u32, u32) {
    sms.iter().find_map(|s| s.last_issue).unwrap_or_default()
}

/// Reports progress and enforces the deadline (every [`WATCH_INTERVAL`] warp instructions).
fn look_out(
    inp: &LaunchInput,
    sms: &[Sm],
    deadline: Option<Instant>,
    executed: u64,
    cycle: u64,
    next_block: u64,
    total_blocks: u64,
) -> Result<(), EmuError> {
    let watch = inp.watch;
    if let Some(report) = &watch.progress {
        report(&Progress {
            warp_instructions: executed,
            cycle,
            blocks_started: next_block,
            blocks_total: total_blocks,
        });
    }
    match deadline {
        Some(deadline) if Instant::now() >= deadline => {
            let (block, warp, pc, line) = last_issue(sms);
            Err(EmuError::TimeLimit {
                kernel: inp.prog.name.clone(),
                executed,
                block,
                warp,
                pc,
                line,
            })
        }
        _ => Ok(()),
    }
}

fn output(sms: &[Sm]) -> LaunchOutput {
    let sm_cycles: Vec<u64> = sms.iter().map(|s| s.cycle).collect();
    let mut class_counts = [0u64; NCLASS];
    let mut stalls = [0u64; 6];
    let (mut warp_instructions, mut thread_instructions, mut flops) = (0, 0, 0);
    for s in sms {
        let c = &s.counts;
        warp_instructions += c.warp_instructions;
        thread_instructions += c.thread_instructions;
        flops += c.flops;
        for (a, b) in class_counts.iter_mut().zip(c.class_counts) {
            *a += b;
        }
        for (a, b) in stalls.iter_mut().zip(c.stalls) {
            *a += b;
        }
    }
    let mut by_class = BTreeMap::new();
    for (k, c) in Class::ALL.iter().enumerate() {
        by_class.insert(c.name().to_string(), class_counts[k]);
    }
    by_class.insert("flops".to_string(), flops);
    let stalls = Stall::ALL
        .iter()
        .map(|s| (s.name().to_string(), stalls[*s as usize]))
        .collect();
    LaunchOutput {
        cycles: sm_cycles.iter().copied().max().unwrap_or(0),
        sm_cycles,
        warp_instructions,
        thread_instructions,
        by_class,
        stalls,
    }
}
