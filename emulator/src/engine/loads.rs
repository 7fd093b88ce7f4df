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
