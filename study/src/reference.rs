//! An independent CPU renderer of `kernels/volume_render.cu`, used to check the image the emulator
//! (or a GPU) produced.
//!
//! Why its own code rather than running the emulator twice: a bug in the PTX interpreter's float
//! or texture arithmetic would otherwise go unnoticed. This file restates the kernel's math in Rust
//! in the order the PTX computes it (nvcc 13 `-O3`, checked against the PTX of the WS_OFF build):
//! `fma` wherever nvcc contracted a multiply-add, `rcp.rn` for `1/d`, `rsqrt.approx` for the
//! normalization (modelled as the correctly rounded 1/√x; the hardware is within 2 ulp, which the
//! test's 1-LSB tolerance absorbs), `cvt.sat` + `cvt.rzi` for the 8-bit output.
//!
//! The texture unit is modelled as CUDA's programming guide ("Texture Fetching") specifies it:
//! normalized coordinates scaled by the extent, minus ½ texel, `floor` for the texel, the
//! fractional weight stored in 1.8 fixed point (8 fractional bits, rounded to nearest), clamp to
//! the edge texels, and the guide's formula `Σ (1-α)(1-β)(1-γ)·T[i,j,k] + α(1-β)(1-γ)·T[i+1,j,k] + …`
//! summed in that order (x fastest). u8 texels read as normalized float are `v / 255`.
//!
//! Main items: [`render_reference`], [`render_pixel`], [`sample_volume`], [`sample_transfer`].
//!
//! ```
//! use study::{render_reference, RenderParams, View, Volume};
//! let vol = Volume::zeros([8, 8, 8]).unwrap();
//! let img = render_reference(&vol, &View::new(0.0, 0.0, 0.0), &RenderParams::with_size(16, 16));
//! assert!(img.rgba.iter().all(|&b| b == 0)); // an empty volume renders black
//! ```

use crate::image::Image;
use crate::params::{MAX_STEPS, OPACITY_THRESHOLD, RenderParams, TRANSFER_FUNCTION};
use crate::view::View;
use crate::volume::Volume;
use rayon::prelude::*;

/// The texel index and the 1.8 fixed-point weight for normalized coordinate `c` over `n` texels.
fn texel_weight(c: f32, n: u32) -> (i64, f32) {
    let xb = c * n as f32 - 0.5;
    let i = xb.floor();
    let frac = xb - i;
    let alpha = (frac * 256.0).round() / 256.0;
    (i as i64, alpha)
}

fn clamp_index(i: i64, n: u32) -> usize {
    i.clamp(0, n as i64 - 1) as usize
}

/// The guide's filter formula: Σ over the 2^d corners (x varying fastest) of the product of the
/// per-axis weights (`1-α` or `α`, multiplied in axis order) times the texel. The weights are
/// multiples of 2⁻⁸, so their products are exact in f32; only the sum rounds, in corner order.
fn filter<const D: usize>(
    idx: [(i64, f32); D],
    extent: [u32; D],
    texel: impl Fn([usize; D]) -> [f32; 4],
) -> [f32; 4] {
    let mut acc = [0f32; 4];
    for corner in 0..(1usize << D) {
        let mut w = 1f32;
        let mut at = [0usize; D];
        for k in 0..D {
            let hi = (corner >> k) & 1;
            w *= if hi == 1 { idx[k].1 } else { 1.0 - idx[k].1 };
            at[k] = clamp_index(idx[k].0 + hi as i64, extent[k]);
        }
        let t = texel(at);
        for c in 0..4 {
            acc[c] += w * t[c];
        }
    }
    acc
}

/// `tex3D<float>` of a u8 volume read as normalized float: trilinear, normalized coords, clamp.
pub fn sample_volume(vol: &Volume, c: [f32; 3]) -> f32 {
    let [w, h, d] = vol.dims;
    let idx = [
        texel_weight(c[0], w),
        texel_weight(c[1], h),
        texel_weight(c[2], d),
    ];
    let v = filter(idx, vol.dims, |[x, y, z]| {
        let b = vol.data[x + w as usize * (y + h as usize * z)];
        [b as f32 / 255.0, 0.0, 0.0, 1.0]
    });
    v[0]
}

/// `tex1D<float4>` of the transfer function: linear, normalized coords, clamp.
pub fn sample_transfer(table: &[[f32; 4]], c: f32) -> [f32; 4] {
    let n = table.len() as u32;
    if n == 0 {
        return [0.0; 4];
    }
    filter([texel_weight(c, n)], [n], |[i]| table[i])
}

