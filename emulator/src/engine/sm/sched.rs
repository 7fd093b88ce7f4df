//! The warp schedulers' choice: which warp issues, or when one can and why not before.

use super::{NONE, Sm, Stall, TWarp, WState};
use crate::ir::Class;

/// What the warp schedulers scan, per warp slot and apart from the warp's other state, so a
/// scan walks one small array: the cycle from which the warp can issue as far as it alone
/// decides (`max(wake, next_ok)`; `u64::MAX` when not running) and its next instruction's
/// class (for the pipe). Kept in step with the warp by [`Hot::of`] after every change.
#[derive(Debug, Clone, Copy)]
pub(super) struct Hot {
    pub(super) ready: u64,
    pub(super) class: Class,
}

impl Hot {
    pub(super) fn of(w: &TWarp) -> Hot {
        Hot {
            ready: if w.state == WState::Run {
                w.wake.max(w.next_ok)
            } else {
                u64::MAX
            },
            class: w.class,
        }
    }
}

/// [`Hot`] per warp slot, stored by scheduler (slot `ws` is the `ws / n`-th of scheduler
/// `ws % n`), so that a scheduler's scan walks one contiguous array; `at[ws]` is that place,
/// looked up rather than divided for. `by_age[s]` lists scheduler `s`'s warps oldest first,
/// so that a scan for the oldest ready warp stops at the first it finds.
pub(super) struct HotTable {
    per: Vec<Vec<Hot>>,
    at: Vec<(u32, u32)>,
    by_age: Vec<Vec<u32>>,
}

impl HotTable {
    pub(super) fn new(nsched: usize) -> HotTable {
        HotTable {
            per: vec![Vec::new(); nsched.max(1)],
            at: Vec::new(),
            by_age: vec![Vec::new(); nsched.max(1)],
        }
    }

    /// Slot `ws` (already set) now holds the youngest warp: last in its scheduler's age order.
    pub(super) fn youngest(&mut self, ws: usize) {
        let (s, k) = self.at[ws];
        let order = &mut self.by_age[s as usize];
        if let Some(i) = order.iter().position(|&j| j == k) {
            order.remove(i);
        }
        order.push(k);
    }

    /// Scheduler `s`'s warps (their indices among its own), oldest first.
    pub(super) fn by_age(&self, s: usize) -> &[u32] {
        &self.by_age[s]
    }

    /// Sets slot `ws`, which is at most one past the last slot set.
    #[inline]
    pub(super) fn set(&mut self, ws: usize, h: Hot) {
        match self.at.get(ws) {
            Some(&(s, k)) => self.set_in(s as usize, k as usize, h),
            None => self.push(ws, h),
        }
    }

    /// Sets scheduler `s`'s `k`-th warp, for a caller that knows where it is.
    #[inline]
    pub(super) fn set_in(&mut self, s: usize, k: usize, h: Hot) {
        self.per[s][k] = h;
    }

    #[cold]
    fn push(&mut self, ws: usize, h: Hot) {
        debug_assert_eq!(ws, self.at.len(), "warp slots are added one at a time");
        let n = self.per.len();
        self.at.push(((ws % n) as u32, (ws / n) as u32));
        self.per[ws % n].push(h);
    }

    pub(super) fn of_scheduler(&self, s: usize) -> &[Hot] {
        &self.per[s]
    }
}

impl Sm {
    /// Whether scheduler `s`'s `k`-th warp can issue at `now`.
    pub(super) fn eligible(&self, s: usize, k: usize, now: u64) -> bool {
        self.hot
            .of_scheduler(s)
            .get(k)
            .is_some_and(|h| h.ready <= now && self.pipe[s][h.class as usize] <= now)
    }

