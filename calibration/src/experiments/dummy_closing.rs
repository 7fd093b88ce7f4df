//! `dummy-closing.cu` on the emulator: its L1-hit windows, closed by the fence and by three
//! dummies.

use std::path::Path;

use device::{Arg, DevBuf, Device};
use emulator::GpuConfig;

use super::Experiment;
use crate::error::CalibrationError;
use crate::table::DummyClose;

/// Windows per launch; the first (cold) one is left out of the mean.
const REPS: usize = 32;

pub(crate) struct DummyClosingRig {
    exp: Experiment,
    p: DevBuf,
    sink: DevBuf,
    sinkp: DevBuf,
    out: DevBuf,
}

impl DummyClosingRig {
    pub(crate) fn new(root: &Path, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let mut exp = Experiment::load(root, "dummy-closing.cu", cfg)?;
        // main's buffers: the L1 case reads 4 closings × 64 words from its start.
        let p = exp.alloc(4 * 64 * 4)?;
        let sink = exp.alloc(64)?;
        let sinkp = exp.alloc(8)?;
        let out = exp.alloc(REPS as u64 * 4)?;
        exp.dev
            .upload(&sinkp, &sink.addr.to_le_bytes())
            .map_err(|source| CalibrationError::Device {
                what: "dummy-closing.cu: writing the sink's address".into(),
                source,
            })?;
        Ok(DummyClosingRig {
            exp,
            p,
            sink,
            sinkp,
            out,
        })
    }

    /// The mean cycles of the warm L1-hit windows closed by `closing`, as `report` prints them.
    pub(crate) fn l1_window(&mut self, closing: DummyClose) -> Result<f64, CalibrationError> {
        let v = closing.variant();
        let args = [
            Arg::U64(self.p.addr + u64::from(v) * 64 * 4),
            Arg::I64(0),
            Arg::Buf(self.sink),
            Arg::Buf(self.sinkp),
            Arg::I32(0),
            Arg::Buf(self.out),
        ];
        self.exp.launch(&format!("k<{v}>"), 1, 1, &args)?;
        self.exp.warm_mean(&self.out)
    }
}