/// `__saturatef`: clamp to [0, 1], NaN → 0 (PTX `cvt.sat.f32.f32`).
fn saturate(v: f32) -> f32 {
    if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) }
}

/// `rsqrtf` as the correctly rounded 1/√x.
fn rsqrt(v: f32) -> f32 {
    (1.0 / (v as f64).sqrt()) as f32
}

/// The kernel's output word for pixel (x, y), or None where the ray misses the box (the kernel
/// leaves those pixels as the host cleared them: 0).
pub fn render_pixel(vol: &Volume, m: &[f32; 12], p: &RenderParams, x: u32, y: u32) -> Option<u32> {
    let u = (x as f32 / p.width as f32).mul_add(2.0, -1.0);
    let v = (y as f32 / p.height as f32).mul_add(2.0, -1.0);

    // eye origin: mul(M, (0,0,0,1)), with the zero products kept as nvcc emits them
    let row = |r: usize| [m[r * 4], m[r * 4 + 1], m[r * 4 + 2], m[r * 4 + 3]];
    let origin = |r: [f32; 4]| r[3] + r[2].mul_add(0.0, r[0].mul_add(0.0, r[1] * 0.0));
    let o = [origin(row(0)), origin(row(1)), origin(row(2))];

    // normalize((u, v, -2)): dot = fma(u,u, v·v) + 4
    let inv_len = rsqrt(u.mul_add(u, v * v) + 4.0);
    let dn = [u * inv_len, v * inv_len, inv_len * -2.0];
    // mul(M, d): fma(d.z, m2, fma(d.x, m0, d.y·m1))
    let dir = |r: [f32; 4]| dn[2].mul_add(r[2], dn[0].mul_add(r[0], dn[1] * r[1]));
    let d = [dir(row(0)), dir(row(1)), dir(row(2))];

    // intersectBox
    let inv_r = d.map(|c| 1.0 / c);
    let tbot: [f32; 3] = std::array::from_fn(|k| (-1.0 - o[k]) * inv_r[k]);
    let ttop: [f32; 3] = std::array::from_fn(|k| (1.0 - o[k]) * inv_r[k]);
    let tmin: [f32; 3] = std::array::from_fn(|k| ttop[k].min(tbot[k]));
    let tmax: [f32; 3] = std::array::from_fn(|k| ttop[k].max(tbot[k]));
    let tnear = tmin[0].max(tmin[1]).max(tmin[0].max(tmin[2]));
    let tfar = tmax[0].min(tmax[1]).min(tmax[0].min(tmax[2]));
    // `hit = tfar > tnear`, false for NaN too (PTX `setp.leu` branches past the march)
    if tfar.partial_cmp(&tnear) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let tnear = if tnear < 0.0 { 0.0 } else { tnear };

    let mut sum = [0f32; 4];
    let mut t = tnear;
    let mut pos: [f32; 3] = std::array::from_fn(|k| d[k].mul_add(tnear, o[k]));
    let step = d.map(|c| c * p.tstep);
    for _ in 0..MAX_STEPS {
        let c = pos.map(|q| q.mul_add(0.5, 0.5));
        let sample = sample_volume(vol, c);
        let col = sample_transfer(
            &TRANSFER_FUNCTION,
            (sample - p.transfer_offset) * p.transfer_scale,
        );
        let a = col[3] * p.density;
        let premul = [col[0] * a, col[1] * a, col[2] * a, a];
        let remain = 1.0 - sum[3];
        for k in 0..4 {
            sum[k] = remain.mul_add(premul[k], sum[k]);
        }
        if sum[3] > OPACITY_THRESHOLD {
            break;
        }
        t += p.tstep;
        if t > tfar {
            break;
        }
        pos = std::array::from_fn(|k| step[k] + pos[k]);
    }
    let byte = |v: f32| (saturate(v * p.brightness) * 255.0) as u32;
    Some((byte(sum[3]) << 24) | (byte(sum[2]) << 16) | (byte(sum[1]) << 8) | byte(sum[0]))
}

