//! Texture objects: storage layout, addressing modes and filtering as CUDA's texture unit does
//! them, so `tex.1d/2d/3d` on a handle returns what a GPU returns and fetches the texel addresses
//! a GPU would fetch (which the cache model sees: set indices and sectors come from the layout).
//!
//! Layout in the emulator's device memory (the addresses the memory model gets), chosen by
//! `[texture] layout` ([`TextureLayout`](crate::config::TextureLayout)) and computed in
//! `layout.rs`; a 1D array is laid out as a 2D one of one row, and a `tex1Dfetch` buffer (a
//! texture over linear memory) is always linear, `x * texel_bytes`.
//! - `block-linear` (default): NVIDIA's cudaArray layout, as Mesa's NVK driver lays images out
//!   (`src/nouveau/nil/tiling.rs`, `Tiling::choose`/`Tiling::clamp`/`GOBType`, and
//!   `src/nouveau/nil/copy.rs`, `CopyGOBFermi`; cited where it is used below). Rows are
//!   `width × texel_bytes` bytes. The unit is the GOB, 64 bytes × 8 rows = 512 B (Fermi and
//!   later; Tesla's 64 × 4 GOB is not modelled, no preset is Tesla). Blocks are one GOB wide,
//!   2^h GOBs high and 2^d slices deep; GOBs inside a block go y first, then z; blocks go x, then
//!   y, then z. The extent is padded to whole blocks and the array is aligned to
//!   max(block bytes, 4 KiB). Inside a GOB, 16-byte row pieces are swizzled so that a 32-byte
//!   sector holds 16 bytes × 2 rows and a 128-byte line 32 bytes × 4 rows.
//! - `bricks`: 3D in 8×8×8-texel bricks, bricks ordered x, then y, then z, texels inside a brick
//!   x-fastest, then y, then z; extents padded to multiples of 8. 2D row-major.
//! - `linear`: row-major, x, then y, then z (the untiled baseline).
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

use crate::bits::set_bits;
use crate::devmem::DeviceMemory;

mod layout;

pub(crate) use layout::Storage;
#[cfg(test)]
use layout::storage_offset;

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
    /// A 1D texture of `width` `f32` texels read as stored, `tex1Dfetch`'s kind: point
    /// sampling, clamped, unnormalized coordinates, in a texture-owned array.
    pub fn floats(width: u32) -> TextureDesc {
        TextureDesc {
            dims: 1,
            width,
            height: 1,
            depth: 1,
            format: TexFormat::F32,
            channels: 1,
            normalized_read: false,
            filter: TexFilter::Point,
            address: [TexAddress::Clamp; 3],
            normalized_coords: false,
            linear_buffer: None,
        }
    }

    /// A 3D one-channel u8 texture read as normalized float, trilinear: a volume renderer's,
    /// which [`Sampler::sample_volume`] takes a warp at a time when its address modes and
    /// storage allow.
    fn volume_kind(&self) -> bool {
        self.dims == 3
            && self.format == TexFormat::U8
            && self.channels == 1
            && self.normalized_read
            && self.filter == TexFilter::Linear
    }

    /// A 1D float texture of 1, 2 or 4 channels, linear filtering: a renderer's transfer
    /// function, which [`Sampler::sample_line`] takes a warp at a time when its address mode
    /// and storage allow.
    fn line_kind(&self) -> bool {
        self.dims == 1
            && self.format == TexFormat::F32
            && [1, 2, 4].contains(&self.channels)
            && self.filter == TexFilter::Linear
    }

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
    pub storage: Storage,
    /// Per axis, each texel index's part of a texel's offset ([`Storage::part`]), for the
    /// textures the warp-wide paths sample ([`Sampler::sample_volume`],
    /// [`Sampler::sample_line`]) and whose axes are at most [`PART_TABLE_MAX`] long; empty for
    /// the rest. Why: a trilinear sample resolves six parts a lane, and a part of the
    /// block-linear layout is about 20 host instructions of shifts and masks where a lookup is
    /// one load.
    parts: [Vec<(u64, u64)>; 3],
}

