//! The register scoreboard: when a warp's next instruction can issue as far as its own
//! registers and fences decide. Its entries are slots (slots.rs): registers whose writes never
//! wait on each other share one, and every register an instruction names is read through its
//! slot.

use super::pipe::{self, Pipe};
use super::{Stall, TWarp, WState};
use crate::config::GpuConfig;
use crate::ir::{Class, FENCE_GPU, FENCE_SC_CTA, FENCE_SYS, Op, Program};
use crate::memory::is_token;

/// Scoreboard registers an instruction's [`Step`] holds.
const SHORT: usize = 4;

/// What the timing model reads of one instruction at every issue, in one record of 32 bytes
/// (two to a host cache line), where these facts were spread over the 200-byte instruction and
/// four tables of their own. Why: an SM issues a few instructions per warp in a round and
/// every other SM's round evicts them from the host's caches, so every line an issue reads
/// tends to miss; before this record, the scoreboard's `refresh` missed 2.9 times per warp
/// instruction on the demo's runs.
#[derive(Debug, Clone, Copy)]
#[repr(align(32))]
pub(in crate::engine) struct Step {
    /// Its scoreboard registers, reads then writes (the order decides which register names
    /// the stall reason on a tie), padded with [`Deps::pad`], when there are at most `SHORT`
    /// (`long()` is false); else [`Deps`]' flat list holds them. Why: a loop over each
    /// instruction's own count ends at a different trip every issue, and its mispredicted
    /// exit, with the mispredicted comparison inside, cost more than four fixed, branch-free
    /// steps (one thread, demo runs: 9 % and 4 % faster).
    short: [u32; SHORT],
    /// The least cycles a fence takes from reaching the head of its warp to retiring
    /// (`sm.gpu_fence_cycles` / `sm.sys_fence_cycles` for the wider scopes), else 0.
    fence_cycles: u32,
    /// Its source line.
    pub(in crate::engine) line: u32,
    pub(in crate::engine) op: Op,
    pub(in crate::engine) class: Class,
    /// The unit it issues to, and the issue slots it takes from its scheduler.
    pub(in crate::engine) pipe: Pipe,
    pub(in crate::engine) slots: u8,
    /// How many of its scoreboard registers it reads, and how many after those it writes.
    reads: u8,
    writes: u8,
    /// What it waits for besides its own registers (a fence, a call); `Drain::All` for any
    /// other instruction, where a fence's wait does not apply.
    drain: Drain,
    /// Floating-point operations per active lane (2 for an FMA; 1 for an add, subtract,
    /// multiply or divide; else 0): a table rather than a match at every issue, whose branches
    /// on the operation mispredicted.
    flops: u8,
}

/// What a fence waits for before it retires, or a call before it issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Drain {
    /// Every memory operation of its warp.
    All,
    /// Its warp's stores and atomics but not its loads (a `membar.cta` on a preset whose
    /// `sm.cta_sc_fence_waits_for_loads` is false).
    Writes,
    /// Every memory operation, and then [`Deps`]' `wide_drain` cycles (a GPU- or system-scope
    /// fence).
    Wide,
    /// Every register write its warp has pending: a 64-bit division, which ptxas makes a call
    /// that waits on every dependency barrier (`pipeline.int_division.call_waits_for_scoreboard`).
    Registers,
}

impl Step {
    /// Whether [`Deps`]' flat list holds its scoreboard registers (more than `SHORT`), not
    /// `short`. Derived, not stored, to keep the record at 32 bytes.
    #[inline]
    fn long(&self) -> bool {
        usize::from(self.reads) + usize::from(self.writes) > SHORT
    }
}

/// Every instruction's [`Step`], built once per launch, and the scoreboard registers of those
/// with more than `SHORT`, flattened so that `refresh` walks a slice instead of filtering
/// operand enums.
pub(in crate::engine) struct Deps {
    steps: Vec<Step>,
    start: Vec<u32>,
    regs: Vec<u32>,
    /// `sm.wide_fence_drain_cycles`.
    wide_drain: u64,
}

