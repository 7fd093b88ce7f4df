//! Cycles not known yet: what lets the SMs of one launch run in parallel and still give the
//! numbers of one global (cycle, SM) order.
//!
//! An SM runs a round of cycles on its own; everything below its L1 (L2 slices, DRAM queue) is
//! shared, so an L1 miss cannot be answered before every SM has sent what it sends earlier. The
//! SM therefore queues the request and gets a **token**: a `u64` with the top bit set, standing
//! for the cycle the answer will give. Tokens go where cycles go (a register's ready cycle, a
//! sector's arrival, an MSHR's release) and compare greater than every real cycle, which is
//! right inside the round: every unresolved answer is known to be at least the round's
//! `horizon` (an L2 round trip is at least as long as a round), so a warp waiting on one cannot
//! issue in this round either way. (The one token that may stand for an earlier cycle, a
//! replayed MSHR's send cycle, only ever meets other tokens; `max` checks which kind it has.) When the maximum of a token and a cycle is needed the arena
//! keeps the expression; between rounds the requests are answered in global order, tokens get
//! their values, and the SM replaces every token it stored by its value (`patch`).
//!
//! A full MSHR table whose earliest release is a token is kept as a **replay**: the misses it
//! served and the releases they pushed, in order, replayed on a real heap once the pushed
//! values are known; a miss's send cycle is the token that replay resolves. Decisions a token
//! could change that cannot be written down this way (how far an idle SM may jump, why a
//! scheduler stalled) wait for the values.

use super::forget_front;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The bit that marks a token; real cycles stay far below it.
pub(crate) const TOKEN: u64 = 1 << 63;

/// The bit of a token whose value, while unknown, is at least the horizon (see
/// `Pend::horizon`): an answer from below, or an expression over one. Carried in the token so
/// that `max`, which asks it of nearly every token it meets, needs no lookup.
const LATE: u64 = 1 << 62;

/// MSHR tables per SM that may replay (L1, texture, constant).
pub(crate) const TABLES: usize = 3;

#[inline]
pub(crate) fn is_token(t: u64) -> bool {
    t >= TOKEN
}

/// Whether `t` is a token whose value, while unknown, is at least the horizon.
#[inline]
fn late(t: u64) -> bool {
    t & (TOKEN | LATE) == TOKEN | LATE
}

#[derive(Debug, Clone, Copy)]
enum Def {
    /// Answered from outside: an L2 request's answer.
    Given,
    Max(u64, u64),
    Add(u64, u64),
    /// An MSHR of replay `table` taken: resolved by replaying it.
    Acquire(u8),
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Push(u64),
    /// A miss at this cycle takes an MSHR: the cycle it can be sent goes to the token.
    Acquire(u64, u64),
}

/// One MSHR table's operations since its earliest release became a token.
#[derive(Debug, Clone, Default)]
struct Replay {
    capacity: usize,
    /// The table's entries as replayed so far (values).
    heap: BinaryHeap<Reverse<u64>>,
    /// Operations in order, those from `next` on not replayed yet (a vector with a cursor:
    /// it is read at the front and written at the back, and indexing a `VecDeque` costs its
    /// wrap-around arithmetic every time).
    ops: Vec<Op>,
    next: usize,
}

/// The unresolved cycles of one SM.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pend {
    /// Id of `defs[0]`.
    base: u64,
    /// Definition, and value once known. A vector with a moving `head` (the first not
    /// forgotten) rather than a `VecDeque`: every token lookup indexes it, and the ring's
    /// wrap-around arithmetic was a large part of a lookup.
    defs: Vec<(Def, Option<u64>)>,
    head: usize,
    /// The current round's end. Every unresolved answer from below is at least this (an L2
    /// round trip is at least as long as a round), and so is an expression over one; a replayed
    /// MSHR acquire need not be (a miss may be sent at once).
    pub(crate) horizon: u64,
    unresolved: usize,
    /// Values given since the last `settle`.
    fresh: bool,
    /// Boxed: `advance` takes a replay out while it runs, and moving a pointer is cheaper
    /// than moving the replay.
    replays: [Option<Box<Replay>>; TABLES],
    /// Each table's last replay, once ended, for its next to begin with: its vectors keep the
    /// room they grew to, where a new replay's grew again from nothing (on gtx480's 128×1
    /// quick frame at (90,0,90) about 26,000 reallocations, 1 % of the launch's host
    /// instructions).
    spare: [Option<Box<Replay>>; TABLES],
}

impl Pend {
    /// A new token for `d`, marked `late` when its value, while unknown, is at least the
    /// horizon (`LATE`). The caller says which: it knows the kind it pushes, and deciding it
    /// here from `d` was an indirect jump that mispredicted.
    #[inline]
    fn push(&mut self, d: Def, late: bool) -> u64 {
        let id = self.base + self.defs.len() as u64;
        self.defs.push((d, None));
        self.unresolved += 1;
        TOKEN | if late { LATE } else { 0 } | id
    }

