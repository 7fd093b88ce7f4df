//! The volumes the study renders: deterministic procedural fields and raw files from disk.
//!
//! Why procedural volumes: the paper renders a 1024³ data set that we cannot ship; a generated
//! field of any size (up to 1024³) with the same kind of structure — smooth shells, fractal noise,
//! a molecule-like set of blobs — exercises the texture cache the same way and is reproducible from
//! a name, a size and a seed. Real data comes in through [`Volume::load_raw`]
//! (`file.raw`, dims, `u8|u16|f32`), converted to the texture format the kernel samples: u8 read as
//! normalized float (the SDK's `VolumeType = unsigned char`).
//!
//! Main types: [`Volume`] (dims + u8 voxels, x fastest), [`VolumeKind`] (the generators),
//! [`VolumeSource`] (a generator or a raw file), [`RawDType`]. [`check_fits`] refuses a volume or
//! image that does not fit in memory up front, with both byte counts.
//!
//! The value noise and hash are written here (a dozen lines) rather than pulled from a noise crate:
//! the field must be bit-identical on every platform and version, which a dependency cannot promise.
//!
//! ```
//! use study::{Volume, VolumeKind};
//! let v = Volume::generate(VolumeKind::Shell, [16, 16, 16], 1).unwrap();
//! assert_eq!(v.data.len(), 16 * 16 * 16);
//! assert_eq!(v, Volume::generate(VolumeKind::Shell, [16, 16, 16], 1).unwrap());
//! ```

use crate::StudyError;
use rayon::prelude::*;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The largest edge the study accepts (the paper's volume is 1024³).
pub const MAX_EDGE: u32 = 1024;

/// A volume of u8 voxels, x fastest, then y, then z.
#[derive(Clone, PartialEq, Eq)]
pub struct Volume {
    pub dims: [u32; 3],
    pub data: Vec<u8>,
}

impl fmt::Debug for Volume {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Volume {}x{}x{} ({} bytes)",
            self.dims[0],
            self.dims[1],
            self.dims[2],
            self.data.len()
        )
    }
}

/// The procedural generators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VolumeKind {
    /// A spherical shell around a solid core, both with smooth edges; mirror-symmetric.
    Shell,
    /// Fractal value noise (4 octaves), thresholded so that empty space remains.
    Noise,
    /// A molecule-like set of Gaussian blobs ("atoms") placed by the seed.
    Blobs,
    /// All zeros: renders black (a test fixture and an overhead baseline).
    Empty,
}

impl VolumeKind {
    pub const ALL: [VolumeKind; 4] = [
        VolumeKind::Shell,
        VolumeKind::Noise,
        VolumeKind::Blobs,
        VolumeKind::Empty,
    ];

    pub fn name(self) -> &'static str {
        match self {
            VolumeKind::Shell => "shell",
            VolumeKind::Noise => "noise",
            VolumeKind::Blobs => "blobs",
            VolumeKind::Empty => "empty",
        }
    }
}

impl FromStr for VolumeKind {
    type Err = StudyError;
    fn from_str(s: &str) -> Result<Self, StudyError> {
        VolumeKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                StudyError::parse("volume kind", s, "expected shell, noise, blobs or empty")
            })
    }
}

/// The element type of a raw volume file (little-endian).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RawDType {
    U8,
    U16,
    F32,
}

impl RawDType {
    pub fn name(self) -> &'static str {
        match self {
            RawDType::U8 => "u8",
            RawDType::U16 => "u16",
            RawDType::F32 => "f32",
        }
    }

    pub fn bytes(self) -> u64 {
        match self {
            RawDType::U8 => 1,
            RawDType::U16 => 2,
            RawDType::F32 => 4,
        }
    }
}

impl FromStr for RawDType {
    type Err = StudyError;
    fn from_str(s: &str) -> Result<Self, StudyError> {
        match s {
            "u8" => Ok(RawDType::U8),
            "u16" => Ok(RawDType::U16),
            "f32" => Ok(RawDType::F32),
            _ => Err(StudyError::parse("dtype", s, "expected u8, u16 or f32")),
        }
    }
}

