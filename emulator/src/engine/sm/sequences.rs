//! The instructions of sequences a scheduler issues as one warp instruction (an integer
//! division), after the first. ptxas' sequence is a chain whose own dependencies leave gaps,
//! and a GPU issues other warps' instructions in them. The model releases the sequence's
//! instructions one by one, evenly spaced over its latency, each a spacing after the one
//! before issued; a released one takes a cycle in which no warp of its scheduler issues, or
//! any cycle once it has waited a spacing, so that neither starves the other. The scheduler
//! then idles only when nothing at all is ready, as silicon's does where issue is the limit,
//! and the sequence's result is ready when its last instruction has issued and the rest of
//! its latency passed. Even spacing is the model's choice: where in the chain silicon's gaps
//! fall is not measured.

use crate::config::InstructionSequence;

/// A ready cycle no real cycle reaches and no token has: the result of a sequence whose
/// instructions have not all issued.
pub(super) const PENDING: u64 = crate::memory::TOKEN - 1;

/// One sequence with instructions left to issue.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sequence {
    /// The warp slot that issued it and the instruction's pc (whose written registers wait).
    pub(super) ws: u32,
    pub(super) pc: u32,
    /// When its next instruction can issue, and how many are left.
    release: u64,
    left: u32,
    gap: u64,
    /// The earliest its result can be ready (its latency after its issue), and the cycles
    /// from its last instruction to the result.
    floor: u64,
    tail: u64,
}

/// A scheduler's unfinished sequences, in the order they were issued.
#[derive(Debug, Default)]
pub(super) struct Sequences {
    open: Vec<Sequence>,
}

impl Sequences {
    /// Starts the sequence `q` whose first instruction warp slot `ws` issued at `now`; the
    /// cycle its result is ready, or [`PENDING`] while its other instructions have to issue.
    pub(super) fn start(&mut self, ws: u32, pc: u32, now: u64, q: InstructionSequence) -> u64 {
        let n = u64::from(q.instructions.max(1));
        let latency = u64::from(q.latency_cycles).max(n);
        if n == 1 {
            return now + latency;
        }
        let gap = (latency / n).max(1);
        self.open.push(Sequence {
            ws,
            pc,
            release: now + gap,
            left: (n - 1) as u32,
            gap,
            floor: now + latency,
            tail: latency - (n - 1) * gap,
        });
        PENDING
    }

    /// The sequence whose instruction may issue at `now`, if one is released: the one released
    /// first (the oldest on a tie), and whether it has waited a spacing past its release, which
    /// lets it take the cycle from a warp that can issue.
    #[inline]
    pub(super) fn due(&self, now: u64) -> Option<(usize, bool)> {
        let (i, s) = self
            .open
            .iter()
            .enumerate()
            .min_by_key(|(i, s)| (s.release, *i))?;
        let waited = now.checked_sub(s.release)?;
        Some((i, waited >= s.gap))
    }

    /// Whether any sequence is open (the common case is none).
    #[inline]
    pub(super) fn any(&self) -> bool {
        !self.open.is_empty()
    }

    /// The earliest cycle one of the instructions is released (`u64::MAX`: none open).
    pub(super) fn next_release(&self) -> u64 {
        self.open
            .iter()
            .map(|s| s.release)
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Issues sequence `i`'s next instruction at `now`; when that was its last, the sequence,
    /// with the cycle its result is ready.
    pub(super) fn issue(&mut self, i: usize, now: u64) -> Option<(Sequence, u64)> {
        let s = &mut self.open[i];
        s.left -= 1;
        if s.left > 0 {
            s.release = now + s.gap;
            return None;
        }
        let s = self.open.remove(i);
        Some((s, s.floor.max(now + s.tail)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(instructions: u32, latency_cycles: u32) -> InstructionSequence {
        InstructionSequence {
            instructions,
            latency_cycles,
        }
    }

    /// Runs the scheduler's cycles from `from`, with a warp ready to issue in the cycles
    /// `busy` names; the cycles the sequences' instructions took and their results.
    fn run(q: &mut Sequences, from: u64, busy: impl Fn(u64) -> bool) -> (Vec<u64>, Vec<u64>) {
        let (mut took, mut done) = (Vec::new(), Vec::new());
        let mut now = from;
        while q.any() {
            if let Some((i, waited)) = q.due(now)
                && (waited || !busy(now))
            {
                took.push(now);
                done.extend(q.issue(i, now).map(|(_, t)| t));
            }
            now += 1;
        }
        (took, done)
    }

    #[test]
    fn an_unhindered_sequence_spreads_its_instructions_over_its_latency() {
        let mut q = Sequences::default();
        assert_eq!(q.start(0, 0, 100, seq(4, 20)), PENDING);
        assert_eq!(
            run(&mut q, 100, |_| false),
            (vec![105, 110, 115], vec![120])
        );
    }

    #[test]
    fn a_busy_scheduler_delays_the_instructions_and_the_result_but_not_without_bound() {
        let mut q = Sequences::default();
        q.start(0, 0, 0, seq(3, 6));
        // Warps issue in every cycle: each instruction waits a spacing (2) past its release.
        assert_eq!(run(&mut q, 0, |_| true), (vec![4, 8], vec![10]));
    }

    #[test]
    fn sequences_released_together_issue_one_a_cycle_oldest_first() {
        let mut q = Sequences::default();
        q.start(0, 0, 0, seq(2, 4));
        q.start(1, 0, 0, seq(2, 4));
        assert_eq!(run(&mut q, 0, |_| false), (vec![2, 3], vec![4, 5]));
    }

    #[test]
    fn one_instruction_is_its_latency_and_keeps_nothing_open() {
        let mut q = Sequences::default();
        assert_eq!(q.start(0, 0, 7, seq(1, 9)), 16);
        assert!(!q.any());
    }
}
