//! The study's two geometries: the paper's own (`paper`) and a smaller one that keeps its sampling
//! regime (`quick`, the default on the emulator).
//!
//! Why the regime and not just "smaller": what the texture cache sees is set by three ratios, not
//! by the sizes themselves — the volume against the L2 (does a miss go to DRAM?), the distance
//! between neighbouring rays in voxels (do neighbouring threads share texels?) and the voxels a ray
//! advances per step (does a ray reuse its own texels?). At the paper's scale (1024³ u8 volume,
//! 512×512 image, the SDK's `tstep = 0.01` on the [-1, 1] box) a step advances 0.01 × 1024 / 2 =
//! 5.12 voxels, and rays are L·N / (2·W) voxels apart at distance L from the eye (the SDK's camera
//! sits 4 from the centre, its image plane 2 in front: 3, 4 and 5 voxels at the near face, centre
//! and far face). Dividing the volume edge and the image side by the same factor keeps the ray
//! spacing; multiplying the step by that factor keeps the voxels per step. So `quick` is the
//! paper's geometry divided by 4 in every length — 256³, 128×128, `tstep = 0.04` — with the same
//! ray spacing and voxels per step, a volume 21× the GTX 480's 768 KiB L2, and rays of 1/4 the
//! samples (what makes it ~16 × 4 times cheaper).
//!
//! ```
//! use study::Scale;
//! let g = Scale::Paper.geometry();
//! assert_eq!((g.volume_edge, g.image_side), (1024, 512));
//! assert!((g.voxels_per_step() - Scale::Quick.geometry().voxels_per_step()).abs() < 1e-3);
//! assert!("huge".parse::<Scale>().unwrap_err().to_string().contains("quick or paper"));
//! ```

use crate::StudyError;
use crate::params::{RenderParams, TSTEP};
use crate::view::CAMERA_DISTANCE;
use crate::volume::{VolumeKind, VolumeSource};
use instrument::AccessPeriod;
use std::fmt;
use std::str::FromStr;

/// Which geometry a demo or sweep uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scale {
    /// The paper's geometry with every length divided by 4 (the step multiplied by 4).
    #[default]
    Quick,
    /// The paper's geometry: 1024³, 512×512, the SDK's step.
    Paper,
}

/// Lengths that divide the paper's: quick is the paper's geometry at 1/4 scale.
const QUICK_DIVISOR: u32 = 4;

impl Scale {
    pub const ALL: [Scale; 2] = [Scale::Quick, Scale::Paper];

    pub fn name(self) -> &'static str {
        match self {
            Scale::Quick => "quick",
            Scale::Paper => "paper",
        }
    }

    pub fn geometry(self) -> Geometry {
        let paper = Geometry {
            volume_edge: 1024,
            image_side: 512,
            tstep: TSTEP,
        };
        match self {
            Scale::Paper => paper,
            Scale::Quick => Geometry {
                volume_edge: paper.volume_edge / QUICK_DIVISOR,
                image_side: paper.image_side / QUICK_DIVISOR,
                tstep: paper.tstep * QUICK_DIVISOR as f32,
            },
        }
    }

    /// Which accesses a study at this scale times by default: the sampling that keeps the fenced
    /// runs nearest the bare run's truth at least cost, as measured.
    /// - `paper`: one access in 8. A frame is about one wave of blocks and ends with its slowest
    ///   timed warp, so only timing fewer accesses per warp lowers what fenced probes cost. On an
    ///   H200 fenced probes cost 1.03-1.05x the bare kernel's time timing every 8th access
    ///   against 1.18-1.23x timing all, and the volume sample's mean stays within 2.4 % of the
    ///   one timing all gives; on the emulator's h100 preset every run's timed accesses stay
    ///   within 7.7 % of the bare run's, where timing all reads up to 9.9 % short (no rule keeps
    ///   its sites: its texture fetches return in order, and a probe changes what each waits for).
    /// - `quick`: every access. On the emulator's gtx480 preset timing all reads truer (its
    ///   worst run's timed accesses 12 % off the bare run's against 22 %, the fenced memory
    ///   shares within 10 points of the paper's where every 8th access over-reads them by up to
    ///   7) at up to 1.44x the cost.
    pub fn time_accesses(self) -> AccessPeriod {
        match self {
            Scale::Paper => AccessPeriod::EVERY_8,
            Scale::Quick => AccessPeriod::ALL,
        }
    }

    /// Both geometries, one line each, against an L2 of `l2_bytes` (for `--help` and the README).
    pub fn help(l2_name: &str, l2_bytes: u64) -> String {
        Scale::ALL
            .iter()
            .map(|s| format!("{}: {}", s.name(), s.geometry().describe(l2_name, l2_bytes)))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl fmt::Display for Scale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Scale {
    type Err = StudyError;
    fn from_str(s: &str) -> Result<Self, StudyError> {
        Scale::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| StudyError::parse("scale", s, "expected quick or paper"))
    }
}

