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

mod account;
mod dispatch;
mod sm;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Instant;

use crossbeam_utils::CachePadded;

use crate::config::GpuConfig;
use crate::devmem::{DeviceMemory, WriteKind};
use crate::error::EmuError;
use crate::exec::{Fixed, atomic_value};
use crate::ir::{Class, Program};
use crate::memory::{
    Answering, Below, END, Key, MemorySystem, SmMem, answer_before, answer_releasing,
    begin_in_parts, finish_in_parts, in_global_order, lock,
};
use crate::texture::Texture;
use crate::watch::{Progress, WATCH_INTERVAL, Watch};

use account::{Account, Part};
use sm::{Deps, NCLASS, NPIPE, Park, Shared, Sm, Stall};

mod loads;
pub use loads::{LoadEvent, LoadSpace, LoadWarps};

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
    /// The warps whose loads are recorded (`loads.rs`); `None` records none.
    pub record_loads: Option<&'a LoadWarps>,
}

/// Raw results of one launch (turned into `LaunchStats` by the API layer).
pub(crate) struct LaunchOutput {
    pub cycles: u64,
    pub sm_cycles: Vec<u64>,
    pub warp_instructions: u64,
    pub thread_instructions: u64,
    pub by_class: BTreeMap<String, u64>,
    pub stalls: BTreeMap<String, u64>,
    /// Resident warps summed over cycles, and cycles with any warp resident, over all SMs.
    pub warp_cycles: u64,
    pub active_cycles: u64,
    /// The recorded warps' loads, by warp and then issue cycle (empty when none were asked for).
    pub loads: Vec<LoadEvent>,
    /// How each host thread spent the launch (account.rs).
    pub threads: Vec<trace::ThreadSeconds>,
}

/// The fewest threads on which a launch's memory partitions answer apart (memory/parts.rs).
/// Below it the coordinator answers in global order while the helpers run SMs, which gives the
/// same answers. On the h100 preset's quick frames answering apart took 1.07-1.16 times as
/// long on two threads and up to 1.03 on one (`scripts/speed-ab`); from one-thread rounds it
/// lifts the bound of 4 threads from 2.6× to 4.0× on the frame whose answering is the largest
/// share (docs/PERFORMANCE.md).
const PARTS_FROM_THREADS: usize = 4;

/// Runs a whole grid.
pub(crate) fn run(
    inp: &LaunchInput,
    dev: &mut DeviceMemory,
    textures: &[Texture],
    mem: &mut MemorySystem,
) -> Result<LaunchOutput, EmuError> {
    // On a worker of the thread pool, so that the launch's helpers are taken up by the pool's
    // other workers by work stealing rather than woken from outside.
    rayon::scope(|_| run_rounds(inp, dev, textures, mem))
}