impl Deps {
    pub(in crate::engine) fn new(prog: &Program, cfg: &GpuConfig) -> Deps {
        let pad = Deps::pad(prog);
        let skip_loads = !cfg.sm.cta_sc_fence_waits_for_loads;
        let calls_wait = cfg
            .pipeline
            .int_division
            .is_some_and(|d| d.call_waits_for_scoreboard);
        let mut start = Vec::with_capacity(prog.insts.len() + 1);
        let mut regs = Vec::new();
        let mut steps = Vec::with_capacity(prog.insts.len());
        let slot = |r: u32| prog.slot_of[r as usize];
        for x in &prog.insts {
            let (pipe, slots) = pipe::of(x, &cfg.pipeline);
            start.push(regs.len() as u32);
            let first = regs.len();
            regs.extend(x.reads().map(slot));
            let reads = regs.len() - first;
            regs.extend(x.writes().map(slot));
            let writes = regs.len() - first - reads;
            let own = &regs[first..];
            let mut short = [pad; SHORT];
            if own.len() <= SHORT {
                short[..own.len()].copy_from_slice(own);
            }
            steps.push(Step {
                short,
                fence_cycles: match (x.op, x.sub) {
                    (Op::Membar, FENCE_GPU) => cfg.sm.gpu_fence_cycles,
                    (Op::Membar, FENCE_SYS) => cfg.sm.sys_fence_cycles,
                    _ => 0,
                },
                line: x.line,
                op: x.op,
                class: x.class,
                pipe,
                slots,
                // At most four sources, an address and a guard; at most four destinations.
                reads: reads as u8,
                writes: writes as u8,
                drain: match (x.op, x.sub) {
                    (Op::Membar, FENCE_SC_CTA) if skip_loads => Drain::Writes,
                    (Op::Membar, FENCE_GPU | FENCE_SYS) => Drain::Wide,
                    _ if calls_wait && x.is_division_call() => Drain::Registers,
                    _ => Drain::All,
                },
                flops: match (x.class, x.op) {
                    (Class::Fp32 | Class::Fp64, Op::Fma) => 2,
                    (Class::Fp32 | Class::Fp64, Op::Add | Op::Sub | Op::Mul | Op::Div) => 1,
                    _ => 0,
                },
            });
        }
        start.push(regs.len() as u32);
        Deps {
            steps,
            start,
            regs,
            wide_drain: u64::from(cfg.sm.wide_fence_drain_cycles.unwrap_or(0)),
        }
    }

    /// The slot that pads short entries: one past the program's own, never written, so its
    /// ready cycle stays 0 and it never decides a stall. A warp's scoreboard holds it.
    pub(in crate::engine) fn pad(prog: &Program) -> u32 {
        prog.slots
    }

    /// The instruction at `pc` as the timing model sees it (`None` past the end).
    #[inline]
    pub(in crate::engine) fn step(&self, pc: u32) -> Option<&Step> {
        self.steps.get(pc as usize)
    }

    /// Whether the instruction at `pc` is a call, which holds its warp until it returns: a
    /// 64-bit division where `pipeline.int_division.call_waits_for_scoreboard` is set.
    #[inline]
    pub(in crate::engine) fn is_call(&self, pc: u32) -> bool {
        self.step(pc).is_some_and(|s| s.drain == Drain::Registers)
    }

    /// Floating-point operations per active lane of the instruction at `pc`.
    #[inline]
    pub(in crate::engine) fn flops_per_lane(&self, pc: u32) -> u64 {
        self.step(pc).map_or(0, |s| u64::from(s.flops))
    }

