//! One set-associative, sectored cache with per-sector fill times, and an MSHR table.
//!
//! Why per-sector fill times instead of a separate MSHR merge list: a sector allocated by a miss
//! carries the cycle its data arrives. A later request that finds the tag with that sector still
//! in flight is an MSHR merge and completes when the first does; one that finds it arrived is a
//! hit. So the cache array *is* the merge table and lookups stay a scan of one set's tags in flat
//! arrays: a byte of each tag's hash first, eight ways to a word, then the tags it matches.
//!
//! Main types: [`Cache`], [`Lookup`], [`Mshrs`].

use super::pending::{Pend, is_token};
use crate::config::{CacheConfig, Replacement};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What one line's sectors looked like at lookup time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lookup {
    /// The line looked up.
    pub line: u64,
    /// Slot of the line when its tag is present.
    pub slot: Option<usize>,
    /// Requested sectors present and arrived.
    pub hit: u8,
    /// Requested sectors allocated but still in flight (MSHR merges).
    pub pending: u8,
    /// Latest arrival among `pending` sectors (0 when none); may be a token (pending.rs).
    pub pending_ready: u64,
    /// Requested sectors absent.
    pub miss: u8,
}

/// A line pushed out by an allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Evicted {
    pub line: u64,
    pub dirty: u8,
}

/// The fewest ways for which a cache keeps each set's ways in order of age ([`Ages`]). The victim
/// is then the first way with nothing in flight from the oldest on, where a scan compares every
/// way: on the h100 preset's 64-way L1 the scan was a seventh of a memory-bound frame's host
/// instructions, and the oldest way is nearly always idle there. In the small texture cache of
/// gtx480 (24 ways, 96 lines, 128 MSHRs) nearly every line of a set is in flight during such a
/// frame, so the walk is long and keeping the order cost more than the scan.
const AGES_FROM_WAYS: usize = 32;

/// Each set's ways from the oldest stamp to the newest, as a doubly linked list of way numbers:
/// the ways never filled first, in way order (stamp 0), then the others by stamp. Moved with
/// every new stamp.
#[derive(Debug, Clone)]
struct Ages {
    /// Per slot, the way before and after it in its set's order (meaningless at the ends).
    prev: Vec<u16>,
    next: Vec<u16>,
    /// Per set, its oldest and newest way.
    oldest: Vec<u16>,
    newest: Vec<u16>,
}

impl Ages {
    fn new(sets: usize, ways: usize) -> Ages {
        let way = |i: usize| (i % ways) as u16;
        Ages {
            prev: (0..sets * ways).map(|i| way(i).saturating_sub(1)).collect(),
            next: (0..sets * ways).map(|i| way(i + 1).max(way(i))).collect(),
            oldest: vec![0; sets],
            newest: vec![(ways - 1) as u16; sets],
        }
    }

    /// Makes way `way` of the set whose first slot is `base` (set number `set`) its newest.
    #[inline(never)]
    fn renew(&mut self, set: usize, base: usize, way: u16) {
        let newest = self.newest[set];
        if newest == way {
            return;
        }
        let slot = base + usize::from(way);
        let (prev, next) = (self.prev[slot], self.next[slot]);
        if self.oldest[set] == way {
            self.oldest[set] = next;
        } else {
            self.next[base + usize::from(prev)] = next;
        }
        self.prev[base + usize::from(next)] = prev;
        self.next[base + usize::from(newest)] = way;
        self.prev[slot] = newest;
        self.newest[set] = way;
    }
}

/// A slot's tag, stamp, valid and dirty sectors and latest arrival, together in one 32-byte
/// record, so that a lookup that hits a line with nothing in flight reads one host cache line
/// after the set's fingerprints, where five arrays took five. Why: on the h100 preset these
/// arrays outgrow the host's caches (its 50 MB L2 keeps 24 MB of them, 27 MB padded to these
/// records), which makes it slower than gtx480 on the same host instructions
/// (docs/PERFORMANCE.md). The record cut host instructions by 1 % and mispredictions by 4–7 %;
/// the wall time did not move measurably.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(32))]
struct Slot {
    /// Line number + 1; 0 = invalid.
    tag: u64,
    /// LRU: last-use stamp; FIFO: fill stamp.
    stamp: u64,
    /// The latest `ready` among the valid sectors (0 when none), so that the line has nothing
    /// in flight exactly when this is ≤ now (a token is above every cycle). Why kept: choosing
    /// a victim tests every way of a set, and a sector scan per way was the most costly part
    /// of a texture miss; and a lookup of a line with nothing in flight reads no `ready`.
    latest: u64,
    valid: u8,
    dirty: u8,
}

