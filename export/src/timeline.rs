//! Timelines shared by the CLOG2, Chrome and OTF2 writers: a first pass over the warp headers
//! ([`Layout::scan`]: each SM's earliest kernel-begin clock, the lines in use, start order), each
//! warp's events in aligned time ([`WarpEvents`]), and the time-ordered k-way merge of all warps'
//! events ([`Merge`]) that CLOG2 needs.
//!
//! Why a merge and not a sort: CLOG2 wants every event of every timeline in non-decreasing time,
//! and a trace may hold 10⁸ records. Each warp's own events are already in time order (the warp
//! logs its accesses in program order), so a k-way merge over per-warp cursors with a
//! `BinaryHeap` needs one small read buffer per warp. Warps are opened lazily, when the merge's
//! clock reaches their kernel begin, so only warps whose lifetimes overlap are open at once (on
//! a GPU: the resident warps), not every warp of the grid.

use crate::error::ExportError;
use crate::options::TimelineMapping;
use crate::source::{RecordStream, TraceSource};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use trace::{Record, WarpTrace};

/// What the header pass learns about a launch.
#[derive(Debug, Clone, Default)]
pub(crate) struct Layout {
    /// Earliest kernel-begin clock of each SM: subtracted from that SM's clocks, because SM
    /// clocks are not synchronised with one another.
    pub sm_base: BTreeMap<u32, u64>,
    /// `(aligned begin, warp index)` of every warp, sorted: the order in which the merge opens them.
    pub starts: Vec<(u64, u32)>,
    /// `(rank, thread)` lines in use.
    pub lines: BTreeSet<(u64, u64)>,
    /// Each warp's line, by warp index.
    pub line_of: Vec<(u64, u64)>,
    pub warps: u64,
    pub dropped: u64,
}

impl Layout {
    /// Reads every warp header once (no records).
    pub fn scan<S: TraceSource + ?Sized>(
        src: &S,
        mapping: TimelineMapping,
    ) -> Result<Layout, ExportError> {
        let n = src.warp_count();
        // Warp indices travel as u32 in the merge heap.
        u32::try_from(n).map_err(|_| ExportError::TooLarge {
            format: "timeline",
            what: "warp count",
            value: n as u64,
            max: u32::MAX as u64,
        })?;
        let mut raw = Vec::with_capacity(n);
        let mut layout = Layout {
            line_of: Vec::with_capacity(n),
            ..Layout::default()
        };
        for i in 0..n {
            let (h, _) = src.open_warp(i, 64)?;
            let base = layout.sm_base.entry(h.sm.0).or_insert(h.begin.0);
            *base = (*base).min(h.begin.0);
            let line = mapping.line(src.launch(), &h);
            layout.lines.insert(line);
            layout.line_of.push(line);
            layout.dropped += h.dropped as u64;
            raw.push((h.begin.0, h.sm.0));
        }
        layout.starts = raw
            .into_iter()
            .enumerate()
            .map(|(i, (begin, sm))| (begin.saturating_sub(layout.base(sm)), i as u32))
            .collect();
        layout.starts.sort_unstable();
        layout.warps = n as u64;
        Ok(layout)
    }

    /// The aligned-clock origin of an SM.
    pub fn base(&self, sm: u32) -> u64 {
        self.sm_base.get(&sm).copied().unwrap_or(0)
    }
}

/// One event of a warp's timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ev {
    /// Kernel begin: the warp's lifetime starts.
    LifeBegin,
    /// An access starts. `anomaly`: its clock wrapped or it starts before the warp's previous
    /// event, so it is drawn at a corrected time.
    AccessBegin {
        rec: Record,
        anomaly: bool,
    },
    AccessEnd {
        rec: Record,
        anomaly: bool,
    },
    /// The log had no room for `n` records (placed after the last logged record).
    Dropped {
        n: u32,
    },
    /// Kernel end.
    LifeEnd,
}