    /// The registers the instruction at `pc` writes.
    #[inline]
    pub(in crate::engine) fn writes(&self, pc: u32) -> &[u32] {
        let Some(step) = self.step(pc) else {
            return &[];
        };
        let own = if step.long() {
            self.of(pc)
        } else {
            &step.short[..]
        };
        let (a, n) = (step.reads as usize, step.writes as usize);
        own.get(a..a + n).unwrap_or(&[])
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

/// Recomputes when a warp's next instruction can issue (scoreboard and fences). With a token
/// among the inputs the result is a token too, and the reason a placeholder: the warp cannot
/// issue in this round either way, and `take_in` recomputes both once the values are known.
pub(super) fn refresh(w: &mut TWarp, deps: &Deps) {
    let Some(pc) = w.arch.pc() else {
        w.state = WState::Done;
        return;
    };
    let Some(step) = deps.step(pc) else {
        w.state = WState::Done;
        return;
    };
    let (mut t, mem) = if step.long() {
        latest(deps.of(pc).iter().copied(), &w.ready, &w.from_mem)
    } else {
        latest_short(&step.short, &w.ready, &w.from_mem)
    };
    let mut reason = if mem {
        Stall::Memory
    } else {
        Stall::Scoreboard
    };
    if w.gate > t {
        t = w.gate;
        reason = Stall::Memory;
    }
    if w.call_until > t {
        // The routine's instructions, which the sequence issues, come first.
        t = w.call_until;
        reason = Stall::Scoreboard;
    }
    if step.drain == Drain::Registers {
        // Every slot, the pad's (never later than 0) included.
        let (all, mem) = latest(0..w.ready.len() as u32, &w.ready, &w.from_mem);
        if all > t {
            t = all;
            reason = if mem {
                Stall::Memory
            } else {
                Stall::Scoreboard
            };
        }
    }
    if step.op == Op::Membar {
        let mut drained = if step.drain == Drain::Writes {
            w.outstanding_writes
        } else {
            w.outstanding
        };
        // A wide fence's own work after the wait (0: nothing outstanding yet). A token stays
        // as it is: `take_in` refreshes the warp once its value is known.
        if step.drain == Drain::Wide && drained > 0 && !is_token(drained) {
            drained += deps.wide_drain;
        }
        // The fence reached the head of the warp when its predecessor let the next instruction
        // issue (`next_ok`); its own cost runs from there, beside the wait for what it orders.
        let waits_for = if step.fence_cycles > 0 {
            drained.max(w.next_ok + u64::from(step.fence_cycles))
        } else {
            drained
        };
        if waits_for > t {
            t = waits_for;
            reason = Stall::Membar;
        }
    }
    w.wake = t;
    w.reason = reason;
    w.pipe = step.pipe;
}

/// The latest ready cycle among `regs` (0 for none) and whether the first register that has
/// it waits for memory: that register names the stall.
fn latest(regs: impl IntoIterator<Item = u32>, ready: &[u64], from_mem: &[bool]) -> (u64, bool) {
    let (mut t, mut mem) = (0, false);
    for r in regs {
        let rt = ready[r as usize];
        if rt > t {
            t = rt;
            mem = from_mem[r as usize];
        }
    }
    (t, mem)
}

/// [`latest`] of a padded short entry, in fixed steps without a branch.
#[inline]
fn latest_short(regs: &[u32; SHORT], ready: &[u64], from_mem: &[bool]) -> (u64, bool) {
    let (mut t, mut mem) = (0, false);
    for &r in regs {
        let rt = ready[r as usize];
        mem = std::hint::select_unpredictable(rt > t, from_mem[r as usize], mem);
        t = t.max(rt);
    }
    (t, mem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_is_two_to_a_cache_line() {
        assert_eq!(std::mem::size_of::<Step>(), 32);
    }

    proptest::proptest! {
        /// Padded with a register that is never ready later than 0, a short entry names the
        /// same cycle and register as the loop over the instruction's own registers, ties
        /// included (few distinct cycles make them common).
        #[test]
        fn a_padded_short_entry_names_what_the_loop_names(
            cycles in proptest::collection::vec((0u64..4, proptest::bool::ANY), 8),
            regs in proptest::collection::vec(0u32..8, 0..=SHORT),
        ) {
            let pad = 8;
            let mut ready: Vec<u64> = cycles.iter().map(|&(c, _)| c).collect();
            let mut from_mem: Vec<bool> = cycles.iter().map(|&(_, m)| m).collect();
            ready.push(0);
            from_mem.push(true);
            let mut short = [pad; SHORT];
            short[..regs.len()].copy_from_slice(&regs);
            proptest::prop_assert_eq!(
                latest_short(&short, &ready, &from_mem),
                latest(regs.iter().copied(), &ready, &from_mem)
            );
        }
    }
}
