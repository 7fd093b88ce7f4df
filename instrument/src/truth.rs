//! Ground truth beside the probes: each timed warp's accesses paired with the loads the
//! emulator recorded for that warp (`Device::record_loads`), and with the same loads of the bare
//! run.
//!
//! Pairing a traced warp: a record's window runs from its opening clock read to its closing one,
//! and the warp issues one instruction a cycle, so the loads issued inside the window are the
//! ones it timed (with the naive probe the closing read follows the issue; with the fence or the
//! dummy it follows the data). The access's true time is the last data return minus the first
//! issue of those loads.
//!
//! Pairing a warp that kept statistics only: it has no windows to read, but its timed loads are
//! the same instructions as the traced warps' (a sampled build's bare copy of a load is another
//! instruction), so the traced warps' windows name them: the first load's pc, the site, and how
//! many loads a window holds. A warp's windows found that way are its timed accesses of a site
//! when there are as many as its statistics counted, and then its statistics' sum is their probe
//! readings' sum; a site whose counts differ (a load the traced warps never timed) is left out
//! and counted.
//!
//! Every recorded load, timed or not, also goes into one figure per run: its mean true time
//! beside the bare run's (`load_shift`), which says whether measuring moved the whole memory
//! system or only the accesses it timed.
//!
//! The bare build runs the same loads in the same order (the probes add none: their state lives
//! in shared memory and their log stores are stores), so the k-th load of a warp in the bare run
//! is the k-th of the probed run; a warp whose two runs issued different numbers of loads is
//! counted as unmatched instead of guessed at.

use emulator::LoadEvent;
use std::collections::BTreeMap;
use trace::{ProbeTruth, SiteTruth, Trace, TruthStats, WarpTrace};

/// The sums a [`TruthStats`] is made of.
#[derive(Debug, Default, Clone, Copy)]
struct Sums {
    accesses: u64,
    probe: f64,
    truth: f64,
    /// Accesses found in the bare run, and their true times here and there.
    found: u64,
    here: f64,
    there: f64,
}

impl Sums {
    fn add(&mut self, o: &Sums) {
        self.accesses += o.accesses;
        self.probe += o.probe;
        self.truth += o.truth;
        self.found += o.found;
        self.here += o.here;
        self.there += o.there;
    }

    /// One access: its probe reading, its true time, and its true time in the bare run.
    fn access(probe: u64, truth: u64, bare: Option<u64>) -> Sums {
        Sums {
            accesses: 1,
            probe: probe as f64,
            truth: truth as f64,
            found: u64::from(bare.is_some()),
            here: if bare.is_some() { truth as f64 } else { 0.0 },
            there: bare.map_or(0.0, |b| b as f64),
        }
    }

    fn stats(&self) -> Option<TruthStats> {
        TruthStats::from_sums(
            self.accesses,
            self.probe,
            self.truth,
            (self.found, self.here, self.there),
        )
    }
}

/// The loads of each warp: `loads` sorted by warp, then issue (as the emulator gives them).
fn by_warp(loads: &[LoadEvent]) -> BTreeMap<u64, &[LoadEvent]> {
    loads
        .chunk_by(|a, b| a.warp == b.warp)
        .map(|c| (c[0].warp, c))
        .collect()
}

/// The mean true time of `loads`, each on its own; `None` without loads.
fn mean_time(loads: &[LoadEvent]) -> Option<f64> {
    let sum: f64 = loads.iter().map(|e| e.cycles() as f64).sum();
    (!loads.is_empty()).then(|| sum / loads.len() as f64)
}

/// The true time of loads `window`: the last data return minus the first issue.
fn true_time(window: &[LoadEvent]) -> Option<u64> {
    let first = window.first()?.issue;
    let last = window.iter().map(|e| e.ready).max()?;
    Some(last.saturating_sub(first))
}

/// What the traced warps' windows say of a timed access: by the pc of its first load, its site
/// and how many loads its window holds. `None` where two windows disagreed.
type Windows = BTreeMap<u32, Option<(u16, usize)>>;

