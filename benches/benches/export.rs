//! Exporter throughput, records per second, for each format: a synthetic trace (16 SMs × 32 warp
//! slots × 2 waves × 100 records = 102 400 records) is written to a `trace.wst` store once, then
//! each writer streams it from disk into a sink that discards the bytes, so the figure covers
//! reading the store, the format's work and (for CLOG2) the time-ordered merge, not the disk.
//! OTF2's library writes its own files: its figure includes writing the archive to a temp
//! folder (not removing it), two files per location, so it is given twice: for this trace's 512
//! locations, and for the same number of records on 16 locations, which shows the cost per
//! record. Both are skipped, with a message, where the OTF2 library is not installed.
//!
//! Run: `cargo bench -p warpscope-benches --bench export`.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use export::{
    ExportError, ExportOptions, SyntheticTrace, write_chrome, write_clog2, write_otf2,
    write_records_csv, write_warps_csv,
};
use std::io::{Seek, SeekFrom, Write};
use trace::TraceReader;

/// Discards bytes but tracks the position, so the CLOG2 writer can seek back to its preamble.
#[derive(Default)]
struct Discard {
    pos: u64,
    len: u64,
}

impl Write for Discard {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pos += buf.len() as u64;
        self.len = self.len.max(self.pos);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Seek for Discard {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        self.pos = match to {
            SeekFrom::Start(p) => p,
            SeekFrom::End(d) => self.len.saturating_add_signed(d),
            SeekFrom::Current(d) => self.pos.saturating_add_signed(d),
        };
        Ok(self.pos)
    }
}

fn exporters(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(trace::TRACE_FILE_NAME);
    SyntheticTrace::new(16, 32, 2, 100)
        .write_store(&path)
        .expect("write synthetic store");
    let reader = TraceReader::open(&path).expect("open store");
    let opts = ExportOptions::default();
    let mut g = c.benchmark_group("export");
    g.throughput(Throughput::Elements(reader.record_count()));
    g.sample_size(10);
    g.bench_function("csv", |b| {
        b.iter(|| write_records_csv(&reader, Discard::default()).expect("csv"))
    });
    g.bench_function("warp-csv", |b| {
        b.iter(|| write_warps_csv(&reader, Discard::default()).expect("warp csv"))
    });
    g.bench_function("clog2", |b| {
        b.iter(|| write_clog2(&reader, Discard::default(), &opts).expect("clog2"))
    });
    g.bench_function("chrome", |b| {
        b.iter(|| write_chrome(&reader, Discard::default(), &opts).expect("chrome"))
    });
    // The same records on 16 locations (1 SM × 16 slots × 64 waves): OTF2's per-record cost,
    // without the files of 512 locations.
    let few = dir.path().join("few.wst");
    SyntheticTrace::new(1, 16, 64, 100)
        .write_store(&few)
        .expect("write synthetic store");
    let few = TraceReader::open(&few).expect("open store");
    for (name, src) in [("otf2", &reader), ("otf2-16-locations", &few)] {
        // Each iteration writes a fresh archive; the folder is removed outside the timing.
        let archive = || tempfile::tempdir_in(dir.path()).expect("temp dir");
        let probe = archive();
        match write_otf2(src, &probe.path().join("otf2"), &opts) {
            Err(e @ ExportError::Otf2Missing { .. }) => eprintln!("export/{name}: skipped: {e}"),
            first => {
                first.expect("otf2");
                g.bench_function(name, |b| {
                    b.iter_batched(
                        archive,
                        |tmp| {
                            write_otf2(src, &tmp.path().join("otf2"), &opts).expect("otf2");
                            tmp
                        },
                        BatchSize::PerIteration,
                    )
                });
            }
        }
    }
    g.finish();
}

criterion_group!(benches, exporters);
criterion_main!(benches);
