//! The optional load timeline: for the warps asked for, each load's issue cycle and the cycle
//! its data reaches the destination register — the true access time that a probe's clock reads
//! can only bracket.
//!
//! Why: the emulator decides when every load's data arrives, so it can put the ground truth
//! beside a probe's reading (`instrument`'s truth module does the pairing). Off by default; when
//! off, an issue pays one test of a per-warp flag and no result changes.
//!
//! Global, constant and texture loads are recorded; shared, local and parameter loads are not:
//! a probe's own bookkeeping uses shared memory, spills are local, and neither is what a probe
//! site times. The data-return cycle of a load whose L2 answer is not known yet at issue is a
//! token (`memory/pending.rs`), replaced by its value when the SM takes the answers in.

use crate::memory::{Pend, is_token};
use serde::Serialize;

/// The memory a recorded load read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadSpace {
    Global,
    Constant,
    Texture,
}

/// One warp-level load of a recorded warp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LoadEvent {
    /// The warp's index in the grid: linear block index × warps per block + warp in block (the
    /// probe log's warp order).
    pub warp: u64,
    /// The load's instruction, as its index in the kernel's program: which copy of a load it is
    /// (a sampled probe's timed copy and bare copy are two).
    pub pc: u32,
    pub space: LoadSpace,
    /// The address the load's first active lane read (a texture fetch: its first texel's), so
    /// that a caller can tell its own buffers' reads from the kernel's.
    pub addr: u64,
    /// The SM cycle the load issued (what `%clock64` reads in that cycle).
    pub issue: u64,
    /// The SM cycle its data is in the destination register: an instruction reading it can
    /// issue from this cycle on.
    pub ready: u64,
}

impl LoadEvent {
    /// The true access time in cycles.
    pub fn cycles(&self) -> u64 {
        self.ready.saturating_sub(self.issue)
    }
}

/// One SM's recorded loads, and which of them still wait for a token's value.
#[derive(Debug, Default)]
pub(super) struct LoadLog {
    pub events: Vec<LoadEvent>,
    open: Vec<usize>,
}

impl LoadLog {
    pub(super) fn push(&mut self, e: LoadEvent) {
        if is_token(e.ready) {
            self.open.push(self.events.len());
        }
        self.events.push(e);
    }

    /// Replaces the tokens `pend` has values for (after `Pend::evaluate`, before it settles).
    pub(super) fn take_in(&mut self, pend: &Pend) {
        let events = &mut self.events;
        self.open.retain(|&i| {
            let e = &mut events[i];
            e.ready = pend.settled(e.ready);
            is_token(e.ready)
        });
    }

    /// Loads whose data-return cycle is still unknown.
    pub(super) fn unresolved(&self) -> usize {
        self.open.len()
    }
}

/// Which warps of the grid record their loads: sorted global warp indices.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadWarps(Vec<u64>);

impl LoadWarps {
    pub fn new(mut warps: Vec<u64>) -> LoadWarps {
        warps.sort_unstable();
        warps.dedup();
        LoadWarps(warps)
    }

    /// Whether no warp is chosen.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(super) fn has(&self, warp: u64) -> bool {
        self.0.binary_search(&warp).is_ok()
    }
}

/// Every SM's recorded loads, in (warp, issue) order. Each SM logs its loads as it issues them,
/// and a warp runs on one SM, so each warp's loads are already in issue order in its SM's log:
/// counted out by warp, keeping that order, they are sorted. Why not a sort: a frame records
/// hundreds of thousands of loads, and sorting them took 1.2–1.4 % of a quick frame's launch.
/// A sort still takes the logs whose warps are too far apart for a table of counts.
pub(super) fn in_warp_order(logs: Vec<Vec<LoadEvent>>) -> Vec<LoadEvent> {
    let Some(first) = logs.iter().flatten().next().copied() else {
        return Vec::new();
    };
    let n: usize = logs.iter().map(Vec::len).sum();
    let (lo, hi) = logs
        .iter()
        .flatten()
        .fold((first.warp, first.warp), |(lo, hi), e| {
            (lo.min(e.warp), hi.max(e.warp))
        });
    let span = usize::try_from(hi - lo).ok().filter(|&s| s <= 4 * n + 1024);
    let Some(span) = span else {
        let mut loads: Vec<LoadEvent> = logs.into_iter().flatten().collect();
        // A warp issues at most one instruction a cycle, so (warp, issue) orders them
        // completely.
        loads.sort_unstable_by_key(|e| (e.warp, e.issue));
        return loads;
    };
    // Where each warp's loads begin in the output.
    let mut at = vec![0usize; span + 2];
    for e in logs.iter().flatten() {
        at[(e.warp - lo) as usize + 1] += 1;
    }
    for w in 1..at.len() {
        at[w] += at[w - 1];
    }
    let mut out = vec![first; n];
    for e in logs.into_iter().flatten() {
        let slot = &mut at[(e.warp - lo) as usize];
        out[*slot] = e;
        *slot += 1;
    }
    debug_assert!(
        out.windows(2)
            .all(|p| (p[0].warp, p[0].issue) < (p[1].warp, p[1].issue)),
        "a warp's loads are not in issue order in its SM's log"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Logs whose warps each issue in order on one SM come out as a sort by (warp, issue)
        /// gives them, whether the warps are close (counted out) or far apart (sorted).
        #[test]
        fn loads_in_warp_order_are_the_sort_of_every_log(
            issues in proptest::collection::vec((0usize..4, 0u64..40, 1u64..5), 0..300),
            stride in prop_oneof![Just(1u64), Just(1u64 << 40)],
        ) {
            // Warp w runs on SM w % 4; each load issues some cycles after its warp's last.
            let mut logs = vec![Vec::new(); 4];
            let mut last = std::collections::HashMap::new();
            for (k, &(sm, w, gap)) in issues.iter().enumerate() {
                let warp = (w - w % 4 + sm as u64) * stride;
                let issue = last.get(&warp).copied().unwrap_or(0) + gap;
                last.insert(warp, issue);
                logs[sm].push(LoadEvent {
                    warp,
                    pc: k as u32,
                    space: LoadSpace::Global,
                    addr: 0,
                    issue,
                    ready: issue + 10,
                });
            }
            let mut sorted: Vec<LoadEvent> = logs.iter().flatten().copied().collect();
            sorted.sort_unstable_by_key(|e| (e.warp, e.issue));
            prop_assert_eq!(in_warp_order(logs), sorted);
        }
    }
}
