//! The register scoreboard: when a warp's next instruction can issue as far as its own
//! registers and fences decide.

use super::{Stall, TWarp, WState};
use crate::config::GpuConfig;
use crate::ir::{Class, FENCE_GPU, FENCE_SC_CTA, FENCE_SYS, Op, Program};

/// Scoreboard registers an instruction's entry in [`Deps::short`] holds.
const SHORT: usize = 4;

/// Every instruction's scoreboard registers (reads, then writes — the order decides which
/// register names the stall reason on a tie), flattened once per launch so that the per-issue
/// `refresh` walks a slice instead of filtering operand enums; and the other per-instruction
/// fact an issue reads, its floating-point operations.
pub(in crate::engine) struct Deps {
    start: Vec<u32>,
    regs: Vec<u32>,
    /// Per pc, an instruction with at most `SHORT` registers: them, padded with
    /// [`Deps::pad`]; `None` for a longer one, which `regs` holds. Why: a loop over each
    /// instruction's own count ends at a different trip every issue, and its mispredicted exit,
    /// with the mispredicted comparison inside, cost more than four fixed, branch-free steps
    /// (one thread, demo runs: 9 % and 4 % faster).
    short: Vec<Option<[u32; SHORT]>>,
    /// Per pc: a fence that waits for the warp's stores and atomics but not its loads (a
    /// `membar.cta` on a preset whose `sm.cta_sc_fence_waits_for_loads` is false).
    writes_only: Vec<bool>,
    /// Per pc: the least cycles a fence takes from reaching the head of its warp to retiring
    /// (`sm.gpu_fence_cycles` / `sm.sys_fence_cycles` for the wider scopes), else 0.
    fence_cycles: Vec<u32>,
    /// Per pc: floating-point operations per active lane (2 for an FMA; 1 for an add,
    /// subtract, multiply or divide; else 0). A table rather than a match at every issue,
    /// whose branches on the operation mispredicted.
    flops: Vec<u8>,
}

impl Deps {
    pub(in crate::engine) fn new(prog: &Program, cfg: &GpuConfig) -> Deps {
        let mut start = Vec::with_capacity(prog.insts.len() + 1);
        let mut regs = Vec::new();
        for x in &prog.insts {
            start.push(regs.len() as u32);
            regs.extend(x.reads().chain(x.writes()));
        }
        start.push(regs.len() as u32);
        let pad = Deps::pad(prog);
        let short = start
            .windows(2)
            .map(|w| {
                let own = &regs[w[0] as usize..w[1] as usize];
                let mut short = [pad; SHORT];
                short.get_mut(..own.len())?.copy_from_slice(own);
                Some(short)
            })
            .collect();
        let skip_loads = !cfg.sm.cta_sc_fence_waits_for_loads;
        let writes_only = prog
            .insts
            .iter()
            .map(|x| skip_loads && x.op == Op::Membar && x.sub == FENCE_SC_CTA)
            .collect();
        let fence_cycles = prog
            .insts
            .iter()
            .map(|x| match (x.op, x.sub) {
                (Op::Membar, FENCE_GPU) => cfg.sm.gpu_fence_cycles,
                (Op::Membar, FENCE_SYS) => cfg.sm.sys_fence_cycles,
                _ => 0,
            })
            .collect();
        let flops = prog
            .insts
            .iter()
            .map(|x| match (x.class, x.op) {
                (Class::Fp32 | Class::Fp64, Op::Fma) => 2,
                (Class::Fp32 | Class::Fp64, Op::Add | Op::Sub | Op::Mul | Op::Div) => 1,
                _ => 0,
            })
            .collect();
        Deps {
            start,
            regs,
            short,
            writes_only,
            fence_cycles,
            flops,
        }
    }

    /// The register that pads short entries: one past the program's own, never written, so
    /// its ready cycle stays 0 and it never decides a stall. A warp's scoreboard holds it.
    pub(in crate::engine) fn pad(prog: &Program) -> u32 {
        prog.nregs
    }

    /// Floating-point operations per active lane of the instruction at `pc`.
    #[inline]
    pub(in crate::engine) fn flops_per_lane(&self, pc: u32) -> u64 {
        self.flops.get(pc as usize).map_or(0, |&f| u64::from(f))
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
pub(super) fn refresh(w: &mut TWarp, prog: &Program, deps: &Deps) {
    let Some(pc) = w.arch.pc() else {
        w.state = WState::Done;
        return;
    };
    let x = &prog.insts[pc as usize];
    let (mut t, mem) = match deps.short.get(pc as usize) {
        Some(Some(regs)) => latest_short(regs, &w.ready, &w.from_mem),
        _ => latest(deps.of(pc), &w.ready, &w.from_mem),
    };
    let mut reason = if mem {
        Stall::Memory
    } else {
        Stall::Scoreboard
    };
    if x.op == Op::Membar {
        let drained = if deps.writes_only.get(pc as usize) == Some(&true) {
            w.outstanding_writes
        } else {
            w.outstanding
        };
        // The fence reached the head of the warp when its predecessor let the next instruction
        // issue (`next_ok`); its own cost runs from there, beside the wait for what it orders.
        let waits_for = match deps.fence_cycles.get(pc as usize) {
            Some(&own) if own > 0 => drained.max(w.next_ok + u64::from(own)),
            _ => drained,
        };
        if waits_for > t {
            t = waits_for;
            reason = Stall::Membar;
        }
    }
    w.wake = t;
    w.reason = reason;
    w.class = x.class;
}

/// The latest ready cycle among `regs` (0 for none) and whether the first register that has
/// it waits for memory: that register names the stall.
fn latest(regs: &[u32], ready: &[u64], from_mem: &[bool]) -> (u64, bool) {
    let (mut t, mut mem) = (0, false);
    for &r in regs {
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
                latest(&regs, &ready, &from_mem)
            );
        }
    }
}