/// The longest axis [`Texture::parts`] tabulates: 16 bytes an entry, 256 KiB an axis.
const PART_TABLE_MAX: u32 = 1 << 14;

/// Texture handles are this base plus the texture's index, so a stray integer is not a handle.
pub(crate) const HANDLE_BASE: u64 = 0x7E57_0000_0000_0001;

impl Texture {
    /// The texture of `desc` at `base`, laid out as `storage`.
    pub(crate) fn new(desc: TextureDesc, base: u64, storage: Storage) -> Texture {
        let warp_wide = desc.volume_kind() || desc.line_kind();
        let (tb, ext) = (desc.texel_bytes(), desc.extent());
        let parts = std::array::from_fn(|k| {
            if warp_wide && ext[k] <= PART_TABLE_MAX {
                (0..ext[k]).map(|i| storage.part(k, i, tb, ext)).collect()
            } else {
                Vec::new()
            }
        });
        Texture {
            desc,
            base,
            storage,
            parts,
        }
    }

    /// Byte offset of texel (x, y, z) in the storage layout (see module docs).
    #[cfg(test)]
    pub(crate) fn texel_offset(&self, x: u32, y: u32, z: u32) -> u64 {
        storage_offset(
            &self.storage,
            self.desc.texel_bytes(),
            self.desc.extent(),
            x,
            y,
            z,
        )
    }

