//! `block-placement.cu` on the emulator: when each block of a paper-scale grid starts on its SM,
//! and how far apart an SM's blocks start.

use std::collections::BTreeMap;
use std::path::Path;

use device::{Arg, DevBuf};
use emulator::GpuConfig;
use trace::Dim3;

use super::Experiment;
use crate::error::CalibrationError;
use crate::table::PaperShape;

/// `main`'s grid covers 512 × 512 threads, and each block asks for 13 KiB of dynamic shared
/// memory so that 16 blocks fit an SM.
const EXTENT: u32 = 512;
const SHARED: u32 = 13 * 1024;

pub(crate) struct BlockPlacementRig {
    exp: Experiment,
    out: DevBuf,
}

impl BlockPlacementRig {
    pub(crate) fn new(root: &Path, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let mut exp = Experiment::load(root, "block-placement.cu", cfg)?;
        // Four words per block; the paper's shapes have 128 threads, so 2,048 blocks.
        let out = exp.alloc(4 * 4 * u64::from(EXTENT * EXTENT / 128))?;
        Ok(BlockPlacementRig { exp, out })
    }

    /// ns per block between consecutive starts on an SM, over `shape`'s grid
    /// ([`start_slope_ns`]).
    pub(crate) fn ramp_ns(&mut self, shape: PaperShape) -> Result<f64, CalibrationError> {
        let s = shape.shape();
        let (grid, block) = (
            Dim3::new(EXTENT / s.x, EXTENT / s.y, 1),
            Dim3::new(s.x, s.y, 1),
        );
        let blocks = (grid.x * grid.y) as usize;
        let args = [Arg::Buf(self.out)];
        self.exp
            .launch_shaped("place", grid, block, SHARED, &args)?;
        let words = self.exp.download_u32(&self.out)?;
        let starts: Vec<(u32, u64)> = words
            .chunks_exact(4)
            .take(blocks)
            .map(|w| (w[0], u64::from(w[2]) | u64::from(w[3]) << 32))
            .collect();
        start_slope_ns(&starts).ok_or_else(|| CalibrationError::Result {
            what: "block-placement.cu".into(),
            reason: format!("no SM started two blocks of the {shape} grid"),
        })
    }
}

/// How far apart, in ns, an SM's blocks start: the least-squares slope of each block's start
/// over its place in its SM's order of starts (0 for the first), from `(smid, start_ns)` per
/// block. Blocks that start together may take their places in either order: the points are the
/// same. None when no SM started two blocks.
fn start_slope_ns(starts: &[(u32, u64)]) -> Option<f64> {
    let mut by_sm: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for &(sm, t) in starts {
        by_sm.entry(sm).or_default().push(t);
    }
    let points: Vec<(f64, f64)> = by_sm
        .into_values()
        .flat_map(|mut ts| {
            ts.sort_unstable();
            ts.into_iter()
                .enumerate()
                .map(|(k, t)| (k as f64, t as f64))
        })
        .collect();
    let n = points.len() as f64;
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(x, y), p| (x + p.0 / n, y + p.1 / n));
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::RECORDS_DIR;

    /// A row of `block-placement.cu`'s output (`shape,bx,by,smid,order,start_ns`); the columns
    /// not read here are left out.
    #[derive(serde::Deserialize)]
    struct Placement {
        shape: String,
        smid: u32,
        start_ns: u64,
    }

    #[test]
    fn the_slope_is_the_start_gap_per_place_on_an_sm() {
        // Two SMs, their blocks 10 ns apart, the second SM's 100 ns later: 10 ns per place.
        let starts = [(0, 0), (1, 100), (0, 10), (1, 110), (0, 20), (1, 120)];
        assert_eq!(start_slope_ns(&starts), Some(10.0));
        // Shuffled, the same.
        let shuffled = [(1, 120), (0, 20), (1, 100), (0, 0), (0, 10), (1, 110)];
        assert_eq!(start_slope_ns(&shuffled), Some(10.0));
        // One block per SM has no slope.
        assert_eq!(start_slope_ns(&[(0, 5), (1, 7)]), None);
        assert_eq!(start_slope_ns(&[]), None);
    }

    /// The slopes the `block-ramp-*.txt` records print are what this definition gives on the
    /// silicon records they name, per GPU and shape, to their two decimals.
    #[test]
    fn the_silicon_slopes_are_those_of_the_block_placement_records() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(RECORDS_DIR);
        let mut printed = String::new();
        for gpu in ["h100-2026-11-27", "h200-2026-11-29"] {
            let name = format!("block-ramp-{gpu}.txt");
            printed += &std::fs::read_to_string(dir.join(name)).unwrap();
        }
        let mut checked = 0;
        for line in printed
            .lines()
            .filter(|l| l.starts_with("block-placement-"))
        {
            let cells: Vec<&str> = line.split('\t').collect();
            let [record, shape, slope] = cells[..] else {
                panic!("{line:?}: want record, shape and slope");
            };
            let starts: Vec<(u32, u64)> = csv::Reader::from_path(dir.join(record))
                .unwrap()
                .deserialize::<Placement>()
                .map(|r| r.unwrap())
                .filter(|r| r.shape == shape)
                .map(|r| (r.smid, r.start_ns))
                .collect();
            let got = start_slope_ns(&starts).unwrap();
            assert_eq!(format!("{got:.2}"), slope, "{record} {shape}");
            checked += 1;
        }
        assert_eq!(checked, 8, "two GPUs, four shapes");
    }
}
