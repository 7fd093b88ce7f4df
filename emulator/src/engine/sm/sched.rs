//! The warp schedulers' choice: which warp issues, or when one can and why not before.

use super::pipe::{NPIPE, Pipe};
use super::{NONE, Sm, Stall, TWarp, WState};
use crate::bits::set_bits;

/// What the warp schedulers scan, per warp slot and apart from the warp's other state, so a
/// scan walks one small array: the cycle from which the warp can issue as far as it alone
/// decides (`max(wake, next_ok)`; `u64::MAX` when not running) and its next instruction's
/// unit (`pipe.rs`). Kept in step with the warp by [`Hot::of`] after every change.
///
/// `aged` is the warp's age key, kept by [`HotTable`] rather than by the warp: its place in
/// its scheduler's age order (0: the oldest) above its index among the scheduler's warps in
/// the low 8 bits. Held here, in what would be padding, so that a pass over the near warps
/// reads one entry per warp rather than the entry and the age order's.
#[derive(Debug, Clone, Copy)]
pub(super) struct Hot {
    pub(super) ready: u64,
    pub(super) pipe: Pipe,
    aged: u32,
}

impl Hot {
    pub(super) fn of(w: &TWarp) -> Hot {
        Hot::new(
            if w.state == WState::Run {
                w.wake.max(w.next_ok)
            } else {
                u64::MAX
            },
            w.pipe,
        )
    }

    /// A warp's entry with the age key unset (the table sets it).
    pub(super) fn new(ready: u64, pipe: Pipe) -> Hot {
        Hot {
            ready,
            pipe,
            aged: u32::MAX,
        }
    }

    /// The cycle from which the warp can issue, given its scheduler's units' busy-until
    /// cycles: its own, or its unit's when that is later.
    #[inline]
    fn when(&self, pipes: &[u64; NPIPE]) -> u64 {
        self.ready.max(pipes[self.pipe.index()])
    }
}

/// Why a scheduler cannot issue now, from [`Sm::pick`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Wait {
    /// The earliest cycle one of its warps can issue (`u64::MAX`: none can by itself).
    pub(super) at: u64,
    /// Why not before: the limiting reason of the first warp in slot order that can at `at`.
    pub(super) reason: Stall,
    /// The warp that issues at `at` if nothing changes before (its index among the
    /// scheduler's warps; `NONE` when none can).
    pub(super) then: u32,
    /// The scheduler's near warps after this answer.
    pub(super) near: Near,
}

/// A scheduler's near warps: a mask of some of its warps (their indices among its own, all
/// below 64) and a cycle, `bound`, before which none of its other warps can issue. While
/// `bound` lies ahead, a pick visits the near warps alone.
///
/// Set by a scan that found no warp ready, to the warps that can issue within `NEAR_SPAN`
/// cycles of the soonest, and true from then on as long as no warp's cycle moves earlier
/// except by its own issue: a near warp's issue changes only itself, a warp outside can issue
/// only from `bound` on, when the mask is no longer used, and every other change of a warp by
/// itself (a pipe's next free cycle, a scoreboard entry) only moves it later. What can move a
/// warp earlier from outside (a resolved memory token, a barrier's release, a new block) drops
/// the mask ([`Near::NONE`]).
///
/// Why: most picks follow an issue and find no warp ready; a scan visits every warp twice,
/// while the near warps are about a third of them on the demo's runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Near {
    pub(super) warps: u64,
    pub(super) bound: u64,
}

impl Near {
    /// Nothing known: every pick scans.
    pub(super) const NONE: Near = Near { warps: 0, bound: 0 };
}

/// How many cycles past the soonest a warp may be able to issue and still count as near. Long
/// enough to hold the warps that take turns while each waits out an arithmetic latency (22
/// cycles on gtx480), short enough to leave out those waiting for memory.
const NEAR_SPAN: u64 = 32;

