//! One pass over a run's trace: per-warp memory and other time, per-site totals, and the run's
//! breakdown (paper fig. 5), memory reference frequency and per-warp spread (fig. 10).
//!
//! Definitions (per warp): memory time = sum of its record durations (or of its summaries' sums for
//! `summary` traces, and for a traced warp whose records outran its slots; a traced warp's accesses
//! are in both, and count once); other time = (kernel end − kernel begin) − memory time, saturating
//! at zero; mean access time = memory time / accesses. Per run: `mem_cycles` and `other_cycles` are
//! means over warps; `mem_share` = mem / (mem + other); mean access time = all memory time / all
//! accesses; memory reference frequency = 1 / mean access time (accesses per cycle); per-warp
//! variance and spread are the population variance and max − min of the per-warp mean access times
//! of warps that made at least one access.
//!
//! Only per-warp aggregates stay in memory (about 150 bytes a warp); records stream through.

use crate::stats;
use std::collections::BTreeMap;
use trace::{SiteInfo, TraceReader};

/// Exact running sums of access durations: count, sum and sum of squares (in u128, so the
/// variance is computed without cancellation error).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sums {
    pub count: u64,
    pub sum: u64,
    pub sum_sq: u128,
    /// False when some durations are known only through summaries (no squares).
    pub exact_sq: bool,
}

impl Default for Sums {
    /// Empty sums; exact until a summary (count and sum only) is added.
    fn default() -> Self {
        Sums {
            count: 0,
            sum: 0,
            sum_sq: 0,
            exact_sq: true,
        }
    }
}

impl Sums {
    fn new() -> Self {
        Sums::default()
    }

    fn add(&mut self, d: u64) {
        self.count += 1;
        self.sum += d;
        self.sum_sq += (d as u128) * (d as u128);
    }

    fn add_summary(&mut self, count: u64, sum: u64) {
        self.count += count;
        self.sum += sum;
        if count > 0 {
            self.exact_sq = false;
        }
    }

    pub fn merge(&mut self, o: &Sums) {
        self.count += o.count;
        self.sum += o.sum;
        self.sum_sq += o.sum_sq;
        self.exact_sq &= o.exact_sq;
    }

    /// Mean duration; `None` without accesses.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    /// Population variance of the durations: (n·Σd² − (Σd)²) / n², exact in integers.
    pub fn variance(&self) -> Option<f64> {
        if self.count == 0 || !self.exact_sq {
            return None;
        }
        let n = self.count as u128;
        let s = self.sum as u128;
        let num = (n * self.sum_sq).saturating_sub(s * s);
        Some(num as f64 / (n * n) as f64)
    }
}

/// One warp's aggregates.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WarpStat {
    /// Position in the trace file (for re-reading its records).
    pub index: usize,
    pub block: [u32; 3],
    pub warp: u32,
    pub global_warp: u32,
    pub sm: u32,
    pub hw_warp: u32,
    pub begin: u64,
    pub end: u64,
    pub dropped: u32,
    pub wrapped: u64,
    /// Records kept in the trace (a traced warp's; summaries do not count).
    pub records: u64,
    pub all: Sums,
    pub min: Option<u64>,
    pub max: Option<u64>,
    pub sites: BTreeMap<u16, Sums>,
    /// The launch's access period: the warp timed one access in this many.
    pub period: u64,
}

impl WarpStat {
    /// The warp's memory time: its timed accesses' cycles, times the access period where it
    /// timed a sample (an estimate then).
    pub fn mem_cycles(&self) -> u64 {
        self.all.sum.saturating_mul(self.period)
    }

    pub fn other_cycles(&self) -> u64 {
        self.end
            .saturating_sub(self.begin)
            .saturating_sub(self.mem_cycles())
    }

    pub fn mean_access(&self) -> Option<f64> {
        self.all.mean()
    }
}

/// A run's warps and totals.
#[derive(Debug, Clone)]
pub(crate) struct RunStats {
    pub sites: Vec<SiteInfo>,
    pub warps: Vec<WarpStat>,
    pub site_totals: BTreeMap<u16, Sums>,
    pub dropped: u64,
    pub wrapped: u64,
    /// The launch's access period (1: every access timed).
    pub period: u64,
}

/// The run-level numbers of the breakdown.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Breakdown {
    pub warps: u64,
    pub accesses: u64,
    pub mem_cycles: f64,
    pub other_cycles: f64,
    pub mem_share: f64,
    /// Per site: mean per-warp memory cycles and share of warp time.
    pub sites: BTreeMap<u16, (f64, f64)>,
    pub mean_access: Option<f64>,
    pub mem_ref_freq: Option<f64>,
    pub warp_mean_var: Option<f64>,
    pub warp_mean_spread: Option<f64>,
}

