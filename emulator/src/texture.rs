//! Texture objects: storage layout, addressing modes and filtering as CUDA's texture unit does
//! them, so `tex.1d/2d/3d` on a handle returns what a GPU returns and fetches the texel addresses
//! a GPU would fetch (which the cache model sees).
//!
//! Layout in the emulator's device memory (the addresses the memory model gets):
//! - 1D and `tex1Dfetch` buffers: linear, `x * texel_bytes`.
//! - 2D: row-major (pitch-linear) rows of `width` texels.
//! - 3D: blocked like a cudaArray — 8×8×8-texel bricks, bricks ordered x, then y, then z, texels
//!   inside a brick x-fastest, then y, then z; extents padded to multiples of 8. Neighbours in all
//!   three directions share cache lines, which is what makes texture caches work for volumes.
//!   With `TextureConfig::linear_3d` a 3D texture is row-major instead (x, then y, then z), the
//!   untiled baseline of the tiling experiment.
//!
//! Filtering (CUDA Programming Guide, "Texture Fetching" appendix): point sampling takes texel
//! `floor(u)`; linear filtering with `xb = u - 0.5`, `i = floor(xb)`, `α = frac(xb)` stored in
//! 9-bit fixed point with 8 fractional bits, i.e. `α = round(frac × 256) / 256`, and
//! `T = (1-α)T[i] + αT[i+1]` per dimension (4 texels in 2D, 8 in 3D). Address modes apply to the
//! integer texel index: clamp to `[0, n-1]`, wrap modulo `n`, mirror with period `2n`, border
//! returns 0. Normalized coordinates are scaled by the extent first.
//!
//! ```ignore
//! let tex = Texture::new(desc, base);
//! let v = tex.sample(&dev, [0.5, 0.5, 0.0], &mut addrs)?; // [f32; 4]
//! ```

use serde::{Deserialize, Serialize};

use crate::devmem::DeviceMemory;

/// Texel element format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TexFormat {
    U8,
    U16,
    F32,
}

/// Filtering mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TexFilter {
    Point,
    Linear,
}

/// Out-of-range handling per dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TexAddress {
    Clamp,
    Wrap,
    Mirror,
    Border,
}

/// Describes a texture object (`cudaResourceDesc` + `cudaTextureDesc` in one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextureDesc {
    /// 1, 2 or 3.
    pub dims: u8,
    pub width: u32,
    pub height: u32,
    pub depth: u32,
    pub format: TexFormat,
    /// 1, 2 or 4.
    pub channels: u8,
    /// `cudaReadModeNormalizedFloat`: integer texels read as floats in [0, 1].
    pub normalized_read: bool,
    pub filter: TexFilter,
    pub address: [TexAddress; 3],
    pub normalized_coords: bool,
    /// `tex1Dfetch` over device memory at this address instead of a texture-owned array.
    pub linear_buffer: Option<u64>,
}

impl TextureDesc {
    pub(crate) fn texel_bytes(&self) -> u64 {
        let e = match self.format {
            TexFormat::U8 => 1,
            TexFormat::U16 => 2,
            TexFormat::F32 => 4,
        };
        e * self.channels as u64
    }
    fn extent(&self) -> [u32; 3] {
        let h = if self.dims >= 2 {
            self.height.max(1)
        } else {
            1
        };
        let d = if self.dims >= 3 { self.depth.max(1) } else { 1 };
        [self.width.max(1), h, d]
    }
    /// Bytes of the texture's storage in the emulator's layout.
    pub(crate) fn storage_bytes(&self) -> u64 {
        let [w, h, d] = self.extent().map(u64::from);
        if self.dims == 3 {
            w.div_ceil(8) * 8 * h.div_ceil(8) * 8 * d.div_ceil(8) * 8 * self.texel_bytes()
        } else {
            w * h * d * self.texel_bytes()
        }
    }
    /// Checks the description; the message names the field.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if !(1..=3).contains(&self.dims) {
            return Err(format!("dims: must be 1, 2 or 3, got {}", self.dims));
        }
        if ![1, 2, 4].contains(&self.channels) {
            return Err(format!(
                "channels: must be 1, 2 or 4, got {}",
                self.channels
            ));
        }
        if self.width == 0
            || (self.dims >= 2 && self.height == 0)
            || (self.dims == 3 && self.depth == 0)
        {
            return Err("width/height/depth: must be positive for the texture's dimensions".into());
        }
        if self.linear_buffer.is_some() && self.dims != 1 {
            return Err("linear_buffer: only 1D textures can read linear memory".into());
        }
        if self.filter == TexFilter::Linear
            && !self.normalized_read
            && self.format != TexFormat::F32
        {
            return Err("filter: linear filtering needs float texels or normalized_read".into());
        }
        Ok(())
    }
}