/// Never inlined: `scripts/speed-ab --sim` and the performance page's per-part counts collect
/// the launch by this function's name.
#[inline(never)]
fn run_rounds(
    inp: &LaunchInput,
    dev: &mut DeviceMemory,
    textures: &[Texture],
    mem: &mut MemorySystem,
) -> Result<LaunchOutput, EmuError> {
    let nsm = inp.cfg.sm.count.max(1);
    let nsched = inp.cfg.sm.warp_schedulers.max(1) as usize;
    let deps = Deps::new(inp.prog, inp.cfg);
    let mut sms: Vec<Sm> = (0..nsm).map(|id| Sm::new(id, nsched)).collect();
    let mut next_block = 0u64;
    let total_blocks: u64 = inp.grid.iter().map(|&g| g as u64).product();
    for id in dispatch::first_wave(&inp.cfg.sm, inp.blocks_per_sm, total_blocks) {
        sms[id as usize].launch_block(inp, &deps, next_block);
        next_block += 1;
    }
    for sm in sms.iter_mut().filter(|s| s.live_blocks == 0) {
        sm.park = Park::Done;
    }
    let dev = RwLock::new(dev);
    let crew = Crew {
        inp,
        textures,
        deps: &deps,
        lat: Class::ALL.map(|c| c.latency(&inp.cfg.pipeline)),
        interval: sm::intervals(inp.cfg),
        dev: &dev,
        round: Round::default(),
        accounts: Mutex::default(),
        // No more helpers than SMs: each may run one while the coordinator still answers.
        helpers: (rayon::current_num_threads().max(1) - 1).min(nsm as usize),
    };
    let MemorySystem { sms: sides, below } = mem;
    let mut account = Account::start();
    rayon::scope(|sc| {
        for _ in 0..crew.helpers {
            sc.spawn(|_| crew.serve());
        }
        // Stopped however the rounds end, so that no helper waits for a round that never
        // comes.
        let _stop = Stop(&crew.round);
        let mut slots = Slots {
            sms: sms.iter_mut().map(Some).collect(),
            sides: sides.iter_mut().map(Some).collect(),
        };
        let done = coordinate(
            &crew,
            below,
            &mut slots,
            &mut account,
            next_block,
            total_blocks,
        );
        account.stretch(Part::Coordinating);
        done
    })?;
    let helpers = std::mem::take(&mut *lock(&crew.accounts));
    let threads = account::in_order(account.seconds(), helpers);
    // A load whose value no instruction read may still hold a token: every answer is in now.
    if inp.record_loads.is_some() {
        for (sm, side) in sms.iter_mut().zip(sides.iter_mut()) {
            side.pend.evaluate();
            sm.loads.take_in(&side.pend);
            if sm.loads.unresolved() > 0 {
                return Err(EmuError::Internal {
                    what: format!(
                        "{} recorded loads of SM {} have no data-return cycle at the end of the launch",
                        sm.loads.unresolved(),
                        sm.id
                    ),
                });
            }
        }
    }
    // A grid is done when its atomics are performed, not when its last warp exits: a warp does
    // not wait for an atomic whose value it never reads.
    Ok(output(&mut sms, below.atomics_done(), threads))
}

/// The SMs and their memory sides between rounds (all present) and during one (those handed to
/// the threads taken out).
struct Slots<'s> {
    sms: Vec<Option<&'s mut Sm>>,
    sides: Vec<Option<&'s mut SmMem>>,
}