/// Parses volume dimensions `X,Y,Z` (or a single `N` for N³), each 1..=1024.
pub fn parse_dims(s: &str) -> Result<[u32; 3], StudyError> {
    let parts: Vec<&str> = s.split([',', 'x']).map(str::trim).collect();
    let parts = match parts.len() {
        1 => vec![parts[0]; 3],
        3 => parts,
        _ => {
            return Err(StudyError::parse(
                "dims",
                s,
                "expected X,Y,Z (e.g. 256,256,128) or N",
            ));
        }
    };
    let mut dims = [0u32; 3];
    for (d, p) in dims.iter_mut().zip(&parts) {
        *d = p
            .parse::<u32>()
            .ok()
            .filter(|v| (1..=MAX_EDGE).contains(v))
            .ok_or_else(|| {
                StudyError::parse(
                    "dims",
                    s,
                    format!("{p:?} is not an edge length in 1..={MAX_EDGE}"),
                )
            })?;
    }
    Ok(dims)
}

/// Where a run's volume comes from.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "source", rename_all = "lowercase")]
pub enum VolumeSource {
    Generated {
        kind: VolumeKind,
        dims: [u32; 3],
        seed: u64,
    },
    Raw {
        path: PathBuf,
        dims: [u32; 3],
        dtype: RawDType,
    },
}

impl VolumeSource {
    /// A short description for `run.json` (`shell 64x64x64 seed 1`, `head.raw 256x256x225 u16`).
    pub fn describe(&self) -> String {
        match self {
            VolumeSource::Generated { kind, dims, seed } => format!(
                "{} {}x{}x{} seed {seed}",
                kind.name(),
                dims[0],
                dims[1],
                dims[2]
            ),
            VolumeSource::Raw { path, dims, dtype } => format!(
                "{} {}x{}x{} {}",
                path.display(),
                dims[0],
                dims[1],
                dims[2],
                dtype.name()
            ),
        }
    }

    pub fn dims(&self) -> [u32; 3] {
        match self {
            VolumeSource::Generated { dims, .. } | VolumeSource::Raw { dims, .. } => *dims,
        }
    }

    /// Makes the volume, refusing it first when it does not fit in host memory.
    pub fn load(&self) -> Result<Volume, StudyError> {
        match self {
            VolumeSource::Generated { kind, dims, seed } => Volume::generate(*kind, *dims, *seed),
            VolumeSource::Raw { path, dims, dtype } => Volume::load_raw(path, *dims, *dtype),
        }
    }
}

pub use device::host_available_bytes;

/// Refuses `what` when `needed_bytes` exceeds `available_bytes` (None = unknown: allowed).
pub fn check_fits(
    what: &str,
    memory: &'static str,
    needed_bytes: u64,
    available_bytes: Option<u64>,
) -> Result<(), StudyError> {
    match available_bytes {
        Some(available) if needed_bytes > available => Err(StudyError::TooLarge {
            what: what.to_string(),
            memory,
            needed_bytes,
            available_bytes: available,
        }),
        _ => Ok(()),
    }
}

fn voxel_count(dims: [u32; 3]) -> u64 {
    dims.iter().map(|&d| d as u64).product()
}

fn check_dims(dims: [u32; 3]) -> Result<(), StudyError> {
    if dims.iter().any(|d| !(1..=MAX_EDGE).contains(d)) {
        return Err(StudyError::Config {
            field: "volume dims",
            value: format!("{}x{}x{}", dims[0], dims[1], dims[2]),
            reason: format!("each edge must be in 1..={MAX_EDGE}"),
        });
    }
    Ok(())
}

impl Volume {
    /// A volume of zeros.
    pub fn zeros(dims: [u32; 3]) -> Result<Volume, StudyError> {
        Volume::generate(VolumeKind::Empty, dims, 0)
    }

    pub fn voxel_count(&self) -> u64 {
        voxel_count(self.dims)
    }

    /// The voxel at (x, y, z); the caller keeps the indices in range.
    pub fn at(&self, x: u32, y: u32, z: u32) -> u8 {
        let [w, h, _] = self.dims;
        self.data[(x as usize) + (w as usize) * ((y as usize) + (h as usize) * (z as usize))]
    }

