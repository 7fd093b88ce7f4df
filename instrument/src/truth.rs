//! Ground truth beside the probes: each traced warp's records paired with the loads the
//! emulator recorded for that warp (`Device::record_loads`), and with the same loads of the bare
//! run.
//!
//! Pairing: a record's window runs from its opening clock read to its closing one, and the
//! warp issues one instruction a cycle, so the loads issued inside the window are the ones it
//! timed (with the naive probe the closing read follows the issue; with the fence or the dummy it
//! follows the data). The access's true time is the last data return minus the first issue of
//! those loads. The bare build runs the same loads in the same order (the probes add none: their
//! state lives in shared memory and their log stores are stores), so the k-th load of a warp in
//! the bare run is the k-th of the probed run; a warp whose two runs issued different numbers of
//! loads is counted as unmatched instead of guessed at.

use emulator::LoadEvent;
use std::collections::BTreeMap;
use trace::{ProbeTruth, SiteTruth, Trace, TruthStats};

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
    fn add(&mut self, probe: u64, truth: u64, bare: Option<u64>) {
        self.accesses += 1;
        self.probe += probe as f64;
        self.truth += truth as f64;
        if let Some(b) = bare {
            self.found += 1;
            self.here += truth as f64;
            self.there += b as f64;
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

/// The true time of loads `window`: the last data return minus the first issue.
fn true_time(window: &[LoadEvent]) -> Option<u64> {
    let first = window.first()?.issue;
    let last = window.iter().map(|e| e.ready).max()?;
    Some(last.saturating_sub(first))
}

/// Pairs `trace`'s records with the probed run's recorded loads and, where given, the bare
/// run's. `None` when no record was paired (no traced warp, or no recorded loads).
pub fn ground_truth(
    trace: &Trace,
    probed: &[LoadEvent],
    bare: Option<&[LoadEvent]>,
) -> Option<ProbeTruth> {
    let probed = by_warp(probed);
    let bare = bare.map(by_warp);
    let mut run = Sums::default();
    let mut sites: BTreeMap<u16, Sums> = BTreeMap::new();
    let (mut unpaired, mut unmatched_warps) = (0u64, 0u64);
    for w in trace.warps.iter().filter(|w| !w.records.is_empty()) {
        let warp = u64::from(w.global_warp);
        let loads = probed.get(&warp).copied().unwrap_or_default();
        let twin = match &bare {
            Some(b) => {
                let twin = b.get(&warp).copied().unwrap_or_default();
                if twin.len() != loads.len() {
                    unmatched_warps += 1;
                }
                Some(twin).filter(|t| t.len() == loads.len())
            }
            None => None,
        };
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
                unpaired += 1;
                continue;
            };
            let there = twin.and_then(|t| true_time(&t[i..j]));
            let probe = r.duration().0;
            run.add(probe, truth, there);
            sites.entry(r.site).or_default().add(probe, truth, there);
            i = j;
        }
    }
    Some(ProbeTruth {
        run: run.stats()?,
        sites: sites
            .into_iter()
            .filter_map(|(site, s)| s.stats().map(|stats| SiteTruth { site, stats }))
            .collect(),
        unpaired,
        unmatched_warps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use emulator::LoadSpace;
    use trace::{Cycles, Dim3, LaunchInfo, Record, SmId, WarpTrace};

    fn load(warp: u64, issue: u64, ready: u64) -> LoadEvent {
        LoadEvent {
            warp,
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

    fn trace_of(records: Vec<Record>) -> Trace {
        let mut w = WarpTrace::new([0, 0, 0], 1, 1, SmId(0));
        w.records = records;
        Trace {
            launch: LaunchInfo::new("k", Dim3::new(1, 1, 1), Dim3::new(64, 1, 1)),
            warps: vec![w],
        }
    }

    #[test]
    fn records_pair_with_the_loads_issued_in_their_windows() {
        // Site 0 times one load (100 → 400, read as 310); site 1 two loads in one window
        // (500 and 502 → 700, read as 205); a load between the windows is not timed.
        let t = trace_of(vec![record(0, 0, 98, 408), record(1, 1, 499, 704)]);
        let probed = [
            load(0, 10, 20),
            load(1, 100, 400),
            load(1, 450, 460),
            load(1, 500, 690),
            load(1, 502, 700),
        ];
        // The bare run's same loads are faster: 250, a free one, then 150.
        let bare = [
            load(1, 90, 340),
            load(1, 350, 360),
            load(1, 380, 520),
            load(1, 382, 530),
        ];
        let g = ground_truth(&t, &probed, Some(&bare)).unwrap();
        assert_eq!((g.unpaired, g.unmatched_warps), (0, 0));
        assert_eq!(g.run.accesses, 2);
        assert_eq!(g.run.probe_mean_cycles, (310.0 + 205.0) / 2.0);
        assert_eq!(g.run.true_mean_cycles, (300.0 + 200.0) / 2.0);
        assert_eq!(g.run.bare_true_mean_cycles, Some((250.0 + 150.0) / 2.0));
        assert!((g.run.truth_shift.unwrap() - (500.0 / 400.0 - 1.0)).abs() < 1e-12);
        let s1 = &g.sites[1];
        assert_eq!((s1.site, s1.stats.probe_bias_cycles), (1, 5.0));
    }

    #[test]
    fn a_window_without_loads_and_a_warp_whose_bare_run_differs_are_counted() {
        let t = trace_of(vec![record(0, 0, 10, 20), record(0, 1, 30, 90)]);
        let probed = [load(1, 40, 80)];
        let bare = [load(1, 40, 80), load(1, 100, 110)];
        let g = ground_truth(&t, &probed, Some(&bare)).unwrap();
        assert_eq!((g.unpaired, g.unmatched_warps), (1, 1));
        assert_eq!((g.run.accesses, g.run.bare_accesses), (1, 0));
        assert_eq!(g.run.truth_shift, None);
        assert!(ground_truth(&t, &[], None).is_none());
    }
}
