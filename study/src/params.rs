//! The volume renderer's parameters: the image size and the kernel's scalar arguments
//! ([`RenderParams`]), its constants, and the SDK's transfer function — shared by the kernel's
//! launches and the CPU reference renderer.

/// The SDK's transfer function: RGBA at 9 evenly spaced sample values.
pub const TRANSFER_FUNCTION: [[f32; 4]; 9] = [
    [0.0, 0.0, 0.0, 0.0],
    [1.0, 0.0, 0.0, 1.0],
    [1.0, 0.5, 0.0, 1.0],
    [1.0, 1.0, 0.0, 1.0],
    [0.0, 1.0, 0.0, 1.0],
    [0.0, 1.0, 1.0, 1.0],
    [0.0, 0.0, 1.0, 1.0],
    [1.0, 0.0, 1.0, 1.0],
    [0.0, 0.0, 0.0, 0.0],
];

/// The kernel's constants (`maxSteps`, `opacityThreshold`) and the SDK's ray step, which the
/// kernel takes as a parameter ([`RenderParams::tstep`]).
pub const MAX_STEPS: u32 = 500;
pub const TSTEP: f32 = 0.01;
pub const OPACITY_THRESHOLD: f32 = 0.95;

/// Image size and the kernel's scalar arguments.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RenderParams {
    pub width: u32,
    pub height: u32,
    /// Opacity scale of the transfer function's alpha (SDK default 0.05).
    pub density: f32,
    /// Output scale (SDK default 1.0).
    pub brightness: f32,
    pub transfer_offset: f32,
    pub transfer_scale: f32,
    /// Ray step in the [-1, 1] box (SDK 0.01, [`TSTEP`]).
    pub tstep: f32,
}

impl Default for RenderParams {
    /// The SDK's defaults: 512×512, density 0.05, brightness 1, offset 0, scale 1, step 0.01.
    fn default() -> Self {
        RenderParams {
            width: 512,
            height: 512,
            density: 0.05,
            brightness: 1.0,
            transfer_offset: 0.0,
            transfer_scale: 1.0,
            tstep: TSTEP,
        }
    }
}

impl RenderParams {
    /// The SDK's defaults at another image size.
    pub fn with_size(width: u32, height: u32) -> Self {
        RenderParams {
            width,
            height,
            ..RenderParams::default()
        }
    }
}