    /// Generates `kind` at `dims`, deterministically from `seed` (the same bytes on every machine
    /// and thread count: each voxel is a pure function of its position and the seed).
    pub fn generate(kind: VolumeKind, dims: [u32; 3], seed: u64) -> Result<Volume, StudyError> {
        check_dims(dims)?;
        let n = voxel_count(dims);
        check_fits(
            &format!("a {}x{}x{} volume", dims[0], dims[1], dims[2]),
            "host",
            n,
            host_available_bytes(),
        )?;
        let [w, h, d] = dims.map(|v| v as usize);
        let mut data = vec![0u8; w * h * d];
        if kind == VolumeKind::Empty {
            return Ok(Volume { dims, data });
        }
        let blobs = if kind == VolumeKind::Blobs {
            make_blobs(seed)
        } else {
            Vec::new()
        };
        // Every row's voxel centres along x, computed once rather than per voxel and blob.
        let px: Vec<f64> = (0..w).map(|x| centered(x, w)).collect();
        data.par_chunks_mut(w * h)
            .enumerate()
            .for_each(|(z, slice)| {
                let pz = centered(z, d);
                let mut scratch = RowScratch::default();
                for (y, row) in slice.chunks_exact_mut(w).enumerate() {
                    let py = centered(y, h);
                    match kind {
                        VolumeKind::Blobs => blob_row(&blobs, &px, py, pz, row, &mut scratch),
                        VolumeKind::Shell | VolumeKind::Noise => {
                            for (voxel, &px) in row.iter_mut().zip(&px) {
                                *voxel = to_u8(if kind == VolumeKind::Shell {
                                    shell(px, py, pz)
                                } else {
                                    noise(px, py, pz, seed)
                                });
                            }
                        }
                        VolumeKind::Empty => {}
                    }
                }
            });
        Ok(Volume { dims, data })
    }

    /// Loads a raw file of `dims` voxels of `dtype` (little-endian, x fastest). u16 and f32 are
    /// rescaled linearly from the file's own min..max to 0..255 (NaN → 0), because the kernel
    /// samples an 8-bit normalized texture, like the SDK's.
    pub fn load_raw(path: &Path, dims: [u32; 3], dtype: RawDType) -> Result<Volume, StudyError> {
        check_dims(dims)?;
        let expected = voxel_count(dims) * dtype.bytes();
        let actual = std::fs::metadata(path)
            .map_err(|e| StudyError::io(path, e))?
            .len();
        if actual != expected {
            return Err(StudyError::RawSize {
                path: path.to_path_buf(),
                dims: format!("{},{},{}", dims[0], dims[1], dims[2]),
                dtype: dtype.name(),
                expected_bytes: expected,
                actual_bytes: actual,
            });
        }
        // The file and its u8 conversion are both in memory at once.
        let needed = expected + voxel_count(dims);
        check_fits(
            &format!("volume {}", path.display()),
            "host",
            needed,
            host_available_bytes(),
        )?;
        let bytes = std::fs::read(path).map_err(|e| StudyError::io(path, e))?;
        let data = match dtype {
            RawDType::U8 => bytes,
            RawDType::U16 => {
                let vals: Vec<f64> = bytes
                    .chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]) as f64)
                    .collect();
                rescale(&vals)
            }
            RawDType::F32 => {
                let vals: Vec<f64> = bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
                    .collect();
                rescale(&vals)
            }
        };
        Ok(Volume { dims, data })
    }

    /// Writes the voxels as a raw u8 file (for tools that read the SDK's `.raw` files).
    pub fn save_raw(&self, path: &Path) -> Result<(), StudyError> {
        std::fs::write(path, &self.data).map_err(|e| StudyError::io(path, e))
    }
}

/// min..max → 0..255, rounding to nearest; NaN and infinities become 0; a constant field becomes 0.
fn rescale(vals: &[f64]) -> Vec<u8> {
    let finite = vals.iter().copied().filter(|v| v.is_finite());
    let lo = finite.clone().fold(f64::INFINITY, f64::min);
    let hi = finite.fold(f64::NEG_INFINITY, f64::max);
    let span = hi - lo;
    vals.iter()
        .map(|&v| {
            if !v.is_finite() || span.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
                0
            } else {
                round_to_u8((v - lo) / span * 255.0)
            }
        })
        .collect()
}

/// Voxel centre in [-1, 1] (the box the kernel marches through).
fn centered(i: usize, n: usize) -> f64 {
    (i as f64 + 0.5) / n as f64 * 2.0 - 1.0
}

fn to_u8(v: f64) -> u8 {
    round_to_u8(v.clamp(0.0, 1.0) * 255.0)
}