/// The rounds of a launch, on the coordinating thread, until every SM is done; then what is
/// left to answer and to write.
fn coordinate<'s>(
    crew: &Crew<'s, '_>,
    below: &mut Below,
    slots: &mut Slots<'s>,
    account: &mut Account,
    mut next_block: u64,
    total_blocks: u64,
) -> Result<(), EmuError> {
    let inp = crew.inp;
    // A round may not be longer than the shortest L2 round trip (see the module doc).
    let round = MemorySystem::min_round_trip(inp.cfg).max(1);
    let deadline = inp
        .watch
        .time_limit
        .and_then(|d| Instant::now().checked_add(d));
    let mut watched = 0u64;
    // Until every SM is done: the earliest position in global order bounds what is answered.
    while let Some(first) = slots
        .sms
        .iter()
        .zip(&slots.sides)
        .filter_map(|(s, m)| s.as_deref()?.position(m.as_deref()?))
        .min()
    {
        // Independent of the answers: stores and atomics touch device memory and registers,
        // answers only the SMs' memory sides.
        apply_writes_before(first, &mut slots.sms, &mut crew.write_dev());
        let i = first.1 as usize;
        let blocks_left = next_block < total_blocks;
        let Some(sm) = slots.sms[i].as_deref_mut() else {
            return Err(not_back(inp, i));
        };
        if !matches!(sm.park, Park::Run | Park::Jump | Park::Retry) {
            answer_before(below, &mut slots.sides, first);
            let Some(sm_mem) = slots.sides[i].as_deref_mut() else {
                return Err(not_back(inp, i));
            };
            let dev = crew.read_dev();
            sm.take_in(&crew.shared(&dev, blocks_left), sm_mem);
            match std::mem::replace(&mut sm.park, Park::Run) {
                Park::Run | Park::Jump | Park::Retry | Park::Done => {}
                Park::Dispatch => {
                    while sm.live_blocks < inp.blocks_per_sm.max(1) && next_block < total_blocks {
                        sm.launch_block(inp, crew.deps, next_block);
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
        answer_and_run(crew, below, slots, account, first, horizon, blocks_left);
        if crew.round.flags.stop.load(Ordering::Acquire) {
            // A helper failed; its panic ends the launch when the scope closes.
            return Ok(());
        }
        let executed: u64 = slots
            .sms
            .iter()
            .flatten()
            .map(|s| s.counts.warp_instructions)
            .sum();
        if executed > inp.budget {
            let (block, warp, pc, line) = last_issue(slots.sms.iter().flatten().map(|s| &**s));
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
                slots.sms.iter().flatten().map(|s| &**s),
                deadline,
                executed,
                first.0,
                next_block,
                total_blocks,
            )?;
        }
    }
    answer_before(below, &mut slots.sides, END);
    apply_writes_before(END, &mut slots.sms, &mut crew.write_dev());
    Ok(())
}

/// SM `i` missing from its slot between rounds. It cannot happen (every SM handed out for a
/// round is back before the next), and is reported rather than ignored.
fn not_back(inp: &LaunchInput, i: usize) -> EmuError {
    EmuError::Fault {
        kernel: inp.prog.name.clone(),
        pc: 0,
        line: 0,
        block: [0; 3],
        warp: 0,
        thread: 0,
        what: format!("internal: SM {i} is not back from its round"),
    }
}

/// Answers the L2 requests that come before `first` and runs the round to `horizon` of every
/// SM that takes part, on one thread or many alike. On several threads the two overlap: an SM
/// is handed to the threads as soon as nothing of its own is left to answer (at once when it
/// sent nothing), while the coordinating thread answers the others' requests and then joins
/// in; with memory partitions every thread answers the partitions, ahead of running SMs,
/// while the coordinator gives the answers back and hands each SM over after its last
/// (memory/parts.rs). The round ends when every SM handed over is back. Neither the order of
/// answers nor what
/// an SM's round sees depends on this: answers touch only their own SM's memory side, and a
/// round depends only on its SM's state and the horizon.
fn answer_and_run<'s>(
    crew: &Crew<'s, '_>,
    below: &mut Below,
    slots: &mut Slots<'s>,
    account: &mut Account,
    first: Key,
    horizon: u64,
    blocks_left: bool,
) {
    let round = &crew.round;
    let due: Vec<bool> = slots
        .sms
        .iter()
        .map(|s| s.as_deref().is_some_and(|s| s.runs_before(horizon)))
        .collect();
    round.begin(horizon, blocks_left, due.iter().filter(|&&d| d).count());
    let Slots { sms, sides } = slots;
    let mut release = |i: usize, side: &mut Option<&'s mut SmMem>| {
        if due[i]
            && let Some(sm) = sms[i].take()
            && let Some(side) = side.take()
        {
            round.push(Job { i, sm, side });
        }
    };
    // With several memory partitions and enough threads, every thread answers them while the
    // coordinator gives the answers back in global order (memory/parts.rs); else the
    // coordinator answers alone, in that order, which gives the same answers while the helpers
    // run the SMs it has released.
    let in_parts = if crew.helpers + 1 >= PARTS_FROM_THREADS {
        begin_in_parts(below, sides, first)
    } else {
        None
    };
    match in_parts {
        Some((answering, asks)) => {
            let mut asking = vec![false; sides.len()];
            for a in &asks {
                asking[a.sm()] = true;
            }
            for (i, side) in sides.iter_mut().enumerate() {
                if !asking[i] {
                    release(i, side);
                }
            }
            let answering = Arc::new(answering);
            crew.open(&answering);
            finish_in_parts(below, sides, &answering, asks, release);
            crew.close();
        }
        None => answer_releasing(below, sides, first, release),
    }
    account.stretch(Part::Coordinating);
    crew.work_until(|| round.out.load(Ordering::Acquire) == 0, account);
    for job in round.back().drain(..) {
        sms[job.i] = Some(job.sm);
        sides[job.i] = Some(job.side);
    }
}

/// What the threads of a launch share: the launch's constants, device memory (read by rounds,
/// written by the coordinator between them) and the round in progress.
struct Crew<'s, 'd> {
    inp: &'s LaunchInput<'s>,
    textures: &'s [Texture],
    deps: &'s Deps,
    /// `lat` of every class and the busy cycles of every unit, looked up once per launch.
    lat: [u64; NCLASS],
    interval: [u64; NPIPE],
    dev: &'s RwLock<&'d mut DeviceMemory>,
    round: Round<'s>,
    /// Threads that help the coordinator run SMs and answer partitions.
    helpers: usize,
    /// Each helper's account of the launch, added as it returns.
    accounts: Mutex<Vec<trace::ThreadSeconds>>,
}

/// A thread's read of device memory, which the coordinator writes between rounds.
type DevRead<'a, 'd> = RwLockReadGuard<'a, &'d mut DeviceMemory>;

/// An SM handed to the threads for one round, with its place in the launch.
struct Job<'s> {
    i: usize,
    sm: &'s mut Sm,
    side: &'s mut SmMem,
}