/// The run's and each site's sums, and what could not be paired.
#[derive(Default)]
struct Pairing {
    run: Sums,
    sites: BTreeMap<u16, Sums>,
    warps: u64,
    unpaired: u64,
    unpaired_statistics: u64,
    unmatched_warps: u64,
}

impl Pairing {
    fn add(&mut self, site: u16, s: &Sums) {
        self.run.add(s);
        self.sites.entry(site).or_default().add(s);
    }

    /// Counts the warp when it added accesses since the run held `before`.
    fn count_warp(&mut self, before: u64) {
        if self.run.accesses > before {
            self.warps += 1;
        }
    }

    /// The warp's loads in the bare run where they match this run's one for one.
    fn twin<'a>(
        &mut self,
        bare: Option<&BTreeMap<u64, &'a [LoadEvent]>>,
        warp: u64,
        loads: &[LoadEvent],
    ) -> Option<&'a [LoadEvent]> {
        let twin = bare?.get(&warp).copied().unwrap_or_default();
        if twin.len() != loads.len() {
            self.unmatched_warps += 1;
            return None;
        }
        Some(twin)
    }

    /// A traced warp: each record with the loads issued in its window; learns the windows.
    fn traced(
        &mut self,
        w: &WarpTrace,
        loads: &[LoadEvent],
        twin: Option<&[LoadEvent]>,
        windows: &mut Windows,
    ) {
        let mut i = 0;
        for r in w.records.iter().filter(|r| !r.wrapped()) {
            while i < loads.len() && loads[i].issue < r.start.0 {
                i += 1;
            }
            let mut j = i;
            while j < loads.len() && loads[j].issue <= r.end.0 {
                j += 1;
            }
            let Some(truth) = true_time(&loads[i..j]) else {
                self.unpaired += 1;
                continue;
            };
            let seen = (r.site, j - i);
            windows
                .entry(loads[i].pc)
                .and_modify(|k| *k = k.filter(|k| *k == seen))
                .or_insert(Some(seen));
            let there = twin.and_then(|t| true_time(&t[i..j]));
            self.add(r.site, &Sums::access(r.duration().0, truth, there));
            i = j;
        }
    }

    /// A warp that kept statistics only: its windows found by the traced warps' pcs, taken per
    /// site where they are as many as its statistics counted.
    fn summarised(
        &mut self,
        w: &WarpTrace,
        loads: &[LoadEvent],
        twin: Option<&[LoadEvent]>,
        windows: &Windows,
    ) {
        let mut found: BTreeMap<u16, Sums> = BTreeMap::new();
        let mut k = 0;
        while k < loads.len() {
            let Some(Some((site, n))) = windows.get(&loads[k].pc).copied() else {
                k += 1;
                continue;
            };
            let end = (k + n).min(loads.len());
            if let Some(truth) = true_time(&loads[k..end]) {
                let there = twin.and_then(|t| true_time(&t[k..end]));
                found
                    .entry(site)
                    .or_default()
                    .add(&Sums::access(0, truth, there));
            }
            k = end;
        }
        for s in w.summaries.iter().filter(|s| s.count > 0) {
            match found.remove(&s.site) {
                Some(mut f) if f.accesses == s.count => {
                    f.probe = s.sum.0 as f64;
                    self.add(s.site, &f);
                }
                _ => self.unpaired_statistics += 1,
            }
        }
        // Windows at a site the warp's statistics did not count.
        self.unpaired_statistics += found.len() as u64;
    }
}

