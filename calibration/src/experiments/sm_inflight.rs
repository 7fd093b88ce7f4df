//! `sm-inflight.cu` on the emulator: one block streaming from DRAM on one SM, or one on every SM.

use std::path::Path;

use device::{Arg, DevBuf};
use emulator::GpuConfig;

use super::Experiment;
use crate::error::CalibrationError;

/// Each thread's loop: trips, and 16-byte loads per trip.
const PASSES: u64 = 16;
const UNROLL: u64 = 4;
/// A block's region in 16-byte words, as large as 1,024 threads read.
const REGION: u64 = PASSES * UNROLL * 1024;

pub(crate) struct SmInflightRig {
    exp: Experiment,
    buf: DevBuf,
    cycles: DevBuf,
    sink: DevBuf,
    sms: u32,
}

impl SmInflightRig {
    pub(crate) fn new(root: &Path, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let mut exp = Experiment::load(root, "sm-inflight.cu", cfg)?;
        let sms = cfg.sm.count;
        let buf = exp.alloc(REGION * 16 * u64::from(sms))?;
        let cycles = exp.alloc(8 * u64::from(sms))?;
        let sink = exp.alloc(4)?;
        Ok(SmInflightRig {
            exp,
            buf,
            cycles,
            sink,
            sms,
        })
    }

    /// Bytes per cycle per SM of `threads` threads streaming, on one SM or on every SM: a block's
    /// bytes over the median block's cycles, as `main` prints it. The L2 flushed first, as
    /// `main` flushes it before every launch.
    pub(crate) fn rate(&mut self, threads: u32, every_sm: bool) -> Result<f64, CalibrationError> {
        let grid = if every_sm { self.sms } else { 1 };
        let args = [
            Arg::Buf(self.buf),
            Arg::U64(REGION),
            Arg::Buf(self.cycles),
            Arg::Buf(self.sink),
        ];
        self.exp.dev.flush_l2();
        self.exp.launch("stream", grid, threads, &args)?;
        let mut c = self.exp.download_i64(&self.cycles)?;
        c.truncate(grid as usize);
        c.sort_unstable();
        let median = c.get(c.len() / 2).copied().unwrap_or(0);
        if median <= 0 {
            return Err(CalibrationError::Result {
                what: "sm-inflight.cu".into(),
                reason: "a block's cycles read zero".into(),
            });
        }
        let block_bytes = u64::from(threads) * PASSES * UNROLL * 16;
        Ok(block_bytes as f64 / median as f64)
    }
}
