//! `l1-port.cu`'s two sweeps on the emulator, one block of 1,024 threads on one SM: the fill,
//! each warp access touching 8 lines the L2 holds and the L1 does not, `k` sectors of each; and
//! the lookups, point fetches from a texture the L1 holds, each quad of lanes on `q` sectors.

use std::path::Path;

use device::{Arg, DevBuf};
use emulator::{GpuConfig, TexFormat};

use super::{Experiment, texture_desc};
use crate::error::CalibrationError;

/// `l1-port.cu`'s constants: accesses per thread in trips of `UNROLL`, and the block's warps.
const TRIPS: u64 = 32;
const UNROLL: u64 = 8;
const WARPS: u64 = 32;
/// 8 lines of 32 words per group, one group per warp access: 8 MiB.
const WORDS: u64 = TRIPS * UNROLL * WARPS * 256;
/// The lookups' texture: a 1D array of 2,048 floats (8 KiB), all ones.
const TEXELS: u32 = 2048;

pub(crate) struct L1PortRig {
    exp: Experiment,
    buf: DevBuf,
    cycles: DevBuf,
    sink: DevBuf,
    texture: u64,
    sms: u32,
}

impl L1PortRig {
    pub(crate) fn new(root: &Path, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let mut exp = Experiment::load(root, "l1-port.cu", cfg)?;
        let buf = exp.alloc(WORDS * 4)?;
        let cycles = exp.alloc(8)?;
        let sink = exp.alloc(4)?;
        let ones: Vec<u8> = (0..TEXELS).flat_map(|_| 1.0f32.to_le_bytes()).collect();
        let desc = texture_desc(1, [TEXELS, 1, 1], TexFormat::F32, 1, false, false);
        let texture = exp.texture(&desc, &ones)?;
        Ok(L1PortRig {
            exp,
            buf,
            cycles,
            sink,
            texture,
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
        self.per_access()
    }

    /// Cycles per warp-level fetch of the lookups kernel, each quad of lanes on `q` sectors: the
    /// second of two launches, as `main` prints it.
    pub(crate) fn lookups(&mut self, q: u32) -> Result<f64, CalibrationError> {
        let args = [
            Arg::U64(self.texture),
            Arg::U32(q),
            Arg::Buf(self.cycles),
            Arg::Buf(self.sink),
        ];
        for _ in 0..2 {
            self.exp.launch("lookups", 1, (WARPS * 32) as u32, &args)?;
        }
        self.per_access()
    }

    /// The last launch's span over its warp-level accesses, as `main` divides it.
    fn per_access(&mut self) -> Result<f64, CalibrationError> {
        Ok(self.exp.read_i64(&self.cycles)? as f64 / (WARPS * TRIPS * UNROLL) as f64)
    }
}