#[derive(Debug, Clone)]
pub(crate) struct Cache {
    sets: u64,
    ways: usize,
    line_shift: u32,
    sector_shift: u32,
    sectors: usize,
    replacement: Replacement,
    /// Port cycles of a line with a sector to fetch (`CacheConfig::miss_line_cycles`).
    miss_line_cycles: u64,
    /// Per slot, what a lookup reads after the fingerprints ([`Slot`]).
    slots: Vec<Slot>,
    /// Per slot, its tag's [`fingerprint`]: what a lookup compares first, eight ways at a time,
    /// before the tags it matches. Why: a lookup that misses compared every tag of its set, 64
    /// on the h100 preset's L1 (about 440 host instructions, and 512 bytes read); a set's
    /// fingerprints are one 64-byte line. An index from line to slot, tried before, read 2 MB of
    /// tables at random (docs/PERFORMANCE.md).
    prints: Vec<u8>,
    /// Arrival cycle per sector (`slot * sectors + s`), meaningful while the sector is valid.
    ready: Vec<u64>,
    /// The slots whose `latest` became a token (may repeat, may be stale): what `patch` visits
    /// instead of every slot, 1,792 in a Hopper L1, of which about a hundred hold a token in a
    /// memory-bound frame.
    tokened: Vec<u32>,
    stamp: u64,
    /// Each set's ways in stamp order, in a set of at least [`AGES_FROM_WAYS`] ways.
    ages: Option<Ages>,
    /// Slot of the last tag hit: consecutive requests usually touch the same line, and checking
    /// it first skips the set scan (64 ways on Volta and later).
    mru: usize,
}

/// A byte in each of a word's eight.
const LOW_BYTES: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = LOW_BYTES << 7;