    /// The warp scheduler `s` issues at `now` (greedy-then-oldest; its `k`-th warp, slot
    /// `k * n + s`), or, when none can, the earliest cycle one of its warps can and the reason
    /// it cannot before (the limiting one of scoreboard/memory/fence, pipe and issue slot;
    /// `Barrier` or `Idle` with `u64::MAX` when no warp can become ready by itself). One pass
    /// over the warps serves both, since a cycle without issue would otherwise scan them twice.
    pub(super) fn pick(&self, s: usize, now: u64) -> Result<usize, (u64, Stall, u32)> {
        let nsched = self.pipe.len();
        if let Some(k) = self.last[s]
            && self.eligible(s, k as usize, now)
        {
            return Ok(k as usize);
        }
        // Oldest first, the first warp that can issue is the answer; else the first in slot
        // order of those that can soonest. A warp not running has `ready` = u64::MAX, which
        // neither test takes. The pass keeps only the soonest cycle, a branch-free minimum, and
        // a second pass finds its warp: a minimum with the tie-break in the loop branches on
        // every warp unpredictably (one thread, wall time: 3-9 % slower on every workload).
        let pipes = &self.pipe[s];
        let hot = self.hot.of_scheduler(s);
        let when = |h: &Hot| h.ready.max(pipes[h.class as usize]);
        let mut best_t = u64::MAX;
        for &k in self.hot.by_age(s) {
            let k = k as usize;
            let t = when(&hot[k]);
            if t <= now {
                return Ok(k);
            }
            best_t = best_t.min(t);
        }
        if best_t == u64::MAX {
            let at_bar = (s..self.warps.len())
                .step_by(nsched)
                .any(|ws| self.warps[ws].state == WState::Bar);
            let r = if at_bar { Stall::Barrier } else { Stall::Idle };
            return Err((u64::MAX, r, NONE));
        }
        let (soonest, oldest) = first_at(hot, self.hot.by_age(s), when, best_t);
        let w = &self.warps[soonest * nsched + s];
        let pipe = pipes[hot[soonest].class as usize];
        let reason = if w.wake >= w.next_ok && w.wake >= pipe {
            w.reason
        } else if pipe >= w.next_ok {
            Stall::PipeBusy
        } else {
            Stall::Scoreboard
        };
        // The warp that issues at `best_t` if nothing changes before: the greedy one, else the
        // oldest of those that can then.
        let then = match self.last[s] {
            Some(k) if when(&hot[k as usize]) == best_t => k,
            _ => oldest.unwrap_or(NONE),
        };
        Err((best_t, reason, then))
    }
}

/// Among the warps whose `when` is `t`: the first in slot order (its index among `hot`, 0 when
/// none) and the first in age order (`by_age` lists the indices oldest first).
///
/// From masks filled in one pass of fixed length, where there are at most 64 warps: two
/// searches that stopped at the first found each ended at a different place from one scan to
/// the next, and their exits mispredicted (one thread, demo runs: 1-3 % faster).
fn first_at(
    hot: &[Hot],
    by_age: &[u32],
    when: impl Fn(&Hot) -> u64,
    t: u64,
) -> (usize, Option<u32>) {
    if hot.len() > 64 {
        return first_at_by_search(hot, by_age, when, t);
    }
    let (mut by_slot, mut in_age) = (0u64, 0u64);
    for (i, &k) in by_age.iter().enumerate() {
        let at = hot.get(k as usize).map_or(0, |h| u64::from(when(h) == t));
        by_slot |= at << k;
        in_age |= at << i;
    }
    let soonest = if by_slot == 0 {
        0
    } else {
        by_slot.trailing_zeros() as usize
    };
    (
        soonest,
        by_age.get(in_age.trailing_zeros() as usize).copied(),
    )
}

/// [`first_at`] by two searches.
fn first_at_by_search(
    hot: &[Hot],
    by_age: &[u32],
    when: impl Fn(&Hot) -> u64,
    t: u64,
) -> (usize, Option<u32>) {
    let soonest = hot.iter().position(|h| when(h) == t).unwrap_or(0);
    let oldest = by_age
        .iter()
        .copied()
        .find(|&k| hot.get(k as usize).is_some_and(|h| when(h) == t));
    (soonest, oldest)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The masks find the warps the searches find, for any cycles (few distinct ones, so
        /// that several warps share the soonest) and any age order.
        #[test]
        fn the_masks_find_what_the_searches_find(
            cycles in proptest::collection::vec(0u64..4, 1..=64),
            seed in proptest::num::u64::ANY,
            t in 0u64..4,
        ) {
            let hot: Vec<Hot> = cycles
                .iter()
                .map(|&ready| Hot { ready, class: Class::Int })
                .collect();
            // An age order: the slots shuffled by the seed.
            let mut by_age: Vec<u32> = (0..hot.len() as u32).collect();
            let mut x = seed;
            for i in (1..by_age.len()).rev() {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                by_age.swap(i, (x >> 33) as usize % (i + 1));
            }
            let when = |h: &Hot| h.ready;
            proptest::prop_assert_eq!(
                first_at(&hot, &by_age, when, t),
                first_at_by_search(&hot, &by_age, when, t)
            );
        }
    }
}