/// [`Hot`] per warp slot, stored by scheduler (slot `ws` is the `ws / n`-th of scheduler
/// `ws % n`), so that a scheduler's scan walks one contiguous array; `at[ws]` is that place,
/// looked up rather than divided for. `by_age[s]` lists scheduler `s`'s warps oldest first,
/// so that a scan for the oldest ready warp stops at the first it finds; each entry's `aged`
/// says where its warp stands in it.
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
        let per = &mut self.per[s as usize];
        for (i, &j) in order.iter().enumerate() {
            if let Some(h) = per.get_mut(j as usize) {
                h.aged = (i as u32) << 8 | j;
            }
        }
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

    /// Sets scheduler `s`'s `k`-th warp, for a caller that knows where it is; its age key
    /// stays.
    #[inline]
    pub(super) fn set_in(&mut self, s: usize, k: usize, h: Hot) {
        let e = &mut self.per[s][k];
        e.ready = h.ready;
        e.pipe = h.pipe;
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
    /// Whether scheduler `s`'s `k`-th warp can issue at `now`: [`Hot::when`] no later than
    /// `now`, as two comparisons that stop at the first that fails, which on this path, run
    /// before every pick, cost fewer host instructions than the maximum (`scripts/speed-cost`:
    /// 0.3–0.7 % on all three workloads).
    pub(super) fn eligible(&self, s: usize, k: usize, now: u64) -> bool {
        self.hot
            .of_scheduler(s)
            .get(k)
            .is_some_and(|h| h.ready <= now && self.pipe[s][h.pipe.index()] <= now)
    }

    /// The warp scheduler `s` issues at `now` (greedy-then-oldest; its `k`-th warp, slot
    /// `k * n + s`), or, when none can, the earliest cycle one of its warps can and the reason
    /// it cannot before (the limiting one of scoreboard/memory/fence, pipe and issue slot;
    /// `Barrier` or `Idle` with `u64::MAX` when no warp can become ready by itself). From the
    /// greedy warp, else the near warps when they decide it, else a scan of all.
    pub(super) fn pick(&self, s: usize, now: u64) -> Result<usize, Wait> {
        if let Some(k) = self.last[s]
            && self.eligible(s, k as usize, now)
        {
            return Ok(k as usize);
        }
        let near = self.sched_near[s];
        if near.bound > now
            && let Some(answer) = self.pick_near(s, now, near)
        {
            debug_assert_eq!(
                answer.map_err(|w| (w.at, w.reason, w.then)),
                self.scan(s, now).map_err(|w| (w.at, w.reason, w.then)),
                "scheduler {s}'s near warps are stale at cycle {now}"
            );
            return answer;
        }
        self.scan(s, now)
    }

    /// [`Sm::pick`] from the near warps alone, when they decide it: one of them can issue
    /// now, or one can before `near.bound` (the others cannot, so the answer is among them).
    fn pick_near(&self, s: usize, now: u64, near: Near) -> Option<Result<usize, Wait>> {
        let pipes = &self.pipe[s];
        let hot = self.hot.of_scheduler(s);
        // Branch-free, since comparisons that branch on each warp mispredict: the least of
        // (cycle it can issue, no earlier than now; age key) gives the oldest warp that can issue
        // now or, when none can, the soonest cycle and the oldest warp then (a near warp's index
        // is below 64, so it takes the low 8 bits of its age key); the first warp in slot order
        // to reach the soonest cycle is the first whose cycle is below every one before it, the
        // warps being visited in slot order.
        let (mut least, mut soonest_t, mut soonest) = (u128::MAX, u64::MAX, 0);
        for k in set_bits(near.warps) {
            let h = &hot[k];
            let t = h.when(pipes);
            least = least.min(u128::from(t.max(now)) << 64 | u128::from(h.aged));
            soonest = if t < soonest_t { k } else { soonest };
            soonest_t = soonest_t.min(t);
        }
        let best_t = (least >> 64) as u64;
        let oldest = (least & 0xff) as u32;
        if best_t == now {
            return Some(Ok(oldest as usize));
        }
        if best_t >= near.bound {
            return None;
        }
        Some(Err(self.wait(s, best_t, soonest, oldest, near)))
    }

    /// The answer of a pick that finds no warp of scheduler `s` can issue now but one can at
    /// `at`: the reason of `soonest` (the first warp in slot order that can then), and the warp
    /// that issues then if nothing changes before, the greedy one when it can then, else
    /// `oldest` (the oldest of those that can then). Inlined into both picks: called, it made
    /// the demo's runs 1.5–3 % slower (speed-ab).
    #[inline(always)]
    fn wait(&self, s: usize, at: u64, soonest: usize, oldest: u32, near: Near) -> Wait {
        let hot = self.hot.of_scheduler(s);
        let can_then = |k: u32| {
            let h = &hot[k as usize];
            h.when(&self.pipe[s]) == at
        };
        let then = match self.last[s] {
            Some(k) if can_then(k) => k,
            _ => oldest,
        };
        Wait {
            at,
            reason: self.reason(s, soonest),
            then,
            near,
        }
    }

    /// Why scheduler `s`'s `k`-th warp cannot issue before it can: the limiting one of its
    /// scoreboard, memory or fence (`wake`), its pipe and its issue slot (`next_ok`).
    fn reason(&self, s: usize, k: usize) -> Stall {
        let nsched = self.pipe.len();
        let w = &self.warps[k * nsched + s];
        let pipe = self.pipe[s][self.hot.of_scheduler(s)[k].pipe.index()];
        if w.wake >= w.next_ok && w.wake >= pipe {
            w.reason
        } else if pipe >= w.next_ok {
            Stall::PipeBusy
        } else {
            Stall::Scoreboard
        }
    }

    /// [`Sm::pick`] by visiting every warp of the scheduler. One pass over the warps serves
    /// both answers, since a cycle without issue would otherwise scan them twice.
    fn scan(&self, s: usize, now: u64) -> Result<usize, Wait> {
        let nsched = self.pipe.len();
        // Oldest first, the first warp that can issue is the answer; else the first in slot
        // order of those that can soonest. A warp not running has `ready` = u64::MAX, which
        // neither test takes. The pass keeps only the soonest cycle, a branch-free minimum, and
        // a second pass finds its warp: a minimum with the tie-break in the loop branches on
        // every warp unpredictably (one thread, wall time: 3-9 % slower on every workload).
        let pipes = &self.pipe[s];
        let hot = self.hot.of_scheduler(s);
        let when = |h: &Hot| h.when(pipes);
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
            let reason = if at_bar { Stall::Barrier } else { Stall::Idle };
            return Err(Wait {
                at: u64::MAX,
                reason,
                then: NONE,
                near: Near::NONE,
            });
        }
        let (soonest, oldest, near) = first_at(hot, self.hot.by_age(s), when, best_t);
        Err(self.wait(s, best_t, soonest, oldest.unwrap_or(NONE), near))
    }
}

