//! `tex-footprint.cu` on the emulator: one launch per case, each after an L2 flush, and the
//! texture's counts over it.

use std::path::Path;

use device::{Arg, DevBuf};
use emulator::{GpuConfig, TexFormat, TextureDesc};
use trace::Dim3;

use super::{Experiment, TexCases, texture_desc};
use crate::error::CalibrationError;
use crate::table::{TEX_FOOTPRINT_LAST_CASE, TexCount};

/// `main`'s 3D texture (`W` × `H` × `D` bytes) and grids.
const W: u32 = 512;
const H: u32 = 64;
const TRI_BLOCKS: u32 = 256;
const D: u32 = 8 * TRI_BLOCKS;
const POINT_BLOCKS: u32 = 264;
/// Texels across the small textures of cases 17–21.
const SMALL: u32 = 64;

pub(crate) struct TexFootprintRig {
    cases: TexCases,
    /// The 3D texture filtered (cases 0–13 and 22–23) and point-sampled (14–16).
    linear: u64,
    point: u64,
    /// Cases 17–21's textures, in case order.
    small: [u64; 5],
    out: DevBuf,
    sm: DevBuf,
}

/// `main` reads u8 texels as normalised floats and float ones as they are.
fn desc(dims: u8, extent: [u32; 3], format: TexFormat, channels: u8, linear: bool) -> TextureDesc {
    texture_desc(
        dims,
        extent,
        format,
        channels,
        format == TexFormat::U8,
        linear,
    )
}

impl TexFootprintRig {
    pub(crate) fn new(root: &Path, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let mut exp = Experiment::load(root, "tex-footprint.cu", cfg)?;
        // `main` uploads one block of 8 slices, byte i = 7 i + 3, to every 8 slices.
        let block = (W * H * 8) as usize;
        let volume: Vec<u8> = (0..(W * H * D) as usize)
            .map(|i| ((i % block) as u32 * 7 + 3) as u8)
            .collect();
        let big = [W, H, D];
        let linear = exp.texture(&desc(3, big, TexFormat::U8, 1, true), &volume)?;
        let point = exp.texture(&desc(3, big, TexFormat::U8, 1, false), &volume)?;
        drop(volume);
        let zeros = vec![0u8; (SMALL * SMALL * 16) as usize];
        let line = [SMALL, 1, 1];
        let square = [SMALL, SMALL, 1];
        let small = [
            (desc(1, line, TexFormat::F32, 4, true), SMALL * 16),
            (desc(1, line, TexFormat::F32, 4, false), SMALL * 16),
            (desc(2, square, TexFormat::F32, 4, true), SMALL * SMALL * 16),
            (desc(2, square, TexFormat::U8, 1, true), SMALL * SMALL),
            (desc(1, line, TexFormat::F32, 1, true), SMALL * 4),
        ];
        let mut handles = [0u64; 5];
        for (h, (d, bytes)) in handles.iter_mut().zip(&small) {
            *h = exp.texture(d, &zeros[..*bytes as usize])?;
        }
        let out = exp.alloc(u64::from(POINT_BLOCKS) * 32 * 4)?;
        let sm = exp.alloc(u64::from(POINT_BLOCKS) * 4)?;
        Ok(TexFootprintRig {
            cases: TexCases::new(exp),
            linear,
            point,
            small: handles,
            out,
            sm,
        })
    }

    /// `count` of case `case`'s launch.
    pub(crate) fn count(&mut self, case: u32, count: TexCount) -> Result<f64, CalibrationError> {
        let c = i32::try_from(case).unwrap_or(i32::MAX);
        let out = Arg::Buf(self.out);
        let warp = Dim3::new(32, 1, 1);
        let (kernel, shape, args) = match case {
            0..=13 => (
                "trilinear",
                (TRI_BLOCKS, warp),
                vec![Arg::U64(self.linear), Arg::I32(c), out],
            ),
            14..=16 => (
                "point",
                (POINT_BLOCKS, warp),
                vec![Arg::U64(self.point), Arg::I32(c), out, Arg::Buf(self.sm)],
            ),
            17..=21 => (
                "single",
                (1, warp),
                vec![Arg::U64(self.small[(case - 17) as usize]), Arg::I32(c), out],
            ),
            22..=TEX_FOOTPRINT_LAST_CASE => (
                "trilinear2d",
                (TRI_BLOCKS, Dim3::new(2, 16, 1)),
                vec![Arg::U64(self.linear), Arg::I32(c), out],
            ),
            _ => {
                return Err(CalibrationError::Result {
                    what: "tex-footprint.cu".into(),
                    reason: format!("it has no case {case}"),
                });
            }
        };
        self.cases.count(case, count, kernel, shape, &args)
    }
}
