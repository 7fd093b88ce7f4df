//! `tex-lookup-count.cu` on the emulator: one launch per case, each after an L2 flush, and the
//! texture's counts over it.

use std::path::Path;

use device::{Arg, DevBuf};
use emulator::{GpuConfig, TexFormat, TextureDesc};
use trace::Dim3;

use super::{Experiment, TexCases, texture_desc};
use crate::error::CalibrationError;
use crate::table::{TEX_LOOKUP_COUNT_LAST_CASE, TexCount};

/// `main`'s grid: one warp per block.
const BLOCKS: u32 = 1024;
/// The 2D array of cases 0–3 (`PLANE_W` × 8 rows per block) and the 3D one of cases 4–7
/// (`VOL_W` × `VOL_W` × 8 slices per block).
const PLANE_W: u32 = 4096;
const VOL_W: u32 = 64;

pub(crate) struct TexLookupCountRig {
    cases: TexCases,
    /// The 2D array point-sampled as bytes (cases 0–3), and the 3D one filtered (4, 6, 7) and
    /// point-sampled (5), read as normalised floats.
    plane: u64,
    volume_linear: u64,
    volume_point: u64,
    out: DevBuf,
}

fn desc(dims: u8, extent: [u32; 3], normalized_read: bool, linear: bool) -> TextureDesc {
    texture_desc(dims, extent, TexFormat::U8, 1, normalized_read, linear)
}

impl TexLookupCountRig {
    pub(crate) fn new(root: &Path, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let mut exp = Experiment::load(root, "tex-lookup-count.cu", cfg)?;
        // `main` fills both arrays with ones.
        let plane_extent = [PLANE_W, 8 * BLOCKS, 1];
        let ones = vec![1u8; (PLANE_W * 8 * BLOCKS) as usize];
        let plane = exp.texture(&desc(2, plane_extent, false, false), &ones)?;
        let vol_extent = [VOL_W, VOL_W, 8 * BLOCKS];
        let ones = &ones[..(VOL_W * VOL_W * 8 * BLOCKS) as usize];
        let volume_linear = exp.texture(&desc(3, vol_extent, true, true), ones)?;
        let volume_point = exp.texture(&desc(3, vol_extent, true, false), ones)?;
        let out = exp.alloc(u64::from(BLOCKS) * 32 * 4)?;
        Ok(TexLookupCountRig {
            cases: TexCases::new(exp),
            plane,
            volume_linear,
            volume_point,
            out,
        })
    }

    /// `count` of case `case`'s launch.
    pub(crate) fn count(&mut self, case: u32, count: TexCount) -> Result<f64, CalibrationError> {
        let texture = match case {
            0..=3 => self.plane,
            5 => self.volume_point,
            4..=TEX_LOOKUP_COUNT_LAST_CASE => self.volume_linear,
            _ => {
                return Err(CalibrationError::Result {
                    what: "tex-lookup-count.cu".into(),
                    reason: format!("it has no case {case}"),
                });
            }
        };
        let c = i32::try_from(case).unwrap_or(i32::MAX);
        let args = [Arg::U64(texture), Arg::I32(c), Arg::Buf(self.out)];
        self.cases
            .count(case, count, "fetch", (BLOCKS, Dim3::new(32, 1, 1)), &args)
    }
}
