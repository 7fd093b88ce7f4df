//! Fuzzes the `.npy` reader that launch specs use: any bytes must give `Ok` (data of exactly the
//! header's size) or a `TraceError`, never a panic or an abort.
//! `cargo +nightly fuzz run npy fuzz/seeds/npy` (from `emulator/`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::path::Path::new("fuzz.npy");
    for (descr, size) in [("<u4", 4), ("|u1", 1), ("<f8", 8)] {
        if let Ok(d) = trace::parse_npy(path, data, descr, size) {
            assert_eq!(d.len() % size, 0);
        }
    }
});
