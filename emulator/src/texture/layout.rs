//! Where a texture's texels lie in device memory: the three layouts of `[texture] layout`
//! (block-linear, bricks, linear; the parent module's docs give their rules) resolved for one
//! texture's extent, and a texel index's part of its byte offset.

use super::TextureDesc;
use crate::config::TextureLayout;

/// GOB (group of bytes) geometry on Fermi and later: 64 bytes wide, 8 rows high.
const GOB_WIDTH_BYTES: u64 = 64;
const GOB_ROWS: u64 = 8;
const GOB_BYTES: u64 = GOB_WIDTH_BYTES * GOB_ROWS;
/// Largest block height and depth, log2 in GOBs (nil `Tiling::choose` starts from 5 and 5).
const MAX_BLOCK_LOG2: u32 = 5;

/// Block-linear geometry of one texture: how many blocks and how big they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockLinear {
    /// Blocks across the width (a block is one GOB, 64 bytes, wide).
    blocks_x: u64,
    /// Blocks down the height.
    blocks_y: u64,
    /// Blocks through the depth.
    blocks_z: u64,
    /// log2 of the block height in GOBs.
    h_log2: u32,
    /// log2 of the block depth in slices (a GOB is one slice deep).
    d_log2: u32,
}

/// Smallest `k` with `2^k ≥ n` (0 for n ≤ 1), nil's `ilog2_ceil`.
fn ceil_log2(n: u64) -> u32 {
    if n <= 1 {
        0
    } else {
        64 - (n - 1).leading_zeros()
    }
}

impl BlockLinear {
    /// The block size the driver chooses for an extent of `width_bytes` × `height` rows ×
    /// `depth` slices. Mesa NVK, `src/nouveau/nil/tiling.rs`: `Tiling::choose` starts from
    /// 2^5 GOBs high and 2^5 deep and `Tiling::clamp` cuts each to `ilog2_ceil` of the extent in
    /// GOBs, so a block is the smallest power of two that covers the extent (capped at 32 GOBs),
    /// which can reach up to twice the extent (e.g. 25 GOBs of rows get a 32-GOB block); the
    /// width is always one GOB (`x_log2 = 0`). NVIDIA's CUDA driver is closed; nil is the public
    /// description of what the hardware accepts and what an open driver picks.
    fn new(width_bytes: u64, height: u64, depth: u64) -> Self {
        let gobs_y = height.div_ceil(GOB_ROWS);
        let h_log2 = ceil_log2(gobs_y).min(MAX_BLOCK_LOG2);
        let d_log2 = ceil_log2(depth).min(MAX_BLOCK_LOG2);
        BlockLinear {
            blocks_x: width_bytes.div_ceil(GOB_WIDTH_BYTES),
            blocks_y: gobs_y.div_ceil(1 << h_log2),
            blocks_z: depth.div_ceil(1 << d_log2),
            h_log2,
            d_log2,
        }
    }

    fn block_bytes(&self) -> u64 {
        GOB_BYTES << (self.h_log2 + self.d_log2)
    }

    fn bytes(&self) -> u64 {
        self.blocks_x * self.blocks_y * self.blocks_z * self.block_bytes()
    }

    /// Axis `k`'s part of an offset (see [`Storage::part`]) for byte `xb` (k = 0), row (1) or
    /// slice (2) `i`. The block index is linear in each axis' block coordinate; inside a block
    /// GOBs go down the column first, then back in z (nil `copy.rs`, `BlockPointer::new` with
    /// the GOB extent: y stride one GOB, z stride 2^h GOBs); inside a GOB, [`gob_offset`].
    #[inline]
    fn part(&self, k: usize, i: u64) -> (u64, u64) {
        let (h, d) = (self.h_log2, self.d_log2);
        let block = self.block_bytes();
        match k {
            0 => (
                i / GOB_WIDTH_BYTES * block,
                gob_offset_x(i % GOB_WIDTH_BYTES),
            ),
            1 => {
                let gob_y = i / GOB_ROWS;
                (
                    (gob_y >> h) * self.blocks_x * block + (gob_y & ((1 << h) - 1)) * GOB_BYTES,
                    gob_offset_row(i % GOB_ROWS),
                )
            }
            _ => (
                (i >> d) * self.blocks_y * self.blocks_x * block
                    + ((i & ((1 << d) - 1)) << h) * GOB_BYTES,
                0,
            ),
        }
    }
}

