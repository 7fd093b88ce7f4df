//! Measures `write_parquet` on a synthetic trace: records per second, and (with
//! `/usr/bin/time -v`) peak memory, which must stay bounded by one batch, not the trace size.
//!
//! `cargo run --release -p warpscope-export --example parquet_scale -- 10000000`

use std::time::Instant;
use trace::{
    Cycles, Dim3, LaunchInfo, ProbeMode, Record, RecordKind, Region, SiteInfo, SmId, WarpTrace,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(10_000_000);
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("trace.wst");
    let launch = LaunchInfo::new("d_render", Dim3::new(64, 64, 1), Dim3::new(16, 8, 1))
        .with_probe(ProbeMode::Fence, RecordKind::Trace)
        .with_sites(vec![
            SiteInfo::new(0, "volume sample", Region::Texture),
            SiteInfo::new(1, "transfer function", Region::Texture),
        ]);
    let per_warp = 1000u64;
    let mut w = trace::TraceWriter::create(&path, &launch)?;
    let mut written = 0u64;
    let mut g = 0u32;
    while written < n {
        let mut t = WarpTrace::new([g % 64, g / 64 % 64, 0], g % 4, g, SmId(g % 15));
        let k = per_warp.min(n - written);
        for i in 0..k {
            let start = i * 700 + (g as u64 % 97);
            t.records.push(Record {
                site: (i % 2) as u16,
                seq: i as u32,
                start: Cycles(start),
                end: Cycles(start + 300 + (i * 7919 % 400)),
            });
        }
        w.write_warp(&t)?;
        written += k;
        g += 1;
    }
    w.finish()?;
    let reader = trace::TraceReader::open(&path)?;
    let out = dir.path().join("records.parquet");
    let t0 = Instant::now();
    let rows = export::write_parquet(&reader, &out)?;
    let secs = t0.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(&out)?.len();
    println!(
        "{rows} records in {secs:.2} s: {:.2} M records/s, {:.1} MB parquet ({:.1} bytes/record)",
        rows as f64 / secs / 1e6,
        bytes as f64 / 1e6,
        bytes as f64 / rows as f64
    );
    Ok(())
}
