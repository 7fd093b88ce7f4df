//! `dummy-closing.cu` on the emulator: its windows around an L1 or an L2 hit, closed by the
//! fence and by three dummies.

use std::path::Path;

use device::{Arg, DevBuf, Device};
use emulator::GpuConfig;

use super::Experiment;
use crate::error::CalibrationError;
use crate::table::{DummyClose, FenceAccess};

/// Windows per launch; the first (cold) one is left out of the mean.
const REPS: usize = 32;
/// `main`'s buffer, 256 MiB: the L2 case's loads go to lines `BIG / 4 / REPS` words apart.
const BIG: u64 = 1 << 28;

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
        let p = exp.alloc(BIG)?;
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

    /// The mean cycles of the warm windows around `access` (an L1 or an L2 hit) closed by
    /// `closing`, as `report` prints them. As `main` does: the L2 flushed (its 256 MiB memset),
    /// a first launch closed by the fence to bring the lines into the L2, then the timed launch.
    pub(crate) fn window(
        &mut self,
        closing: DummyClose,
        access: FenceAccess,
    ) -> Result<f64, CalibrationError> {
        let v = closing.variant();
        // main's case index: its lines and stride.
        let (case, stride) = match access {
            FenceAccess::L2Hit => (1, (BIG / 4 / REPS as u64) as i64),
            _ => (0, 0),
        };
        let args = [
            Arg::U64(self.p.addr + (case * 4 + u64::from(v)) * 64 * 4),
            Arg::I64(stride),
            Arg::Buf(self.sink),
            Arg::Buf(self.sinkp),
            Arg::I32(0),
            Arg::Buf(self.out),
        ];
        self.exp.dev.flush_l2();
        self.exp.launch("k<0>", 1, 1, &args)?;
        self.exp.launch(&format!("k<{v}>"), 1, 1, &args)?;
        self.exp.warm_mean(&self.out)
    }
}