impl RunStats {
    /// Streams the trace once.
    pub fn scan(reader: &TraceReader) -> Result<RunStats, trace::TraceError> {
        let launch = reader.launch();
        let mut warps = Vec::with_capacity(reader.warp_count());
        let mut site_totals: BTreeMap<u16, Sums> = BTreeMap::new();
        let (mut dropped, mut wrapped) = (0u64, 0u64);
        let period = u64::from(launch.access_period.max(1));
        for (index, w) in reader.warps()?.enumerate() {
            let w = w?;
            // Statistics are per timed warp: a warp that ran the bare path has no memory time
            // to count, and its lifetime would dilute the timed warps' shares.
            if !launch.timed(w.global_warp) {
                continue;
            }
            let mut st = WarpStat {
                index,
                block: w.block,
                warp: w.warp,
                global_warp: w.global_warp,
                sm: w.sm.0,
                hw_warp: w.hw_warp,
                begin: w.begin.0,
                end: w.end.0,
                dropped: w.dropped,
                wrapped: 0,
                records: w.records.len() as u64,
                all: Sums::new(),
                min: None,
                max: None,
                sites: BTreeMap::new(),
                period,
            };
            // A traced warp keeps both: its records and, like every warp of a summary log, its
            // per-site statistics of the same accesses. Counted once: the records where they are
            // all there (exact squares, for the variance), else the statistics (a warp whose
            // records outran its slots still has every access in them).
            let summarised: u64 = w.summaries.iter().map(|s| s.count).sum();
            let from_records = w.summaries.is_empty() || w.records.len() as u64 == summarised;
            for r in &w.records {
                let d = r.duration().0;
                if r.wrapped() {
                    st.wrapped += 1;
                }
                if !from_records {
                    continue;
                }
                st.all.add(d);
                st.sites.entry(r.site).or_default().add(d);
                st.min = Some(st.min.map_or(d, |m| m.min(d)));
                st.max = Some(st.max.map_or(d, |m| m.max(d)));
            }
            for s in w.summaries.iter().filter(|_| !from_records) {
                st.all.add_summary(s.count, s.sum.0);
                st.sites
                    .entry(s.site)
                    .or_default()
                    .add_summary(s.count, s.sum.0);
                if s.count > 0 {
                    st.min = Some(st.min.map_or(s.min.0, |m| m.min(s.min.0)));
                    st.max = Some(st.max.map_or(s.max.0, |m| m.max(s.max.0)));
                }
            }
            for (site, sums) in &st.sites {
                site_totals.entry(*site).or_default().merge(sums);
            }
            dropped += w.dropped as u64;
            wrapped += st.wrapped;
            warps.push(st);
        }
        Ok(RunStats {
            sites: launch.sites.clone(),
            warps,
            site_totals,
            dropped,
            wrapped,
            period,
        })
    }

    /// The site's name from the launch, or `site N` when the launch did not declare it.
    pub fn site_name(&self, id: u16) -> String {
        self.sites
            .iter()
            .find(|s| s.id == id)
            .map(|s| s.name.clone())
            .unwrap_or_else(|| format!("site {id}"))
    }

    /// Per-warp mean access times of warps with at least one access, in file order.
    pub fn warp_means(&self) -> Vec<f64> {
        self.warps.iter().filter_map(|w| w.mean_access()).collect()
    }

    pub fn breakdown(&self) -> Breakdown {
        let n = self.warps.len().max(1) as f64;
        let mem: u64 = self.warps.iter().map(WarpStat::mem_cycles).sum();
        let other: u64 = self.warps.iter().map(WarpStat::other_cycles).sum();
        let accesses: u64 = self.warps.iter().map(|w| w.all.count).sum();
        let timed: u64 = self.warps.iter().map(|w| w.all.sum).sum();
        let mem_cycles = mem as f64 / n;
        let other_cycles = other as f64 / n;
        let total = mem_cycles + other_cycles;
        let share = |c: f64| if total > 0.0 { c / total } else { 0.0 };
        let sites = self
            .site_totals
            .iter()
            .map(|(id, s)| {
                let c = s.sum as f64 * self.period as f64 / n;
                (*id, (c, share(c)))
            })
            .collect();
        let mean_access = (accesses > 0).then(|| timed as f64 / accesses as f64);
        let means = self.warp_means();
        let spread = stats::range(means.iter().copied()).map(|(lo, hi)| hi - lo);
        Breakdown {
            warps: self.warps.len() as u64,
            accesses,
            mem_cycles,
            other_cycles,
            mem_share: share(mem_cycles),
            sites,
            mean_access,
            mem_ref_freq: mean_access.filter(|m| *m > 0.0).map(|m| 1.0 / m),
            warp_mean_var: stats::variance(&means),
            warp_mean_spread: spread,
        }
    }