    /// A token answered later by [`Pend::give`].
    pub(crate) fn given(&mut self) -> u64 {
        self.push(Def::Given, true)
    }

    /// `max(a, b)` of cycles or tokens.
    #[inline]
    pub(crate) fn max(&mut self, a: u64, b: u64) -> u64 {
        match (is_token(a), is_token(b)) {
            (false, false) => a.max(b),
            (true, false) if b <= self.horizon && late(a) => a,
            (false, true) if a <= self.horizon && late(b) => b,
            _ if a == b => a,
            _ => self.push(Def::Max(a, b), late(a) || late(b)),
        }
    }

    /// `a + k` of a cycle or token.
    #[inline]
    pub(crate) fn add(&mut self, a: u64, k: u64) -> u64 {
        if is_token(a) && k > 0 {
            self.push(Def::Add(a, k), late(a))
        } else {
            a + k
        }
    }

    /// Starts replaying MSHR table `table` (of `capacity` entries) from these entries (cycles
    /// or tokens).
    pub(crate) fn replay_begin(
        &mut self,
        table: usize,
        capacity: usize,
        entries: impl Iterator<Item = u64>,
    ) {
        let mut r = self.spare[table].take().unwrap_or_default();
        r.capacity = capacity;
        r.heap.clear();
        r.ops.clear();
        r.ops.extend(entries.map(Op::Push));
        r.next = 0;
        self.replays[table] = Some(r);
    }

    /// Whether some table is being replayed (its SM cannot start a round then).
    pub(crate) fn replaying_any(&self) -> bool {
        self.replays.iter().any(Option::is_some)
    }

    /// Whether table `table` is being replayed.
    pub(crate) fn replaying(&self, table: usize) -> bool {
        self.replays[table].is_some()
    }

    /// Records a push to a replayed table.
    pub(crate) fn replay_push(&mut self, table: usize, t: u64) {
        if let Some(r) = &mut self.replays[table] {
            r.ops.push(Op::Push(t));
        }
    }

    /// Records a miss at cycle `now` taking an MSHR of a replayed table; the token is the
    /// cycle it can be sent.
    pub(crate) fn replay_acquire(&mut self, table: usize, now: u64) -> u64 {
        let t = self.push(Def::Acquire(table as u8), false);
        if let Some(r) = &mut self.replays[table] {
            r.ops.push(Op::Acquire(now, t));
        }
        t
    }

    /// Replays table `table` as far as the pushed values are known; when all of it is, ends
    /// the replay ([`Pend::replaying`] says which) and gives the table's entries to `busy`
    /// (the table's own heap, which the replay's start left empty).
    pub(crate) fn replay_end(&mut self, table: usize, busy: &mut BinaryHeap<Reverse<u64>>) {
        self.advance(table);
        let done = self.replays[table]
            .as_ref()
            .is_some_and(|r| r.next == r.ops.len());
        if !done {
            return;
        }
        if let Some(mut r) = self.replays[table].take() {
            // The replay's heap becomes the table's, element for element; the table's empty
            // one is kept for the next replay.
            std::mem::swap(&mut r.heap, busy);
            self.spare[table] = Some(r);
        }
    }

    fn advance(&mut self, table: usize) {
        let Some(mut r) = self.replays[table].take() else {
            return;
        };
        while let Some(&op) = r.ops.get(r.next) {
            match op {
                Op::Push(t) => {
                    // Most pushed values are known by now: read them before evaluating.
                    let known = Some(self.settled(t)).filter(|&v| !is_token(v));
                    match known.or_else(|| self.value(t)) {
                        Some(v) => r.heap.push(Reverse(v)),
                        None => break,
                    }
                }
                Op::Acquire(now, t) => {
                    // What `Mshrs::acquire` does with every value known.
                    while r.heap.peek().is_some_and(|&Reverse(v)| v <= now) {
                        r.heap.pop();
                    }
                    let v = if r.heap.len() < r.capacity {
                        now
                    } else {
                        r.heap.pop().map_or(now, |Reverse(v)| v.max(now))
                    };
                    if let Some(i) = self.slot(t) {
                        self.resolve(i, v);
                    }
                }
            }
            r.next += 1;
        }
        forget_front(&mut r.ops, &mut r.next);
        self.replays[table] = Some(r);
    }

    /// Whether some token of this SM has no value yet.
    pub(crate) fn any_unresolved(&self) -> bool {
        self.unresolved > 0
    }

    /// Whether values were given since the last [`Pend::settle`].
    pub(crate) fn fresh(&self) -> bool {
        self.fresh
    }