/// An event with its aligned clock (cycles since its SM's earliest kernel begin) and line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimedEvent {
    pub cycles: u64,
    pub rank: u64,
    pub thread: u64,
    pub warp: u32,
    pub header: WarpHeader,
    pub ev: Ev,
}

/// The header fields events carry (WarpTrace without its vectors, so it is `Copy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WarpHeader {
    pub block: [u32; 3],
    pub warp: u32,
    pub global_warp: u32,
}

enum Phase {
    Begin,
    Records,
    Dropped,
    End,
    Done,
}

/// Turns one warp's records into its events, in non-decreasing aligned time: a record that
/// starts before the previous event is moved to the previous event's time (keeping its
/// duration; a wrapped record gets duration 0) and flagged as an anomaly.
pub(crate) struct WarpEvents<'a> {
    header: WarpTrace,
    short: WarpHeader,
    rank: u64,
    thread: u64,
    base: u64,
    index: u32,
    records: RecordStream<'a>,
    running: u64,
    pending_end: Option<(u64, Ev)>,
    phase: Phase,
}

impl<'a> WarpEvents<'a> {
    pub fn new(
        header: WarpTrace,
        records: RecordStream<'a>,
        line: (u64, u64),
        base: u64,
        index: u32,
    ) -> Self {
        WarpEvents {
            short: WarpHeader {
                block: header.block,
                warp: header.warp,
                global_warp: header.global_warp,
            },
            header,
            rank: line.0,
            thread: line.1,
            base,
            index,
            records,
            running: 0,
            pending_end: None,
            phase: Phase::Begin,
        }
    }

    fn aligned(&self, cycles: u64) -> u64 {
        cycles.saturating_sub(self.base)
    }

    fn timed(&self, cycles: u64, ev: Ev) -> TimedEvent {
        TimedEvent {
            cycles,
            rank: self.rank,
            thread: self.thread,
            warp: self.index,
            header: self.short,
            ev,
        }
    }

    pub fn next_event(&mut self) -> Result<Option<TimedEvent>, ExportError> {
        loop {
            match self.phase {
                Phase::Begin => {
                    self.running = self.aligned(self.header.begin.0);
                    self.phase = Phase::Records;
                    return Ok(Some(self.timed(self.running, Ev::LifeBegin)));
                }
                Phase::Records => {
                    if let Some((t, ev)) = self.pending_end.take() {
                        return Ok(Some(self.timed(t, ev)));
                    }
                    match self.records.next().transpose()? {
                        Some(rec) => {
                            let at = self.aligned(rec.start.0);
                            let start = at.max(self.running);
                            let end = start.saturating_add(rec.duration().0);
                            let anomaly = rec.wrapped() || start != at;
                            self.running = end;
                            self.pending_end = Some((end, Ev::AccessEnd { rec, anomaly }));
                            return Ok(Some(self.timed(start, Ev::AccessBegin { rec, anomaly })));
                        }
                        None => self.phase = Phase::Dropped,
                    }
                }
                Phase::Dropped => {
                    self.phase = Phase::End;
                    if self.header.dropped > 0 {
                        let n = self.header.dropped;
                        return Ok(Some(self.timed(self.running, Ev::Dropped { n })));
                    }
                }
                Phase::End => {
                    self.phase = Phase::Done;
                    let t = self.aligned(self.header.end.0).max(self.running);
                    return Ok(Some(self.timed(t, Ev::LifeEnd)));
                }
                Phase::Done => return Ok(None),
            }
        }
    }
}

/// `time · 2⁶⁴ + warp index · 2³² + slot`: one integer comparison orders by time, then by warp
/// (the stable tie-break), which makes the heap's sift-downs cheaper than comparing tuples.
/// Slots are below the warp count, which [`Layout::scan`] checked fits a u32.
fn heap_key(time: u64, index: u32, slot: usize) -> u128 {
    ((time as u128) << 64) | ((index as u128) << 32) | (slot as u32 as u128)
}

