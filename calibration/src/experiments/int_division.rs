//! `int-division.cu` on the emulator: a dependent chain of divisions (or of subtractions) per
//! type and path, its latency per step, two independent chains' per step, and its issue cycles
//! per warp step.

use std::path::Path;

use device::{Arg, DevBuf};
use emulator::GpuConfig;

use super::Experiment;
use crate::error::CalibrationError;
use crate::table::DivisionChain;

/// Steps of the latency chain, and chains × rounds of each thread of the throughput kernel.
const STEPS: f64 = 256.0;
const CHAINS: f64 = 8.0;
const ROUNDS: f64 = 64.0;

pub(crate) struct IntDivisionRig {
    exp: Experiment,
    cycles: DevBuf,
    sink: DevBuf,
}

impl IntDivisionRig {
    pub(crate) fn new(root: &Path, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let mut exp = Experiment::load(root, "int-division.cu", cfg)?;
        let cycles = exp.alloc(8)?;
        let sink = exp.alloc(1024 * 8)?;
        Ok(IntDivisionRig { exp, cycles, sink })
    }

    fn launch(
        &mut self,
        kernel: &str,
        c: DivisionChain,
        threads: u32,
    ) -> Result<f64, CalibrationError> {
        let (ty, wide) = c.ty();
        let name = format!("{kernel}<{ty}, {}>", c.divides());
        let seed = c.seed();
        let (seed, b) = if wide {
            (Arg::U64(seed), Arg::U64(3))
        } else {
            (Arg::U32(seed as u32), Arg::U32(3))
        };
        let args = [seed, b, Arg::Buf(self.cycles), Arg::Buf(self.sink)];
        self.exp.launch(&name, 1, threads, &args)?;
        Ok(self.exp.read_i64(&self.cycles)? as f64)
    }

    /// Lane 0's cycles per step of one warp's chain.
    pub(crate) fn latency(&mut self, c: DivisionChain) -> Result<f64, CalibrationError> {
        Ok(self.launch("latency", c, 32)? / STEPS)
    }

    /// Lane 0's cycles per step of one warp's two independent chains.
    pub(crate) fn pair(&mut self, c: DivisionChain) -> Result<f64, CalibrationError> {
        Ok(self.launch("latency2", c, 32)? / STEPS)
    }

    /// Cycles per warp step per scheduler with 32 warps on the SM: one block, as `main` launches
    /// one per SM and takes the slowest (the emulator's SMs run alike).
    pub(crate) fn issue(&mut self, c: DivisionChain) -> Result<f64, CalibrationError> {
        Ok(self.launch("throughput", c, 1024)? / (8.0 * CHAINS * ROUNDS))
    }
}
