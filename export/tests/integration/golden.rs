//! Golden files: a small fixed trace exported to CLOG2, CSV and Chrome JSON must give exactly
//! the bytes in `tests/fixtures/golden.*`, so any change to an output format shows up in review.
//! Regenerate after an intended change with
//! `WARPSCOPE_BLESS=1 cargo test -p warpscope-export --test integration golden`.

use export::{ExportOptions, write_chrome, write_clog2, write_records_csv, write_warps_csv};
use std::io::Cursor;
use std::path::PathBuf;
use trace::{
    Cycles, Dim3, LaunchInfo, ProbeMode, Record, RecordKind, Region, SiteInfo, SmId, Trace,
    WarpTrace,
};

fn fixed_trace() -> Trace {
    let launch = LaunchInfo::new("render", Dim3::new(2, 1, 1), Dim3::new(64, 1, 1))
        .with_probe(ProbeMode::Auto, RecordKind::Trace)
        .with_sites(vec![
            SiteInfo::new(0, "tex3D(volume)", Region::Texture),
            SiteInfo::new(1, "d_output[i]", Region::Global),
        ])
        .with_clock(1401.0);
    let mut warps = Vec::new();
    for g in 0..4u32 {
        let mut w = WarpTrace::new([g / 2, 0, 0], g % 2, g, SmId(g % 2));
        w.hw_warp = g / 2;
        w.begin = Cycles(10_000 * (g as u64 % 2 + 1) + 7 * g as u64);
        w.end = w.begin + Cycles(3_000);
        w.dropped = if g == 3 { 4 } else { 0 };
        w.records = (0..4u32)
            .map(|k| {
                let start = w.begin.0 + 100 + 600 * k as u64;
                // Warp 2's last record has a wrapped clock.
                let end = if g == 2 && k == 3 {
                    start - 90
                } else {
                    start + 300 + 37 * g as u64 + 11 * k as u64
                };
                Record {
                    site: (k % 2) as u16,
                    seq: k,
                    start: Cycles(start),
                    end: Cycles(end),
                }
            })
            .collect();
        warps.push(w);
    }
    Trace { launch, warps }
}

fn check(name: &str, bytes: &[u8]) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    if std::env::var_os("WARPSCOPE_BLESS").is_some() {
        std::fs::write(&path, bytes).unwrap();
    }
    let want = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with WARPSCOPE_BLESS=1 to create)",
            path.display()
        )
    });
    assert!(
        want == bytes,
        "{name} differs from {} (WARPSCOPE_BLESS=1 regenerates)",
        path.display()
    );
}

#[test]
fn outputs_match_the_golden_files() {
    let t = fixed_trace();
    let opts = ExportOptions::default().with_clog2_block_bytes(512);
    let mut clog = Cursor::new(Vec::new());
    write_clog2(&t, &mut clog, &opts).unwrap();
    check("golden.clog2", clog.get_ref());
    let mut csv = Vec::new();
    write_records_csv(&t, &mut csv).unwrap();
    check("golden.records.csv", &csv);
    let mut warps = Vec::new();
    write_warps_csv(&t, &mut warps).unwrap();
    check("golden.warps.csv", &warps);
    let mut json = Vec::new();
    write_chrome(&t, &mut json, &opts).unwrap();
    check("golden.json", &json);
}
