//! The optional address recorder: per SM, the sequence of 32-byte sectors that global, local and
//! texture requests ask of the L1/texture level, in the order the memory model sees them.
//!
//! Why: working-set curves and LRU stack distances (analysis's `reuse` module) need the address
//! stream itself, not just hit counts. Off by default ([`crate::Emulator::set_record_addresses`]);
//! when off, the memory model pays one `Option` test per request and no result changes.
//!
//! Main types: [`AddressEvent`] (cycle, kind, sector address) and [`AddressKind`]. The sectors of
//! one request are recorded once each, in the order of their first lane (the coalescer merges
//! lanes of one sector into one sector request too). Shared, constant and parameter accesses are
//! not recorded: they never reach the L1/texture caches.
//!
//! ```
//! use emulator::{AddressEvent, AddressKind};
//! let e = AddressEvent { cycle: 10, kind: AddressKind::Texture, sector_addr: 0x1000 };
//! assert_eq!(e.sector_addr % 32, 0);
//! ```

use super::coalesce::{Lines, coalesce};
use super::{AccessKind, LoadPath, MemRequest, Space};
use serde::Serialize;

/// The sector unit the recorder reports: 32 bytes.
const SECTOR_SHIFT: u32 = 5;

/// What kind of request touched a sector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AddressKind {
    /// Global or local load through the L1.
    Load,
    /// Read-only load (`ld.global.nc`, `__ldg`).
    ReadOnlyLoad,
    /// Texture fetch (one per texel footprint sector).
    Texture,
    /// Store or atomic (global or local).
    Write,
}

/// One sector requested at the L1/texture level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AddressEvent {
    /// Cycle the request was issued.
    pub cycle: u64,
    pub kind: AddressKind,
    /// Byte address of the 32-byte sector (a multiple of 32).
    pub sector_addr: u64,
}

/// One SM's event list, filled by its memory path while recording is on.
#[derive(Debug, Clone, Default)]
pub(crate) struct AddressRecorder {
    pub events: Vec<AddressEvent>,
    /// Scratch: one request's distinct sectors, as the coalescer's lines of one sector each.
    sectors: Lines,
}

impl AddressRecorder {
    pub(crate) fn record(&mut self, now: u64, req: &MemRequest) {
        let kind = match (req.space, req.kind) {
            (Space::Texture, _) => AddressKind::Texture,
            (Space::Global | Space::Local, AccessKind::Load) if req.path == LoadPath::ReadOnly => {
                AddressKind::ReadOnlyLoad
            }
            (Space::Global | Space::Local, AccessKind::Load) => AddressKind::Load,
            (Space::Global | Space::Local, _) => AddressKind::Write,
            _ => return,
        };
        // A request's distinct sectors in order of first touch are the coalescer's lines when a
        // line is one sector long; its index finds a repeat in one probe, where searching the
        // request's events so far grew with the square of its sectors (2.7 % of the reuse
        // study's profile, from the sixth of its renders that record).
        coalesce(
            req.lanes,
            req.bytes_per_lane,
            SECTOR_SHIFT,
            SECTOR_SHIFT,
            &mut self.sectors,
        );
        self.events
            .extend(self.sectors.iter().map(|s| AddressEvent {
                cycle: now,
                kind,
                sector_addr: s.line << SECTOR_SHIFT,
            }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::QUAD;

    fn req(space: Space, kind: AccessKind, lanes: &[(u8, u64)]) -> MemRequest<'_> {
        MemRequest {
            space,
            kind,
            bytes_per_lane: 4,
            lanes,
            path: LoadPath::Cached,
            lookup_lanes: QUAD,
            scheduler: 0,
        }
    }

    #[test]
    fn one_event_per_distinct_sector_in_first_lane_order() {
        let mut r = AddressRecorder::default();
        let lanes = [(0, 64), (1, 68), (2, 0), (3, 30)];
        r.record(7, &req(Space::Global, AccessKind::Load, &lanes));
        let got: Vec<u64> = r.events.iter().map(|e| e.sector_addr).collect();
        // Lane 3 reads bytes 30..34: sectors 0 and 32.
        assert_eq!(got, vec![64, 0, 32]);
        assert!(r.events.iter().all(|e| e.cycle == 7));
    }

    #[test]
    fn shared_is_not_recorded_and_kinds_are_named() {
        let mut r = AddressRecorder::default();
        r.record(0, &req(Space::Shared, AccessKind::Load, &[(0, 0)]));
        assert!(r.events.is_empty());
        r.record(1, &req(Space::Texture, AccessKind::Load, &[(0, 0)]));
        r.record(2, &req(Space::Global, AccessKind::Store, &[(0, 0)]));
        let kinds: Vec<AddressKind> = r.events.iter().map(|e| e.kind).collect();
        assert_eq!(kinds, vec![AddressKind::Texture, AddressKind::Write]);
        // A sector seen in an earlier request is recorded again: reuse is what we measure.
        assert_eq!(r.events[1].sector_addr, 0);
    }
}
