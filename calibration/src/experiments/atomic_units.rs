//! `atomic-units.cu` on the emulator: contended atomics spread over lines, and one thread's
//! chain of returned atomics beside its chain of loads.

use std::path::Path;

use device::{Arg, DevBuf, Device};
use emulator::GpuConfig;

use super::Experiment;
use crate::error::CalibrationError;
use crate::table::ChainOp;

/// The spread's grid: blocks, threads per block, and each warp's lane 0's atomics.
const BLOCKS: u32 = 2048;
const THREADS: u32 = 1024;
const ITERS: u64 = 16;
/// `main`'s buffer: 512 lines 4 KiB apart, with room.
const BUF_BYTES: u64 = 4 << 20;
/// Steps of a chain.
const CHAIN: f64 = 256.0;

pub(crate) struct AtomicUnitsRig {
    exp: Experiment,
    buf: DevBuf,
    out: DevBuf,
}

impl AtomicUnitsRig {
    pub(crate) fn new(root: &Path, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let mut exp = Experiment::load(root, "atomic-units.cu", cfg)?;
        let buf = exp.alloc(BUF_BYTES)?;
        let out = exp.alloc(16)?;
        Ok(AtomicUnitsRig { exp, buf, out })
    }

    /// Atomic operations per SM clock of lane 0 of every warp on word 0 of `lines` lines `gap`
    /// bytes apart, over the second of two launches' cycles: `main` clears the buffer with
    /// `cudaMemset` before each launch, which leaves its lines in the L2, and the first launch
    /// here puts them there, whichever cases ran before.
    pub(crate) fn spread(&mut self, gap: u32, lines: u32) -> Result<f64, CalibrationError> {
        let args = [Arg::Buf(self.buf), Arg::U32(lines), Arg::U32(gap / 4)];
        self.exp.launch("spread", BLOCKS, THREADS, &args)?;
        let o = self.exp.launch("spread", BLOCKS, THREADS, &args)?;
        let cycles = o.cycles.ok_or_else(|| CalibrationError::Result {
            what: "atomic-units.cu".into(),
            reason: "the emulator returned no cycles".into(),
        })?;
        let ops = u64::from(BLOCKS) * u64::from(THREADS) / 32 * ITERS;
        Ok(ops as f64 / cycles as f64)
    }

    /// Cycles per step of one thread's chain of `op`, over the zeroed buffer `main` gives it
    /// (the spreads leave counts in it, which would send the chain outside). `main` takes the
    /// median of the launches after the first, whose word the first left in the L2: so the
    /// second launch here.
    pub(crate) fn chain(&mut self, op: ChainOp) -> Result<f64, CalibrationError> {
        self.exp
            .dev
            .upload(&self.buf, &vec![0u8; BUF_BYTES as usize])
            .map_err(|source| CalibrationError::Device {
                what: "atomic-units.cu: zeroing its buffer".into(),
                source,
            })?;
        let name = match op {
            ChainOp::Atomic => "chain<true>",
            ChainOp::Load => "chain<false>",
        };
        let args = [Arg::Buf(self.buf), Arg::Buf(self.out)];
        for _ in 0..2 {
            self.exp.launch(name, 1, 1, &args)?;
        }
        Ok(self.exp.read_i64(&self.out)? as f64 / CHAIN)
    }
}