/// Renders the whole image on the CPU (rows in parallel).
pub fn render_reference(vol: &Volume, view: &View, p: &RenderParams) -> Image {
    let m = view.inv_view_matrix();
    let w = p.width as usize;
    let mut rgba = vec![0u8; w * p.height as usize * 4];
    rgba.par_chunks_mut(w * 4).enumerate().for_each(|(y, row)| {
        for x in 0..w {
            if let Some(word) = render_pixel(vol, &m, p, x as u32, y as u32) {
                row[4 * x..4 * x + 4].copy_from_slice(&word.to_le_bytes());
            }
        }
    });
    Image::from_rgba(p.width, p.height, rgba)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::volume::VolumeKind;

    #[test]
    fn texture_weights_follow_the_guide() {
        // 4 texels: coordinate 0.5 is texel-space 1.5 → halfway between texels 1 and 2
        assert_eq!(texel_weight(0.5, 4), (1, 0.5));
        // a texel centre has weight 0 on the next texel
        assert_eq!(texel_weight(0.625, 4), (2, 0.0));
        // the weight has 8 fractional bits: 0.3 → 77/256
        let (_, a) = texel_weight((1.3 + 0.5) / 4.0, 4);
        assert_eq!(a, 77.0 / 256.0);
    }

    #[test]
    fn volume_sampling_clamps_and_interpolates() {
        let mut vol = Volume::zeros([2, 1, 1]).unwrap();
        vol.data = vec![0, 255];
        assert_eq!(sample_volume(&vol, [-3.0, 0.5, 0.5]), 0.0);
        assert_eq!(sample_volume(&vol, [7.0, 0.5, 0.5]), 1.0);
        assert_eq!(sample_volume(&vol, [0.5, 0.5, 0.5]), 0.5);
        assert_eq!(sample_volume(&vol, [0.25, 0.0, 1.0]), 0.0);
    }

    #[test]
    fn transfer_function_hits_its_entries_at_texel_centres() {
        for (i, entry) in TRANSFER_FUNCTION.iter().enumerate() {
            let c = (i as f32 + 0.5) / 9.0;
            assert_eq!(sample_transfer(&TRANSFER_FUNCTION, c), *entry, "entry {i}");
        }
        // between entries 1 (red) and 2 (orange): green ramps
        let mid = sample_transfer(&TRANSFER_FUNCTION, 2.0 / 9.0);
        assert_eq!(mid, [1.0, 0.25, 0.0, 1.0]);
    }

    #[test]
    fn empty_volume_renders_black() {
        let vol = Volume::zeros([8, 8, 8]).unwrap();
        let img = render_reference(
            &vol,
            &View::new(30.0, 20.0, 10.0),
            &RenderParams::with_size(24, 16),
        );
        assert_eq!(img.rgba.len(), 24 * 16 * 4);
        assert!(img.rgba.iter().all(|&b| b == 0));
    }

    #[test]
    fn symmetric_volume_gives_a_mirror_symmetric_image() {
        // u(x) = -u(W-x) exactly for power-of-two W, so pixel x mirrors pixel W-x.
        let vol = Volume::generate(VolumeKind::Shell, [32, 32, 32], 0).unwrap();
        let p = RenderParams::with_size(32, 32);
        for view in View::PAPER {
            let img = render_reference(&vol, &view, &p);
            assert!(img.rgba.iter().any(|&b| b > 0), "{view}: blank image");
            let mut worst = 0u8;
            for y in 1..32 {
                for x in 1..32 {
                    let a = img.pixel(x, y);
                    for b in [img.pixel(32 - x, y), img.pixel(x, 32 - y)] {
                        for k in 0..4 {
                            worst = worst.max(a[k].abs_diff(b[k]));
                        }
                    }
                }
            }
            assert!(worst <= 1, "{view}: mirror pixels differ by {worst}");
        }
    }

    #[test]
    fn the_shell_shows_a_ring_and_misses_stay_clear() {
        let vol = Volume::generate(VolumeKind::Shell, [32, 32, 32], 0).unwrap();
        // A wide field of view: at 64 px the corners' rays miss the box entirely.
        let img = render_reference(
            &vol,
            &View::new(0.0, 0.0, 0.0),
            &RenderParams::with_size(64, 64),
        );
        assert_eq!(img.pixel(0, 0), [0, 0, 0, 0]);
        let centre = img.pixel(32, 32);
        assert!(
            centre[3] > 0,
            "the core and shell absorb on the axis: {centre:?}"
        );
        // density·(layers) grows with path length: the rim of the shell is more opaque than the centre
        let rim = (20..32).map(|x| img.pixel(x, 32)[3]).max().unwrap_or(0);
        assert!(rim >= centre[3], "rim {rim} < centre {}", centre[3]);
    }
}
