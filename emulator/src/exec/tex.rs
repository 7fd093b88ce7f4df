//! Texture fetches: each lane's coordinates filtered through its texture, the texel addresses
//! left in `Ctx::lanes` for the timing model.

use super::{Ctx, Fault, Faulty, Flow, Warp, ZERO_LANES, fault, put, put_lanes};
use crate::bits::set_bits;
use crate::hostcpu::HostWork;
use crate::ir::*;
use crate::memory::{AccessKind, LANE, LoadPath, PAIR, QUAD, Space};
use crate::numeric::{b32, f32v};
use crate::texture::{HANDLE_BASE, Sampler, unmapped};

/// A texture fetch, run with the host's features (`hostcpu`), so that the filters' floors and
/// truncations are instructions rather than calls to `floorf` and `truncf`.
pub(super) struct Fetch<'i, 'w, 'c, 'a> {
    pub x: &'i Inst,
    pub w: &'w mut Warp,
    pub c: &'c mut Ctx<'a>,
    pub m: u32,
}

impl HostWork for Fetch<'_, '_, '_, '_> {
    type Out = Faulty<Flow>;
    #[inline(always)]
    fn run(self) -> Faulty<Flow> {
        texture(self.x, self.w, self.c, self.m)
    }
}

// Lane and element indices address parallel arrays.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn texture(x: &Inst, w: &mut Warp, c: &mut Ctx, m: u32) -> Faulty<Flow> {
    // Operands as lane rows (`operand_row!`), registers borrowed in place: zeroing and copying
    // the handle and four coordinate rows cost 2.3 KB of stores per fetch.
    type Row = [u64; 32];
    let (mut th, mut t0, mut t1, mut t2, mut t3): (Row, Row, Row, Row, Row);
    let ns = x.ns as usize;
    let h: &Row = operand_row!(c, w, x.a, true, th);
    let co: [&Row; 4] = [
        operand_row!(c, w, x.s[0], ns > 0, t0),
        operand_row!(c, w, x.s[1], ns > 1, t1),
        operand_row!(c, w, x.s[2], ns > 2, t2),
        operand_row!(c, w, x.s[3], ns > 3, t3),
    ];
    c.lanes.clear();
    let (texel_bytes, filtered) = match warp_samples(x, h, &co, c, m) {
        Some((bytes, vals)) => {
            // Straight into the destinations: every value is a 32-bit float's bits.
            for (&d, v) in x.d[..x.nd as usize].iter().zip(&vals) {
                put_lanes(w, d, m, |l| b32(v[l]));
            }
            (bytes, true)
        }
        None => {
            let mut out = [[0u64; 32]; 4];
            let kind = lane_samples(x, h, &co, c, m, &mut out)?;
            for k in 0..x.nd as usize {
                put(w, x.d[k], m, &out[k], 0xFFFF_FFFF);
            }
            kind
        }
    };
    Ok(Flow::Mem {
        space: Space::Texture,
        kind: AccessKind::Load,
        bytes_per_lane: texel_bytes,
        path: LoadPath::ReadOnly,
        lookup_lanes: lookup_lanes(texel_bytes, filtered, x.sub),
    })
}

/// Lanes whose texels one texture lookup serves, as Nsight Compute counts them, for a fetch of
/// `dims` coordinates: a point sample quad by quad whatever its texel, a filtered 16-byte
/// (float4) texel lane by lane, a trilinear sample of a smaller one pair by pair, and a filtered
/// 1D or 2D sample of a smaller one quad by quad (the constants give the measurements). A
/// trilinear float4 sample was not measured; it is taken lane by lane, as the other float4 ones.
/// A `tex1Dfetch`, which Nsight Compute's texture-op metrics do not count on silicon
/// (docs/gpu/tex-lookup-count.cu), is counted as the point sample it is.
fn lookup_lanes(texel_bytes: u32, filtered: bool, dims: u8) -> u8 {
    if !filtered {
        QUAD
    } else if texel_bytes >= 16 {
        LANE
    } else if dims >= 3 {
        PAIR
    } else {
        QUAD
    }
}