/// A created texture object.
#[derive(Debug, Clone)]
pub(crate) struct Texture {
    pub desc: TextureDesc,
    pub base: u64,
    /// 3D textures row-major instead of bricked (`TextureConfig::linear_3d`).
    pub linear_3d: bool,
}

/// Texture handles are this base plus the texture's index, so a stray integer is not a handle.
pub(crate) const HANDLE_BASE: u64 = 0x7E57_0000_0000_0001;

impl Texture {
    /// Byte offset of texel (x, y, z) in the storage layout (see module docs).
    pub(crate) fn texel_offset(&self, x: u32, y: u32, z: u32) -> u64 {
        let tb = self.desc.texel_bytes();
        let [w, h, _] = self.desc.extent().map(u64::from);
        let (x, y, z) = (x as u64, y as u64, z as u64);
        match self.desc.dims {
            3 if !self.linear_3d => {
                let (bw, bh) = (w.div_ceil(8), h.div_ceil(8));
                let brick = (z / 8 * bh + y / 8) * bw + x / 8;
                let inner = ((z % 8) * 8 + y % 8) * 8 + x % 8;
                (brick * 512 + inner) * tb
            }
            // Linear 3D: row-major slices (the tiling experiment's baseline).
            3 => ((z * h + y) * w + x) * tb,
            _ => (y * w + x) * tb,
        }
    }

    /// Host copy of row-major `data` into the storage layout.
    pub(crate) fn upload(
        &self,
        dev: &mut DeviceMemory,
        data: &[u8],
    ) -> Result<(), crate::EmuError> {
        let tb = self.desc.texel_bytes() as usize;
        let [w, h, d] = self.desc.extent();
        if self.desc.dims != 3 {
            return dev.write(self.base, data);
        }
        let mut i = 0usize;
        for z in 0..d {
            for y in 0..h {
                for x in 0..w {
                    let off = self.texel_offset(x, y, z);
                    dev.write(self.base + off, &data[i..i + tb])?;
                    i += tb;
                }
            }
        }
        Ok(())
    }

    fn index(&self, i: i64, n: u32, mode: TexAddress) -> Option<u32> {
        let n = n as i64;
        // wrap and mirror need normalized coordinates (as in CUDA); otherwise they clamp
        let mode = if self.desc.normalized_coords || mode == TexAddress::Border {
            mode
        } else {
            TexAddress::Clamp
        };
        Some(match mode {
            TexAddress::Clamp => i.clamp(0, n - 1) as u32,
            TexAddress::Wrap => i.rem_euclid(n) as u32,
            TexAddress::Mirror => {
                let m = i.rem_euclid(2 * n);
                (if m >= n { 2 * n - 1 - m } else { m }) as u32
            }
            TexAddress::Border => {
                if i < 0 || i >= n {
                    return None;
                }
                i as u32
            }
        })
    }