/// The k-way merge of all warps' events in non-decreasing aligned time; ties go to the warp
/// with the lower index, then to the warp's own order, so the output is deterministic.
pub(crate) struct Merge<'a, S: TraceSource + ?Sized> {
    src: &'a S,
    layout: &'a Layout,
    mapping: TimelineMapping,
    buffer_bytes: usize,
    max_files: usize,
    /// Open warps streamed from a file (the others were loaded whole).
    files_open: usize,
    /// Per slot: whether its warp holds a file open.
    file_backed: Vec<bool>,
    /// Next entry of `layout.starts` to open.
    next_start: usize,
    /// Each open warp's next event as a [`heap_key`]: time, then warp index, then slot.
    heap: BinaryHeap<Reverse<u128>>,
    /// Open warps and their next event, by slot; slots are reused so that the vectors stay as
    /// long as the most warps open at once, and a warp never moves while it is open.
    warps: Vec<Option<WarpEvents<'a>>>,
    pending: Vec<Option<TimedEvent>>,
    free: Vec<usize>,
    /// Most warps open at once (for the memory bound).
    pub peak_open: usize,
}

impl<'a, S: TraceSource + ?Sized> Merge<'a, S> {
    pub fn new(
        src: &'a S,
        layout: &'a Layout,
        mapping: TimelineMapping,
        buffer_bytes: usize,
        max_files: usize,
    ) -> Self {
        Merge {
            src,
            layout,
            mapping,
            buffer_bytes,
            max_files,
            files_open: 0,
            file_backed: Vec::new(),
            next_start: 0,
            heap: BinaryHeap::new(),
            warps: Vec::new(),
            pending: Vec::new(),
            free: Vec::new(),
            peak_open: 0,
        }
    }

    fn open(&mut self, index: u32) -> Result<(), ExportError> {
        let streamed = self.files_open < self.max_files;
        let (header, records) = if streamed {
            self.src.open_warp(index as usize, self.buffer_bytes)?
        } else {
            self.src.load_warp(index as usize)?
        };
        let line = self.mapping.line(self.src.launch(), &header);
        let base = self.layout.base(header.sm.0);
        let mut events = WarpEvents::new(header, records, line, base, index);
        if let Some(first) = events.next_event()? {
            let slot = match self.free.pop() {
                Some(s) => s,
                None => {
                    self.warps.push(None);
                    self.pending.push(None);
                    self.file_backed.push(false);
                    self.warps.len() - 1
                }
            };
            self.heap.push(Reverse(heap_key(first.cycles, index, slot)));
            self.warps[slot] = Some(events);
            self.pending[slot] = Some(first);
            self.file_backed[slot] = streamed;
            self.files_open += streamed as usize;
            self.peak_open = self.peak_open.max(self.heap.len());
        }
        Ok(())
    }