    fn slot(&self, t: u64) -> Option<usize> {
        let id = (t & !(TOKEN | LATE)).checked_sub(self.base)?;
        usize::try_from(id)
            .ok()
            .filter(|&i| i >= self.head && i < self.defs.len())
    }

    fn resolve(&mut self, i: usize, v: u64) {
        if self.defs[i].1.is_none() {
            self.defs[i].1 = Some(v);
            self.unresolved -= 1;
        }
    }

    /// Answers the token `t` (from [`Pend::given`]).
    pub(crate) fn give(&mut self, t: u64, v: u64) {
        if let Some(i) = self.slot(t)
            && self.defs[i].1.is_none()
        {
            self.resolve(i, v);
            self.fresh = true;
        }
    }

    /// The value of `t`: itself for a cycle, the answer for a resolved token (evaluating the
    /// expressions it depends on).
    pub(crate) fn value(&mut self, t: u64) -> Option<u64> {
        if !is_token(t) {
            return Some(t);
        }
        let i = self.slot(t)?;
        if let Some(v) = self.defs[i].1 {
            return Some(v);
        }
        // Parts are older tokens (or cycles), so the recursion ends.
        let v = match self.defs[i].0 {
            Def::Given => return None,
            Def::Max(a, b) => self.value(a)?.max(self.value(b)?),
            Def::Add(a, k) => self.value(a)? + k,
            Def::Acquire(table) => {
                self.advance(table as usize);
                return self.defs[i].1;
            }
        };
        self.resolve(i, v);
        Some(v)
    }

    /// `t` with a resolved token replaced by its value (no evaluation: after
    /// [`Pend::evaluate`]).
    #[inline]
    pub(crate) fn settled(&self, t: u64) -> u64 {
        if is_token(t) {
            self.slot(t).and_then(|i| self.defs[i].1).unwrap_or(t)
        } else {
            t
        }
    }

    /// Evaluates, in creation order, every expression whose parts are known — even those
    /// nothing refers to any more, so that `any_unresolved` counts only what is open — and
    /// replaces the known parts of those still open (and of the replays' pending pushes).
    ///
    /// Without recursion: a part is an older token, so in creation order it has been
    /// evaluated already and its value, if it has one, is there to read.
    pub(crate) fn evaluate(&mut self) {
        for i in self.head..self.defs.len() {
            if self.defs[i].1.is_some() {
                continue;
            }
            let v = match self.defs[i].0 {
                Def::Given => None,
                Def::Max(a, b) => {
                    let (a, b) = (self.settled(a), self.settled(b));
                    self.defs[i].0 = Def::Max(a, b);
                    (!is_token(a) && !is_token(b)).then(|| a.max(b))
                }
                Def::Add(a, k) => {
                    let a = self.settled(a);
                    self.defs[i].0 = Def::Add(a, k);
                    (!is_token(a)).then(|| a + k)
                }
                // Replaying resolves every acquire whose releases are known, this one with
                // them if it can be.
                Def::Acquire(table) => {
                    self.advance(table as usize);
                    None
                }
            };
            if let Some(v) = v {
                self.resolve(i, v);
            }
        }
        for table in 0..TABLES {
            if let Some(mut r) = self.replays[table].take() {
                for op in &mut r.ops[r.next..] {
                    if let Op::Push(t) = op {
                        *t = self.settled(*t);
                    }
                }
                self.replays[table] = Some(r);
            }
        }
    }

