//! Scale check: streams a synthetic trace of about N records (default 10⁸) into a `trace.wst`
//! store, then exports it in one format and prints throughput. Memory is measured from outside:
//!
//! ```text
//! cargo build --release -p warpscope-export --example big
//! B=$CARGO_TARGET_DIR/release/examples/big
//! /usr/bin/time -v $B --dir /tmp/big --make-store              # 2.4 GB store
//! /usr/bin/time -v $B --dir /tmp/big --format clog2            # and csv, warp-csv, chrome, otf2
//! ```
//! Flags: `--dir D` (work folder), `--records N`, `--sms N` and `--slots N` (the GPU's shape,
//! 16 × 32 by default; give the same to `--make-store` and the export), `--make-store` (write the
//! store and stop), `--format F` (export F from an existing store), `--cursor-buffer BYTES`
//! (CLOG2 merge read buffer per open warp), `--keep` (keep the output, a file or OTF2's folder;
//! deleted by default, since 10⁸ records make 3–25 GB).

use export::{ExportOptions, Format, SyntheticTrace, TraceSource, export};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

struct Args {
    dir: PathBuf,
    records: u64,
    make_store: bool,
    format: Option<Format>,
    keep: bool,
    cursor_buffer: usize,
    sms: u32,
    slots: u32,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        dir: std::env::temp_dir().join("warpscope-big"),
        records: 100_000_000,
        make_store: false,
        format: None,
        keep: false,
        cursor_buffer: ExportOptions::default().cursor_buffer_bytes(),
        sms: 16,
        slots: 32,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--dir" => a.dir = value()?.into(),
            "--records" => a.records = value()?.parse().map_err(|e| format!("--records: {e}"))?,
            "--format" => a.format = Some(value()?.parse()?),
            "--make-store" => a.make_store = true,
            "--keep" => a.keep = true,
            "--cursor-buffer" => {
                a.cursor_buffer = value()?
                    .parse()
                    .map_err(|e| format!("--cursor-buffer: {e}"))?
            }
            "--sms" => a.sms = value()?.parse().map_err(|e| format!("--sms: {e}"))?,
            "--slots" => a.slots = value()?.parse().map_err(|e| format!("--slots: {e}"))?,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(a)
}

fn run() -> Result<(), String> {
    let args = parse()?;
    std::fs::create_dir_all(&args.dir).map_err(|e| format!("{}: {e}", args.dir.display()))?;
    let store = args.dir.join(trace::TRACE_FILE_NAME);
    // SMs × warp slots (16 × 32 unless told), 1000 records per warp.
    let per_wave = args.sms as u64 * args.slots as u64 * 1000;
    let waves = args.records.div_ceil(per_wave.max(1)).max(1) as u32;
    let synth = SyntheticTrace::new(args.sms, args.slots, waves, 1000).with_dropped_every(1000);
    if args.make_store {
        let t = Instant::now();
        synth.write_store(&store).map_err(|e| e.to_string())?;
        let secs = t.elapsed().as_secs_f64();
        let bytes = std::fs::metadata(&store).map_err(|e| e.to_string())?.len();
        println!(
            "store: {} records, {} warps, {bytes} bytes in {secs:.1} s ({:.0} MB/s)",
            synth.record_count(),
            synth.warp_count(),
            bytes as f64 / secs / 1e6
        );
    }
    if let Some(format) = args.format {
        let reader = trace::TraceReader::open(&store).map_err(|e| e.to_string())?;
        let out = args.dir.join(format.default_file_name());
        let t = Instant::now();
        let s = export(
            &reader,
            format,
            &out,
            &ExportOptions::default().with_cursor_buffer_bytes(args.cursor_buffer),
        )
        .map_err(|e| e.to_string())?;
        let secs = t.elapsed().as_secs_f64();
        println!(
            "{format}: {} records ({} dropped marked), {} bytes in {secs:.1} s: {:.2} M records/s, {:.0} MB/s",
            s.records,
            s.dropped,
            s.bytes,
            s.records as f64 / secs / 1e6,
            s.bytes as f64 / secs / 1e6
        );
        if !args.keep {
            let removed = if out.is_dir() {
                std::fs::remove_dir_all(&out)
            } else {
                std::fs::remove_file(&out)
            };
            removed.map_err(|e| format!("{}: {e}", out.display()))?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("big: {e}");
            ExitCode::FAILURE
        }
    }
}