/// A cubic u8 volume, a square image and the ray step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Geometry {
    pub volume_edge: u32,
    pub image_side: u32,
    pub tstep: f32,
}

impl Geometry {
    /// Voxels a ray advances per step: the box is 2 wide and `volume_edge` voxels across.
    pub fn voxels_per_step(&self) -> f64 {
        f64::from(self.tstep) * f64::from(self.volume_edge) / 2.0
    }

    /// Distance in voxels between neighbouring rays at the box's near face, centre and far face
    /// (looking along an axis): pixels are 2 / W apart on the image plane 2 in front of the eye,
    /// so L / W apart at distance L, and a voxel is 2 / N wide.
    pub fn ray_spacing_voxels(&self) -> [f64; 3] {
        let (n, w) = (f64::from(self.volume_edge), f64::from(self.image_side));
        [-1.0, 0.0, 1.0].map(|d| (CAMERA_DISTANCE + d) * n / (2.0 * w))
    }

    pub fn volume_bytes(&self) -> u64 {
        u64::from(self.volume_edge).pow(3)
    }

    /// The image's render parameters: the SDK's defaults at this size and step.
    pub fn params(&self) -> RenderParams {
        RenderParams {
            tstep: self.tstep,
            ..RenderParams::with_size(self.image_side, self.image_side)
        }
    }

    pub fn volume(&self, kind: VolumeKind, seed: u64) -> VolumeSource {
        VolumeSource::Generated {
            kind,
            dims: [self.volume_edge; 3],
            seed,
        }
    }

    /// `1024³ u8 volume (1 GiB, 1365× gtx480's 768 KiB L2), 512×512 image, tstep 0.01 = 5.12
    /// voxels per step, rays 3.0/4.0/5.0 voxels apart (near face/centre/far face)`.
    pub fn describe(&self, l2_name: &str, l2_bytes: u64) -> String {
        let [near, centre, far] = self.ray_spacing_voxels();
        format!(
            "{n}³ u8 volume ({}, {:.0}× {l2_name}'s {} L2), {w}×{w} image, tstep {} = {:.2} voxels per step, rays {near:.1}/{centre:.1}/{far:.1} voxels apart (near face/centre/far face)",
            bytes(self.volume_bytes()),
            self.volume_bytes() as f64 / l2_bytes.max(1) as f64,
            bytes(l2_bytes),
            self.tstep,
            self.voxels_per_step(),
            n = self.volume_edge,
            w = self.image_side,
        )
    }
}

/// `768 KiB`, `16 MiB`, `1 GiB` (binary units, whole numbers where exact).
fn bytes(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {}", units[u])
    } else {
        format!("{v:.1} {}", units[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paper_scale_samples_accesses_and_the_quick_scale_times_them_all() {
        for (scale, period) in [("paper", "every:8"), ("quick", "all")] {
            let s: Scale = scale.parse().unwrap();
            assert_eq!(s.time_accesses().to_string(), period, "{scale}");
            let cfg = crate::demo_config(std::path::Path::new("out"), s).unwrap();
            assert_eq!(
                cfg.time_accesses,
                s.time_accesses(),
                "{scale}: the demo's sweep"
            );
        }
    }

    #[test]
    fn quick_keeps_the_papers_ray_spacing_and_voxels_per_step() {
        let (q, p) = (Scale::Quick.geometry(), Scale::Paper.geometry());
        assert_eq!(p.volume_edge, 1024);
        assert_eq!(p.image_side, 512);
        assert_eq!(p.tstep, 0.01);
        assert!((p.voxels_per_step() - 5.12).abs() < 1e-4);
        assert!((q.voxels_per_step() - p.voxels_per_step()).abs() < 1e-4);
        for (a, b) in q.ray_spacing_voxels().iter().zip(p.ray_spacing_voxels()) {
            assert!((a - b).abs() < 1e-9);
        }
        assert_eq!(p.ray_spacing_voxels(), [3.0, 4.0, 5.0]);
        // the regime: a volume far larger than the gtx480's L2
        let l2 = 768 * 1024;
        assert!(q.volume_bytes() > 16 * l2);
        assert_eq!(p.params().tstep, 0.01);
        assert_eq!(q.params().width, 128);
    }

    #[test]
    fn describes_both_geometries_and_refuses_unknown_names() {
        let text = Scale::help("gtx480", 768 * 1024);
        assert!(text.contains("paper: 1024³ u8 volume (1 GiB, 1365× gtx480's 768 KiB L2), 512×512 image, tstep 0.01 = 5.12 voxels per step, rays 3.0/4.0/5.0"), "{text}");
        assert!(text.contains("quick: 256³ u8 volume (16 MiB, 21× gtx480's 768 KiB L2), 128×128 image, tstep 0.04 = 5.12"), "{text}");
        assert_eq!("paper".parse::<Scale>().unwrap(), Scale::Paper);
        let e = "huge".parse::<Scale>().unwrap_err().to_string();
        assert!(e.contains("huge") && e.contains("quick or paper"), "{e}");
    }
}