    /// The SM whose warps fig. 10 shows: the requested one, else the lowest SM id present.
    pub fn pick_sm(&self, requested: Option<u32>) -> Option<u32> {
        match requested {
            Some(sm) => self.warps.iter().any(|w| w.sm == sm).then_some(sm),
            None => self.warps.iter().map(|w| w.sm).min(),
        }
    }

    /// Indices into `warps` of the SM's warps in issue order: by kernel-begin clock, ties by
    /// global warp index (the order the scheduler handed them out).
    pub fn issue_order(&self, sm: u32) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..self.warps.len())
            .filter(|&i| self.warps[i].sm == sm)
            .collect();
        idx.sort_by_key(|&i| (self.warps[i].begin, self.warps[i].global_warp));
        idx
    }

    /// The default warp of the single-warp series (fig. 11), precisely: among the traced warps
    /// (those with records: the series draws them) whose access count is at least the median
    /// access count of the traced warps with any access ("many accesses"), the one with the
    /// highest mean access time ("high mean"); ties go to the lowest global warp index. Returns an
    /// index into `warps`. Why only traced warps: a study traces a sample, and the warp chosen
    /// among all warps was almost never in it, so the figure was not drawn.
    pub fn default_series_warp(&self) -> Option<usize> {
        let traced = |w: &&WarpStat| w.records > 0 && w.all.count > 0;
        let counts: Vec<f64> = self
            .warps
            .iter()
            .filter(traced)
            .map(|w| w.all.count as f64)
            .collect();
        let med = stats::median(&counts)?;
        self.warps
            .iter()
            .enumerate()
            .filter(|(_, w)| traced(w) && w.all.count as f64 >= med)
            .max_by(|(_, a), (_, b)| {
                let (ma, mb) = (
                    a.mean_access().unwrap_or(0.0),
                    b.mean_access().unwrap_or(0.0),
                );
                ma.total_cmp(&mb).then(b.global_warp.cmp(&a.global_warp))
            })
            .map(|(i, _)| i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warp(g: u32, sm: u32, begin: u64, durations: &[u64]) -> WarpStat {
        let mut all = Sums::new();
        for &d in durations {
            all.add(d);
        }
        WarpStat {
            index: g as usize,
            block: [g, 0, 0],
            warp: 0,
            global_warp: g,
            sm,
            hw_warp: 0,
            begin,
            end: begin + 1000,
            dropped: 0,
            wrapped: 0,
            records: durations.len() as u64,
            all,
            min: durations.iter().copied().min(),
            max: durations.iter().copied().max(),
            sites: BTreeMap::new(),
            period: 1,
        }
    }

    fn run(warps: Vec<WarpStat>) -> RunStats {
        RunStats {
            sites: Vec::new(),
            warps,
            site_totals: BTreeMap::new(),
            dropped: 0,
            wrapped: 0,
            period: 1,
        }
    }

    #[test]
    fn series_warp_has_many_accesses_and_the_highest_mean() {
        // Counts 1, 3, 3, 2 → median 2.5: candidates are warps 1 and 2 (3 accesses each).
        // Warp 0 has the highest mean (500) but only one access; warp 2's mean 40 beats warp 1's 20.
        let r = run(vec![
            warp(0, 0, 0, &[500]),
            warp(1, 0, 5, &[20, 20, 20]),
            warp(2, 1, 9, &[30, 40, 50]),
            warp(3, 1, 1, &[90, 90]),
        ]);
        assert_eq!(r.default_series_warp(), Some(2));
        // A tie on the mean goes to the lower global warp index.
        let r = run(vec![warp(7, 0, 0, &[10, 10]), warp(3, 0, 0, &[10, 10])]);
        assert_eq!(r.default_series_warp(), Some(1));
        assert_eq!(run(vec![warp(0, 0, 0, &[])]).default_series_warp(), None);
        // A warp with statistics but no records (not traced) is passed over, however slow.
        let mut untraced = warp(5, 0, 0, &[900, 900, 900]);
        untraced.records = 0;
        let r = run(vec![untraced, warp(6, 0, 0, &[10, 10, 10])]);
        assert_eq!(r.default_series_warp(), Some(1));
        assert_eq!(run(vec![r.warps[0].clone()]).default_series_warp(), None);
    }

    #[test]
    fn sampled_accesses_scale_the_memory_time_not_the_mean() {
        // Every 4th access timed: two accesses of 50 and 70 stand for 480 cycles of 1,000.
        let mut w = warp(0, 0, 0, &[50, 70]);
        w.period = 4;
        w.sites.entry(0).or_default().merge(&w.all.clone());
        let mut r = run(vec![w]);
        r.period = 4;
        r.site_totals = r.warps[0].sites.clone();
        assert_eq!(
            (r.warps[0].mem_cycles(), r.warps[0].other_cycles()),
            (480, 520)
        );
        let b = r.breakdown();
        assert_eq!((b.accesses, b.mean_access), (2, Some(60.0)));
        assert_eq!((b.mem_cycles, b.mem_share), (480.0, 0.48));
        assert_eq!(b.sites[&0], (480.0, 0.48));
    }

    #[test]
    fn issue_order_is_by_begin_clock_then_global_warp() {
        let r = run(vec![
            warp(0, 1, 50, &[1]),
            warp(1, 1, 10, &[1]),
            warp(2, 0, 0, &[1]),
            warp(3, 1, 10, &[1]),
        ]);
        assert_eq!(r.issue_order(1), vec![1, 3, 0]);
        assert_eq!(r.pick_sm(None), Some(0));
        assert_eq!(r.pick_sm(Some(1)), Some(1));
        assert_eq!(r.pick_sm(Some(9)), None);
    }

    #[test]
    fn summary_traces_give_times_but_no_variance() {
        use trace::{Cycles, Dim3, LaunchInfo, SiteSummary, SmId, Trace, TraceWriter, WarpTrace};
        let dir = tempfile::tempdir().unwrap();
        let mut w = WarpTrace::new([0, 0, 0], 0, 0, SmId(2));
        w.end = Cycles(1000);
        for (site, count, sum) in [(0u16, 3u64, 300u64), (1, 1, 100)] {
            w.summaries.push(SiteSummary {
                site,
                count,
                sum: Cycles(sum),
                min: Cycles(50),
                max: Cycles(150),
            });
        }
        let t = Trace {
            launch: LaunchInfo::new("k", Dim3::new(1, 1, 1), Dim3::new(32, 1, 1)),
            warps: vec![w],
        };
        let path = dir.path().join("trace.wst");
        TraceWriter::write_all(&path, &t).unwrap();
        let r = RunStats::scan(&TraceReader::open(&path).unwrap()).unwrap();
        let b = r.breakdown();
        // 4 accesses, 400 cycles of memory, 600 of other work.
        assert_eq!(
            (b.accesses, b.mem_cycles, b.other_cycles),
            (4, 400.0, 600.0)
        );
        assert_eq!(b.mean_access, Some(100.0));
        assert_eq!(b.sites[&0], (300.0, 0.3));
        assert_eq!(r.warps[0].all.variance(), None);
        assert_eq!((r.warps[0].min, r.warps[0].max), (Some(50), Some(150)));
    }

    /// A traced warp of a summary log has records and statistics of the same accesses: they
    /// count once, from the records while all are there, from the statistics once some were not
    /// kept.
    #[test]
    fn a_traced_warps_accesses_count_once() {
        use trace::{
            Cycles, Dim3, LaunchInfo, Record, SiteSummary, SmId, Trace, TraceWriter, WarpTrace,
        };
        let dir = tempfile::tempdir().unwrap();
        let warp = |records: &[u64]| {
            let mut w = WarpTrace::new([0, 0, 0], 0, 0, SmId(0));
            w.end = Cycles(1000);
            w.summaries.push(SiteSummary {
                site: 0,
                count: 3,
                sum: Cycles(300),
                min: Cycles(50),
                max: Cycles(150),
            });
            for (k, &d) in records.iter().enumerate() {
                let start = 10 + 200 * k as u64;
                w.records.push(Record {
                    site: 0,
                    seq: k as u32,
                    start: Cycles(start),
                    end: Cycles(start + d),
                });
            }
            w
        };
        let scan = |w: WarpTrace| {
            let t = Trace {
                launch: LaunchInfo::new("k", Dim3::new(1, 1, 1), Dim3::new(32, 1, 1)),
                warps: vec![w],
            };
            let path = dir.path().join("trace.wst");
            TraceWriter::write_all(&path, &t).unwrap();
            RunStats::scan(&TraceReader::open(&path).unwrap()).unwrap()
        };
        // All three records kept: their exact times, once.
        let r = scan(warp(&[50, 100, 150]));
        let b = r.breakdown();
        assert_eq!((b.accesses, b.mem_cycles), (3, 300.0));
        assert!(r.warps[0].all.variance().is_some());
        assert_eq!(r.warps[0].records, 3);
        // Two of three kept (the slots ran out): the statistics, which have all three.
        let b = scan(warp(&[50, 100])).breakdown();
        assert_eq!((b.accesses, b.mem_cycles), (3, 300.0));
    }

    #[test]
    fn sums_variance_is_exact() {
        let mut s = Sums::new();
        for d in [2, 4, 4, 4, 5, 5, 7, 9] {
            s.add(d);
        }
        assert_eq!(s.mean(), Some(5.0));
        assert_eq!(s.variance(), Some(4.0));
        let mut t = Sums::new();
        t.add_summary(3, 30);
        assert_eq!(t.mean(), Some(10.0));
        assert_eq!(t.variance(), None);
        assert_eq!(Sums::new().mean(), None);
    }
}
