//! Bounded memory: exporting ~10⁶ records allocates a small, fixed amount, not memory
//! proportional to the trace, and the CLOG2 writer hands the sink whole blocks.

use crate::peak_heap_bytes;
use export::{
    ExportOptions, SyntheticTrace, TraceSource, write_chrome, write_clog2, write_records_csv,
};
use std::io::{Seek, SeekFrom, Write};

/// A sink that keeps only counts: total bytes, largest single write, current position.
#[derive(Default)]
struct CountingSink {
    bytes: u64,
    largest_write: usize,
    pos: u64,
}

impl Write for CountingSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.largest_write = self.largest_write.max(buf.len());
        self.pos += buf.len() as u64;
        self.bytes = self.bytes.max(self.pos);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Seek for CountingSink {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        self.pos = match to {
            SeekFrom::Start(p) => p,
            SeekFrom::End(d) => self.bytes.saturating_add_signed(d),
            SeekFrom::Current(d) => self.pos.saturating_add_signed(d),
        };
        Ok(self.pos)
    }
}

const LIMIT: usize = 8 << 20;

#[test]
fn a_million_records_export_in_bounded_memory() {
    // 16 SMs × 32 slots × 2 waves × 1000 records = 1 024 000 records.
    let synth = SyntheticTrace::new(16, 32, 2, 1000).with_dropped_every(100);
    let n = synth.record_count();
    assert!(n > 1_000_000);

    let mut sink = CountingSink::default();
    let (s, peak) =
        peak_heap_bytes(|| write_clog2(&synth, &mut sink, &ExportOptions::default()).unwrap());
    assert_eq!(s.records, n);
    assert_eq!(s.bytes, sink.bytes);
    // Access start (64 B) + end (32 B) per record: the output is ~100 MB …
    assert!(sink.bytes > 96 * n);
    // … written a block at a time, while the writer's heap stays a few MB.
    assert_eq!(sink.largest_write, 65536);
    assert!(peak < LIMIT, "CLOG2 writer peaked at {peak} heap bytes");

    let mut sink = CountingSink::default();
    let (s, peak) = peak_heap_bytes(|| write_records_csv(&synth, &mut sink).unwrap());
    assert_eq!(s.records, n);
    assert!(sink.bytes > 50 * n);
    assert!(peak < LIMIT, "CSV writer peaked at {peak} heap bytes");

    let mut sink = CountingSink::default();
    let (s, peak) =
        peak_heap_bytes(|| write_chrome(&synth, &mut sink, &ExportOptions::default()).unwrap());
    assert_eq!(s.records, n);
    assert!(sink.bytes > 150 * n);
    assert!(peak < LIMIT, "Chrome writer peaked at {peak} heap bytes");
}