    /// Forgets the resolved tokens at the front: called after the SM replaced every resolved
    /// token it stored (and `evaluate` those in open expressions), so nothing refers to them.
    pub(crate) fn settle(&mut self) {
        while self.defs.get(self.head).is_some_and(|d| d.1.is_some()) {
            self.head += 1;
        }
        self.base += forget_front(&mut self.defs, &mut self.head) as u64;
        self.fresh = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_of_cycles_is_plain_and_of_tokens_waits_for_answers() {
        let mut p = Pend {
            horizon: 100,
            ..Pend::default()
        };
        assert_eq!(p.max(3, 7), 7);
        let a = p.given();
        let b = p.given();
        assert!(is_token(a) && a != b);
        // a cycle at or below the horizon cannot exceed an unresolved token
        assert_eq!(p.max(a, 100), a);
        let m = p.max(a, 500);
        let mm = p.max(m, b);
        assert_eq!(p.value(mm), None);
        p.give(a, 300);
        assert_eq!(p.value(m), Some(500));
        assert_eq!(p.value(mm), None);
        p.give(b, 900);
        assert!(p.fresh());
        assert_eq!(p.value(mm), Some(900));
        assert!(!p.any_unresolved());
        p.evaluate();
        p.settle();
        assert!(!p.fresh());
        // new tokens after forgetting the old ones still resolve
        let c = p.given();
        p.give(c, 42);
        assert_eq!(p.settled(c), 42);
    }

    #[test]
    fn a_replayed_table_pops_what_a_heap_would_have() {
        let mut p = Pend::default();
        let a = p.given();
        let b = p.given();
        // three busy entries a, 40, b of three: a miss at 5 waits for the earliest; its own
        // release (12) is earlier than what is left, so the next miss at 6 waits for it
        p.replay_begin(0, 3, [a, 40, b].into_iter());
        let first = p.replay_acquire(0, 5);
        p.replay_push(0, 12);
        let second = p.replay_acquire(0, 6);
        let later = p.add(second, 5);
        p.replay_push(0, 90);
        p.give(a, 70);
        assert_eq!(p.value(first), None, "b may still be the smallest");
        p.give(b, 20);
        assert_eq!(p.value(first), Some(20));
        assert_eq!(p.value(later), Some(17));
        // a miss after every release is sent at once
        let third = p.replay_acquire(0, 100);
        assert_eq!(p.value(third), Some(100));
        let mut rest = BinaryHeap::new();
        p.replay_end(0, &mut rest);
        assert!(!p.replaying(0), "every push is known");
        assert!(rest.is_empty());
    }

    #[test]
    fn only_answers_from_below_are_taken_to_lie_beyond_the_horizon() {
        let mut p = Pend {
            horizon: 100,
            ..Pend::default()
        };
        p.replay_begin(0, 1, std::iter::empty());
        // a replayed acquire may stand for a cycle before the horizon: max keeps both
        let sent = p.replay_acquire(0, 40);
        let m = p.max(sent, 90);
        assert_ne!(m, sent);
        assert_eq!(p.value(m), Some(90));
        // an answer, and an expression over it, may not
        let a = p.given();
        let later = p.add(a, 5);
        assert_eq!(p.max(later, 90), later);
    }

    #[test]
    fn settle_keeps_open_expressions_over_forgotten_tokens() {
        let mut p = Pend::default();
        let a = p.given();
        let b = p.given();
        let m = p.max(a, b);
        p.give(a, 10);
        p.evaluate();
        p.settle();
        p.give(b, 20);
        assert_eq!(p.value(m), Some(20));
    }

    #[test]
    fn one_evaluation_resolves_a_chain_as_value_would() {
        // A chain of maxima and sums over two answers and a replayed MSHR's send cycle, as a
        // warp's loads build one: one pass in creation order must resolve all of it.
        let mut p = Pend::default();
        let a = p.given();
        let b = p.given();
        p.replay_begin(0, 1, [a].into_iter());
        let sent = p.replay_acquire(0, 3);
        let ready = p.add(sent, 7);
        p.replay_push(0, ready);
        let mut chain = p.max(a, 5);
        let mut links = Vec::new();
        for k in 0..40 {
            chain = match k % 3 {
                0 => p.add(chain, 3),
                1 => p.max(chain, b),
                _ => p.max(chain, sent),
            };
            links.push(chain);
        }
        let mut by_value = p.clone();
        for q in [&mut p, &mut by_value] {
            q.give(a, 10);
            q.give(b, 40);
        }
        p.evaluate();
        assert!(!p.any_unresolved());
        for t in links {
            let v = by_value.value(t);
            assert!(v.is_some());
            assert_eq!(Some(p.settled(t)), v);
        }
        // The one MSHR frees at 10, when the answer `a` arrives.
        assert_eq!(p.settled(sent), 10);
        let mut busy = BinaryHeap::new();
        p.replay_end(0, &mut busy);
        assert!(!p.replaying(0));
        assert_eq!(busy.into_vec(), vec![Reverse(17)]);
    }

    #[test]
    fn a_replay_begun_after_another_ends_starts_from_nothing_of_it() {
        // The second replay reuses the first's vectors: nothing the first held may show.
        let mut p = Pend::default();
        let a = p.given();
        p.replay_begin(0, 2, [a, 30].into_iter());
        let first = p.replay_acquire(0, 5);
        p.replay_push(0, 50);
        p.give(a, 40);
        assert_eq!(p.value(first), Some(30));
        let mut busy = BinaryHeap::new();
        p.replay_end(0, &mut busy);
        assert!(!p.replaying(0));
        assert_eq!(busy.into_sorted_vec(), vec![Reverse(50), Reverse(40)]);
        let b = p.given();
        p.replay_begin(0, 1, [b].into_iter());
        let second = p.replay_acquire(0, 7);
        p.give(b, 9);
        assert_eq!(p.value(second), Some(9));
        let mut busy = BinaryHeap::new();
        p.replay_end(0, &mut busy);
        assert!(!p.replaying(0));
        assert!(busy.is_empty(), "the one entry was taken by the miss at 7");
    }
}