/// Pairs `trace`'s timed accesses with the probed run's recorded loads and, where given, the
/// bare run's: the traced warps' records one by one, then every other warp's statistics by the
/// windows the traced warps showed. `None` when nothing was paired (no traced warp reached a
/// timed access, or no recorded loads).
pub fn ground_truth(
    trace: &Trace,
    probed: &[LoadEvent],
    bare: Option<&[LoadEvent]>,
) -> Option<ProbeTruth> {
    let load_shift = match (mean_time(probed), bare.and_then(mean_time)) {
        (Some(here), Some(there)) if there > 0.0 => Some(here / there - 1.0),
        _ => None,
    };
    let probed = by_warp(probed);
    let bare = bare.map(by_warp);
    let mut p = Pairing::default();
    let mut windows = Windows::new();
    // The traced warps first: their windows name the timed loads of the others.
    let (traced, summarised): (Vec<&WarpTrace>, Vec<&WarpTrace>) = (trace.warps.iter())
        .filter(|w| trace.launch.timed(w.global_warp))
        .partition(|w| !w.records.is_empty());
    let summarised = summarised.into_iter().filter(|w| !w.summaries.is_empty());
    for (w, is_traced) in
        (traced.into_iter().map(|w| (w, true))).chain(summarised.map(|w| (w, false)))
    {
        let warp = u64::from(w.global_warp);
        let loads = probed.get(&warp).copied().unwrap_or_default();
        let twin = p.twin(bare.as_ref(), warp, loads);
        let before = p.run.accesses;
        if is_traced {
            p.traced(w, loads, twin, &mut windows);
        } else {
            p.summarised(w, loads, twin, &windows);
        }
        p.count_warp(before);
    }
    Some(ProbeTruth {
        run: p.run.stats()?,
        sites: p
            .sites
            .into_iter()
            .filter_map(|(site, s)| s.stats().map(|stats| SiteTruth { site, stats }))
            .collect(),
        warps: Some(p.warps),
        unpaired: p.unpaired,
        unpaired_statistics: p.unpaired_statistics,
        unmatched_warps: p.unmatched_warps,
        load_shift,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use emulator::LoadSpace;
    use trace::{Cycles, Dim3, LaunchInfo, Record, SiteSummary, SmId, WarpTrace};

    fn load(warp: u64, pc: u32, issue: u64, ready: u64) -> LoadEvent {
        LoadEvent {
            warp,
            pc,
            space: LoadSpace::Texture,
            addr: 0,
            issue,
            ready,
        }
    }

    fn record(site: u16, seq: u32, start: u64, end: u64) -> Record {
        Record {
            site,
            seq,
            start: Cycles(start),
            end: Cycles(end),
        }
    }

    fn traced_warp(records: Vec<Record>) -> WarpTrace {
        let mut w = WarpTrace::new([0, 0, 0], 1, 1, SmId(0));
        w.records = records;
        w
    }

    fn trace_of(warps: Vec<WarpTrace>) -> Trace {
        Trace {
            launch: LaunchInfo::new("k", Dim3::new(1, 1, 1), Dim3::new(96, 1, 1)),
            warps,
        }
    }

    fn summary(site: u16, count: u64, sum: u64) -> SiteSummary {
        SiteSummary {
            site,
            count,
            sum: Cycles(sum),
            min: Cycles(0),
            max: Cycles(0),
        }
    }

    #[test]
    fn records_pair_with_the_loads_issued_in_their_windows() {
        // Site 0 times one load (100 → 400, read as 310); site 1 two loads in one window
        // (500 and 502 → 700, read as 205); a load between the windows is not timed.
        let t = trace_of(vec![traced_warp(vec![
            record(0, 0, 98, 408),
            record(1, 1, 499, 704),
        ])]);
        let probed = [
            load(0, 1, 10, 20),
            load(1, 10, 100, 400),
            load(1, 11, 450, 460),
            load(1, 20, 500, 690),
            load(1, 21, 502, 700),
        ];
        // The bare run's same loads are faster: 250, a free one, then 150.
        let bare = [
            load(1, 5, 90, 340),
            load(1, 6, 350, 360),
            load(1, 7, 380, 520),
            load(1, 8, 382, 530),
        ];
        let g = ground_truth(&t, &probed, Some(&bare)).unwrap();
        assert_eq!((g.unpaired, g.unmatched_warps, g.warps), (0, 0, Some(1)));
        assert_eq!(g.run.accesses, 2);
        assert_eq!(g.run.probe_mean_cycles, (310.0 + 205.0) / 2.0);
        assert_eq!(g.run.true_mean_cycles, (300.0 + 200.0) / 2.0);
        assert_eq!(g.run.bare_true_mean_cycles, Some((250.0 + 150.0) / 2.0));
        assert!((g.run.truth_shift.unwrap() - (500.0 / 400.0 - 1.0)).abs() < 1e-12);
        // Every load counts in the whole run's figure, the untimed one at pc 11 included.
        let (here, there) = (
            (10.0 + 300.0 + 10.0 + 190.0 + 198.0) / 5.0,
            (250.0 + 10.0 + 140.0 + 148.0) / 4.0,
        );
        assert!((g.load_shift.unwrap() - (here / there - 1.0)).abs() < 1e-12);
        let s1 = &g.sites[1];
        assert_eq!((s1.site, s1.stats.probe_bias_cycles), (1, 5.0));
    }

    #[test]
    fn a_warp_with_statistics_only_pairs_by_the_traced_windows_loads() {
        // Warp 1 (traced) shows site 0's window as one load at pc 10, site 1's as two loads
        // from pc 20. Warp 2 keeps statistics: site 0 twice (read as 620 in all), site 1 once
        // (read as 210); its load at pc 12 is a bare copy, not timed.
        let mut stats = WarpTrace::new([0, 0, 0], 2, 2, SmId(0));
        stats.summaries = vec![summary(0, 2, 620), summary(1, 1, 210)];
        // Warp 0 counted two accesses at site 0 but ran one such window: left out.
        let mut short = WarpTrace::new([0, 0, 0], 0, 0, SmId(0));
        short.summaries = vec![summary(0, 2, 500)];
        let t = trace_of(vec![
            short,
            traced_warp(vec![record(0, 0, 98, 408), record(1, 1, 499, 704)]),
            stats,
        ]);
        let probed = [
            load(0, 10, 0, 250),
            load(1, 10, 100, 400),
            load(1, 20, 500, 690),
            load(1, 21, 502, 700),
            load(2, 10, 0, 300),
            load(2, 12, 310, 330),
            load(2, 10, 400, 700),
            load(2, 20, 800, 990),
            load(2, 21, 802, 1000),
        ];
        let g = ground_truth(&t, &probed, None).unwrap();
        assert_eq!((g.warps, g.unpaired_statistics), (Some(2), 1));
        assert_eq!(g.load_shift, None, "no bare run to compare with");
        let (s0, s1) = (&g.sites[0].stats, &g.sites[1].stats);
        assert_eq!((s0.accesses, s1.accesses), (3, 2));
        assert_eq!(s0.probe_mean_cycles, (310.0 + 620.0) / 3.0);
        assert_eq!(s0.true_mean_cycles, (300.0 + 300.0 + 300.0) / 3.0);
        assert_eq!(s1.probe_mean_cycles, (205.0 + 210.0) / 2.0);
        assert_eq!(s1.true_mean_cycles, 200.0);
        assert_eq!(g.run.accesses, 5);
    }

    #[test]
    fn a_window_without_loads_and_a_warp_whose_bare_run_differs_are_counted() {
        let t = trace_of(vec![traced_warp(vec![
            record(0, 0, 10, 20),
            record(0, 1, 30, 90),
        ])]);
        let probed = [load(1, 3, 40, 80)];
        let bare = [load(1, 3, 40, 80), load(1, 4, 100, 110)];
        let g = ground_truth(&t, &probed, Some(&bare)).unwrap();
        assert_eq!((g.unpaired, g.unmatched_warps), (1, 1));
        assert_eq!((g.run.accesses, g.run.bare_accesses), (1, 0));
        assert_eq!(g.run.truth_shift, None);
        assert!(ground_truth(&t, &[], None).is_none());
    }
}