/// The round in progress. A waiting thread reads only the atomics, and locks the list when
/// they say there is something to take, so that many waiting threads do not contend for the
/// lock the coordinator needs to hand SMs over.
///
/// Each field written at every SM's hand-over or return, or by every thread once a round, has
/// a host cache line of its own, and so do the flags the waiting threads poll (`queued` alone,
/// the rest together in `flags`): a write to a line drops it from every core that reads it, so
/// the list's lock, an SM's return (`back`, `out`) and each thread taking the answering would
/// otherwise make every waiting core read its polled line again, and make the writer wait for
/// all of them to let it go.
#[derive(Default)]
struct Round<'s> {
    ready: CachePadded<Mutex<Vec<Job<'s>>>>,
    /// How many SMs `ready` holds.
    queued: CachePadded<AtomicUsize>,
    /// SMs of the round not yet back.
    out: CachePadded<AtomicUsize>,
    /// SMs run, for the coordinator to put back.
    back: CachePadded<Mutex<Vec<Job<'s>>>>,
    /// The memory partitions' answering in progress (memory/parts.rs), which the threads help
    /// with before they run SMs.
    answering: CachePadded<Mutex<Option<Arc<Answering>>>>,
    /// What is written at most a few times a round and read by every thread.
    flags: CachePadded<RoundFlags>,
}

/// [`Round`]'s fields that the coordinator writes when a round begins and when its answering
/// opens and closes (and a failing thread once a launch), which the waiting threads poll and
/// every SM's round reads.
#[derive(Default)]
struct RoundFlags {
    /// Odd while an answering is open, and one more at each opening and closing: a thread
    /// takes the answering from the lock once per opening and then polls only this, so that
    /// idle threads write nothing the working ones read.
    openings: AtomicU64,
    horizon: AtomicU64,
    blocks_left: AtomicBool,
    /// The launch's rounds are over (or a thread failed): helpers return.
    stop: AtomicBool,
}

/// Stops the helpers when dropped.
struct Stop<'r, 's>(&'r Round<'s>);

impl Drop for Stop<'_, '_> {
    fn drop(&mut self) {
        self.0.flags.stop.store(true, Ordering::Release);
    }
}

impl<'s> Round<'s> {
    fn begin(&self, horizon: u64, blocks_left: bool, due: usize) {
        self.flags.horizon.store(horizon, Ordering::Relaxed);
        self.flags.blocks_left.store(blocks_left, Ordering::Relaxed);
        // Released by the first push's lock and count.
        self.out.store(due, Ordering::Release);
    }