/// `x.round() as u8`, bit for bit, without `round`. Why: the host's baseline (x86-64 without
/// SSE4.1) has no rounding instruction, so `round` is a library call per voxel (7 % of a
/// paper-scale render's profile); the conversion `as u8` truncates in one instruction. The
/// fraction `x − trunc(x)` is exact, and a value past 255 or below 0 saturates as the cast does.
fn round_to_u8(x: f64) -> u8 {
    let t = x as u8;
    t.saturating_add(u8::from(x - f64::from(t) >= 0.5))
}

fn smoothstep(e0: f64, e1: f64, x: f64) -> f64 {
    let t = ((x - e0) / (e1 - e0)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// Shell of radius 0.75 (thickness 0.1) and a core of radius 0.3 at lower density.
fn shell(x: f64, y: f64, z: f64) -> f64 {
    let r = (x * x + y * y + z * z).sqrt();
    let shell = 1.0 - smoothstep(0.0, 0.06, (r - 0.75).abs() - 0.05);
    let core = 0.6 * (1.0 - smoothstep(0.26, 0.32, r));
    shell.max(core)
}

/// splitmix64: a small, well-mixed hash of a 64-bit value.
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform value in [0, 1) for an integer lattice point.
fn lattice(ix: i64, iy: i64, iz: i64, seed: u64) -> f64 {
    let h = splitmix64(
        seed ^ splitmix64(
            (ix as u64).wrapping_mul(0x1F1F_1F1F)
                ^ splitmix64((iy as u64).wrapping_mul(0x3C6E_F372) ^ splitmix64(iz as u64)),
        ),
    );
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// One octave of value noise at lattice frequency `freq` over [-1, 1]³.
fn value_noise(x: f64, y: f64, z: f64, freq: f64, seed: u64) -> f64 {
    let (fx, fy, fz) = ((x + 1.0) * freq, (y + 1.0) * freq, (z + 1.0) * freq);
    let (ix, iy, iz) = (fx.floor(), fy.floor(), fz.floor());
    let s = |t: f64| t * t * (3.0 - 2.0 * t);
    let (tx, ty, tz) = (s(fx - ix), s(fy - iy), s(fz - iz));
    let (ix, iy, iz) = (ix as i64, iy as i64, iz as i64);
    let mut acc = 0.0;
    for dz in 0..2 {
        for dy in 0..2 {
            for dx in 0..2 {
                let w = (if dx == 1 { tx } else { 1.0 - tx })
                    * (if dy == 1 { ty } else { 1.0 - ty })
                    * (if dz == 1 { tz } else { 1.0 - tz });
                acc += w * lattice(ix + dx, iy + dy, iz + dz, seed);
            }
        }
    }
    acc
}

/// Four octaves, thresholded at 0.45 and faded out near the box faces.
fn noise(x: f64, y: f64, z: f64, seed: u64) -> f64 {
    let mut v = 0.0;
    let mut amp = 0.5;
    let mut freq = 2.0;
    for octave in 0..4u64 {
        v += amp * value_noise(x, y, z, freq, seed.wrapping_add(octave));
        amp *= 0.5;
        freq *= 2.0;
    }
    let fade = 1.0 - smoothstep(0.8, 1.0, x.abs().max(y.abs()).max(z.abs()));
    ((v / 0.9375 - 0.45) / 0.55).max(0.0) * fade
}

#[derive(Debug, Clone, Copy)]
struct Blob {
    c: [f64; 3],
    inv_2sigma2: f64,
    reach2: f64,
    weight: f64,
}

/// 48 atoms on a random walk (bonded neighbours ~0.25 apart), radii 0.06–0.12.
fn make_blobs(seed: u64) -> Vec<Blob> {
    let mut state = seed;
    let mut next = || {
        state = splitmix64(state);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut blobs = Vec::new();
    let mut p = [0.0f64; 3];
    for _ in 0..48 {
        let sigma = 0.06 + 0.06 * next();
        blobs.push(Blob {
            c: p,
            inv_2sigma2: 1.0 / (2.0 * sigma * sigma),
            reach2: (3.5 * sigma) * (3.5 * sigma),
            weight: 0.7 + 0.3 * next(),
        });
        // a bond in a random direction, folded back into the box
        let (theta, u) = (next() * std::f64::consts::TAU, next() * 2.0 - 1.0);
        let s = (1.0 - u * u).sqrt();
        let dir = [s * theta.cos(), s * theta.sin(), u];
        for k in 0..3 {
            let q = p[k] + 0.25 * dir[k];
            p[k] = if q.abs() > 0.7 {
                p[k] - 0.25 * dir[k]
            } else {
                q
            };
        }
    }
    blobs
}

/// The blobs that can reach some voxel of the row (y, z), in their order, each with the row's
/// `dy²` and `dz²`. Exact, not a cut-off: a voxel's `d2` is `(dx² + dy²) + dz²` in floating
/// point, never below `dy² + dz²`, so a blob this leaves out fails `d2 < reach2` at every voxel
/// of the row. Most of the 48 blobs are far from any one row, so the field costs a few of them
/// per voxel instead of all.
fn near_row(blobs: &[Blob], y: f64, z: f64) -> impl Iterator<Item = (&Blob, f64, f64)> {
    blobs
        .iter()
        .map(move |b| (b, (y - b.c[1]).powi(2), (z - b.c[2]).powi(2)))
        .filter(|&(b, dy2, dz2)| dy2 + dz2 < b.reach2)
}

/// The x indices of a row of `w` voxels that blob `b` can reach: outside them its `(x − cx)²`
/// alone is at least its `reach2`, and so is its `d2` (a floating-point sum of non-negative
/// terms is never below one of them), so it adds nothing to `blob_field` there. Why: most of a
/// row lies beyond every blob, and testing each blob at each voxel there was most of generating
/// a volume. The bounds invert `centered` and take at least two voxels more on each side, a
/// margin of 4/w in position against rounding errors near 1e-16. Empty when `lo ≥ hi`.
fn reach_span(b: &Blob, w: usize) -> std::ops::Range<usize> {
    let index = |p: f64| (p + 1.0) * 0.5 * w as f64 - 0.5;
    let r = b.reach2.sqrt();
    // `as usize` saturates: a bound below the row is 0, one past it is clamped to w.
    let lo = (index(b.c[0] - r).floor() - 2.0) as usize;
    let hi = ((index(b.c[0] + r).ceil() + 3.0) as usize).min(w);
    lo.min(hi)..hi
}

/// What a thread reuses from row to row: the blobs near the row, each with its reach along x
/// and its `dy²` and `dz²`, and the row's sums.
#[derive(Default)]
struct RowScratch {
    near: Vec<(Blob, std::ops::Range<usize>, f64, f64)>,
    field: Vec<f64>,
}

/// One row's voxels of the blobs volume: `blob_field` at every voxel some blob reaches; the
/// others stay 0. `px` holds the voxels' centres along x. Blob by blob over its own reach, each
/// voxel's sum taking the blobs in the same order, and so the same rounding, as `blob_field`: a
/// voxel gets the terms of the one or two blobs that reach it, where a pass voxel by voxel
/// tested every blob near the row across the whole span they cover together. A blob's
/// `(y − cy)²` and `(z − cz)²` are the row's, computed once, by [`near_row`].
fn blob_row(blobs: &[Blob], px: &[f64], y: f64, z: f64, row: &mut [u8], s: &mut RowScratch) {
    let w = row.len();
    s.near.clear();
    s.near
        .extend(near_row(blobs, y, z).map(|(b, dy2, dz2)| (*b, reach_span(b, w), dy2, dz2)));
    let (lo, hi) = s.near.iter().fold((w, 0), |(lo, hi), (_, r, ..)| {
        (lo.min(r.start), hi.max(r.end))
    });
    if lo >= hi {
        return;
    }
    let field = &mut s.field;
    field.clear();
    field.resize(hi - lo, 0.0);
    for &(b, ref span, dy2, dz2) in &s.near {
        let span = span.clone();
        for (v, &x) in field[span.start - lo..span.end - lo]
            .iter_mut()
            .zip(&px[span])
        {
            // The sum in `blob_field`'s order: (dx² + dy²) + dz². A voxel whose sum has
            // reached 1 is 255 whatever the blobs after add (their terms are not negative).
            let d2 = (x - b.c[0]).powi(2) + dy2 + dz2;
            if d2 < b.reach2 && *v < 1.0 {
                *v += b.weight * (-d2 * b.inv_2sigma2).exp();
            }
        }
    }
    for (voxel, &v) in row[lo..hi].iter_mut().zip(field.iter()) {
        *voxel = to_u8(v);
    }
}

/// The blobs' field at (x, y, z): every blob that reaches the point, in order, adding its
/// Gaussian. The definition [`blob_row`] computes row by row.
#[cfg(test)]
fn blob_field(blobs: &[Blob], x: f64, y: f64, z: f64) -> f64 {
    let mut v = 0.0;
    for b in blobs {
        let d2 = (x - b.c[0]).powi(2) + (y - b.c[1]).powi(2) + (z - b.c[2]).powi(2);
        if d2 < b.reach2 {
            v += b.weight * (-d2 * b.inv_2sigma2).exp();
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn round_to_u8_is_round_then_the_cast(x in proptest::num::f64::ANY) {
            proptest::prop_assert_eq!(round_to_u8(x), x.round() as u8);
        }

        #[test]
        fn round_to_u8_is_round_then_the_cast_across_the_byte_range(x in -2.0f64..258.0) {
            proptest::prop_assert_eq!(round_to_u8(x), x.round() as u8);
        }
    }

    #[test]
    fn round_to_u8_at_halves_and_their_neighbours() {
        for k in -2..=257 {
            let half = f64::from(k) + 0.5;
            for x in [half, half.next_down(), half.next_up(), f64::from(k)] {
                assert_eq!(round_to_u8(x), x.round() as u8, "{x}");
            }
        }
        for x in [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            0.49999999999999994,
        ] {
            assert_eq!(round_to_u8(x), x.round() as u8, "{x}");
        }
    }

    #[test]
    fn the_blobs_near_a_row_give_every_voxel_the_field_of_all_blobs() {
        let blobs = make_blobs(3);
        let n = 48;
        for (y, z) in [(0, 0), (10, 20), (24, 24), (47, 5), (30, 47)] {
            let (py, pz) = (centered(y, n), centered(z, n));
            let near: Vec<Blob> = near_row(&blobs, py, pz).map(|(b, ..)| *b).collect();
            assert!(near.len() < blobs.len());
            for x in 0..n {
                let px = centered(x, n);
                assert_eq!(
                    blob_field(&near, px, py, pz).to_bits(),
                    blob_field(&blobs, px, py, pz).to_bits(),
                    "voxel ({x}, {y}, {z})"
                );
            }
        }
    }

    proptest::proptest! {
        /// Generating only the voxels a blob reaches gives the volume that computing the field
        /// at every voxel gives, for odd sizes and any seed.
        #[test]
        fn blobs_outside_their_reach_are_the_field_of_every_voxel(
            seed in proptest::num::u64::ANY,
            w in 1u32..70,
            h in 1u32..12,
            d in 1u32..12,
        ) {
            let v = Volume::generate(VolumeKind::Blobs, [w, h, d], seed).unwrap();
            let blobs = make_blobs(seed);
            let [w, h, d] = [w, h, d].map(|n| n as usize);
            for z in 0..d {
                for y in 0..h {
                    for x in 0..w {
                        let (px, py, pz) = (centered(x, w), centered(y, h), centered(z, d));
                        proptest::prop_assert_eq!(
                            v.data[x + w * (y + h * z)],
                            to_u8(blob_field(&blobs, px, py, pz)),
                            "voxel ({}, {}, {})", x, y, z
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn generators_are_deterministic_and_seed_dependent() {
        for kind in [VolumeKind::Noise, VolumeKind::Blobs] {
            let a = Volume::generate(kind, [24, 20, 16], 7).unwrap();
            let b = Volume::generate(kind, [24, 20, 16], 7).unwrap();
            let c = Volume::generate(kind, [24, 20, 16], 8).unwrap();
            assert_eq!(a, b, "{kind:?}");
            assert_ne!(a, c, "{kind:?}: the seed must matter");
            assert!(a.data.iter().any(|&v| v > 0), "{kind:?} is empty");
            assert!(a.data.contains(&0), "{kind:?} has no empty space");
        }
    }

    #[test]
    fn shell_is_mirror_symmetric_and_hollow_between_core_and_shell() {
        let v = Volume::generate(VolumeKind::Shell, [32, 32, 32], 0).unwrap();
        for z in 0..32 {
            for y in 0..32 {
                for x in 0..32 {
                    assert_eq!(v.at(x, y, z), v.at(31 - x, y, z));
                    assert_eq!(v.at(x, y, z), v.at(x, 31 - y, z));
                    assert_eq!(v.at(x, y, z), v.at(x, y, 31 - z));
                }
            }
        }
        // centre: core (0.6 → 153); r ≈ 0.5: empty; r ≈ 0.75: shell
        assert_eq!(v.at(16, 16, 16), 153);
        assert_eq!(v.at(16 + 8, 16, 16), 0);
        assert_eq!(v.at(16 + 11, 16, 16), 255);
    }

    #[test]
    fn empty_is_all_zero() {
        let v = Volume::zeros([3, 4, 5]).unwrap();
        assert_eq!(v.data.len(), 60);
        assert!(v.data.iter().all(|&b| b == 0));
    }

    #[test]
    fn raw_u8_round_trips_and_u16_f32_rescale() {
        let dir = tempfile::tempdir().unwrap();
        let v = Volume::generate(VolumeKind::Blobs, [8, 6, 4], 3).unwrap();
        let p = dir.path().join("v.raw");
        v.save_raw(&p).unwrap();
        assert_eq!(Volume::load_raw(&p, [8, 6, 4], RawDType::U8).unwrap(), v);

        let p16 = dir.path().join("v16.raw");
        let vals: [u16; 4] = [100, 1100, 600, 100];
        std::fs::write(
            &p16,
            vals.iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let v16 = Volume::load_raw(&p16, [2, 2, 1], RawDType::U16).unwrap();
        assert_eq!(v16.data, vec![0, 255, 128, 0]);

        let pf = dir.path().join("vf.raw");
        let vals: [f32; 2] = [f32::NAN, -2.0];
        let mut bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        bytes.extend(2.0f32.to_le_bytes());
        bytes.extend(0.0f32.to_le_bytes());
        std::fs::write(&pf, bytes).unwrap();
        let vf = Volume::load_raw(&pf, [4, 1, 1], RawDType::F32).unwrap();
        assert_eq!(vf.data, vec![0, 0, 255, 128]);
    }

    #[test]
    fn raw_size_mismatch_names_file_and_both_sizes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("head.raw");
        std::fs::write(&p, vec![0u8; 1000]).unwrap();
        let e = Volume::load_raw(&p, [10, 10, 6], RawDType::U16)
            .unwrap_err()
            .to_string();
        assert!(e.contains("head.raw"), "{e}");
        assert!(
            e.contains("has 1000 bytes") && e.contains("need 1200 bytes"),
            "{e}"
        );
        assert!(e.contains("10,10,6") && e.contains("u16"), "{e}");
        let e = Volume::load_raw(&p, [10, 10, 20], RawDType::U8)
            .unwrap_err()
            .to_string();
        assert!(e.contains("2000") && e.contains("1000"), "{e}");
    }

    #[test]
    fn dims_and_dtypes_parse_with_the_bad_value_named() {
        assert_eq!(parse_dims("256,256,128").unwrap(), [256, 256, 128]);
        assert_eq!(parse_dims("64").unwrap(), [64, 64, 64]);
        assert_eq!(parse_dims("4x5x6").unwrap(), [4, 5, 6]);
        for bad in ["0,1,1", "1,2", "2048", "a,b,c"] {
            let e = parse_dims(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
        assert_eq!("u16".parse::<RawDType>().unwrap(), RawDType::U16);
        assert!(
            "f64"
                .parse::<RawDType>()
                .unwrap_err()
                .to_string()
                .contains("f64")
        );
        assert_eq!("blobs".parse::<VolumeKind>().unwrap(), VolumeKind::Blobs);
        assert!(
            "cube"
                .parse::<VolumeKind>()
                .unwrap_err()
                .to_string()
                .contains("cube")
        );
    }

    #[test]
    fn memory_check_refuses_with_both_numbers() {
        let e = check_fits("a 1024x1024x1024 volume", "device", 1 << 30, Some(1000))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("1073741824") && e.contains("1000") && e.contains("device"),
            "{e}"
        );
        assert!(check_fits("x", "host", 10, None).is_ok());
        assert!(check_fits("x", "host", 10, Some(10)).is_ok());
    }

    #[test]
    fn sources_describe_themselves() {
        let s = VolumeSource::Generated {
            kind: VolumeKind::Shell,
            dims: [64, 64, 32],
            seed: 5,
        };
        assert_eq!(s.describe(), "shell 64x64x32 seed 5");
        assert_eq!(s.dims(), [64, 64, 32]);
        assert_eq!(s.load().unwrap().dims, [64, 64, 32]);
    }
}