/// One byte of a tag's hash (Fibonacci hashing's top byte): equal tags have equal fingerprints,
/// and the lines of one set, whose tags step by the set count, spread over all 256 values.
fn fingerprint(tag: u64) -> u8 {
    (tag.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8
}

impl Cache {
    /// Geometry from a validated config (sets = size / (line × ways), ≤ 8 sectors per line).
    pub(crate) fn new(c: &CacheConfig) -> Self {
        let ways = c.ways.max(1) as usize;
        let line = u64::from(c.line_bytes.max(1));
        let sets = (u64::from(c.size_bytes) / (line * ways as u64)).max(1);
        let sectors = (c.line_bytes / c.sector_bytes.max(1)).clamp(1, 8) as usize;
        let slots = sets as usize * ways;
        Cache {
            sets,
            ways,
            line_shift: c.line_bytes.max(1).trailing_zeros(),
            sector_shift: c.sector_bytes.max(1).trailing_zeros(),
            sectors,
            replacement: c.replacement,
            miss_line_cycles: u64::from(c.miss_line_cycles.unwrap_or(1)),
            slots: vec![Slot::default(); slots],
            prints: vec![fingerprint(0); slots],
            ready: vec![0; slots * sectors],
            tokened: Vec::new(),
            stamp: 0,
            ages: (ways >= AGES_FROM_WAYS && ways <= usize::from(u16::MAX))
                .then(|| Ages::new(sets as usize, ways)),
            mru: 0,
        }
    }

    /// Every valid sector's data as arrived: what a launch leaves for the next one, which
    /// starts its clock at 0 with nothing in flight. Tags, replacement order and dirty sectors
    /// stay.
    pub(crate) fn arrived(&mut self) {
        self.ready.fill(0);
        for slot in &mut self.slots {
            slot.latest = 0;
        }
        self.tokened.clear();
    }

    pub(crate) fn line_shift(&self) -> u32 {
        self.line_shift
    }

    pub(crate) fn sector_shift(&self) -> u32 {
        self.sector_shift
    }

    /// Port cycles a line takes: one, or `miss_line_cycles` when it fetches a sector.
    pub(crate) fn port_cycles(&self, fetched: bool) -> u64 {
        if fetched { self.miss_line_cycles } else { 1 }
    }

    fn set_range(&self, line: u64) -> std::ops::Range<usize> {
        // Slices pass line numbers with the slice bits already removed, so modulo suffices.
        let set = (line % self.sets) as usize;
        set * self.ways..(set + 1) * self.ways
    }

    fn find(&self, line: u64) -> Option<usize> {
        let tag = line + 1;
        if self.slots.get(self.mru).is_some_and(|s| s.tag == tag) {
            return Some(self.mru);
        }
        let range = self.set_range(line);
        let (words, rest) = self.prints.get(range.clone())?.as_chunks::<8>();
        let want = u64::from(fingerprint(tag)) * LOW_BYTES;
        let mut base = range.start;
        for word in words {
            // A zero byte where a way's fingerprint is the tag's. Every such byte gets its high
            // bit; a byte above one may get it too (a borrow), so each candidate is checked
            // against its tag, in way order, and the first that matches is the scan's answer.
            let x = u64::from_le_bytes(*word) ^ want;
            let mut hits = x.wrapping_sub(LOW_BYTES) & !x & HIGH_BITS;
            while hits != 0 {
                let slot = base + (hits.trailing_zeros() / 8) as usize;
                if self.slots[slot].tag == tag {
                    return Some(slot);
                }
                hits &= hits - 1;
            }
            base += 8;
        }
        (base..base + rest.len()).find(|&slot| self.slots[slot].tag == tag)
    }

    /// Looks `mask`'s sectors of `line` up at cycle `now`, refreshing LRU state on a tag hit.
    /// A sector arriving at a token is in flight (its value is beyond the round).
    pub(crate) fn lookup(&mut self, line: u64, mask: u8, now: u64, pend: &mut Pend) -> Lookup {
        let Some(slot) = self.find(line) else {
            return Lookup {
                line,
                slot: None,
                hit: 0,
                pending: 0,
                pending_ready: 0,
                miss: mask,
            };
        };
        self.mru = slot;
        if self.replacement == Replacement::Lru {
            self.renew(slot);
        }
        let Slot { valid, latest, .. } = self.slots[slot];
        let present = valid & mask;
        // With every valid sector arrived, their `ready` need not be read.
        let (hit, pending, pending_ready) = if latest <= now {
            (present, 0, 0)
        } else {
            self.walk(slot, present, now, pend)
        };
        Lookup {
            line,
            slot: Some(slot),
            hit,
            pending,
            pending_ready,
            miss: mask & !present,
        }
    }

    /// `present`'s sectors of `slot` by their arrival at `now`: those arrived, those in flight,
    /// and the latest arrival among those in flight (0 when none).
    fn walk(&self, slot: usize, present: u8, now: u64, pend: &mut Pend) -> (u8, u8, u64) {
        let mut hit = 0u8;
        let mut pending = 0u8;
        let mut pending_ready = 0u64;
        for s in 0..self.sectors {
            let bit = 1u8 << s;
            if present & bit != 0 {
                let r = self.ready[slot * self.sectors + s];
                if r > now {
                    pending |= bit;
                    pending_ready = pend.max(pending_ready, r);
                } else {
                    hit |= bit;
                }
            }
        }
        (hit, pending, pending_ready)
    }

    /// Marks `mask`'s sectors of `line` as arriving at `ready` (allocating the line if absent),
    /// optionally dirty. Returns the line evicted to make room, if any.
    pub(crate) fn fill(
        &mut self,
        line: u64,
        mask: u8,
        ready: u64,
        now: u64,
        dirty: bool,
        pend: &mut Pend,
    ) -> Option<Evicted> {
        let (slot, evicted) = self.place(self.find(line), line, now);
        self.mark(slot, mask, ready, dirty, pend);
        evicted
    }

    /// [`Cache::fill`] of the sectors lookup `lk` missed, arriving at `ready`, right after it:
    /// the line's slot (or its absence) is known, so the set is not searched again.
    pub(crate) fn fill_missed(
        &mut self,
        lk: &Lookup,
        ready: u64,
        now: u64,
        pend: &mut Pend,
    ) -> Option<Evicted> {
        let (slot, evicted) = self.place(lk.slot, lk.line, now);
        self.mark(slot, lk.miss, ready, false, pend);
        evicted
    }

    /// The sectors of `lk`'s line present (arrived or in flight) when it was looked up.
    pub(crate) fn present(&self, lk: &Lookup) -> u8 {
        lk.slot.map_or(0, |slot| self.slots[slot].valid)
    }

    /// The slot of `line`, found at `found` or allocated at cycle `now`, and the line evicted
    /// to make room.
    fn place(&mut self, found: Option<usize>, line: u64, now: u64) -> (usize, Option<Evicted>) {
        if let Some(slot) = found {
            return (slot, None);
        }
        let slot = self.victim(line, now);
        let old = self.slots[slot];
        let evicted = (old.tag != 0).then(|| Evicted {
            line: old.tag - 1,
            dirty: old.dirty,
        });
        self.slots[slot] = Slot {
            tag: line + 1,
            ..Slot::default()
        };
        self.prints[slot] = fingerprint(line + 1);
        self.renew(slot);
        (slot, evicted)
    }

    /// Gives `slot` the newest stamp.
    fn renew(&mut self, slot: usize) {
        self.stamp += 1;
        self.slots[slot].stamp = self.stamp;
        if let Some(ages) = &mut self.ages {
            let set = slot / self.ways;
            ages.renew(set, set * self.ways, (slot % self.ways) as u16);
        }
    }

    /// Marks `mask`'s sectors of `slot` as arriving at `ready`, optionally dirty.
    fn mark(&mut self, slot: usize, mask: u8, ready: u64, dirty: bool, pend: &mut Pend) {
        let entry = &mut self.slots[slot];
        let was_valid = entry.valid;
        let was_latest = entry.latest;
        entry.valid |= mask;
        if dirty {
            entry.dirty |= mask;
        }
        if was_valid & mask == 0 {
            self.mark_new(slot, mask, ready);
        } else if !is_token(ready) && !is_token(was_latest) {
            // No token among the values (a token in a valid sector would be the latest).
            self.mark_cycles(slot, mask, was_valid, ready);
        } else {
            self.mark_tokens(slot, mask, was_valid, ready, pend);
        }
        if is_token(self.slots[slot].latest) && !is_token(was_latest) {
            self.tokened.push(slot as u32);
        }
    }

    /// [`Cache::mark`]'s sector arrivals when `mask` names only sectors not yet valid, as after
    /// a miss: each takes `ready`, cycle or token, in fixed steps, since which sectors a miss
    /// names changes from one miss to the next. `mark_cycles` would give the same values, but
    /// its comparisons with the old arrivals cost more: on the h100 preset's 128×1 quick frame
    /// at (90,0,90) the marking took 109 M host instructions that way and 84 M this way.
    fn mark_new(&mut self, slot: usize, mask: u8, ready: u64) {
        let base = slot * self.sectors;
        for (s, r) in self.ready[base..base + self.sectors].iter_mut().enumerate() {
            *r = std::hint::select_unpredictable(mask & 1 << s != 0, ready, *r);
        }
        if mask != 0 {
            let entry = &mut self.slots[slot];
            entry.latest = entry.latest.max(ready);
        }
    }

    /// [`Cache::mark`]'s sector arrivals when every value is a cycle: in fixed steps without a
    /// branch, since which sectors a request names, and which of them are valid, change from
    /// one request to the next (the branches mispredicted).
    fn mark_cycles(&mut self, slot: usize, mask: u8, was_valid: u8, ready: u64) {
        let mut latest = self.slots[slot].latest;
        let base = slot * self.sectors;
        for (s, r) in self.ready[base..base + self.sectors].iter_mut().enumerate() {
            let bit = 1u8 << s;
            let was = std::hint::select_unpredictable(was_valid & bit != 0, *r, 0);
            let new = std::hint::select_unpredictable(mask & bit != 0, was.max(ready), *r);
            latest = latest.max(std::hint::select_unpredictable(mask & bit != 0, new, 0));
            *r = new;
        }
        self.slots[slot].latest = latest;
    }

    /// [`Cache::mark`]'s sector arrivals in general.
    fn mark_tokens(&mut self, slot: usize, mask: u8, was_valid: u8, ready: u64, pend: &mut Pend) {
        // A sector's arrival only moves later here (or is new), so the slot's latest is the
        // maximum of the old one and the values written.
        let mut latest = self.slots[slot].latest;
        for s in 0..self.sectors {
            let bit = 1u8 << s;
            if mask & bit != 0 {
                let r = &mut self.ready[slot * self.sectors + s];
                // A write into a sector still being filled does not make the fill arrive sooner.
                *r = if was_valid & bit != 0 {
                    pend.max(*r, ready)
                } else {
                    ready
                };
                latest = latest.max(*r);
            }
        }
        self.slots[slot].latest = latest;
    }

    /// The latest arrival among `slot`'s valid sectors, 0 when none: what `latest` holds
    /// (tests).
    #[cfg(test)]
    fn latest_of(&self, slot: usize) -> u64 {
        let base = slot * self.sectors;
        (0..self.sectors)
            .filter(|&s| self.slots[slot].valid & (1 << s) != 0)
            .map(|s| self.ready[base + s])
            .max()
            .unwrap_or(0)
    }

    /// Invalid way first; else the oldest stamp among lines with nothing in flight; else the
    /// oldest stamp (its waiting requests already know their completion cycles).
    fn victim(&self, line: u64, now: u64) -> usize {
        let range = self.set_range(line);
        let start = range.start;
        if let Some(ages) = &self.ages {
            return self.oldest_idle(ages, start, now);
        }
        // One branch-free minimum: a way's key is its stamp, with the top bit set while
        // something is in flight. A way never filled has stamp 0 and nothing in flight (key 0);
        // stamps of resident lines are distinct counts from 1, far below that bit. So the
        // smallest key is the rule above, and the first of equal keys the first invalid way.
        let mut best = (u64::MAX, 0);
        for (i, s) in self.slots[range].iter().enumerate() {
            let key = (u64::from(s.latest > now) << 63) | s.stamp;
            if key < best.0 {
                best = (key, i);
            }
        }
        start + best.1
    }

    /// [`Cache::victim`] in the set whose first slot is `start`, by its ways in order of age: the
    /// first idle way from the oldest on, else the oldest. That is the rule, since the ways never
    /// filled come first in way order and are idle. Out of line, as is [`Ages::renew`], so that
    /// the caches without the order keep most of the code they had: inlined, the two made
    /// gtx480's frames miss the host's instruction cache 17 % more often, out of line 10 %
    /// (callgrind; unrelated changes move it by up to 5 %).
    #[inline(never)]
    fn oldest_idle(&self, ages: &Ages, start: usize, now: u64) -> usize {
        let set = start / self.ways;
        let mut way = ages.oldest[set];
        for _ in 0..self.ways {
            let slot = start + usize::from(way);
            if self.slots[slot].latest <= now {
                return slot;
            }
            way = ages.next[slot];
        }
        start + usize::from(ages.oldest[set])
    }

    /// Replaces resolved tokens among the arrival cycles by their values.
    pub(crate) fn patch(&mut self, pend: &Pend) {
        let mut tokened = std::mem::take(&mut self.tokened);
        tokened.retain(|&slot| self.settle(slot as usize, pend));
        self.tokened = tokened;
    }

    /// Replaces the resolved tokens among `slot`'s arrivals, if its latest is a token; whether
    /// it still waits for one.
    fn settle(&mut self, slot: usize, pend: &Pend) -> bool {
        if !is_token(self.slots[slot].latest) {
            return false;
        }
        // One pass that settles every sector and takes the latest of the valid ones.
        let base = slot * self.sectors;
        let valid = self.slots[slot].valid;
        let mut latest = 0;
        for (s, r) in self.ready[base..base + self.sectors].iter_mut().enumerate() {
            let v = pend.settled(*r);
            *r = v;
            latest = latest.max(std::hint::select_unpredictable(valid & 1 << s != 0, v, 0));
        }
        self.slots[slot].latest = latest;
        is_token(latest)
    }

    /// One field of every slot, in slot order, for tests.
    #[cfg(test)]
    fn column(&self, field: impl Fn(&Slot) -> u64) -> Vec<u64> {
        self.slots.iter().map(field).collect()
    }

    /// Whether `line` is resident (any sector), for tests.
    #[cfg(test)]
    pub(crate) fn contains(&self, line: u64) -> bool {
        self.find(line).is_some()
    }
}

/// Miss-status holding registers: a fixed number of outstanding line misses. A miss that finds
/// all busy starts when the earliest one returns.
///
/// Inside a round (memory/pending.rs) the earliest return may be a token's: the table then
/// hands its entries to a replay in `Pend`, which records the misses and releases until the
/// values are known and gives each miss the send cycle this table would have.
#[derive(Debug, Clone)]
pub(crate) struct Mshrs {
    capacity: usize,
    /// Which of the SM's replays this table uses.
    table: usize,
    /// Release cycles (or tokens, which sort last) of busy entries (min-heap); empty while
    /// replaying.
    busy: BinaryHeap<Reverse<u64>>,
}

impl Mshrs {
    pub(crate) fn new(capacity: u32, table: usize) -> Self {
        Mshrs {
            capacity: capacity.max(1) as usize,
            table,
            busy: BinaryHeap::new(),
        }
    }

    /// The cycle (≥ `now`) at which a new miss can be sent, or a token for it; the caller then
    /// calls [`Mshrs::occupy`] with its return cycle.
    pub(crate) fn acquire(&mut self, now: u64, pend: &mut Pend) -> u64 {
        if !pend.replaying(self.table) {
            self.forget_released(now);
            if self.busy.len() < self.capacity {
                return now;
            }
            if let Some(m) = self.earliest_known(pend.horizon) {
                self.busy.pop();
                return m.max(now);
            }
            pend.replay_begin(self.table, self.capacity, self.busy.drain().map(|r| r.0));
        }
        pend.replay_acquire(self.table, now)
    }

    /// Until when a miss at `now` would find every entry busy: `None` while one is free. The
    /// earliest release where it is known; otherwise the horizon, which no unknown release
    /// precedes (every token here is an answer from below, and a replay holds only those and
    /// cycles past the horizon), so the caller asks again once the values are in. Always
    /// later than `now`, which is before the horizon.
    pub(crate) fn full_until(&mut self, now: u64, pend: &Pend) -> Option<u64> {
        if pend.replaying(self.table) {
            return Some(pend.horizon);
        }
        self.forget_released(now);
        if self.busy.len() < self.capacity {
            return None;
        }
        Some(self.earliest_known(pend.horizon).unwrap_or(pend.horizon))
    }

    /// Drops the entries released by `now`.
    fn forget_released(&mut self, now: u64) {
        while let Some(&Reverse(t)) = self.busy.peek() {
            if t <= now {
                self.busy.pop();
            } else {
                break;
            }
        }
    }

    /// The earliest release, where it is known: the smallest cycle when no token is open or it
    /// is not later than the horizon (so before any token's value).
    fn earliest_known(&self, horizon: u64) -> Option<u64> {
        let &Reverse(m) = self.busy.peek()?;
        (!is_token(m) && (m <= horizon || !self.busy.iter().any(|r| is_token(r.0)))).then_some(m)
    }

    pub(crate) fn occupy(&mut self, until: u64, pend: &mut Pend) {
        if pend.replaying(self.table) {
            pend.replay_push(self.table, until);
        } else {
            self.busy.push(Reverse(until));
        }
    }

    /// Replaces resolved tokens among the release cycles by their values, and takes the
    /// entries back from a replay whose values are all known.
    pub(crate) fn patch(&mut self, pend: &mut Pend) {
        if pend.replaying(self.table) {
            pend.replay_end(self.table, &mut self.busy);
        } else if self.busy.iter().any(|r| is_token(r.0)) {
            let busy = std::mem::take(&mut self.busy);
            self.busy = busy
                .into_iter()
                .map(|Reverse(r)| Reverse(pend.settled(r)))
                .collect();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sector's arrival where the sector is valid, `None` where not.
    fn valid_arrivals(c: &Cache) -> Vec<Option<u64>> {
        (0..c.ready.len())
            .map(|i| {
                (c.slots[i / c.sectors].valid >> (i % c.sectors) & 1 == 1).then_some(c.ready[i])
            })
            .collect()
    }

    fn cfg(size: u32, ways: u32, replacement: Replacement) -> CacheConfig {
        CacheConfig {
            size_bytes: size,
            line_bytes: 128,
            sector_bytes: 32,
            ways,
            latency_cycles: 1,
            replacement,
            mshrs: 4,
            miss_line_cycles: None,
        }
    }

    proptest::proptest! {
        /// A lookup answers as a walk over the line's sectors does (arrived: a hit; in flight:
        /// pending, with the latest arrival; absent: a miss), also where every valid sector
        /// has arrived and the walk is skipped, over fills of lines of one two-way set, looked up
        /// before, during and after their flights. (A token is above every cycle, so a line
        /// with one in flight always takes the walk.)
        #[test]
        fn a_lookup_answers_as_the_walk_over_the_sectors(
            ops in proptest::collection::vec(
                (0u64..5, 1u8..16, 0u64..50, 0u64..60, 1u8..16),
                1..60,
            ),
        ) {
            let mut p = Pend::default();
            let mut c = Cache::new(&cfg(1024, 2, Replacement::Lru));
            let mut now = 0;
            for &(line, mask, flight, later, probe) in &ops {
                c.fill(line, mask, now + flight, now, false, &mut p);
                now += later;
                let Some(slot) = c.find(line) else {
                    proptest::prop_assert!(false, "line {line} not resident after its fill");
                    return Ok(());
                };
                let valid = c.slots[slot].valid;
                let (hit, pending, pending_ready) = c.walk(slot, valid & probe, now, &mut p);
                let lk = c.lookup(line, probe, now, &mut p);
                proptest::prop_assert_eq!(
                    (lk.slot, lk.hit, lk.pending, lk.pending_ready, lk.miss),
                    (Some(slot), hit, pending, pending_ready, probe & !valid)
                );
            }
        }

        /// A cache whose sets keep their ways in order of age evicts what the scan of every way
        /// evicts, over any sequence of lookups and fills of lines crowding two 64-way sets at
        /// advancing cycles, with lines still in flight at many fills (LRU and FIFO).
        #[test]
        fn the_ways_in_order_of_age_choose_the_victim_the_scan_chooses(
            ops in proptest::collection::vec(
                (0u64..300, 1u8..16, 0u64..60, 0u64..4, proptest::bool::ANY),
                1..400,
            ),
            lru in proptest::bool::ANY,
        ) {
            let replacement = if lru { Replacement::Lru } else { Replacement::Fifo };
            let mut p = Pend::default();
            let mut aged = Cache::new(&cfg(128 * 64 * 2, 64, replacement));
            proptest::prop_assert!(aged.ages.is_some());
            let mut scanned = aged.clone();
            scanned.ages = None;
            let mut now = 0;
            for &(line, mask, flight, step, look) in &ops {
                now += step;
                let mut evicted = Vec::new();
                for c in [&mut aged, &mut scanned] {
                    evicted.push(if look {
                        let lk = c.lookup(line, mask, now, &mut p);
                        (lk.miss != 0).then(|| c.fill_missed(&lk, now + flight, now, &mut p))
                    } else {
                        Some(c.fill(line, mask, now + flight, now, false, &mut p))
                    });
                }
                proptest::prop_assert_eq!(evicted[0], evicted[1]);
                proptest::prop_assert_eq!(aged.column(|s| s.tag), scanned.column(|s| s.tag));
            }
        }

        /// A lookup through the fingerprints finds the way that a scan of the set's tags finds,
        /// for any line after any fills, on caches of 64, 24 and 12 ways (whole words of
        /// fingerprints, and a word with a tail). Two sets of 2,000 lines share many
        /// fingerprints among the ways, so candidates that are not the line are checked too.
        #[test]
        fn the_fingerprints_find_the_way_the_scan_of_tags_finds(
            fills in proptest::collection::vec((0u64..2_000, 1u8..16), 1..300),
            probes in proptest::collection::vec(0u64..2_000, 1..40),
            ways in proptest::sample::select(vec![64u32, 24, 12]),
        ) {
            let mut p = Pend::default();
            let mut c = Cache::new(&cfg(128 * ways * 2, ways, Replacement::Lru));
            let scan = |c: &Cache, line: u64| {
                let range = c.set_range(line);
                let start = range.start;
                c.slots[range].iter().position(|s| s.tag == line + 1).map(|i| start + i)
            };
            for (now, &(line, mask)) in fills.iter().enumerate() {
                c.fill(line, mask, now as u64 + 5, now as u64, false, &mut p);
                for &probe in probes.iter().chain([&line]) {
                    proptest::prop_assert_eq!(c.find(probe), scan(&c, probe));
                }
            }
        }

        /// Patching the slots whose arrival became a token leaves every arrival what patching
        /// every slot leaves, over fills at cycles and at tokens answered a few at a time,
        /// with lines evicted while they wait.
        #[test]
        fn patching_the_slots_with_tokens_is_patching_every_slot(
            ops in proptest::collection::vec(
                (0u64..24, 1u8..16, proptest::option::of(0u64..100), proptest::bool::weighted(0.2)),
                1..200,
            ),
        ) {
            let mut p = Pend::default();
            let mut listed = Cache::new(&cfg(128 * 4 * 2, 4, Replacement::Lru));
            let mut every = listed.clone();
            let mut open = Vec::new();
            for (now, &(line, mask, after, answer)) in ops.iter().enumerate() {
                let now = now as u64;
                let ready = after.map_or_else(|| p.given(), |d| now + d);
                if is_token(ready) {
                    open.push(ready);
                }
                listed.fill(line, mask, ready, now, false, &mut p);
                every.fill(line, mask, ready, now, false, &mut p);
                if answer {
                    for t in open.drain(..) {
                        p.give(t, now + 7);
                    }
                    p.evaluate();
                    listed.patch(&p);
                    // Every slot, as the patch visited them before it kept its list.
                    for slot in 0..every.slots.len() {
                        every.settle(slot, &p);
                    }
                    // Each cache's fills made their own tokens of `max`, so the sectors no
                    // longer valid may hold different, stale ones: the valid ones are compared.
                    proptest::prop_assert_eq!(valid_arrivals(&listed), valid_arrivals(&every));
                    proptest::prop_assert_eq!(listed.column(|s| s.latest), every.column(|s| s.latest));
                    for slot in 0..listed.slots.len() {
                        let latest = listed.slots[slot].latest;
                        proptest::prop_assert_eq!(latest, listed.latest_of(slot));
                    }
                }
            }
        }

        /// `mark`, which marks in fixed steps a fill of sectors not yet valid and a fill where
        /// every value is a cycle, leaves every valid sector's arrival and the slot's latest as
        /// the general marking does, once every token's value is known. Over any sequence of
        /// fills (an arrival cycle, or a token answered later with any cycle) of three lines of
        /// one two-way set, so that evicted lines leave stale arrivals behind. It keeps the
        /// slot's latest the latest of its valid sectors and lists a slot whose latest became
        /// a token.
        #[test]
        fn marking_in_fixed_steps_is_the_general_marking(
            fills in proptest::collection::vec(
                (
                    proptest::sample::select(vec![3u64, 7, 11]),
                    1u8..16,
                    proptest::option::weighted(0.7, 0u64..1000),
                    0u64..1000,
                    proptest::bool::ANY,
                    proptest::bool::weighted(0.3),
                ),
                1..24,
            ),
        ) {
            let mut p = Pend::default();
            let mut a = Cache::new(&cfg(1024, 2, Replacement::Lru));
            let mut b = a.clone();
            let mut open = Vec::new();
            for &(line, mask, after, value, dirty, answer) in &fills {
                let ready = after.unwrap_or_else(|| p.given());
                if is_token(ready) {
                    open.push((ready, value));
                }
                let (slot, _) = a.place(a.find(line), line, 0);
                a.mark(slot, mask, ready, dirty, &mut p);
                let (slot_b, _) = b.place(b.find(line), line, 0);
                let was_valid = b.slots[slot_b].valid;
                b.slots[slot_b].valid |= mask;
                if dirty {
                    b.slots[slot_b].dirty |= mask;
                }
                b.mark_tokens(slot_b, mask, was_valid, ready, &mut p);
                proptest::prop_assert_eq!(slot, slot_b);
                let latest = a.slots[slot].latest;
                proptest::prop_assert_eq!(latest, a.latest_of(slot));
                proptest::prop_assert!(!is_token(latest) || a.tokened.contains(&(slot as u32)));
                if open.is_empty() || answer {
                    for (t, value) in open.drain(..) {
                        p.give(t, value);
                    }
                    p.evaluate();
                    for c in [&mut a, &mut b] {
                        for slot in 0..c.slots.len() {
                            c.settle(slot, &p);
                        }
                    }
                    proptest::prop_assert_eq!(valid_arrivals(&a), valid_arrivals(&b));
                    proptest::prop_assert_eq!(a.column(|s| s.latest), b.column(|s| s.latest));
                    proptest::prop_assert!(a.column(|s| s.latest).iter().all(|&t| !is_token(t)));
                }
            }
        }
    }

    #[test]
    fn miss_then_hit_then_sector_miss() {
        let mut p = Pend::default();
        let mut c = Cache::new(&cfg(1024, 2, Replacement::Lru));
        let l = c.lookup(5, 0b0001, 0, &mut p);
        assert_eq!((l.slot, l.miss), (None, 0b0001));
        assert!(c.fill(5, 0b0001, 10, 0, false, &mut p).is_none());
        let l = c.lookup(5, 0b0011, 20, &mut p);
        assert_eq!((l.hit, l.miss, l.pending), (0b0001, 0b0010, 0));
    }

    #[test]
    fn in_flight_sector_is_a_merge_with_its_arrival_time() {
        let mut p = Pend::default();
        let mut c = Cache::new(&cfg(1024, 2, Replacement::Lru));
        c.fill(7, 0b1111, 300, 0, false, &mut p);
        let l = c.lookup(7, 0b0100, 50, &mut p);
        assert_eq!(
            (l.hit, l.pending, l.pending_ready, l.miss),
            (0, 0b0100, 300, 0)
        );
        let l = c.lookup(7, 0b0100, 300, &mut p);
        assert_eq!((l.hit, l.pending), (0b0100, 0));
    }

    #[test]
    fn lru_evicts_least_recently_used_fifo_evicts_oldest_fill() {
        // 2 ways × 4 sets: lines 0, 4, 8 share set 0.
        for (policy, expect_evicted) in [(Replacement::Lru, 4), (Replacement::Fifo, 0)] {
            let mut p = Pend::default();
            let mut c = Cache::new(&cfg(1024, 2, policy));
            c.fill(0, 1, 1, 1, false, &mut p);
            c.fill(4, 1, 2, 2, false, &mut p);
            c.lookup(0, 1, 3, &mut p); // touch line 0: LRU keeps it, FIFO does not care
            let ev = c.fill(8, 1, 4, 4, false, &mut p).unwrap();
            assert_eq!(ev.line, expect_evicted, "{policy:?}");
            assert!(c.contains(8));
        }
    }

    #[test]
    fn lines_in_flight_are_not_preferred_victims() {
        let mut p = Pend::default();
        let mut c = Cache::new(&cfg(1024, 2, Replacement::Lru));
        c.fill(0, 1, 1000, 0, false, &mut p); // older but still in flight at cycle 10
        c.fill(4, 1, 5, 1, false, &mut p);
        let ev = c.fill(8, 1, 50, 10, false, &mut p).unwrap();
        assert_eq!(ev.line, 4);
    }

    #[test]
    fn a_line_waiting_for_a_token_is_in_flight_until_patched_with_its_value() {
        // 2 ways × 4 sets: lines 0, 4, 8 share set 0.
        let mut p = Pend::default();
        let mut c = Cache::new(&cfg(1024, 2, Replacement::Lru));
        let answer = p.given();
        c.fill(0, 1, answer, 0, false, &mut p); // arrival not known yet
        c.fill(4, 0b0011, 5, 1, false, &mut p);
        c.fill(4, 0b0100, 2000, 2, false, &mut p); // one sector of line 4 in flight till 2000
        c.lookup(0, 1, 3, &mut p); // line 4 is now the least recently used
        // both in flight at cycle 10: the least recently used goes
        assert_eq!(c.clone().fill(8, 1, 50, 10, false, &mut p).unwrap().line, 4);
        // line 0's arrival known (3) and patched in: it is idle at 10, line 4 is not
        p.give(answer, 3);
        p.evaluate();
        c.patch(&p);
        assert_eq!(c.clone().fill(8, 1, 50, 10, false, &mut p).unwrap().line, 0);
        // both idle at 2000: the least recently used again
        assert_eq!(c.fill(8, 1, 50, 2000, false, &mut p).unwrap().line, 4);
    }

    #[test]
    fn refilling_a_sector_in_flight_keeps_the_later_arrival() {
        let mut p = Pend::default();
        let mut c = Cache::new(&cfg(1024, 2, Replacement::Lru));
        c.fill(3, 0b0001, 500, 0, false, &mut p);
        c.fill(3, 0b0001, 100, 10, true, &mut p);
        let l = c.lookup(3, 0b0001, 200, &mut p);
        assert_eq!((l.pending, l.pending_ready), (0b0001, 500));
    }

    #[test]
    fn dirty_sectors_travel_with_the_evicted_line() {
        let mut p = Pend::default();
        let mut c = Cache::new(&cfg(256, 1, Replacement::Lru)); // 2 sets × 1 way
        c.fill(0, 0b0110, 1, 1, true, &mut p);
        let ev = c.fill(2, 1, 2, 2, false, &mut p).unwrap();
        assert_eq!(
            ev,
            Evicted {
                line: 0,
                dirty: 0b0110
            }
        );
    }

    #[test]
    fn mshrs_delay_a_miss_when_all_are_busy() {
        let mut p = Pend::default();
        let mut m = Mshrs::new(2, 0);
        assert_eq!(m.acquire(0, &mut p), 0);
        m.occupy(100, &mut p);
        assert_eq!(m.acquire(1, &mut p), 1);
        m.occupy(150, &mut p);
        assert_eq!(m.acquire(2, &mut p), 100); // waits for the first to return
        m.occupy(300, &mut p);
        assert_eq!(m.acquire(400, &mut p), 400); // all returned
    }
}
