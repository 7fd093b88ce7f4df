//! Viewpoints and thread-block shapes: the two axes of the paper's experiment.
//!
//! A [`View`] is (α, β, γ) in degrees, rotations about x, y and z. The SDK's `volumeRender` builds
//! its model-view matrix with OpenGL — `glRotatef(-α, 1,0,0); glRotatef(-β, 0,1,0);
//! glTranslatef(0, 0, 4)` — which is the *inverse* of the camera transform "rotate, then translate
//! by (0,0,-4)", and uploads its upper three rows as `c_invViewMatrix`. [`View::inv_view_matrix`]
//! does the same product (with `glRotatef(-γ, 0,0,1)` appended for the paper's third angle), in
//! f64 and rounded once to f32.
//!
//! A [`BlockShape`] is a×b threads; [`BlockShape::PAPER`] are the paper's eight 128-thread shapes.
//!
//! ```
//! use study::{BlockShape, View};
//! let v: View = "90,0,90".parse().unwrap();
//! assert_eq!(v.name(), "90,0,90");
//! let s: BlockShape = "16x8".parse().unwrap();
//! assert_eq!(s.threads(), 128);
//! assert_eq!(BlockShape::PAPER.len(), 8);
//! ```

use crate::StudyError;
use std::fmt;
use std::str::FromStr;

/// The distance of the camera from the volume's centre along its view axis (the SDK's
/// `viewTranslation = (0, 0, -4)`).
pub const CAMERA_DISTANCE: f64 = 4.0;

/// A viewpoint: rotations about x, y and z in degrees.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct View {
    pub alpha_deg: f64,
    pub beta_deg: f64,
    pub gamma_deg: f64,
}

impl View {
    pub const fn new(alpha_deg: f64, beta_deg: f64, gamma_deg: f64) -> Self {
        View {
            alpha_deg,
            beta_deg,
            gamma_deg,
        }
    }

    /// The paper's two viewpoints, (0,0,0) and (90,0,90).
    pub const PAPER: [View; 2] = [View::new(0.0, 0.0, 0.0), View::new(90.0, 0.0, 90.0)];

    /// `α,β,γ` as given on the command line and written in `sweep.csv` (`90,0,90`).
    pub fn name(&self) -> String {
        format!(
            "{},{},{}",
            fmt_deg(self.alpha_deg),
            fmt_deg(self.beta_deg),
            fmt_deg(self.gamma_deg)
        )
    }

    /// The same with `-` between the angles, for folder names (`v90-0-90`).
    pub fn slug(&self) -> String {
        format!(
            "v{}-{}-{}",
            fmt_deg(self.alpha_deg),
            fmt_deg(self.beta_deg),
            fmt_deg(self.gamma_deg)
        )
        .replace('.', "p")
    }

    /// The upper 3 rows of the inverse view matrix, row-major, as the kernel's
    /// `__constant__ float3x4 c_invViewMatrix` expects: columns 0–2 rotate eye-space directions
    /// into the volume's space, column 3 is the eye position.
    pub fn inv_view_matrix(&self) -> [f32; 12] {
        let m = mat_mul(
            &mat_mul(
                &mat_mul(&rotation(0, -self.alpha_deg), &rotation(1, -self.beta_deg)),
                &rotation(2, -self.gamma_deg),
            ),
            &translation(0.0, 0.0, CAMERA_DISTANCE),
        );
        let mut out = [0f32; 12];
        for r in 0..3 {
            for c in 0..4 {
                out[r * 4 + c] = m[r][c] as f32;
            }
        }
        out
    }
}

impl fmt::Display for View {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for View {
    type Err = StudyError;
    /// Parses `α,β,γ` in degrees, e.g. `90,0,90`.
    fn from_str(s: &str) -> Result<Self, StudyError> {
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        if parts.len() != 3 {
            return Err(StudyError::parse(
                "view",
                s,
                "expected three angles in degrees, α,β,γ (e.g. 90,0,90)",
            ));
        }
        let mut a = [0f64; 3];
        for (slot, p) in a.iter_mut().zip(&parts) {
            *slot = p
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| {
                    StudyError::parse("view", s, format!("{p:?} is not a finite angle in degrees"))
                })?;
        }
        Ok(View::new(a[0], a[1], a[2]))
    }
}

