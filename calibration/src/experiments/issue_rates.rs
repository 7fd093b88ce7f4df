//! `issue-rates.cu` on the emulator: one SM's chains of one arithmetic operation each.

use std::path::Path;

use device::{Arg, DevBuf};
use emulator::GpuConfig;

use super::Experiment;
use crate::error::CalibrationError;
use crate::table::IssueOp;

/// The block, and each thread's independent chains and steps.
const THREADS: u32 = 1024;
const CHAINS: f64 = 8.0;
const STEPS: f64 = 64.0;
/// Warps per scheduler: 32 warps over the SM's four schedulers.
const WARPS_PER_SCHEDULER: f64 = 8.0;

pub(crate) struct IssueRatesRig {
    exp: Experiment,
    cycles: DevBuf,
    sink: DevBuf,
}

impl IssueRatesRig {
    pub(crate) fn new(root: &Path, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let mut exp = Experiment::load(root, "issue-rates.cu", cfg)?;
        let cycles = exp.alloc(8)?;
        let sink = exp.alloc(4)?;
        Ok(IssueRatesRig { exp, cycles, sink })
    }

    /// Cycles per PTX warp instruction per scheduler of `op`: one block, as `main` launches one
    /// per SM and takes the median (the emulator's SMs run alike).
    pub(crate) fn rate(&mut self, op: IssueOp) -> Result<f64, CalibrationError> {
        let args = [Arg::U32(3), Arg::Buf(self.cycles), Arg::Buf(self.sink)];
        self.exp
            .launch(&format!("run<{}>", op.template()), 1, THREADS, &args)?;
        let per = WARPS_PER_SCHEDULER * CHAINS * STEPS * f64::from(op.per_step());
        Ok(self.exp.read_i64(&self.cycles)? as f64 / per)
    }
}
