//! Fuzzes the `trace.wst` reader: any file must open and read to `Ok` or a `TraceError`, never a
//! panic or an abort. `cargo +nightly fuzz run trace_store fuzz/seeds/trace_store` (from
//! `emulator/`); the seed is a valid trace with records, summaries and declared sites.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The reader takes a path (it reopens the file per warp cursor): one file per fuzz process.
    let path = std::env::temp_dir().join(format!("ws-fuzz-{}.wst", std::process::id()));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    if let Ok(r) = trace::TraceReader::open(&path) {
        if let Ok(warps) = r.warps() {
            for w in warps {
                if w.is_err() {
                    break;
                }
            }
        }
        for i in 0..r.warp_count() {
            if let Ok(mut c) = r.cursor(i, 64) {
                while let Ok(Some(_)) = c.next_record() {}
                let _ = c.summaries();
            }
        }
    }
});