/// Offset of byte `x` (0..64) of row `r` (0..8) inside a GOB: Mesa NVK `src/nouveau/nil/copy.rs`,
/// `CopyGOBFermi::for_each_gob_line`, which maps each 16-byte row piece to its place in a
/// `GOBType::FermiColor` GOB (the GOB nil uses for color images from Fermi up to Volta). Bits:
/// x[3:0] stay, then y0, y1 ^ x4 ^ 1, x4 ^ y2, y2, x5. Why the swizzle rather than plain 64-byte
/// rows: it is what the source gives, and it decides what a 32-byte sector (16 bytes × 2 rows)
/// and a 128-byte line (32 bytes × 4 rows) hold. nil's Turing-and-later GOB
/// (`GOBType::TuringColor2D`, `CopyGOBTuring2D`: x[3:0], y0, y1, x4, y2, x5) puts the same
/// bytes in each sector and each line and only orders the sectors of a line differently, so the
/// caches hit and miss identically; this one function serves every preset. (nil's doc table for
/// `FermiColor` orders the lower GOB half's sectors differently from its copy code; the copy
/// code, which must match the hardware, is followed, and the difference is again only within
/// lines.)
#[cfg(test)]
fn gob_offset(x: u64, r: u64) -> u64 {
    gob_offset_x(x) ^ gob_offset_row(r)
}

/// The x bits of [`gob_offset`]: x[3:0], and x4 into bits 5 and 6, x5 into bit 8.
#[inline]
fn gob_offset_x(x: u64) -> u64 {
    let x4 = (x >> 4) & 1;
    (x & 15) | (x4 << 5) | (x4 << 6) | (((x >> 5) & 1) << 8)
}

/// The row bits of [`gob_offset`]: y0 into bit 4, !y1 into bit 5, y2 into bits 6 and 7; xored
/// with [`gob_offset_x`], bits 5 and 6 become y1 ^ x4 ^ 1 and x4 ^ y2.
#[inline]
fn gob_offset_row(r: u64) -> u64 {
    let (y0, y1, y2) = (r & 1, (r >> 1) & 1, (r >> 2) & 1);
    (y0 << 4) | ((y1 ^ 1) << 5) | (y2 << 6) | (y2 << 7)
}

/// Where one texture's texels live: the layout resolved for its extent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Storage {
    /// Row-major: x, then y, then z.
    Linear,
    /// 8×8×8-texel bricks (3D only), `bricks_x` × `bricks_y` bricks per brick slice.
    Bricks {
        bricks_x: u64,
        bricks_y: u64,
    },
    BlockLinear(BlockLinear),
}

impl Storage {
    /// The storage of a texture described by `desc` under `layout`. A 1D array is block-linear
    /// as a 2D one of one row, so that a 32-byte sector holds 16 bytes of it: on an H200 a
    /// filtered sample of texels 0 and 1 of a 1D float4 array read two sectors, as in a 2D one
    /// (docs/gpu/tex-footprint.cu, cases 17 and 19). A texture over linear memory stays linear.
    pub(crate) fn new(desc: &TextureDesc, layout: TextureLayout) -> Self {
        let [w, h, d] = desc.extent().map(u64::from);
        match (layout, desc.dims) {
            _ if desc.linear_buffer.is_some() => Storage::Linear,
            (TextureLayout::Linear, _) | (TextureLayout::Bricks, 1 | 2) => Storage::Linear,
            (TextureLayout::Bricks, _) => Storage::Bricks {
                bricks_x: w.div_ceil(8),
                bricks_y: h.div_ceil(8),
            },
            (TextureLayout::BlockLinear, _) => {
                Storage::BlockLinear(BlockLinear::new(w * desc.texel_bytes(), h, d))
            }
        }
    }

    /// Bytes to allocate, padding included.
    pub(crate) fn bytes(&self, desc: &TextureDesc) -> u64 {
        let [w, h, d] = desc.extent().map(u64::from);
        match self {
            Storage::Linear => w * h * d * desc.texel_bytes(),
            Storage::Bricks { bricks_x, bricks_y } => {
                bricks_x * bricks_y * d.div_ceil(8) * 512 * desc.texel_bytes()
            }
            Storage::BlockLinear(b) => b.bytes(),
        }
    }

