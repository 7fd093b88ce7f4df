//! `const-latency.cu` on the emulator: one warp's chase through a `__constant__` array, one
//! word per 64-byte line, over a working set of 256 B to 64 KiB.

use std::path::Path;

use device::{Arg, DevBuf};
use emulator::GpuConfig;

use super::Experiment;
use crate::error::CalibrationError;
use crate::table::ConstPass;

/// The array's words, and the words of one 64-byte line.
const WORDS: usize = 16384;
const LINE_WORDS: usize = 16;

pub(crate) struct ConstLatencyRig {
    exp: Experiment,
    cycles: DevBuf,
    sink: DevBuf,
}

impl ConstLatencyRig {
    pub(crate) fn new(root: &Path, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let mut exp = Experiment::load(root, "const-latency.cu", cfg)?;
        let cycles = exp.alloc(16)?;
        let sink = exp.alloc(32 * 4)?;
        Ok(ConstLatencyRig { exp, cycles, sink })
    }

    /// Cycles per step of `pass` over a working set of `bytes`: the array uploaded as `main`
    /// uploads it (line i's first word holds line i + 1's index, the last line's 0), then one
    /// launch's two passes and a second launch's first.
    pub(crate) fn step(&mut self, bytes: u32, pass: ConstPass) -> Result<f64, CalibrationError> {
        let lines = bytes as usize / (LINE_WORDS * 4);
        let mut table = vec![0u8; WORDS * 4];
        for i in 0..lines {
            let next = ((i + 1) % lines * LINE_WORDS) as u32;
            table[i * LINE_WORDS * 4..][..4].copy_from_slice(&next.to_le_bytes());
        }
        self.exp.write_symbol("table", &table)?;
        let args = [
            Arg::U32(lines as u32),
            Arg::Buf(self.cycles),
            Arg::Buf(self.sink),
        ];
        self.exp.launch("chase", 1, 32, &args)?;
        let cycles = match pass {
            ConstPass::First => self.exp.read_i64(&self.cycles)?,
            ConstPass::Second => self.exp.read_i64_at(&self.cycles, 1)?,
            ConstPass::Again => {
                self.exp.launch("chase", 1, 32, &args)?;
                self.exp.read_i64(&self.cycles)?
            }
        };
        Ok(cycles as f64 / lines as f64)
    }
}
