//! The probes beside the ground truth: run.json's `truth` section.
//!
//! On the emulator every load's issue cycle and the cycle its data reaches the register are
//! known, so each timed access's probe reading can be compared with the access's true time
//! (data return − issue; for a window that holds several loads, the last return − the first
//! issue), and with the true time of the same access in the bare run. Three figures:
//! `probe_error` is what the probe adds or misses; `truth_shift` is how much measuring
//! changed the timed accesses' own time, and `load_shift` how much it changed every load's. A
//! GPU run has no ground truth and no `truth` section.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A probe's readings beside the true times of the same accesses (a run's or a site's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TruthStats {
    /// Timed accesses paired with the loads they timed.
    pub accesses: u64,
    /// Mean probe reading, in cycles.
    pub probe_mean_cycles: f64,
    /// Mean true access time of the same accesses, in cycles.
    pub true_mean_cycles: f64,
    /// (probe mean − true mean) ÷ true mean: 0.05 reads 5 % long, −0.9 misses 90 % of the time.
    pub probe_error: f64,
    /// Probe mean − true mean, in cycles: a short access makes a small bias a large ratio.
    pub probe_bias_cycles: f64,
    /// Accesses whose bare-run counterpart was found (the same load of the same warp).
    pub bare_accesses: u64,
    /// The true mean of those accesses in the bare run, in cycles (`null` when none was found).
    pub bare_true_mean_cycles: Option<f64>,
    /// (true mean − bare true mean) ÷ bare true mean over the accesses found in both: how much
    /// measuring changed the accesses' own time (`null` when none was found).
    pub truth_shift: Option<f64>,
}

impl TruthStats {
    /// The statistics of sums: `accesses` paired accesses whose probe readings and true times
    /// add up to `probe_sum` and `true_sum`; of them, `bare.0` found in the bare run, whose
    /// true times there add up to `bare.2` and in this run to `bare.1`. `None` without accesses.
    pub fn from_sums(
        accesses: u64,
        probe_sum: f64,
        true_sum: f64,
        bare: (u64, f64, f64),
    ) -> Option<TruthStats> {
        if accesses == 0 || true_sum <= 0.0 {
            return None;
        }
        let n = accesses as f64;
        let (probe_mean, true_mean) = (probe_sum / n, true_sum / n);
        let (found, here, there) = bare;
        let bare_mean = (found > 0 && there > 0.0).then(|| there / found as f64);
        Some(TruthStats {
            accesses,
            probe_mean_cycles: probe_mean,
            true_mean_cycles: true_mean,
            probe_error: (probe_mean - true_mean) / true_mean,
            probe_bias_cycles: probe_mean - true_mean,
            bare_accesses: found,
            bare_true_mean_cycles: bare_mean,
            truth_shift: bare_mean.map(|_| here / there - 1.0),
        })
    }

    /// (probe mean − bare true mean) ÷ bare true mean: the reading against what the same
    /// accesses take without probes, the probe's error and measuring's shift together. `None`
    /// when the bare run had none of them.
    pub fn probe_vs_bare(&self) -> Option<f64> {
        let bare = self.bare_true_mean_cycles.filter(|&b| b > 0.0)?;
        Some(self.probe_mean_cycles / bare - 1.0)
    }
}

/// One probe site's [`TruthStats`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SiteTruth {
    /// The site's id, as in the trace.
    pub site: u16,
    /// The site's figures over its paired accesses.
    pub stats: TruthStats,
}

/// The probes of a run beside the ground truth (emulator only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbeTruth {
    /// Over every paired access of the run's timed warps: a traced warp's records one by one,
    /// every other warp's statistics by the loads the traced warps' windows showed to be timed.
    pub run: TruthStats,
    /// Per site with paired accesses, by site id.
    pub sites: Vec<SiteTruth>,
    /// Timed warps with paired accesses (`null` in a run.json written when only the traced
    /// warps were paired).
    #[serde(default)]
    pub warps: Option<u64>,
    /// Records whose window held no global, constant or texture load, so nothing to pair with.
    pub unpaired: u64,
    /// A warp's statistics of a site left out: they counted a different number of accesses than
    /// the warp ran windows of that site (a load the traced warps never timed), or the warp ran
    /// such windows at a site its statistics did not count.
    #[serde(default)]
    pub unpaired_statistics: u64,
    /// Timed warps whose bare run issued a different number of loads: their accesses have no
    /// bare counterpart.
    pub unmatched_warps: u64,
    /// How much measuring changed the memory system as a whole: (mean true time of every
    /// recorded load of the probed run, timed or not − the same of the bare run) ÷ the latter.
    /// Beside `run.truth_shift`, which is over the timed accesses alone, it tells a probe that
    /// moved the whole run from one that moved only the accesses it timed (`null` without a
    /// bare run, and in a run.json written before it was kept).
    #[serde(default)]
    pub load_shift: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_give_error_bias_and_shift() {
        // 4 accesses read 440 cycles in all, took 400; the bare run took 320 for 3 of them,
        // which took 330 here.
        let s = TruthStats::from_sums(4, 440.0, 400.0, (3, 330.0, 320.0)).unwrap();
        assert_eq!(s.probe_mean_cycles, 110.0);
        assert_eq!(s.true_mean_cycles, 100.0);
        assert!((s.probe_error - 0.1).abs() < 1e-12);
        assert_eq!(s.probe_bias_cycles, 10.0);
        assert!((s.bare_true_mean_cycles.unwrap() - 320.0 / 3.0).abs() < 1e-9);
        assert!((s.truth_shift.unwrap() - (330.0 / 320.0 - 1.0)).abs() < 1e-12);
        assert!(TruthStats::from_sums(0, 0.0, 0.0, (0, 0.0, 0.0)).is_none());
        let alone = TruthStats::from_sums(1, 5.0, 50.0, (0, 0.0, 0.0)).unwrap();
        assert_eq!((alone.truth_shift, alone.probe_error), (None, -0.9));
        // The reading, 110 cycles, against the bare run's 106.7.
        assert!((s.probe_vs_bare().unwrap() - (110.0 * 3.0 / 320.0 - 1.0)).abs() < 1e-12);
        assert_eq!(alone.probe_vs_bare(), None);
    }
}
