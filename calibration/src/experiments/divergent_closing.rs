//! `divergent-closing.cu` on the emulator: one warp's window around 1 to 32 lanes' loads of a
//! cold line each.

use std::path::Path;

use device::{Arg, DevBuf};
use emulator::GpuConfig;

use super::Experiment;
use crate::error::CalibrationError;
use crate::table::DivergentClose;

/// Lines a launch reads, 4 KiB apart, and the launches a rig can make: four closings at six
/// lane counts, each on fresh lines as `main` gives them (the L2 keeps a launch's lines).
const LINES: u32 = 32;
const LAUNCHES: u32 = 4 * 6;
const BYTES: u64 = (LAUNCHES * LINES) as u64 * 4096;

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

    /// Lane 0's cycles of the window around `lanes` lanes' cold loads closed by `closing`: one
    /// launch, the GPU's median, on lines no other launch of the rig reads.
    pub(crate) fn window(
        &mut self,
        closing: DivergentClose,
        lanes: u32,
    ) -> Result<f64, CalibrationError> {
        let launch = closing.mode() * 6 + lanes.trailing_zeros();
        let lanes = i32::try_from(lanes)
            .ok()
            .filter(|&l| l > 0 && l <= 32 && l.count_ones() == 1 && launch < LAUNCHES)
            .ok_or_else(|| CalibrationError::Result {
                what: "divergent-closing.cu".into(),
                reason: format!("it times 1, 2, 4, ... 32 lanes, not {lanes}"),
            })?;
        let args = [
            Arg::Buf(self.p),
            Arg::U32(launch * LINES),
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