/// Degrees without a trailing `.0` (`90`, `22.5`).
fn fmt_deg(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

type Mat4 = [[f64; 4]; 4];

/// sin and cos of an angle in degrees, exact at multiples of 90°: the paper's viewpoints are
/// axis-aligned, and `cos(90°) = 6e-17` would tilt them by a hair and break the mirror symmetry
/// that the reference tests rely on.
fn sin_cos_deg(deg: f64) -> (f64, f64) {
    let r = deg.rem_euclid(360.0);
    if r == 0.0 {
        (0.0, 1.0)
    } else if r == 90.0 {
        (1.0, 0.0)
    } else if r == 180.0 {
        (0.0, -1.0)
    } else if r == 270.0 {
        (-1.0, 0.0)
    } else {
        r.to_radians().sin_cos()
    }
}

/// `glRotatef(deg, axis)` for a coordinate axis (0 = x, 1 = y, 2 = z): right-handed.
fn rotation(axis: usize, deg: f64) -> Mat4 {
    let (s, c) = sin_cos_deg(deg);
    let mut m = identity();
    let (i, j) = match axis {
        0 => (1, 2),
        1 => (2, 0),
        _ => (0, 1),
    };
    m[i][i] = c;
    m[i][j] = -s;
    m[j][i] = s;
    m[j][j] = c;
    m
}

fn translation(x: f64, y: f64, z: f64) -> Mat4 {
    let mut m = identity();
    m[0][3] = x;
    m[1][3] = y;
    m[2][3] = z;
    m
}

fn identity() -> Mat4 {
    let mut m = [[0.0; 4]; 4];
    for (i, row) in m.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    m
}

fn mat_mul(a: &Mat4, b: &Mat4) -> Mat4 {
    let mut m = [[0.0; 4]; 4];
    for (r, row) in m.iter_mut().enumerate() {
        for (c, v) in row.iter_mut().enumerate() {
            *v = (0..4).map(|k| a[r][k] * b[k][c]).sum();
        }
    }
    m
}

/// A thread-block shape a×b (the block is a threads wide in x, b in y).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockShape {
    pub x: u32,
    pub y: u32,
}

impl BlockShape {
    pub const fn new(x: u32, y: u32) -> Self {
        BlockShape { x, y }
    }

    /// The paper's eight 128-thread shapes, 128×1 … 1×128.
    pub const PAPER: [BlockShape; 8] = [
        BlockShape::new(128, 1),
        BlockShape::new(64, 2),
        BlockShape::new(32, 4),
        BlockShape::new(16, 8),
        BlockShape::new(8, 16),
        BlockShape::new(4, 32),
        BlockShape::new(2, 64),
        BlockShape::new(1, 128),
    ];

    pub fn threads(&self) -> u32 {
        self.x * self.y
    }

    /// `16x8`.
    pub fn name(&self) -> String {
        format!("{}x{}", self.x, self.y)
    }

    /// Blocks needed to cover a `width`×`height` image (the SDK's `iDivUp`).
    pub fn grid_for(&self, width: u32, height: u32) -> (u32, u32) {
        (width.div_ceil(self.x), height.div_ceil(self.y))
    }
}

impl fmt::Display for BlockShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.x, self.y)
    }
}

/// CUDA's limit on threads per block (every architecture since Fermi).
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;

impl FromStr for BlockShape {
    type Err = StudyError;
    /// Parses `AxB` (e.g. `16x8`), a·b ≤ 1024 threads.
    fn from_str(s: &str) -> Result<Self, StudyError> {
        let (a, b) = s
            .split_once(['x', 'X'])
            .ok_or_else(|| StudyError::parse("block shape", s, "expected AxB, e.g. 16x8"))?;
        let num = |t: &str| {
            t.trim()
                .parse::<u32>()
                .ok()
                .filter(|v| *v > 0)
                .ok_or_else(|| {
                    StudyError::parse(
                        "block shape",
                        s,
                        format!("{t:?} is not a positive thread count"),
                    )
                })
        };
        let shape = BlockShape::new(num(a)?, num(b)?);
        if shape.x as u64 * shape.y as u64 > MAX_THREADS_PER_BLOCK as u64 {
            return Err(StudyError::parse(
                "block shape",
                s,
                format!("more than {MAX_THREADS_PER_BLOCK} threads per block"),
            ));
        }
        Ok(shape)
    }
}

/// Parses a comma-free list separator for lists of views: `0,0,0;90,0,90` or one view per item.
pub fn parse_views(items: &[String]) -> Result<Vec<View>, StudyError> {
    items
        .iter()
        .flat_map(|s| s.split(';'))
        .filter(|s| !s.trim().is_empty())
        .map(str::parse)
        .collect()
}

