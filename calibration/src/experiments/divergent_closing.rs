//! `divergent-closing.cu` on the emulator: one warp's window around 1 to 32 lanes' loads of a
//! cold line each.

use std::path::Path;

use device::{Arg, DevBuf};
use emulator::GpuConfig;

use super::Experiment;
use crate::error::CalibrationError;
use crate::table::DivergentClose;

/// The lines a launch reads: 32, 4 KiB apart.
const BYTES: u64 = 32 * 4096;

pub(crate) struct DivergentClosingRig {
    exp: Experiment,
    p: DevBuf,
    /// `main`'s `d`: the window's cycles, then the sink's two words.
    out: DevBuf,
}

impl DivergentClosingRig {
    pub(crate) fn new(root: &Path, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let mut exp = Experiment::load(root, "divergent-closing.cu", cfg)?;
        let p = exp.alloc(BYTES)?;
        let out = exp.alloc(24)?;
        Ok(DivergentClosingRig { exp, p, out })
    }

    /// Lane 0's cycles of the window around `lanes` lanes' cold loads closed by `closing`. Every
    /// launch starts with cold caches on the emulator: one launch is the GPU's median.
    pub(crate) fn window(
        &mut self,
        closing: DivergentClose,
        lanes: u32,
    ) -> Result<f64, CalibrationError> {
        let lanes = i32::try_from(lanes).map_err(|_| CalibrationError::Result {
            what: "divergent-closing.cu".into(),
            reason: format!("{lanes} lanes do not fit its argument"),
        })?;
        let args = [
            Arg::Buf(self.p),
            Arg::U32(0),
            Arg::I32(lanes),
            Arg::I32(0),
            Arg::U64(self.out.addr + 8),
            Arg::Buf(self.out),
        ];
        self.exp
            .launch(&format!("window<{}>", closing.mode()), 1, 32, &args)?;
        Ok(self.exp.read_i64(&self.out)? as f64)
    }
}