    fn push(&self, job: Job<'s>) {
        lock(&self.ready).push(job);
        self.queued.fetch_add(1, Ordering::Release);
    }

    /// The heaviest SM ready (by its last round's work), so that no thread is left with a heavy
    /// one at the end.
    fn take(&self) -> Option<Job<'s>> {
        let mut list = lock(&self.ready);
        let k = (0..list.len()).max_by_key(|&k| list[k].sm.last_work)?;
        self.queued.fetch_sub(1, Ordering::Relaxed);
        Some(list.swap_remove(k))
    }

    fn back(&self) -> MutexGuard<'_, Vec<Job<'s>>> {
        lock(&self.back)
    }
}

impl<'s, 'd> Crew<'s, 'd> {
    fn read_dev(&self) -> DevRead<'s, 'd> {
        self.dev.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write_dev(&self) -> RwLockWriteGuard<'_, &'d mut DeviceMemory> {
        self.dev.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// What every SM of a round reads.
    fn shared<'a>(&'a self, dev: &'a DeviceMemory, blocks_left: bool) -> Shared<'a> {
        let inp = self.inp;
        let cfg = inp.cfg;
        Shared {
            inp,
            fixed: Fixed {
                dev,
                textures: self.textures,
                params: inp.params,
                local_bytes: inp.prog.local_bytes,
                ntid: inp.block,
                nctaid: inp.grid,
                nsm: cfg.sm.count,
                max_warps: cfg.sm.max_warps,
                clock_mhz: cfg.clock_mhz,
                dyn_smem: inp.dyn_smem,
            },
            deps: self.deps,
            lat: self.lat,
            interval: self.interval,
            blocks_left,
        }
    }

    /// Runs one SM's round and hands it back. `dev` is this thread's read of device memory,
    /// taken if it holds none and kept while more SMs wait to be run, so that a thread running
    /// SMs back to back takes the lock once rather than once an SM: the lock's word is written
    /// by every reader, and every thread would otherwise write it twice an SM. Never inlined:
    /// `scripts/speed-ab --sim` on several threads collects the SMs' rounds by its name.
    #[inline(never)]
    fn run(&self, job: Job<'s>, dev: &mut Option<DevRead<'s, 'd>>) {
        let round = &self.round;
        {
            let dev = dev.get_or_insert_with(|| self.read_dev());
            let sh = self.shared(dev, round.flags.blocks_left.load(Ordering::Relaxed));
            job.sm
                .run_round(&sh, job.side, round.flags.horizon.load(Ordering::Relaxed));
        }
        round.back().push(job);
        // Let go before this SM counts as back when none waits: the coordinator writes device
        // memory once every SM is back, and should not wait for this thread.
        if round.queued.load(Ordering::Acquire) == 0 {
            *dev = None;
        }
        round.out.fetch_sub(1, Ordering::Release);
    }

    /// Lets the threads help with `answering` until [`Crew::close`].
    fn open(&self, answering: &Arc<Answering>) {
        *lock(&self.round.answering) = Some(Arc::clone(answering));
        self.round.flags.openings.fetch_add(1, Ordering::Release);
    }

    fn close(&self) {
        self.round.flags.openings.fetch_add(1, Ordering::Release);
        *lock(&self.round.answering) = None;
    }

    /// Answers what this thread can of the memory partitions' answering in progress; whether
    /// it answered any. `taken` is this thread's copy of the answering and the opening it
    /// belongs to. A copy of an answering closed since only finds nothing left to answer.
    fn help(&self, taken: &mut Option<(u64, Arc<Answering>)>) -> bool {
        let round = &self.round;
        let opening = round.flags.openings.load(Ordering::Acquire);
        if opening.is_multiple_of(2) {
            *taken = None;
            return false;
        }
        if taken.as_ref().is_none_or(|(o, _)| *o != opening) {
            *taken = lock(&round.answering).clone().map(|a| (opening, a));
        }
        taken.as_ref().is_some_and(|(_, a)| a.help())
    }

    /// Runs ready SMs until `done` holds or the launch stops, accounting for the time in
    /// `account`. Waits by spinning, then yielding: between rounds the wait lasts only while
    /// the coordinator applies writes and starts answering (microseconds), and a thread put to
    /// sleep took longer to wake than that.
    fn work_until(&self, done: impl Fn() -> bool, account: &mut Account) {
        let round = &self.round;
        let mut idle = 0u32;
        let mut taken = None;
        let mut dev = None;
        // When this turn of the loop began: where the last piece of work ended, when one did,
        // so that pieces back to back read the clock once each.
        let mut since = account.last();
        loop {
            if self.help(&mut taken) {
                since = account.worked(since, Part::Answering);
                idle = 0;
                continue;
            }
            if round.queued.load(Ordering::Acquire) > 0
                && let Some(job) = round.take()
            {
                idle = 0;
                self.run(job, &mut dev);
                since = account.worked(since, Part::SmRounds);
                continue;
            }
            dev = None;
            if done() || round.flags.stop.load(Ordering::Acquire) {
                account.stretch(Part::Waiting);
                return;
            }
            if idle < 64 {
                idle += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
            since = Instant::now();
        }
    }

    /// A helper: runs SMs of every round until the launch stops. A panic in a round stops the
    /// launch, so that the coordinator does not wait for an SM that will not come back.
    fn serve(&self) {
        struct Fail<'r, 's>(&'r Round<'s>);
        impl Drop for Fail<'_, '_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    self.0.flags.stop.store(true, Ordering::Release);
                }
            }
        }
        let _fail = Fail(&self.round);
        let mut account = Account::start();
        self.work_until(|| false, &mut account);
        lock(&self.accounts).push(account.seconds());
    }
}

