//! The register scoreboard: when a warp's next instruction can issue as far as its own
//! registers and fences decide.

use super::{Stall, TWarp, WState};
use crate::config::GpuConfig;
use crate::ir::{FENCE_SC_CTA, Op, Program};

/// Every instruction's scoreboard registers (reads, then writes — the order decides which
/// register names the stall reason on a tie), flattened once per launch so that the per-issue
/// `refresh` walks a slice instead of filtering operand enums.
pub(in crate::engine) struct Deps {
    start: Vec<u32>,
    regs: Vec<u32>,
    /// Per pc: a fence that waits for the warp's stores and atomics but not its loads (a
    /// `membar.cta` on a preset whose `sm.cta_sc_fence_waits_for_loads` is false).
    writes_only: Vec<bool>,
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
        let skip_loads = !cfg.sm.cta_sc_fence_waits_for_loads;
        let writes_only = prog
            .insts
            .iter()
            .map(|x| skip_loads && x.op == Op::Membar && x.sub == FENCE_SC_CTA)
            .collect();
        Deps {
            start,
            regs,
            writes_only,
        }
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
    if x.op == Op::Membar {
        let waits_for = if deps.writes_only.get(pc as usize) == Some(&true) {
            w.outstanding_writes
        } else {
            w.outstanding
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
