//! Runs the reuse study's demo (gtx480, 64³ blobs, 128×128, shapes 128×1 / 16×8 / 1×128, the
//! block-linear, bricks and linear layouts, six texture-cache sizes) and prints the summary table.
//!
//! `cargo run -p warpscope-study --example reuse -- OUT_DIR [PRESET]`

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(args.next().unwrap_or_else(|| "reuse-demo".into()));
    let preset = args.next().unwrap_or_else(|| "gtx480".into());
    let cfg = study::ReuseStudyConfig::demo(emulator::GpuConfig::preset(&preset)?);
    let s = study::reuse_study(&cfg, &out)?;
    for r in &s.rows {
        println!(
            "{:>6} {:>12}: {} sector requests on SM {}, {} distinct sectors, 90% reuse needs {} B (cache {} B, fits: {}), predicted {:.3} simulated {:?}",
            r.shape,
            r.layout,
            r.accesses,
            r.sm,
            r.distinct_sectors,
            r.need90_bytes,
            r.texture_cache_bytes,
            r.fits_texture_cache,
            r.predicted_sector,
            r.simulated
        );
    }
    for h in &s.hits {
        println!(
            "{:>6} {:>12} {:>6} B: predicted sector {:.3} line {:.3} simulated {:?}",
            h.shape, h.layout, h.cache_bytes, h.predicted_sector, h.predicted_line, h.simulated
        );
    }
    println!("mean |predicted - simulated| = {:?}", s.mean_abs_error);
    Ok(())
}
