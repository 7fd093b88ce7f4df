//! `l1-port.cu`'s fill sweep on the emulator: one block of 1,024 threads on one SM, each warp
//! access touching 8 lines the L2 holds and the L1 does not, `k` sectors of each.

use std::path::Path;

use device::{Arg, DevBuf};
use emulator::GpuConfig;

use super::Experiment;
use crate::error::CalibrationError;

/// `l1-port.cu`'s constants: accesses per thread in trips of `UNROLL`, and the block's warps.
const TRIPS: u64 = 32;
const UNROLL: u64 = 8;
const WARPS: u64 = 32;
/// 8 lines of 32 words per group, one group per warp access: 8 MiB.
const WORDS: u64 = TRIPS * UNROLL * WARPS * 256;

pub(crate) struct L1PortRig {
    exp: Experiment,
    buf: DevBuf,
    cycles: DevBuf,
    sink: DevBuf,
    sms: u32,
}

impl L1PortRig {
    pub(crate) fn new(root: &Path, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let mut exp = Experiment::load(root, "l1-port.cu", cfg)?;
        let buf = exp.alloc(WORDS * 4)?;
        let cycles = exp.alloc(8)?;
        let sink = exp.alloc(4)?;
        Ok(L1PortRig {
            exp,
            buf,
            cycles,
            sink,
            sms: cfg.sm.count,
        })
    }

    /// Cycles per warp access of the fill kernel (`ld.global`, or `ld.global.nc` with `nc`),
    /// after the `warm` kernel has brought the buffer into the L2, as `main` runs it.
    pub(crate) fn fill(&mut self, k: u32, nc: bool) -> Result<f64, CalibrationError> {
        let warm = [Arg::Buf(self.buf), Arg::U64(WORDS), Arg::Buf(self.sink)];
        self.exp.launch("warm", self.sms * 4, 256, &warm)?;
        let args = [
            Arg::Buf(self.buf),
            Arg::U32(k),
            Arg::Buf(self.cycles),
            Arg::Buf(self.sink),
        ];
        self.exp
            .launch(&format!("fill<{nc}>"), 1, (WARPS * 32) as u32, &args)?;
        Ok(self.exp.read_i64(&self.cycles)? as f64 / (WARPS * TRIPS * UNROLL) as f64)
    }
}
