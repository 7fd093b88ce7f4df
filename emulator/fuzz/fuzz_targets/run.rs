//! Fuzzes parse + launch: a kernel that parses must run to completion or fail with an
//! `EmuError` (fault, budget, deadlock), never panic. Arguments are zero-filled.
#![no_main]

use emulator::{Emulator, GpuConfig, LaunchParams, Module};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(m) = Module::parse(text) else { return };
    let Ok(cfg) = GpuConfig::preset("v100") else { return };
    let mut emu = Emulator::new(cfg);
    let Ok(id) = emu.load(&m) else { return };
    for e in m.entries() {
        let args = e.params.iter().map(|p| vec![0u8; p.size_bytes as usize]).collect();
        let p = LaunchParams {
            grid: [2, 1, 1],
            block: [64, 1, 1],
            dynamic_shared_bytes: 256,
            regs_per_thread: 32,
            args,
            max_warp_instructions: 20_000,
        };
        let _ = emu.launch(id, &e.name, &p);
    }
});
