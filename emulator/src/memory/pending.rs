//! Cycles not known yet: what lets the SMs of one launch run in parallel and still give the
//! numbers of one global (cycle, SM) order.
//!
//! An SM runs a round of cycles on its own; everything below its L1 (L2 slices, DRAM queue) is
//! shared, so an L1 miss cannot be answered before every SM has sent what it sends earlier. The
//! SM therefore queues the request and gets a **token**: a `u64` with the top bit set, standing
//! for the cycle the answer will give. Tokens go where cycles go (a register's ready cycle, a
//! sector's arrival, an MSHR's release) and compare greater than every real cycle, which is
//! right inside the round: every unresolved token is known to be at least the round's
//! `horizon` (an L2 round trip is at least as long as a round), so a warp waiting on one cannot
//! issue in this round either way. When the maximum of a token and a cycle is needed the arena
//! keeps the expression; between rounds the requests are answered in global order, tokens get
//! their values, and the SM replaces every token it stored by its value (`patch`).
//!
//! Decisions that a token could change inside the round (which MSHR frees first, how far an
//! idle SM may jump, why a scheduler stalled) are not guessed: the engine waits for the values.

use std::collections::VecDeque;

/// The bit that marks a token; real cycles stay far below it.
pub(crate) const TOKEN: u64 = 1 << 63;

#[inline]
pub(crate) fn is_token(t: u64) -> bool {
    t >= TOKEN
}

#[derive(Debug, Clone)]
enum Def {
    /// Answered from outside (an L2 request, a suspended access).
    Given,
    Max(u64, u64),
    Add(u64, u64),
    /// The `k`-th smallest (from 1) of these: which MSHR of a full table frees first.
    Kth(Box<[u64]>, usize),
}

/// The unresolved cycles of one SM.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pend {
    /// Id of `defs[0]`.
    base: u64,
    defs: VecDeque<(Def, Option<u64>)>,
    /// Every unresolved token's value is at least this (the current round's end).
    pub(crate) horizon: u64,
    unresolved: usize,
    /// Values given since the last `patch` of the SM's state.
    fresh: bool,
}

impl Pend {
    fn push(&mut self, d: Def) -> u64 {
        let id = self.base + self.defs.len() as u64;
        self.defs.push_back((d, None));
        self.unresolved += 1;
        TOKEN | id
    }

    /// A token answered later by [`Pend::give`].
    pub(crate) fn given(&mut self) -> u64 {
        self.push(Def::Given)
    }

    /// `max(a, b)` of cycles or tokens.
    #[inline]
    pub(crate) fn max(&mut self, a: u64, b: u64) -> u64 {
        match (is_token(a), is_token(b)) {
            (false, false) => a.max(b),
            (true, false) if b <= self.horizon => a,
            (false, true) if a <= self.horizon => b,
            _ if a == b => a,
            _ => self.push(Def::Max(a, b)),
        }
    }

    /// `a + k` of a cycle or token.
    #[inline]
    pub(crate) fn add(&mut self, a: u64, k: u64) -> u64 {
        if is_token(a) && k > 0 {
            self.push(Def::Add(a, k))
        } else {
            a + k
        }
    }

    /// The `k`-th smallest (from 1) of `of`, cycles or tokens.
    pub(crate) fn kth(&mut self, of: &[u64], k: usize) -> u64 {
        if of.iter().all(|&t| !is_token(t)) {
            let mut v = of.to_vec();
            v.sort_unstable();
            return v[k - 1];
        }
        self.push(Def::Kth(of.into(), k))
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
        let id = (t & !TOKEN).checked_sub(self.base)?;
        usize::try_from(id).ok().filter(|&i| i < self.defs.len())
    }

    /// Answers the token `t` (from [`Pend::given`]).
    pub(crate) fn give(&mut self, t: u64, v: u64) {
        if let Some(i) = self.slot(t)
            && self.defs[i].1.is_none()
        {
            self.defs[i].1 = Some(v);
            self.unresolved -= 1;
            self.fresh = true;
        }
    }

    /// The value of `t`: itself for a cycle, the answer for a resolved token.
    pub(crate) fn value(&mut self, t: u64) -> Option<u64> {
        if !is_token(t) {
            return Some(t);
        }
        let i = self.slot(t)?;
        if let Some(v) = self.defs[i].1 {
            return Some(v);
        }
        // Parts are older tokens (or cycles), so the recursion ends.
        let v = match &self.defs[i].0 {
            Def::Given => return None,
            &Def::Max(a, b) => self.value(a)?.max(self.value(b)?),
            &Def::Add(a, k) => self.value(a)? + k,
            Def::Kth(of, k) => {
                let (of, k) = (of.clone(), *k);
                let mut v = Vec::with_capacity(of.len());
                for &t in of.iter() {
                    v.push(self.value(t)?);
                }
                v.sort_unstable();
                v[k - 1]
            }
        };
        self.defs[i].1 = Some(v);
        self.unresolved -= 1;
        Some(v)
    }

    /// `t` with a resolved token replaced by its value.
    #[inline]
    pub(crate) fn settled(&mut self, t: u64) -> u64 {
        if is_token(t) {
            self.value(t).unwrap_or(t)
        } else {
            t
        }
    }

    /// Replaces resolved parts of the open expressions, then forgets the resolved tokens at the
    /// front: called after the SM replaced every resolved token it stored, so nothing refers to
    /// them any more.
    pub(crate) fn settle(&mut self) {
        for i in 0..self.defs.len() {
            if self.defs[i].1.is_some() {
                continue;
            }
            // Evaluated here even when nothing refers to it any more, so that
            // `any_unresolved` only counts what is really open; what stays open gets its
            // resolved parts replaced.
            let id = TOKEN | (self.base + i as u64);
            if self.value(id).is_some() {
                continue;
            }
            let def = match &self.defs[i].0 {
                Def::Given => continue,
                &Def::Max(a, b) => Def::Max(self.settled(a), self.settled(b)),
                &Def::Add(a, k) => Def::Add(self.settled(a), k),
                Def::Kth(of, k) => {
                    let (of, k) = (of.clone(), *k);
                    Def::Kth(of.iter().map(|&t| self.settled(t)).collect(), k)
                }
            };
            self.defs[i].0 = def;
        }
        while let Some((_, Some(_))) = self.defs.front() {
            self.defs.pop_front();
            self.base += 1;
        }
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
        p.settle();
        assert!(!p.fresh());
        // new tokens after forgetting the old ones still resolve
        let c = p.given();
        p.give(c, 42);
        assert_eq!(p.settled(c), 42);
    }

    #[test]
    fn kth_and_add_resolve_when_their_parts_do() {
        let mut p = Pend::default();
        assert_eq!(p.kth(&[9, 3, 5], 2), 5);
        let a = p.given();
        let b = p.given();
        let k = p.kth(&[a, 40, b], 1);
        let s = p.add(k, 10);
        p.give(a, 70);
        assert_eq!(p.value(s), None);
        p.give(b, 20);
        assert_eq!(p.value(k), Some(20));
        assert_eq!(p.value(s), Some(30));
    }

    #[test]
    fn settle_keeps_open_expressions_over_forgotten_tokens() {
        let mut p = Pend::default();
        let a = p.given();
        let b = p.given();
        let m = p.max(a, b);
        p.give(a, 10);
        p.settle();
        p.give(b, 20);
        assert_eq!(p.value(m), Some(20));
    }
}
