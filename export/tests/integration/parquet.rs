//! The Parquet writer end to end: every value of a small trace comes back from the file.

use trace::{
    Cycles, Dim3, LaunchInfo, ProbeMode, Record, RecordKind, Region, SiteInfo, SmId, Trace,
    TraceWriter, WarpTrace,
};

#[test]
fn parquet_round_trips_every_value() {
    use polars::prelude::*;
    let dir = tempfile::tempdir().unwrap();
    let launch = LaunchInfo::new("k", Dim3::new(2, 1, 1), Dim3::new(64, 1, 1))
        .with_probe(ProbeMode::Naive, RecordKind::Trace)
        .with_sites(vec![
            SiteInfo::new(0, "p[i]", Region::Global),
            SiteInfo::new(9, "tex", Region::Texture),
        ]);
    let mut warps = Vec::new();
    for i in 0..5u32 {
        let mut t = WarpTrace::new([i / 2, 1, 0], i % 2, i, SmId(i % 3));
        t.hw_warp = 7 + i;
        for k in 0..(i * 3) {
            // Two sites; one record per warp has a wrapped clock.
            let (start, end) = if k == 1 {
                (50, 10)
            } else {
                (100 * k as u64, 100 * k as u64 + 5 + k as u64)
            };
            t.records.push(Record {
                site: if k % 4 == 3 { 9 } else { 0 },
                seq: k,
                start: Cycles(start),
                end: Cycles(end),
            });
        }
        warps.push(t);
    }
    let tr = Trace { launch, warps };
    let path = dir.path().join("trace.wst");
    TraceWriter::write_all(&path, &tr).unwrap();
    let reader = trace::TraceReader::open(&path).unwrap();
    let out = dir.path().join("records.parquet");
    let n = export::write_parquet(&reader, &out).unwrap();
    assert_eq!(n, tr.record_count());
    let df = ParquetReader::new(std::fs::File::open(&out).unwrap())
        .finish()
        .unwrap();
    assert_eq!(df.height() as u64, n);
    let u32c = |name: &str| -> Vec<u32> {
        df.column(name)
            .unwrap()
            .u32()
            .unwrap()
            .into_no_null_iter()
            .collect()
    };
    let u64c = |name: &str| -> Vec<u64> {
        df.column(name)
            .unwrap()
            .u64()
            .unwrap()
            .into_no_null_iter()
            .collect()
    };
    let strc = |name: &str| -> Vec<String> {
        let ca = df.column(name).unwrap().str().unwrap();
        (0..ca.len())
            .map(|i| ca.get(i).unwrap().to_string())
            .collect()
    };
    let sites: Vec<u16> = df
        .column("site")
        .unwrap()
        .u16()
        .unwrap()
        .into_no_null_iter()
        .collect();
    let wrapped_ca = df.column("wrapped").unwrap().bool().unwrap();
    let wrapped: Vec<bool> = (0..wrapped_ca.len())
        .map(|i| wrapped_ca.get(i).unwrap())
        .collect();
    let (launch_c, bx, by, bz, warp, gw, sm, hw, seq) = (
        u32c("launch"),
        u32c("block_x"),
        u32c("block_y"),
        u32c("block_z"),
        u32c("warp"),
        u32c("global_warp"),
        u32c("sm"),
        u32c("hw_warp"),
        u32c("seq"),
    );
    let (start, end, dur) = (u64c("start"), u64c("end"), u64c("duration"));
    let (names, regions, modes) = (strc("site_name"), strc("region"), strc("mode"));
    let mut i = 0;
    for t in &tr.warps {
        for r in &t.records {
            assert_eq!(launch_c[i], 0);
            assert_eq!([bx[i], by[i], bz[i]], t.block);
            assert_eq!(
                (warp[i], gw[i], sm[i], hw[i]),
                (t.warp, t.global_warp, t.sm.0, t.hw_warp)
            );
            assert_eq!((sites[i], seq[i]), (r.site, r.seq));
            assert_eq!(
                (start[i], end[i], dur[i]),
                (r.start.0, r.end.0, r.duration().0)
            );
            assert_eq!(wrapped[i], r.wrapped());
            let (name, region) = if r.site == 0 {
                ("p[i]", "global")
            } else {
                ("tex", "texture")
            };
            assert_eq!((names[i].as_str(), regions[i].as_str()), (name, region));
            assert_eq!(modes[i], "naive");
            i += 1;
        }
    }
    assert_eq!(i as u64, n);
    assert!(wrapped.iter().any(|&w| w));
}