    /// How many texels of a row the storage keeps together in every row and slice: texels
    /// `x..x + n` with `x` a multiple of `n` lie one after the other, in x order. Block-linear:
    /// 16 bytes, because a GOB keeps a byte's x[3:0] and its swizzle moves only x's higher bits
    /// (the row bits start at bit 4). Bricks: a brick's row of 8. Linear: the whole row.
    pub(crate) fn x_run(&self, tb: u64, width: u64) -> u64 {
        match self {
            Storage::Linear => width.max(1),
            Storage::Bricks { .. } => 8,
            Storage::BlockLinear(_) => (16 / tb).max(1),
        }
    }

    /// Alignment of the allocation. Block-linear: nil `image.rs` (`Image::new_tiled`) aligns
    /// an image to its block size and to at least 4 KiB. The others keep the allocator's 256.
    pub(crate) fn align(&self) -> u64 {
        match self {
            Storage::BlockLinear(b) => b.block_bytes().max(4096),
            _ => 256,
        }
    }
}

impl Storage {
    /// Texel index `i` along axis `k` (0 x, 1 y, 2 z) of an extent `[w, h, _]` of `tb`-byte
    /// texels, as its part of the texel's byte offset: `(sum part, xor part)`. A texel's offset
    /// is the sum of its three sum parts plus the xor of its xor parts, which lie below the
    /// lowest sum bit (only block-linear has any: the GOB swizzle mixes x and y bits). Why
    /// parts: a filtered sample resolves its two indices per axis once, and each of its corners
    /// is then two adds and an xor.
    #[inline(always)]
    pub(super) fn part(&self, k: usize, i: u32, tb: u64, [w, h, _]: [u32; 3]) -> (u64, u64) {
        let (i, w, h) = (i as u64, w as u64, h as u64);
        match *self {
            Storage::Linear => (
                match k {
                    0 => i * tb,
                    1 => i * w * tb,
                    _ => i * h * w * tb,
                },
                0,
            ),
            Storage::Bricks { bricks_x, bricks_y } => {
                // brick (z/8 · by + y/8) · bx + x/8 of 512 texels, (z%8 · 8 + y%8) · 8 + x%8 in it
                let (brick, inner) = match k {
                    0 => (i / 8, i % 8),
                    1 => (i / 8 * bricks_x, i % 8 * 8),
                    _ => (i / 8 * bricks_y * bricks_x, i % 8 * 64),
                };
                ((brick * 512 + inner) * tb, 0)
            }
            Storage::BlockLinear(b) => b.part(k, if k == 0 { i * tb } else { i }),
        }
    }
}

/// Byte offset of texel (x, y, z) of an extent `ext` of `tb`-byte texels in `storage`.
#[cfg(test)]
pub(super) fn storage_offset(
    storage: &Storage,
    tb: u64,
    ext: [u32; 3],
    x: u32,
    y: u32,
    z: u32,
) -> u64 {
    let (hx, lx) = storage.part(0, x, tb, ext);
    let (hy, ly) = storage.part(1, y, tb, ext);
    let (hz, lz) = storage.part(2, z, tb, ext);
    hx + hy + hz + (lx ^ ly ^ lz)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gob_swizzle_splits_into_x_and_row_bits() {
        // The swizzle as nil's copy code writes it; the split into x and row parts must agree
        // on every byte of a GOB, since texel offsets are assembled from the parts.
        for x in 0..GOB_WIDTH_BYTES {
            for r in 0..GOB_ROWS {
                let (x4, x5) = ((x >> 4) & 1, (x >> 5) & 1);
                let (y0, y1, y2) = (r & 1, (r >> 1) & 1, (r >> 2) & 1);
                let want = (x & 15)
                    | (y0 << 4)
                    | ((y1 ^ x4 ^ 1) << 5)
                    | ((x4 ^ y2) << 6)
                    | (y2 << 7)
                    | (x5 << 8);
                assert_eq!(gob_offset(x, r), want, "x {x} row {r}");
            }
        }
    }
}
