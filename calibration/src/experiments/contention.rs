//! `contention.cu` on the emulator: contended global atomics, one warp's loads of 32 cold lines,
//! and reduce7's shuffles from exited lanes.

use std::path::Path;

use device::{Arg, DevBuf};
use emulator::GpuConfig;
use trace::ProbeMode;

use super::Experiment;
use crate::error::CalibrationError;
use crate::table::AtomicPattern;

/// The atomics' grid: blocks, threads per block, and each thread's atomics.
const BLOCKS: u32 = 2048;
const THREADS: u32 = 1024;
const ITERS: u64 = 16;
/// The divergent load's buffer: 960 lines 4 KiB apart, as `main` reads them.
const DIVERGENT_BYTES: u64 = 960 * 4096;

pub(crate) struct ContentionRig {
    exp: Experiment,
    words: DevBuf,
    cold: DevBuf,
    out: DevBuf,
}

impl ContentionRig {
    pub(crate) fn new(root: &Path, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let mut exp = Experiment::load(root, "contention.cu", cfg)?;
        let words = exp.alloc(1024 * 4)?;
        let cold = exp.alloc(DIVERGENT_BYTES)?;
        // `main`'s `dl`: the window's cycles, then the sink's two words.
        let out = exp.alloc(16)?;
        Ok(ContentionRig {
            exp,
            words,
            cold,
            out,
        })
    }

    /// Atomic operations per SM clock of `pattern` over `words` words: every lane's operations
    /// (lane 0's alone for a warp-aggregated counter) over the launch's cycles.
    pub(crate) fn atomic_rate(
        &mut self,
        pattern: AtomicPattern,
        words: u32,
    ) -> Result<f64, CalibrationError> {
        let m = pattern.mode();
        let args = [Arg::Buf(self.words), Arg::U32(words)];
        let o = self
            .exp
            .launch(&format!("atomics<{m}>"), BLOCKS, THREADS, &args)?;
        let cycles = o.cycles.ok_or_else(|| CalibrationError::Result {
            what: "contention.cu".into(),
            reason: "the emulator returned no cycles".into(),
        })?;
        let lanes = if pattern == AtomicPattern::OneLanePerWarp {
            1
        } else {
            32
        };
        let ops = u64::from(BLOCKS) * u64::from(THREADS) / 32 * lanes * ITERS;
        Ok(ops as f64 / cycles as f64)
    }

    /// Lane 0's cycles of the window around the 32 lanes' loads of cold lines, closed as `mode`.
    pub(crate) fn divergent_window(&mut self, mode: ProbeMode) -> Result<f64, CalibrationError> {
        let m = match mode {
            ProbeMode::Naive => 0,
            ProbeMode::Dummy => 1,
            _ => 2,
        };
        // One launch is the GPU's median; `main`'s second launch of the mode, whose 32 lines no
        // earlier launch read (the L2 keeps a launch's lines).
        let sink = Arg::U64(self.out.addr + 8);
        let args = [
            Arg::Buf(self.cold),
            Arg::U32((m * 10 + 1) * 32),
            Arg::I32(0),
            sink,
            Arg::Buf(self.out),
        ];
        self.exp.launch(&format!("divergent<{m}>"), 1, 32, &args)?;
        Ok(self.exp.read_i64(&self.out)? as f64)
    }

    /// What lane 0 of `shuffles` gets from reduce7's last step.
    pub(crate) fn reduce7_sum(&mut self) -> Result<f64, CalibrationError> {
        let out = self.exp.alloc(32 * 4)?;
        self.exp.launch("shuffles", 1, 32, &[Arg::Buf(out)])?;
        let b = self.exp.download(&out)?;
        let at = 3 * 8 * 4;
        let sum = i32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        Ok(f64::from(sum))
    }
}