    /// Host copy of row-major `data` into the storage layout.
    pub(crate) fn upload(
        &self,
        dev: &mut DeviceMemory,
        data: &[u8],
    ) -> Result<(), crate::EmuError> {
        if self.storage == Storage::Linear {
            return dev.write(self.base, data);
        }
        let tb = self.desc.texel_bytes() as usize;
        let [w, h, d] = self.desc.extent();
        let len = self.storage.bytes(&self.desc);
        let dst = usize::try_from(len)
            .ok()
            .and_then(|n| dev.slice_mut(self.base, n))
            .ok_or_else(|| crate::EmuError::Memory {
                addr: self.base,
                what: format!("texture storage of {len} bytes is not mapped"),
            })?;
        // Each axis' offset parts once, and per row one offset for each run of texels that
        // the storage keeps together (`Storage::x_run`), copied whole: the texels' offsets
        // computed one by one made the re-layout a tenth of a paper-scale frame's time.
        let (storage, tbu, ext) = (&self.storage, tb as u64, self.desc.extent());
        let run = storage.x_run(tbu, u64::from(w));
        let runs: Vec<(u64, u64)> = (0..w)
            .step_by(run as usize)
            .map(|x| storage.part(0, x, tbu, ext))
            .collect();
        let whole_texels = &data[..data.len() / tb * tb];
        let mut rows = whole_texels.chunks(w as usize * tb);
        for z in 0..d {
            let (hz, lz) = storage.part(2, z, tbu, ext);
            for y in 0..h {
                let (hy, ly) = storage.part(1, y, tbu, ext);
                let Some(row) = rows.next() else {
                    return Ok(());
                };
                for (piece, &(hx, lx)) in row.chunks(run as usize * tb).zip(&runs) {
                    let off = (hx + hy + hz + (lx ^ ly ^ lz)) as usize;
                    match dst.get_mut(off..off + piece.len()) {
                        Some(texels) => texels.copy_from_slice(piece),
                        None => {
                            return Err(crate::EmuError::Memory {
                                addr: self.base + off as u64,
                                what: "texel outside the texture's storage".into(),
                            });
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The texture's sampling state over `dev`, resolved once for many samples.
    pub(crate) fn sampler<'a>(&'a self, dev: &'a DeviceMemory) -> Sampler<'a> {
        let d = &self.desc;
        let data = usize::try_from(self.storage.bytes(d))
            .ok()
            .and_then(|n| dev.slice(self.base, n));
        // wrap and mirror need normalized coordinates (as in CUDA); otherwise they clamp
        let modes = d.address.map(|mode| {
            if d.normalized_coords || mode == TexAddress::Border {
                mode
            } else {
                TexAddress::Clamp
            }
        });
        Sampler {
            tex: self,
            dev,
            data,
            tb: d.texel_bytes(),
            ext: d.extent(),
            modes,
            parts: [0, 1, 2].map(|k| self.parts[k].as_slice()),
            channels: (d.channels as usize).min(4),
            volume: d.volume_kind() && !modes.contains(&TexAddress::Border) && data.is_some(),
            line: d.line_kind() && modes[0] != TexAddress::Border && data.is_some(),
        }
    }

    /// Float-coordinate sample with the texture's filter and address modes; `addrs` gets the
    /// texel addresses it read.
    #[cfg(test)]
    pub(crate) fn sample(
        &self,
        dev: &DeviceMemory,
        coords: [f32; 3],
        addrs: &mut Vec<u64>,
    ) -> Result<[f32; 4], String> {
        let mut lanes = Vec::new();
        let v = self.sampler(dev).sample(coords, 0, &mut lanes);
        addrs.extend(lanes.iter().map(|&(_, a)| a));
        v.map_err(unmapped)
    }
}

/// A filtered value, with any NaN made the one quiet NaN. Which NaN an arithmetic NaN comes out
/// as (its sign, its payload) follows the order the compiler put the operands in, which
/// inlining changes (the volume path and the general one differed in sign at infinite
/// coordinates); the filtered values are the same bits in every build this way. The NaN a
/// texture unit returns is not modelled.
#[inline(always)]
fn quiet(v: f32) -> f32 {
    if v.is_nan() { f32::NAN } else { v }
}

/// The fault of a texel read at an address no allocation holds.
pub(crate) fn unmapped(addr: u64) -> String {
    format!("texel address {addr:#x} is not mapped")
}

/// Texel index `i` of an extent of `n` under address mode `mode` (`None`: border, reads 0).
#[inline]
fn index(i: i64, n: u32, mode: TexAddress) -> Option<u32> {
    let n = n as i64;
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

/// One texture's sampling state, resolved once per warp instruction rather than per texel:
/// extent, texel size, effective address modes and — the costly part — the storage bytes, so
/// that each of a trilinear sample's eight texels is an offset into one slice instead of an
/// allocation lookup.
pub(crate) struct Sampler<'a> {
    tex: &'a Texture,
    dev: &'a DeviceMemory,
    /// The whole storage when it is mapped in one piece. A texel outside it (a linear buffer
    /// smaller than its description) is looked up in `dev`, which reports it unmapped.
    data: Option<&'a [u8]>,
    tb: u64,
    ext: [u32; 3],
    modes: [TexAddress; 3],
    /// The texture's tables of parts per axis ([`Texture::parts`]).
    parts: [&'a [(u64, u64)]; 3],
    channels: usize,
    /// A 3D one-channel u8 texture read as normalized float, trilinear, no border, its storage
    /// mapped in one piece: what a volume renderer samples, which [`Sampler::sample_volume`]
    /// takes a warp at a time.
    volume: bool,
    /// A 1D float texture of 1, 2 or 4 channels, linear filtering, no border, its storage
    /// mapped in one piece: a renderer's transfer function, which [`Sampler::sample_line`]
    /// takes a warp at a time.
    line: bool,
}

impl Sampler<'_> {
    /// Bytes per texel.
    pub(crate) fn texel_bytes(&self) -> u64 {
        self.tb
    }

    /// Whether a float-coordinate sample is filtered (linear) rather than a point sample.
    pub(crate) fn filtered(&self) -> bool {
        self.tex.desc.filter == TexFilter::Linear
    }

    /// Axis `k`'s part of the offset of texel index `i` (`None`, a border texel, stays so).
    #[inline]
    fn part(&self, k: usize, i: Option<u32>) -> Option<(u64, u64)> {
        i.map(|i| self.tex.storage.part(k, i, self.tb, self.ext))
    }

    /// Axis `k`'s part of texel index `i`, which is in range: from the texture's table where
    /// it has one.
    #[inline(always)]
    fn tabled_part(&self, k: usize, i: u32) -> (u64, u64) {
        match self.parts[k].get(i as usize) {
            Some(&p) => p,
            None => self.tex.storage.part(k, i, self.tb, self.ext),
        }
    }

    /// Reads the texel whose offset parts are `p` as 4 floats (or raw integers as f32
    /// bit-cast-free values) and records its address for `lane`; a border texel reads 0.
    #[inline]
    fn texel(
        &self,
        p: [Option<(u64, u64)>; 3],
        lane: u8,
        lanes: &mut Vec<(u8, u64)>,
    ) -> Result<[f32; 4], u64> {
        let (Some((hx, lx)), Some((hy, ly)), Some((hz, lz))) = (p[0], p[1], p[2]) else {
            return Ok([0.0; 4]);
        };
        self.texel_at(hx + hy + hz + (lx ^ ly ^ lz), lane, lanes)
    }

    /// Reads the texel at byte offset `off` of the storage and records its address for `lane`;
    /// `Err` is an address no allocation holds. Why the small error: a trilinear sample reads
    /// eight texels per lane, and a `String` error would make every return a memory copy.
    #[inline(always)]
    fn texel_at(&self, off: u64, lane: u8, lanes: &mut Vec<(u8, u64)>) -> Result<[f32; 4], u64> {
        let addr = self.tex.base + off;
        lanes.push((lane, addr));
        let tb = self.tb as usize;
        let inside = self.data.and_then(|d| {
            let o = usize::try_from(off).ok()?;
            d.get(o..o.checked_add(tb)?)
        });
        let bytes = match inside {
            Some(b) => b,
            None => self.outside(addr)?,
        };
        let d = &self.tex.desc;
        let mut v = [0.0f32, 0.0, 0.0, 1.0];
        let ch = self.channels;
        // The format is chosen once per texel, not once per channel; `bytes` holds `ch`
        // elements of the format.
        match d.format {
            TexFormat::U8 => {
                for c in 0..ch {
                    let b = bytes[c] as f32;
                    v[c] = if d.normalized_read { b / 255.0 } else { b };
                }
            }
            TexFormat::U16 => {
                for c in 0..ch {
                    let b = u16::from_le_bytes([bytes[2 * c], bytes[2 * c + 1]]) as f32;
                    v[c] = if d.normalized_read { b / 65535.0 } else { b };
                }
            }
            TexFormat::F32 => {
                for c in 0..ch {
                    let p = &bytes[4 * c..4 * c + 4];
                    v[c] = f32::from_le_bytes([p[0], p[1], p[2], p[3]]);
                }
            }
        }
        Ok(v)
    }

    /// A texel outside the mapped storage (a linear buffer smaller than its description): looked
    /// up in device memory, which may not hold it either.
    #[cold]
    fn outside(&self, addr: u64) -> Result<&[u8], u64> {
        self.dev.slice(addr, self.tb as usize).ok_or(addr)
    }

    /// Integer-coordinate fetch (`tex1Dfetch`): no filtering, out of range reads 0.
    pub(crate) fn fetch_int(
        &self,
        i: i64,
        lane: u8,
        lanes: &mut Vec<(u8, u64)>,
    ) -> Result<[f32; 4], u64> {
        if i < 0 || i >= self.tex.desc.width as i64 {
            return Ok([0.0; 4]);
        }
        let p = [0, 1, 2].map(|k| self.part(k, Some(if k == 0 { i as u32 } else { 0 })));
        self.texel(p, lane, lanes)
    }

    /// Float-coordinate sample with the texture's filter and address modes, recording the
    /// texel addresses for `lane`. Always inlined: the texture fetch compiles it with the host's
    /// rounding instructions where it has them (`hostcpu`).
    #[inline(always)]
    pub(crate) fn sample(
        &self,
        coords: [f32; 3],
        lane: u8,
        lanes: &mut Vec<(u8, u64)>,
    ) -> Result<[f32; 4], u64> {
        let d = &self.tex.desc;
        let ext = self.ext;
        let nd = d.dims as usize;
        let mut u = [0.0f32; 3];
        for k in 0..nd {
            u[k] = self.texel_coord(k, coords[k]);
        }
        match d.filter {
            TexFilter::Point => {
                let mut at = [Some(0u32); 3];
                for k in 0..nd {
                    at[k] = index(u[k].floor() as i64, ext[k], self.modes[k]);
                }
                self.texel([0, 1, 2].map(|k| self.part(k, at[k])), lane, lanes)
            }
            TexFilter::Linear => {
                // Per axis: the two texel indices' offset parts (`None` for a border index,
                // whose corners read 0) and the two weights (1 − α, α); an axis the texture
                // lacks has one index, 0, and weight 1 — multiplying by 1 is exact, so the
                // weights are bit for bit the product over the texture's own axes.
                let mut parts = [[None; 2]; 3];
                let mut weight = [[1.0f32; 2]; 3];
                let mut count = [1usize; 3];
                for k in 0..3 {
                    if k < nd {
                        let i0;
                        (i0, weight[k]) = Self::linear_weights(u[k]);
                        count[k] = 2;
                        for (h, part) in parts[k].iter_mut().enumerate() {
                            *part = self
                                .part(k, index(i0.saturating_add(h as i64), ext[k], self.modes[k]));
                        }
                    } else {
                        parts[k][0] = self.part(k, Some(0));
                    }
                }
                // Corners in the order x fastest, then y, then z; the weight of a corner is
                // (w_x · w_y) · w_z, the order the sum has always used.
                let mut acc = [0.0f32; 4];
                for z in 0..count[2] {
                    for y in 0..count[1] {
                        let (wy, wz) = (weight[1][y], weight[2][z]);
                        for x in 0..count[0] {
                            let w = weight[0][x] * wy * wz;
                            let t = match (parts[0][x], parts[1][y], parts[2][z]) {
                                (Some((hx, lx)), Some((hy, ly)), Some((hz, lz))) => {
                                    self.texel_at(hx + hy + hz + (lx ^ ly ^ lz), lane, lanes)?
                                }
                                _ => [0.0; 4],
                            };
                            for c in 0..4 {
                                acc[c] += w * t[c];
                            }
                        }
                    }
                }
                Ok(acc.map(quiet))
            }
        }
    }

    /// Linear filtering at texel coordinate `u`: the lower of its two texel indices (before the
    /// address mode) and their weights `[1 − α, α]`, with α in the 1.8 fixed point the hardware
    /// stores it in.
    #[inline(always)]
    fn linear_weights(u: f32) -> (i64, [f32; 2]) {
        let xb = u - 0.5;
        let fl = xb.floor();
        let alpha = round_half_away((xb - fl) * 256.0) / 256.0;
        (fl as i64, [1.0 - alpha, alpha])
    }

    /// Coordinate `c` on axis `k` in texels.
    #[inline(always)]
    fn texel_coord(&self, k: usize, c: f32) -> f32 {
        if self.tex.desc.normalized_coords {
            c * self.ext[k] as f32
        } else {
            c
        }
    }

    /// The eight texel offsets of a volume sample at texel coordinates `u`, corners x fastest,
    /// and its weights per axis, written in place. Every index is in range here (no border),
    /// so the offsets come from two parts per axis.
    #[inline(always)]
    fn volume_corners(
        &self,
        u: [f32; 3],
        off: &mut [u64; 8],
        weight: &mut [[f32; 2]; 3],
    ) -> Option<()> {
        let mut part = [[(0u64, 0u64); 2]; 3];
        for k in 0..3 {
            let i0;
            (i0, weight[k]) = Self::linear_weights(u[k]);
            for (h, p) in part[k].iter_mut().enumerate() {
                let i = index(i0.saturating_add(h as i64), self.ext[k], self.modes[k])?;
                *p = self.tabled_part(k, i);
            }
        }
        for (c, o) in off.iter_mut().enumerate() {
            let ((hx, lx), (hy, ly), (hz, lz)) =
                (part[0][c & 1], part[1][(c >> 1) & 1], part[2][c >> 2]);
            *o = hx + hy + hz + (lx ^ ly ^ lz);
        }
        Some(())
    }

    /// Whether [`Sampler::sample_line`] can take this texture's samples.
    pub(crate) fn line_path(&self) -> bool {
        self.line
    }

    /// The linear samples of a 1D float texture (see `line`) for the lanes of `mask` at
    /// coordinates `coords[lane]`, each bit for bit what [`Sampler::sample`] gives it, with
    /// every lane's two texel addresses recorded in lane order. Why its own path: lane by lane
    /// through [`Sampler::sample`] a transfer function's fetch runs the general filter's three
    /// axes and corner loops for one axis and chooses each texel's format as it reads it; here
    /// the texture's kind is known, and a lane's four channels are one host vector (the demo
    /// frame's texture fetches: 17 % fewer host instructions). `false`, with nothing
    /// recorded, when some lane's texel lies outside the storage (the caller then samples lane
    /// by lane, which reports it).
    #[inline(always)]
    pub(crate) fn sample_line(
        &self,
        coords: &[f32; 32],
        mask: u32,
        lanes: &mut Vec<(u8, u64)>,
        out: &mut [[f32; 32]; 4],
    ) -> bool {
        let Some(data) = self.data.filter(|_| self.line) else {
            return false;
        };
        let start = lanes.len();
        // The axes a 1D texture lacks: index 0, weight 1, the same parts for every texel.
        let (hy, ly) = self.tex.storage.part(1, 0, self.tb, self.ext);
        let (hz, lz) = self.tex.storage.part(2, 0, self.tb, self.ext);
        let bytes = 4 * self.channels;
        for l in set_bits(mask) {
            let (i0, weight) = Self::linear_weights(self.texel_coord(0, coords[l]));
            let mut acc = [0.0f32; 4];
            for (h, wx) in weight.into_iter().enumerate() {
                // No border here, so every index is one.
                let i = index(i0.saturating_add(h as i64), self.ext[0], self.modes[0]).unwrap_or(0);
                let (hx, lx) = self.tabled_part(0, i);
                let off = hx + hy + hz + (lx ^ ly ^ lz);
                let Some(texel) = usize::try_from(off)
                    .ok()
                    .and_then(|o| data.get(o..o.checked_add(bytes)?))
                else {
                    lanes.truncate(start);
                    return false;
                };
                lanes.push((l as u8, self.tex.base + off));
                let t = match <&[u8; 16]>::try_from(texel) {
                    // Four channels, a transfer function's usual kind, read as one 16-byte
                    // piece: the general loop below copied each texel with a call to memcpy.
                    Ok(b) => [
                        f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                        f32::from_le_bytes([b[4], b[5], b[6], b[7]]),
                        f32::from_le_bytes([b[8], b[9], b[10], b[11]]),
                        f32::from_le_bytes([b[12], b[13], b[14], b[15]]),
                    ],
                    Err(_) => {
                        let mut t = [0.0f32, 0.0, 0.0, 1.0];
                        for (v, e) in t.iter_mut().zip(texel.chunks_exact(4)) {
                            *v = f32::from_le_bytes([e[0], e[1], e[2], e[3]]);
                        }
                        t
                    }
                };
                // The general path's corner weight, (w_x · w_y) · w_z with w_y = w_z = 1.
                let w = wx * 1.0 * 1.0;
                for (a, t) in acc.iter_mut().zip(t) {
                    *a += w * t;
                }
            }
            for (row, a) in out.iter_mut().zip(acc) {
                row[l] = quiet(a);
            }
        }
        true
    }

    /// Whether [`Sampler::sample_volume`] can take this texture's samples.
    pub(crate) fn volume_path(&self) -> bool {
        self.volume
    }

    /// The trilinear samples of a one-channel u8 volume (see `volume`) for the lanes of `mask`
    /// at coordinates `coords[axis][lane]`, each bit for bit what [`Sampler::sample`] gives
    /// it, with every lane's eight texel addresses recorded in lane order. In passes over the
    /// warp: every lane's texel offsets, then every texel read, then the filter. Why: on a view
    /// whose rays cross the volume's layout the texel reads miss the host's caches; read back
    /// to back their misses overlap, where each lane's filter between them kept them one lane
    /// at a time (the 128×1 demo run at 90°: 8 % faster). `false`, with nothing recorded, when
    /// some lane's texel lies outside the storage (the caller then samples lane by lane, which
    /// reports it).
    #[inline(always)]
    pub(crate) fn sample_volume(
        &self,
        coords: &[[f32; 32]; 3],
        mask: u32,
        scratch: &mut WarpSamples,
        lanes: &mut Vec<(u8, u64)>,
        out: &mut [[f32; 32]; 4],
    ) -> bool {
        let Some(data) = self.data.filter(|_| self.volume) else {
            return false;
        };
        let WarpSamples { off, weight, texel } = scratch;
        let read = each_set_lane(mask, |l| {
            // Written out rather than `[0, 1, 2].map(..)`: `map` goes through `try_map`, which
            // the compiler may leave out of line, compiled without the host's features (a build
            // did: 0.5 % of a frame's host instructions).
            let u = [
                self.texel_coord(0, coords[0][l]),
                self.texel_coord(1, coords[1][l]),
                self.texel_coord(2, coords[2][l]),
            ];
            self.volume_corners(u, &mut off[l], &mut weight[l])
        })
        .and_then(|()| {
            each_set_lane(mask, |l| {
                for (t, &o) in texel[l].iter_mut().zip(&off[l]) {
                    *t = *data.get(usize::try_from(o).ok()?)? as f32 / 255.0;
                }
                Some(())
            })
        });
        if read.is_none() {
            return false;
        }
        each_set_lane(mask, |l| {
            lanes.extend_from_slice(&off[l].map(|o| (l as u8, self.tex.base + o)));
            let v = volume_filter(&weight[l], &texel[l]);
            for (row, v) in out.iter_mut().zip(v) {
                row[l] = v;
            }
            Some(())
        });
        true
    }
}

/// A volume sample's value from its weights per axis and its eight texels (b / 255 each), in
/// the general path's arithmetic and order, so bit for bit its result: a texel reads
/// (b / 255, 0, 0, 1), each corner adds `w · t` to every channel, corners x fastest.
#[inline(always)]
fn volume_filter(weight: &[[f32; 2]; 3], texel: &[f32; 8]) -> [f32; 4] {
    let mut acc = [0.0f32; 4];
    for (c, &t) in texel.iter().enumerate() {
        let w = weight[0][c & 1] * weight[1][(c >> 1) & 1] * weight[2][c >> 2];
        acc[0] += w * t;
        acc[1] += w * 0.0;
        acc[2] += w * 0.0;
        acc[3] += w * 1.0;
    }
    acc.map(quiet)
}

/// `v.round()` (halves away from zero), bit for bit, from `trunc`. Why not `round`: no x86
/// instruction rounds halves away from zero, so `round` is a call to `roundf` per value even
/// where SSE4.1 makes `trunc` one instruction (`hostcpu`). `v − trunc(v)` is exact (it only
/// drops the integer bits), and so is adding ±1 to an integer below 2^23; larger values are
/// integers already.
#[inline(always)]
fn round_half_away(v: f32) -> f32 {
    let t = v.trunc();
    let up = if (v - t).abs() >= 0.5 { 1.0f32 } else { 0.0 };
    t + up.copysign(v)
}

/// Scratch for [`Sampler::sample_volume`]: per lane the eight texel offsets, the weights per
/// axis and the eight texels.
pub(crate) struct WarpSamples {
    off: [[u64; 8]; 32],
    weight: [[[f32; 2]; 3]; 32],
    texel: [[f32; 8]; 32],
}

impl Default for WarpSamples {
    fn default() -> Self {
        WarpSamples {
            off: [[0; 8]; 32],
            weight: [[[0.0; 2]; 3]; 32],
            texel: [[0.0; 8]; 32],
        }
    }
}

/// Runs `f` for each lane of `mask` in order, stopping at the first `None`.
#[inline(always)]
fn each_set_lane(mask: u32, mut f: impl FnMut(usize) -> Option<()>) -> Option<()> {
    for l in set_bits(mask) {
        f(l)?;
    }
    Some(())
}

#[cfg(test)]
mod tests;