/// Parses a list of shapes given as items, each possibly comma-separated (`128x1,64x2`).
pub fn parse_shapes(items: &[String]) -> Result<Vec<BlockShape>, StudyError> {
    items
        .iter()
        .flat_map(|s| s.split(','))
        .filter(|s| !s.trim().is_empty())
        .map(str::parse)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(m: &[f32; 12], v: [f32; 4]) -> [f32; 3] {
        let mut r = [0f32; 3];
        for (i, out) in r.iter_mut().enumerate() {
            *out = (0..4).map(|k| m[i * 4 + k] * v[k]).sum();
        }
        r
    }

    #[test]
    fn default_view_puts_the_eye_on_plus_z_looking_down_minus_z() {
        let m = View::new(0.0, 0.0, 0.0).inv_view_matrix();
        assert_eq!(apply(&m, [0.0, 0.0, 0.0, 1.0]), [0.0, 0.0, 4.0]);
        assert_eq!(apply(&m, [0.0, 0.0, -1.0, 0.0]), [0.0, 0.0, -1.0]);
    }

    #[test]
    fn rotating_90_about_x_moves_the_eye_onto_the_y_axis() {
        // glRotatef(-90, x) maps (0,0,4) to (0, 4·sin 90°, 0): the camera looks along -y.
        let m = View::new(90.0, 0.0, 0.0).inv_view_matrix();
        assert_eq!(apply(&m, [0.0, 0.0, 0.0, 1.0]), [0.0, 4.0, 0.0]);
        let m = View::new(0.0, 90.0, 0.0).inv_view_matrix();
        assert_eq!(apply(&m, [0.0, 0.0, 0.0, 1.0]), [-4.0, 0.0, 0.0]);
    }

    #[test]
    fn the_rotation_part_is_orthonormal_for_any_view() {
        for v in [View::new(30.0, 45.0, 60.0), View::new(-10.0, 200.0, 7.5)] {
            let m = v.inv_view_matrix();
            for i in 0..3 {
                for j in 0..3 {
                    let dot: f32 = (0..3).map(|k| m[i * 4 + k] * m[j * 4 + k]).sum();
                    let want = if i == j { 1.0 } else { 0.0 };
                    assert!((dot - want).abs() < 1e-6, "{v}: row {i}·row {j} = {dot}");
                }
            }
            let eye = apply(&m, [0.0, 0.0, 0.0, 1.0]);
            let dist = eye.iter().map(|c| c * c).sum::<f32>().sqrt();
            assert!((dist - 4.0).abs() < 1e-5);
        }
    }

    #[test]
    fn views_parse_and_name() {
        let v: View = " 90, 0 ,90".parse().unwrap();
        assert_eq!(v, View::new(90.0, 0.0, 90.0));
        assert_eq!(v.slug(), "v90-0-90");
        assert_eq!(View::new(22.5, 0.0, 0.0).name(), "22.5,0,0");
        assert_eq!(View::new(22.5, 0.0, 0.0).slug(), "v22p5-0-0");
        let e = "90,x,0".parse::<View>().unwrap_err().to_string();
        assert!(e.contains("\"x\"") && e.contains("90,x,0"), "{e}");
        let e = "90,0".parse::<View>().unwrap_err().to_string();
        assert!(e.contains("90,0"), "{e}");
    }

    #[test]
    fn shapes_parse_and_reject_with_the_bad_value() {
        let s: BlockShape = "16x8".parse().unwrap();
        assert_eq!((s.x, s.y, s.threads()), (16, 8, 128));
        assert_eq!(s.name(), "16x8");
        assert_eq!(s.grid_for(100, 64), (7, 8));
        for bad in ["16", "0x8", "16xq", "64x64"] {
            let e = bad.parse::<BlockShape>().unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
        assert!(BlockShape::PAPER.iter().all(|s| s.threads() == 128));
    }

    proptest::proptest! {
        #[test]
        fn names_parse_back(a in -720i32..720, b in -720i32..720, g in -720i32..720, x in 1u32..=64, y in 1u32..=16) {
            let v = View::new(a as f64, b as f64, g as f64 / 4.0);
            proptest::prop_assert_eq!(v.name().parse::<View>().unwrap(), v);
            let s = BlockShape::new(x, y);
            proptest::prop_assert_eq!(s.name().parse::<BlockShape>().unwrap(), s);
        }
    }

    #[test]
    fn lists_split_on_separators() {
        let shapes = parse_shapes(&["128x1,64x2".into(), "1x128".into()]).unwrap();
        assert_eq!(shapes.len(), 3);
        let views = parse_views(&["0,0,0;90,0,90".into()]).unwrap();
        assert_eq!(views, View::PAPER.to_vec());
    }
}