    /// Reads one texel as 4 floats (or raw integers as f32 bit-cast-free values) and records
    /// its address.
    fn texel(
        &self,
        dev: &DeviceMemory,
        at: [Option<u32>; 3],
        addrs: &mut Vec<u64>,
    ) -> Result<[f32; 4], String> {
        let (Some(x), Some(y), Some(z)) = (at[0], at[1], at[2]) else {
            return Ok([0.0; 4]);
        };
        let off = self.texel_offset(x, y, z);
        let addr = self.base + off;
        addrs.push(addr);
        let tb = self.desc.texel_bytes() as usize;
        let bytes = dev
            .slice(addr, tb)
            .ok_or_else(|| format!("texel address {addr:#x} is not mapped"))?;
        let mut v = [0.0f32, 0.0, 0.0, 1.0];
        for c in 0..self.desc.channels as usize {
            v[c] = match self.desc.format {
                TexFormat::U8 => {
                    let b = bytes[c] as f32;
                    if self.desc.normalized_read {
                        b / 255.0
                    } else {
                        b
                    }
                }
                TexFormat::U16 => {
                    let b = u16::from_le_bytes([bytes[2 * c], bytes[2 * c + 1]]) as f32;
                    if self.desc.normalized_read {
                        b / 65535.0
                    } else {
                        b
                    }
                }
                TexFormat::F32 => f32::from_le_bytes([
                    bytes[4 * c],
                    bytes[4 * c + 1],
                    bytes[4 * c + 2],
                    bytes[4 * c + 3],
                ]),
            };
        }
        Ok(v)
    }

    /// Integer-coordinate fetch (`tex1Dfetch`): no filtering, out of range reads 0.
    pub(crate) fn fetch_int(
        &self,
        dev: &DeviceMemory,
        i: i64,
        addrs: &mut Vec<u64>,
    ) -> Result<[f32; 4], String> {
        if i < 0 || i >= self.desc.width as i64 {
            return Ok([0.0; 4]);
        }
        self.texel(dev, [Some(i as u32), Some(0), Some(0)], addrs)
    }

