//! Fuzzes the PTX front end: any input must give `Ok` or an `EmuError`, never a panic.
//! `cargo +nightly fuzz run parse` (seed the corpus with `kernels`' PTX files).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(m) = emulator::Module::parse(text) {
            let _ = m.entries();
        }
    }
});