/// Among the warps whose `when` is `t`: the first in slot order (its index among `hot`, 0 when
/// none) and the first in age order (`by_age` lists the indices oldest first); and, with `t`
/// the soonest of all, the near warps (those within `NEAR_SPAN` cycles of it).
///
/// From masks filled in one pass of fixed length, where there are at most 64 warps: two
/// searches that stopped at the first found each ended at a different place from one scan to
/// the next, and their exits mispredicted (one thread, demo runs: 1-3 % faster).
fn first_at(
    hot: &[Hot],
    by_age: &[u32],
    when: impl Fn(&Hot) -> u64,
    t: u64,
) -> (usize, Option<u32>, Near) {
    if hot.len() > 64 {
        let (soonest, oldest) = first_at_by_search(hot, by_age, when, t);
        return (soonest, oldest, Near::NONE);
    }
    let cut = t.saturating_add(NEAR_SPAN);
    let (mut by_slot, mut in_age, mut near) = (
        0u64,
        0u64,
        Near {
            warps: 0,
            bound: u64::MAX,
        },
    );
    for (i, &k) in by_age.iter().enumerate() {
        let wt = hot.get(k as usize).map_or(u64::MAX, &when);
        let at = u64::from(wt == t);
        by_slot |= at << k;
        in_age |= at << i;
        let is_near = wt < cut;
        near.warps |= u64::from(is_near) << k;
        near.bound = near.bound.min(if is_near { u64::MAX } else { wt });
    }
    let soonest = if by_slot == 0 {
        0
    } else {
        by_slot.trailing_zeros() as usize
    };
    (
        soonest,
        by_age.get(in_age.trailing_zeros() as usize).copied(),
        near,
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
    use crate::ir::Class;

    proptest::proptest! {
        /// Each entry's age key names its place in its scheduler's age order and its index,
        /// whatever the order of new slots, warps made youngest again and entries set since:
        /// setting an entry keeps its key.
        #[test]
        fn the_age_keys_follow_the_age_order(
            nsched in 1usize..=4,
            steps in proptest::collection::vec((0u8..3, 0usize..64, 0u64..1000), 1..200),
        ) {
            let mut table = HotTable::new(nsched);
            let mut slots = 0;
            for (what, at, ready) in steps {
                let h = Hot::new(ready, Pipe::of_class(Class::Int));
                match what {
                    // A new slot, the youngest, while the schedulers have room for 64 each.
                    0 if slots < 64 * nsched => {
                        table.set(slots, h);
                        table.youngest(slots);
                        slots += 1;
                    }
                    1 if slots > 0 => table.youngest(at % slots),
                    2 if slots > 0 => table.set(at % slots, h),
                    _ => {}
                }
            }
            for s in 0..nsched {
                let hot = table.of_scheduler(s);
                proptest::prop_assert_eq!(table.by_age(s).len(), hot.len());
                for (i, &k) in table.by_age(s).iter().enumerate() {
                    proptest::prop_assert_eq!(hot[k as usize].aged, (i as u32) << 8 | k);
                }
            }
        }

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
                .map(|&ready| Hot::new(ready, Pipe::of_class(Class::Int)))
                .collect();
            // An age order: the slots shuffled by the seed.
            let mut by_age: Vec<u32> = (0..hot.len() as u32).collect();
            let mut x = seed;
            for i in (1..by_age.len()).rev() {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                by_age.swap(i, (x >> 33) as usize % (i + 1));
            }
            let when = |h: &Hot| h.ready;
            let (soonest, oldest, _) = first_at(&hot, &by_age, when, t);
            proptest::prop_assert_eq!(
                (soonest, oldest),
                first_at_by_search(&hot, &by_age, when, t)
            );
        }

        /// The near warps a scan records are exactly those within `NEAR_SPAN` cycles of the
        /// soonest, and `bound` is the soonest of the others (cycles spread wider than the
        /// span, some warps not running).
        #[test]
        fn the_near_warps_are_those_within_the_span_and_bound_the_others(
            cycles in proptest::collection::vec(
                proptest::option::weighted(0.9, 0u64..4 * NEAR_SPAN), 1..=64),
        ) {
            let hot: Vec<Hot> = cycles
                .iter()
                .map(|c| Hot::new(c.unwrap_or(u64::MAX), Pipe::of_class(Class::Int)))
                .collect();
            let by_age: Vec<u32> = (0..hot.len() as u32).rev().collect();
            let soonest = hot.iter().map(|h| h.ready).min().unwrap_or(u64::MAX);
            let (_, _, near) = first_at(&hot, &by_age, |h: &Hot| h.ready, soonest);
            for (k, h) in hot.iter().enumerate() {
                let is_near = near.warps >> k & 1 == 1;
                proptest::prop_assert_eq!(is_near, h.ready < soonest.saturating_add(NEAR_SPAN));
                proptest::prop_assert!(is_near || h.ready >= near.bound);
            }
            let others = hot.iter().enumerate().filter(|&(k, _)| near.warps >> k & 1 == 0);
            let least = others.map(|(_, h)| h.ready).min().unwrap_or(u64::MAX);
            proptest::prop_assert_eq!(near.bound, least);
        }
    }
}
