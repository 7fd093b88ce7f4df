//! One run's answer, for a command that launches a single kernel (`warpscope launch`): where its
//! warps' time goes, per site, by the definitions of a sweep's breakdown (runstats.rs), so that
//! a user's kernel gets the verdict a sweep's report opens with.

use crate::AnalysisError;
use crate::fmt::{pct, sig};
use crate::stats;
use crate::sweep::runstats::RunStats;
use std::path::Path;

/// Plain-words lines for the trace at `path`: the kernel's memory share of warp time and its
/// mean access, then each site by its share of the memory time, largest first, and what was
/// lost (dropped records, wrapped clocks). Empty when no access was timed.
pub fn run_verdict(path: &Path) -> Result<Vec<String>, AnalysisError> {
    let reader = trace::TraceReader::open(path)?;
    let stats = RunStats::scan(&reader)?;
    let b = stats.breakdown();
    let Some(mean) = b.mean_access else {
        return Ok(Vec::new());
    };
    let spread = stats::range(stats.warp_means())
        .map(|(lo, hi)| format!("; per warp {}–{} cycles", sig(lo), sig(hi)))
        .unwrap_or_default();
    let untimed = reader.launch().untimed_warps.len();
    let warps = if untimed == 0 {
        format!("{} warps", b.warps)
    } else {
        format!("{} timed warps of {}", b.warps, b.warps as usize + untimed)
    };
    let sample = match reader.launch().access_period {
        0 | 1 => String::new(),
        n => format!(", one in {n} of each warp's, the memory time estimated from them"),
    };
    let mut out = vec![format!(
        "{}: memory is {} of warp time over {warps} ({} timed accesses{sample}, {} cycles each on average{spread}).",
        reader.launch().kernel,
        pct(b.mem_share, 0),
        b.accesses,
        sig(mean),
    )];
    let total: u64 = stats.site_totals.values().map(|s| s.sum).sum();
    let mut sites: Vec<_> = stats
        .site_totals
        .iter()
        .filter(|(_, s)| s.count > 0)
        .collect();
    sites.sort_by(|a, b| b.1.sum.cmp(&a.1.sum).then(a.0.cmp(b.0)));
    for (id, s) in sites {
        out.push(format!(
            "site {id} ({}): {} of the memory time, {} accesses of {} cycles on average.",
            stats.site_name(*id),
            pct(s.sum as f64 / total.max(1) as f64, 0),
            s.count,
            sig(s.mean().unwrap_or(0.0))
        ));
    }
    if stats.dropped > 0 {
        out.push(format!(
            "{} records were dropped (the log was full): the memory time is a lower bound.",
            stats.dropped
        ));
    }
    if stats.wrapped > 0 {
        out.push(format!(
            "{} records' clocks wrapped; they count as 0 cycles.",
            stats.wrapped
        ));
    }
    Ok(out)
}

/// What the probes cost one run, in the words the verdict is printed with: probed ÷ bare kernel
/// time, with both times. `None` when either time is missing, zero or not finite.
pub fn probe_cost(probed_ms: Option<f64>, bare_ms: Option<f64>) -> Option<String> {
    let (p, b) = (probed_ms?, bare_ms?);
    let ratio = trace::overhead_ratio(p, b)?;
    Some(format!(
        "probes: kernel time {ratio:.3}× the bare build's ({p:.4} ms against {b:.4} ms)."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::{
        Cycles, Dim3, LaunchInfo, Record, Region, SiteInfo, SmId, Trace, TraceWriter, WarpTrace,
    };

    #[test]
    fn the_probe_cost_is_a_ratio_of_kernel_times() {
        assert_eq!(
            probe_cost(Some(0.03), Some(0.02)).as_deref(),
            Some("probes: kernel time 1.500× the bare build's (0.0300 ms against 0.0200 ms).")
        );
        assert_eq!(probe_cost(Some(0.03), Some(0.0)), None);
        assert_eq!(probe_cost(None, Some(0.02)), None);
    }

    #[test]
    fn a_runs_verdict_leads_with_the_share_then_the_sites_by_time() {
        let dir = tempfile::tempdir().unwrap();
        // Two warps of 1000 cycles; site 1 takes 300 of the 400 memory cycles.
        let warps = (0..2)
            .map(|g| {
                let mut w = WarpTrace::new([g, 0, 0], 0, g, SmId(0));
                w.end = Cycles(1000);
                for (k, (site, d)) in [(0u16, 50u64), (1, 150)].into_iter().enumerate() {
                    let start = 10 + 300 * k as u64;
                    w.records.push(Record {
                        site,
                        seq: k as u32,
                        start: Cycles(start),
                        end: Cycles(start + d),
                    });
                }
                w
            })
            .collect();
        let launch =
            LaunchInfo::new("k", Dim3::new(2, 1, 1), Dim3::new(32, 1, 1)).with_sites(vec![
                SiteInfo::new(0, "index", Region::Global),
                SiteInfo::new(1, "gather", Region::Global),
            ]);
        let path = dir.path().join("trace.wst");
        TraceWriter::write_all(&path, &Trace { launch, warps }).unwrap();
        let v = run_verdict(&path).unwrap();
        assert_eq!(
            v,
            [
                "k: memory is 20 % of warp time over 2 warps (4 timed accesses, 100.0 cycles each on average; per warp 100.0–100.0 cycles).",
                "site 1 (gather): 75 % of the memory time, 2 accesses of 150.0 cycles on average.",
                "site 0 (index): 25 % of the memory time, 2 accesses of 50.00 cycles on average.",
            ]
        );
    }
}