/// Applies, in global order, every SM's pending global writes that come before `bound`; an
/// atomic's old value goes to its warp's register.
fn apply_writes_before(bound: Key, sms: &mut [Option<&mut Sm>], dev: &mut DeviceMemory) {
    let heads = sms
        .iter()
        .flatten()
        .filter_map(|s| s.writes.front().map(|w| (w.now, s.id, w.seq)))
        .collect();
    in_global_order(heads, bound, |i| {
        let sm = sms.get_mut(i)?.as_deref_mut()?;
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
fn last_issue<'a>(mut sms: impl Iterator<Item = &'a Sm>) -> ([u32; 3], u32, u32, u32) {
    sms.find_map(|s| s.last_issue).unwrap_or_default()
}

/// Reports progress and enforces the deadline (every [`WATCH_INTERVAL`] warp instructions).
fn look_out<'a>(
    inp: &LaunchInput,
    sms: impl Iterator<Item = &'a Sm>,
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

fn output(sms: &mut [Sm], atomics_done: u64, threads: Vec<trace::ThreadSeconds>) -> LaunchOutput {
    let sm_cycles: Vec<u64> = sms.iter().map(|s| s.cycle).collect();
    let mut class_counts = [0u64; NCLASS];
    let mut stalls = [0u64; 6];
    let (mut warp_instructions, mut thread_instructions, mut flops) = (0, 0, 0);
    let (mut warp_cycles, mut active_cycles) = (0, 0);
    for s in sms.iter_mut() {
        warp_cycles += s.counts.residency.warp_cycles;
        active_cycles += s.counts.residency.active_cycles();
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
    let loads = loads::in_warp_order(
        sms.iter_mut()
            .map(|s| std::mem::take(&mut s.loads.events))
            .collect(),
    );
    LaunchOutput {
        loads,
        threads,
        cycles: sm_cycles
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
            .max(atomics_done),
        sm_cycles,
        warp_instructions,
        thread_instructions,
        by_class,
        stalls,
        warp_cycles,
        active_cycles,
    }
}