    pub fn next_event(&mut self) -> Result<Option<TimedEvent>, ExportError> {
        // Open every warp that begins no later than the earliest pending event, so that its
        // first event takes part in the comparison.
        while let Some(&(begin, index)) = self.layout.starts.get(self.next_start) {
            let due = match self.heap.peek() {
                Some(Reverse(key)) => begin <= (key >> 64) as u64,
                None => true,
            };
            if !due {
                break;
            }
            self.next_start += 1;
            self.open(index)?;
        }
        let Some(mut top) = self.heap.peek_mut() else {
            return Ok(None);
        };
        let Reverse(key) = *top;
        let (index, slot) = ((key >> 32) as u32, key as u32 as usize);
        let (Some(event), Some(events)) = (self.pending[slot].take(), self.warps[slot].as_mut())
        else {
            return Err(ExportError::parse(
                "merge",
                format!("slot {slot}"),
                "empty heap slot",
            ));
        };
        match events.next_event()? {
            Some(next) => {
                // Replacing the top in place costs one sift-down instead of a pop and a push.
                *top = Reverse(heap_key(next.cycles, index, slot));
                self.pending[slot] = Some(next);
            }
            None => {
                std::collections::binary_heap::PeekMut::pop(top);
                self.warps[slot] = None;
                self.files_open -= self.file_backed[slot] as usize;
                self.file_backed[slot] = false;
                self.free.push(slot);
            }
        }
        Ok(Some(event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::{Cycles, Dim3, LaunchInfo, SmId, Trace};

    fn rec(seq: u32, start: u64, end: u64) -> Record {
        Record {
            site: 0,
            seq,
            start: Cycles(start),
            end: Cycles(end),
        }
    }

    fn warp(i: u32, sm: u32, begin: u64, end: u64, records: Vec<Record>) -> WarpTrace {
        let mut w = WarpTrace::new([i, 0, 0], 0, i, SmId(sm));
        w.begin = Cycles(begin);
        w.end = Cycles(end);
        w.records = records;
        w
    }

    #[test]
    fn merge_is_time_ordered_and_aligned_per_sm() {
        let launch = LaunchInfo::new("k", Dim3::new(3, 1, 1), Dim3::new(32, 1, 1));
        let t = Trace {
            launch,
            warps: vec![
                warp(
                    0,
                    0,
                    1000,
                    1100,
                    vec![rec(0, 1010, 1050), rec(1, 1060, 1090)],
                ),
                warp(1, 1, 5000, 5100, vec![rec(0, 5005, 5020)]),
                warp(2, 0, 1200, 1300, vec![rec(0, 1210, 1220)]),
            ],
        };
        let layout = Layout::scan(&t, TimelineMapping::SmSlot).unwrap();
        assert_eq!(layout.base(0), 1000);
        assert_eq!(layout.base(1), 5000);
        let mut m = Merge::new(&t, &layout, TimelineMapping::SmSlot, 64, 8);
        let mut out = Vec::new();
        while let Some(e) = m.next_event().unwrap() {
            out.push(e);
        }
        // With one open file allowed, the other warps are loaded whole: same events.
        let mut capped = Merge::new(&t, &layout, TimelineMapping::SmSlot, 64, 1);
        let mut again = Vec::new();
        while let Some(e) = capped.next_event().unwrap() {
            again.push(e);
        }
        assert_eq!(again, out);
        // 3 warps × (begin + end) + 4 records × 2
        assert_eq!(out.len(), 14);
        assert!(out.windows(2).all(|p| p[0].cycles <= p[1].cycles));
        // SM1's warp is aligned to its own begin: its first access starts at cycle 5.
        let sm1: Vec<u64> = out
            .iter()
            .filter(|e| e.rank == 1)
            .map(|e| e.cycles)
            .collect();
        assert_eq!(sm1, vec![0, 5, 20, 100]);
        // Warp 2 begins at aligned 200, after warp 0 ended: never both open.
        assert_eq!(m.peak_open, 2);
    }

    #[test]
    fn backwards_and_wrapped_records_are_moved_and_flagged() {
        let launch = LaunchInfo::new("k", Dim3::new(1, 1, 1), Dim3::new(32, 1, 1));
        let t = Trace {
            launch,
            warps: vec![warp(
                0,
                0,
                0,
                50,
                vec![rec(0, 10, 40), rec(1, 30, 35), rec(2, 60, 45)],
            )],
        };
        let layout = Layout::scan(&t, TimelineMapping::SmSlot).unwrap();
        let mut m = Merge::new(&t, &layout, TimelineMapping::SmSlot, 64, 0);
        let mut out = Vec::new();
        while let Some(e) = m.next_event().unwrap() {
            out.push((e.cycles, e.ev));
        }
        let flags: Vec<(u64, bool)> = out
            .iter()
            .filter_map(|(t, e)| match e {
                Ev::AccessBegin { anomaly, .. } => Some((*t, *anomaly)),
                _ => None,
            })
            .collect();
        // rec 1 starts at 30 < 40 → moved to 40 (duration 5 kept); rec 2 wrapped → duration 0.
        assert_eq!(flags, vec![(10, false), (40, true), (60, true)]);
        assert_eq!(out.last().unwrap(), &(60, Ev::LifeEnd));
    }
}