    /// Float-coordinate sample with the texture's filter and address modes.
    pub(crate) fn sample(
        &self,
        dev: &DeviceMemory,
        coords: [f32; 3],
        addrs: &mut Vec<u64>,
    ) -> Result<[f32; 4], String> {
        let ext = self.desc.extent();
        let nd = self.desc.dims as usize;
        let mut u = [0.0f32; 3];
        for k in 0..nd {
            u[k] = if self.desc.normalized_coords {
                coords[k] * ext[k] as f32
            } else {
                coords[k]
            };
        }
        match self.desc.filter {
            TexFilter::Point => {
                let mut at = [Some(0u32); 3];
                for k in 0..nd {
                    at[k] = self.index(u[k].floor() as i64, ext[k], self.desc.address[k]);
                }
                self.texel(dev, at, addrs)
            }
            TexFilter::Linear => {
                let mut i0 = [0i64; 3];
                let mut alpha = [0.0f32; 3];
                for k in 0..nd {
                    let xb = u[k] - 0.5;
                    let fl = xb.floor();
                    i0[k] = fl as i64;
                    // 1.8 fixed-point weight, as the hardware stores it
                    alpha[k] = ((xb - fl) * 256.0).round() / 256.0;
                }
                let mut acc = [0.0f32; 4];
                let corners = 1usize << nd;
                for corner in 0..corners {
                    let mut w = 1.0f32;
                    let mut at = [Some(0u32); 3];
                    for k in 0..nd {
                        let hi = (corner >> k) & 1;
                        w *= if hi == 1 { alpha[k] } else { 1.0 - alpha[k] };
                        at[k] = self.index(i0[k] + hi as i64, ext[k], self.desc.address[k]);
                    }
                    let t = self.texel(dev, at, addrs)?;
                    for c in 0..4 {
                        acc[c] += w * t[c];
                    }
                }
                Ok(acc)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(dims: u8, w: u32, h: u32, d: u32, filter: TexFilter) -> TextureDesc {
        TextureDesc {
            dims,
            width: w,
            height: h,
            depth: d,
            format: TexFormat::F32,
            channels: 1,
            normalized_read: false,
            filter,
            address: [TexAddress::Clamp; 3],
            normalized_coords: false,
            linear_buffer: None,
        }
    }

    fn make(d: TextureDesc, data: &[f32]) -> (DeviceMemory, Texture) {
        let mut dev = DeviceMemory::default();
        let base = dev.alloc(d.storage_bytes()).unwrap();
        let t = Texture {
            desc: d,
            base,
            linear_3d: false,
        };
        let bytes: Vec<u8> = data.iter().flat_map(|f| f.to_le_bytes()).collect();
        t.upload(&mut dev, &bytes).unwrap();
        (dev, t)
    }

    #[test]
    fn linear_filter_uses_8bit_weights() {
        let (dev, t) = make(desc(1, 4, 1, 1, TexFilter::Linear), &[0.0, 1.0, 2.0, 3.0]);
        let mut a = Vec::new();
        // u = 1.5 + 1/3 -> xb = 1.3333, alpha = round(85.33)/256 = 85/256
        let v = t.sample(&dev, [1.5 + 1.0 / 3.0, 0.0, 0.0], &mut a).unwrap();
        assert_eq!(v[0], 1.0 + 85.0 / 256.0);
        assert_eq!(a.len(), 2);
        assert_eq!(a[1] - a[0], 4);
    }

    #[test]
    fn address_modes() {
        let mut d = desc(1, 4, 1, 1, TexFilter::Point);
        d.normalized_coords = true;
        d.address[0] = TexAddress::Wrap;
        let (dev, t) = make(d.clone(), &[10.0, 11.0, 12.0, 13.0]);
        let mut a = Vec::new();
        assert_eq!(
            t.sample(&dev, [1.25 + 0.01, 0.0, 0.0], &mut a).unwrap()[0],
            11.0
        );
        d.address[0] = TexAddress::Mirror;
        let t2 = Texture {
            desc: d.clone(),
            base: t.base,
            linear_3d: false,
        };
        // u = 1.125*4 = 4.5 -> index 4 mirrors to 3
        assert_eq!(t2.sample(&dev, [1.125, 0.0, 0.0], &mut a).unwrap()[0], 13.0);
        d.address[0] = TexAddress::Border;
        let t3 = Texture {
            desc: d,
            base: t.base,
            linear_3d: false,
        };
        assert_eq!(t3.sample(&dev, [1.5, 0.0, 0.0], &mut a).unwrap()[0], 0.0);
        assert_eq!(
            t.sample(&dev, [-0.25 + 0.01, 0.0, 0.0], &mut a).unwrap()[0],
            13.0
        );
    }

    #[test]
    fn volume_is_bricked() {
        let d = desc(3, 16, 16, 16, TexFilter::Point);
        let t = Texture {
            desc: d.clone(),
            base: 0,
            linear_3d: false,
        };
        let linear = Texture {
            desc: d,
            base: 0,
            linear_3d: true,
        };
        // Row-major: a row of 16 texels of 4 bytes, a slice of 16 rows.
        assert_eq!(linear.texel_offset(1, 0, 0), 4);
        assert_eq!(linear.texel_offset(0, 1, 0), 64);
        assert_eq!(linear.texel_offset(0, 0, 1), 1024);
        assert_eq!(t.texel_offset(1, 0, 0), 4);
        assert_eq!(t.texel_offset(0, 1, 0), 32);
        assert_eq!(t.texel_offset(0, 0, 1), 256);
        assert_eq!(t.texel_offset(8, 0, 0), 2048);
        let vals: Vec<f32> = (0..16 * 16 * 16).map(|i| i as f32).collect();
        let (dev, t) = make(desc(3, 16, 16, 16, TexFilter::Point), &vals);
        let mut a = Vec::new();
        let v = t.sample(&dev, [9.5, 3.5, 12.5], &mut a).unwrap();
        assert_eq!(v[0], (12 * 256 + 3 * 16 + 9) as f32);
    }
}
