//! Runs the demo sweep (`study::demo_config`, quick geometry) into a folder and prints the table: a
//! way to time the demo, or to try other sizes (rendered with the SDK's step), without the CLI.
//!
//! ```text
//! cargo run --release -p warpscope-study --example demo_sweep -- OUT [VOLUME_EDGE IMAGE_EDGE [SHAPES [MODES]]]
//! cargo run --release -p warpscope-study --example demo_sweep -- /tmp/demo 256 128 128x1,16x8,1x128 fence
//! ```

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = PathBuf::from(args.first().map_or("warpscope-demo/sweep", String::as_str));
    let mut cfg = study::demo_config(&out, study::Scale::Quick)?;
    if let (Some(v), Some(i)) = (args.get(1), args.get(2)) {
        let edge: u32 = v.parse()?;
        let image: u32 = i.parse()?;
        cfg.volume = study::VolumeSource::Generated {
            kind: study::VolumeKind::Blobs,
            dims: [edge; 3],
            seed: 1,
        };
        cfg.params = study::RenderParams::with_size(image, image);
    }
    if let Some(s) = args.get(3) {
        cfg.shapes = study::parse_shapes(std::slice::from_ref(s))?;
    }
    if let Some(m) = args.get(4) {
        cfg.modes = m
            .split(',')
            .map(str::parse)
            .collect::<Result<Vec<trace::ProbeMode>, String>>()?;
    }
    let summary = study::sweep(&cfg, &|done, total| eprint!("\r{done}/{total}"))?;
    eprintln!();
    println!("{}", std::fs::read_to_string(&summary.csv)?);
    println!(
        "{} rendered, {} resumed ({})",
        summary.rendered, summary.resumed, summary.backend_note
    );
    Ok(())
}
