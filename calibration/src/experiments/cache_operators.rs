//! `cache-operators.cu` on the emulator: one thread's or one warp's dependent chain of loads of
//! one word, in each load form a kernel may use.

use std::path::Path;

use device::{Arg, DevBuf};
use emulator::GpuConfig;

use super::Experiment;
use crate::error::CalibrationError;
use crate::table::LoadForm;

/// `main`'s buffer, zeroed: every step loads 0 and so the lane's own word again.
const BUF_BYTES: u64 = 4096;
/// Steps of a chain.
const STEPS: f64 = 256.0;

pub(crate) struct CacheOperatorsRig {
    exp: Experiment,
    buf: DevBuf,
    out: DevBuf,
}

impl CacheOperatorsRig {
    pub(crate) fn new(root: &Path, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let mut exp = Experiment::load(root, "cache-operators.cu", cfg)?;
        let buf = exp.alloc(BUF_BYTES)?;
        exp.upload(&buf, &[0u8; BUF_BYTES as usize])?;
        let out = exp.alloc(16)?;
        Ok(CacheOperatorsRig { exp, buf, out })
    }

    /// Cycles per step of the chain of `form` on `lanes` lanes. `main` takes the median of five
    /// launches after a first, each starting with the words in the L2 (the launch before read
    /// them) and an empty L1: so here the second launch, the emulator giving every later launch
    /// the same cycles.
    pub(crate) fn step(&mut self, form: LoadForm, lanes: u32) -> Result<f64, CalibrationError> {
        let name = format!("chain<{}>", form.template());
        let args = [Arg::Buf(self.buf), Arg::Buf(self.out)];
        for _ in 0..2 {
            self.exp.launch(&name, 1, lanes, &args)?;
        }
        Ok(self.exp.read_i64(&self.out)? as f64 / STEPS)
    }
}