/// Each lane's fetch through its own texture, written to `out`; the texel size of the last
/// lane's texture, and whether its samples were filtered.
// Lane and element indices address parallel arrays.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn lane_samples(
    x: &Inst,
    h: &[u64; 32],
    co: &[&[u64; 32]; 4],
    c: &mut Ctx,
    m: u32,
    out: &mut [[u64; 32]; 4],
) -> Faulty<(u32, bool)> {
    let mut texel_bytes = 4;
    let mut filtered = false;
    // The lanes of a warp nearly always sample one texture: its sampler is resolved once and
    // kept until a lane names another.
    let mut cur: Option<(u64, Sampler)> = None;
    for l in set_bits(m) {
        let idx = h[l].wrapping_sub(HANDLE_BASE);
        let tex = match &mut cur {
            Some((i, s)) if *i == idx => s,
            _ => {
                let Some(tex) = c.fixed.textures.get(idx as usize) else {
                    return fault(
                        l as u32,
                        format!("{:#x} is not a texture object handle", h[l]),
                    );
                };
                &mut cur.insert((idx, tex.sampler(c.fixed.dev))).1
            }
        };
        texel_bytes = tex.texel_bytes() as u32;
        let int_coords = !x.ty2.is_float();
        // `tex1Dfetch`: an integer index into a buffer, never filtered.
        let int_fetch = int_coords && x.sub == 1;
        filtered = !int_fetch && tex.filtered();
        let v = if int_fetch {
            tex.fetch_int(co[0][l] as u32 as i32 as i64, l as u8, c.lanes)
        } else {
            let f = |k: usize| {
                if int_coords {
                    co[k][l] as u32 as i32 as f32
                } else {
                    f32v(co[k][l])
                }
            };
            let mut p = [0.0f32; 3];
            for (k, slot) in p.iter_mut().enumerate().take((x.sub as usize).min(3)) {
                *slot = f(k);
            }
            tex.sample(p, l as u8, c.lanes)
        };
        let v = v.map_err(|addr| Fault {
            lane: l as u32,
            what: unmapped(addr),
        })?;
        for k in 0..4 {
            out[k][l] = if x.ty == Ty::F32 {
                b32(v[k])
            } else if x.ty.is_signed() {
                v[k] as i32 as u32 as u64
            } else {
                v[k] as u32 as u64
            };
        }
    }
    Ok((texel_bytes, filtered))
}

/// A float-coordinate fetch into f32 registers whose lanes all sample one texture that a warp
/// path takes: a 3D fetch of a volume (`Sampler::volume_path`, `Sampler::sample_volume`) or a
/// 1D one of a float texture (`Sampler::line_path`, `Sampler::sample_line`). The warp's
/// samples taken together, with the texel size, for the active lanes `m` of each of the four
/// components. `None`, with nothing recorded, for any other fetch, which the lane-by-lane loop
/// then takes.
#[inline(always)]
fn warp_samples(
    x: &Inst,
    h: &[u64; 32],
    co: &[&[u64; 32]; 4],
    c: &mut Ctx,
    m: u32,
) -> Option<(u32, [[f32; 32]; 4])> {
    if m == 0 || !matches!(x.sub, 1 | 3) || !x.ty2.is_float() || x.ty != Ty::F32 {
        return None;
    }
    let first = h[m.trailing_zeros() as usize];
    let mut same = true;
    for l in set_bits(m) {
        same &= h[l] == first;
    }
    if !same {
        return None;
    }
    let tex = c
        .fixed
        .textures
        .get(first.wrapping_sub(HANDLE_BASE) as usize)?
        .sampler(c.fixed.dev);
    let taken = if x.sub == 1 {
        tex.line_path()
    } else {
        tex.volume_path()
    };
    if !taken {
        return None;
    }
    // The instruction's coordinates, one row an axis.
    let mut coords = [[0.0f32; 32]; 3];
    for (axis, row) in coords.iter_mut().zip(co).take(x.sub as usize) {
        for (v, &bits) in axis.iter_mut().zip(*row) {
            *v = f32v(bits);
        }
    }
    let mut vals = [[0.0f32; 32]; 4];
    let sampled = if x.sub == 1 {
        tex.sample_line(&coords[0], m, c.lanes, &mut vals)
    } else {
        tex.sample_volume(&coords, m, c.samples, c.lanes, &mut vals)
    };
    sampled.then(|| (tex.texel_bytes() as u32, vals))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_serve_a_lane_a_pair_or_a_quad_by_filter_texel_and_dimensions() {
        // Filtered float4 (a transfer function, a 2D float4 image): each lane its own lookup.
        assert_eq!(lookup_lanes(16, true, 1), 1);
        assert_eq!(lookup_lanes(16, true, 2), 1);
        // A trilinear sample of a u8 or float volume: pairs.
        assert_eq!(lookup_lanes(1, true, 3), 2);
        assert_eq!(lookup_lanes(4, true, 3), 2);
        // A bilinear u8 image, a linear 1D float: quads.
        assert_eq!(lookup_lanes(1, true, 2), 4);
        assert_eq!(lookup_lanes(4, true, 1), 4);
        // Point samples, float4 too: quads.
        assert_eq!(lookup_lanes(1, false, 3), 4);
        assert_eq!(lookup_lanes(16, false, 1), 4);
        assert_eq!(lookup_lanes(16, false, 2), 4);
    }
}
