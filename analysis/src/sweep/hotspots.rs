//! Hot spots: which sites, warps and blocks of a run spend more memory time than they should,
//! and which vary most (the paper's stated future work: pointing at inefficient spots).
//!
//! Definitions, per run: the baseline access time `b` is the median of the per-warp mean access
//! times. An entity (site, warp or block) with `n` accesses and memory time `m` has excess
//! memory time `m − n·b` (cycles it spent beyond accessing at the typical speed) and an
//! excess ratio `m / (n·b)`. Its variance is the population variance of its access durations.
//! Entities are ranked (1 = largest) by excess memory time — where the time goes — and by
//! variance. Outliers are judged per access, so that a warp is not an outlier merely for having
//! more rays to march: within each kind, entities with accesses get robust z-scores
//! (0.6745·(x − median)/MAD, see [`crate::stats::robust_z`]) of the excess ratio and of the
//! variance, and are outliers when either |z| exceeds the threshold (3.5, Iglewicz–Hoaglin).

use crate::stats;
use crate::sweep::runstats::{RunStats, Sums};
use std::collections::BTreeMap;

/// One ranked entity.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Hot {
    /// `site`, `warp` or `block`.
    pub kind: &'static str,
    /// Human-readable id: `site 0 (volume sample)`, `warp 17`, `block (1,2,0)`.
    pub id: String,
    /// The SM of a warp; for blocks the SM of their first warp.
    pub sm: Option<u32>,
    pub accesses: u64,
    pub mem_cycles: u64,
    pub excess_cycles: f64,
    pub excess_ratio: Option<f64>,
    pub mean_access: Option<f64>,
    pub variance: Option<f64>,
    /// Robust z of the excess ratio (`None` without accesses).
    pub z_ratio: Option<f64>,
    pub z_variance: Option<f64>,
    pub rank_excess: u32,
    pub rank_variance: Option<u32>,
    pub outlier: bool,
}

struct Entity {
    id: String,
    sm: Option<u32>,
    sums: Sums,
}

/// Ranks the run's sites, warps and blocks. Keeps every site, and of warps and blocks those in
/// the top `top_k` by excess or variance plus every outlier; sorted by kind, then rank by excess.
pub(crate) fn rank(stats: &RunStats, top_k: usize, z_threshold: f64) -> Vec<Hot> {
    let baseline = stats::median(&stats.warp_means()).unwrap_or(0.0);
    let sites: Vec<Entity> = stats
        .site_totals
        .iter()
        .map(|(id, s)| Entity {
            id: format!("site {id} ({})", stats.site_name(*id)),
            sm: None,
            sums: *s,
        })
        .collect();
    let warps: Vec<Entity> = stats
        .warps
        .iter()
        .map(|w| Entity {
            id: format!("warp {}", w.global_warp),
            sm: Some(w.sm),
            sums: w.all,
        })
        .collect();
    let mut blocks: BTreeMap<[u32; 3], Entity> = BTreeMap::new();
    for w in &stats.warps {
        // Keyed z, y, x so blocks come out in launch (linear) order.
        let key = [w.block[2], w.block[1], w.block[0]];
        let e = blocks.entry(key).or_insert_with(|| Entity {
            id: format!("block ({},{},{})", w.block[0], w.block[1], w.block[2]),
            sm: Some(w.sm),
            sums: Sums::default(),
        });
        e.sums.merge(&w.all);
    }
    let blocks: Vec<Entity> = blocks.into_values().collect();
    let mut out = rank_kind("site", &sites, baseline, usize::MAX, z_threshold);
    out.extend(rank_kind("warp", &warps, baseline, top_k, z_threshold));
    out.extend(rank_kind("block", &blocks, baseline, top_k, z_threshold));
    out
}

/// 1-based ranks, largest first; ties keep entity order.
fn ranks_desc(xs: &[f64]) -> Vec<u32> {
    let mut order: Vec<usize> = (0..xs.len()).collect();
    order.sort_by(|&a, &b| xs[b].total_cmp(&xs[a]).then(a.cmp(&b)));
    let mut r = vec![0u32; xs.len()];
    for (pos, &i) in order.iter().enumerate() {
        r[i] = pos as u32 + 1;
    }
    r
}

fn rank_kind(
    kind: &'static str,
    ents: &[Entity],
    baseline: f64,
    top_k: usize,
    z_threshold: f64,
) -> Vec<Hot> {
    let excess: Vec<f64> = ents
        .iter()
        .map(|e| e.sums.sum as f64 - e.sums.count as f64 * baseline)
        .collect();
    let r_ex = ranks_desc(&excess);
    let with_ratio: Vec<(usize, f64)> = ents
        .iter()
        .enumerate()
        .filter(|(_, e)| e.sums.count > 0 && baseline > 0.0)
        .map(|(i, e)| (i, e.sums.sum as f64 / (e.sums.count as f64 * baseline)))
        .collect();
    let ratios: Vec<f64> = with_ratio.iter().map(|p| p.1).collect();
    let mut z_ratio: Vec<Option<f64>> = vec![None; ents.len()];
    for ((i, _), z) in with_ratio.iter().zip(stats::robust_z(&ratios)) {
        z_ratio[*i] = Some(z);
    }
    // Variance ranks and z-scores among the entities that have one.
    let with_var: Vec<(usize, f64)> = ents
        .iter()
        .enumerate()
        .filter_map(|(i, e)| e.sums.variance().map(|v| (i, v)))
        .collect();
    let vars: Vec<f64> = with_var.iter().map(|p| p.1).collect();
    let z_var = stats::robust_z(&vars);
    let r_var = ranks_desc(&vars);
    let mut var_info: Vec<Option<(f64, u32)>> = vec![None; ents.len()];
    for (k, (i, _)) in with_var.iter().enumerate() {
        var_info[*i] = Some((z_var[k], r_var[k]));
    }
    let mut out: Vec<Hot> = ents
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let expected = e.sums.count as f64 * baseline;
            let zv = var_info[i].map(|v| v.0);
            let outlier = z_ratio[i].is_some_and(|z| z.abs() > z_threshold)
                || zv.is_some_and(|z| z.abs() > z_threshold);
            Hot {
                kind,
                id: e.id.clone(),
                sm: e.sm,
                accesses: e.sums.count,
                mem_cycles: e.sums.sum,
                excess_cycles: excess[i],
                excess_ratio: (expected > 0.0).then(|| e.sums.sum as f64 / expected),
                mean_access: e.sums.mean(),
                variance: e.sums.variance(),
                z_ratio: z_ratio[i],
                z_variance: zv,
                rank_excess: r_ex[i],
                rank_variance: var_info[i].map(|v| v.1),
                outlier,
            }
        })
        .filter(|h| {
            h.outlier
                || (h.rank_excess as usize) <= top_k
                || h.rank_variance.is_some_and(|r| r as usize <= top_k)
        })
        .collect();
    out.sort_by_key(|h| h.rank_excess);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_are_descending_and_stable() {
        assert_eq!(ranks_desc(&[1.0, 5.0, 3.0, 5.0]), vec![4, 1, 3, 2]);
    }
}
