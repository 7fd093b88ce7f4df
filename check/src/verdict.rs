//! The verdict that opens `gpu-report.md`: one line per question the plan answers (does the
//! device compute what the emulator computes, do the probes time completion, how far is the
//! preset from the device, how much do the probes disturb, does block shape move the hit rate
//! and the frame rate), each computed from the step's results, so it can say "no".

use crate::micro::{self, MicroCase, MicroRow};
use crate::results::GpuResults;
use crate::results::{CalibrationRow, StepData, StudyStep};
use analysis::stats::{pearson, range};
use trace::{ProbeMode, SweepRow};

pub fn lines(r: &GpuResults) -> Vec<String> {
    let mut out = Vec::new();
    for st in &r.steps {
        match &st.data {
            Some(StepData::Corpus { rows }) => {
                let n = rows.len();
                let reference = rows.iter().filter(|c| c.matches_reference).count();
                let emu: Vec<bool> = rows.iter().filter_map(|c| c.matches_emulator).collect();
                let mut line = format!(
                    "**Corpus**: {reference} of {n} kernel files match their CPU reference"
                );
                if !emu.is_empty() {
                    let same = emu.iter().filter(|m| **m).count();
                    line.push_str(&format!(
                        "; {same} of {} give the emulator's output byte for byte",
                        emu.len()
                    ));
                }
                out.push(line + ".");
            }
            Some(StepData::Probes(p)) => out.push(probes(&p.rows)),
            Some(StepData::Calibration { rows }) => {
                if let Some(l) = calibration(rows) {
                    out.push(l);
                }
            }
            Some(StepData::Study(s)) => out.extend(study(s)),
            Some(StepData::Programs(p)) if !p.rows.is_empty() => {
                let passed = p.rows.iter().filter(|r| r.passed()).count();
                out.push(format!(
                    "**Unmodified programs**: {passed} of {} behaved under `warpscope run` as they must: their own output, one record per load and sites named by their source lines, and the SASS-only build launched as it was with the reason.",
                    p.rows.len()
                ));
            }
            _ => {}
        }
    }
    out
}

fn probes(rows: &[MicroRow]) -> String {
    let at = |mode| micro::mean_cycles(rows, MicroCase::LoadsDram, mode);
    let (Some(naive), Some(fence), Some(dummy)) = (
        at(ProbeMode::Naive),
        at(ProbeMode::Fence),
        at(ProbeMode::Dummy),
    ) else {
        return "**Probes**: the DRAM-miss microbenchmark did not run in every mode.".into();
    };
    let word = |v: f64| {
        if micro::times_completion(v, naive) {
            "waits"
        } else {
            "does NOT wait"
        }
    };
    format!(
        "**Probes**: on independent loads that miss to DRAM the fence {} for the load \
         ({fence:.0} cycles) and the dummy {} ({dummy:.0}), against {naive:.0} for the naive \
         probe, which times the issue.",
        word(fence),
        word(dummy)
    )
}

fn calibration(rows: &[CalibrationRow]) -> Option<String> {
    let chase: Vec<String> = rows
        .iter()
        .filter_map(|c| {
            let level = c.micro?.chase_level()?;
            Some(format!("{level} {:.2}", c.ratio))
        })
        .collect();
    (!chase.is_empty()).then(|| {
        format!(
            "**Calibration**: latency per level, emulator ÷ device (pointer chase): {}.",
            chase.join(", ")
        )
    })
}

fn study(s: &StudyStep) -> Vec<String> {
    let mut out = Vec::new();
    let mut modes: Vec<&str> = s.rows.iter().map(|r| r.mode.as_str()).collect();
    modes.sort();
    modes.dedup();
    let overheads: Vec<String> = modes
        .iter()
        .filter_map(|m| {
            range(
                s.rows
                    .iter()
                    .filter(|r| r.mode == *m)
                    .filter_map(|r| r.overhead),
            )
            .map(|(lo, hi)| format!("{m} {lo:.2}–{hi:.2}×"))
        })
        .collect();
    let occ: Vec<&SweepRow> = s
        .rows
        .iter()
        .filter(|r| r.occupancy_bare.is_some() && r.occupancy_probed.is_some())
        .collect();
    let kept = occ
        .iter()
        .filter(|r| r.occupancy_bare == r.occupancy_probed)
        .count();
    let same_image = s
        .rows
        .iter()
        .filter(|r| r.image_matches_bare == Some(true))
        .count();
    out.push(format!(
        "**Disturbance**: probed ÷ bare kernel time {}; resident blocks per SM kept in {kept} of \
         {} runs; image identical to the bare build's in {same_image} of {} runs.",
        if overheads.is_empty() {
            "unknown".to_string()
        } else {
            overheads.join(", ")
        },
        occ.len(),
        s.rows.len()
    ));
    // Block shape → hit rate → frame rate, per view, on the bare build: its kernel time is the
    // probed one over the overhead; one row per shape (the first mode's).
    let mut views: Vec<&str> = s.rows.iter().map(|r| r.view.as_str()).collect();
    views.sort();
    views.dedup();
    for view in views {
        let mut pts: Vec<(&str, f64, f64)> = Vec::new();
        for r in s.rows.iter().filter(|r| r.view == view) {
            if pts.iter().any(|p| p.0 == r.shape) {
                continue;
            }
            if let (Some(h), Some(ms), Some(o)) = (r.tex_hit_rate_bare, r.kernel_ms, r.overhead)
                && ms > 0.0
                && o > 0.0
            {
                pts.push((r.shape.as_str(), h, o / ms * 1000.0));
            }
        }
        if pts.len() < 3 {
            continue;
        }
        let hits: Vec<f64> = pts.iter().map(|p| p.1).collect();
        let fps: Vec<f64> = pts.iter().map(|p| p.2).collect();
        let by = |f: fn(&(&str, f64, f64)) -> f64| {
            let lo = pts.iter().min_by(|a, b| f(a).total_cmp(&f(b)));
            let hi = pts.iter().max_by(|a, b| f(a).total_cmp(&f(b)));
            lo.zip(hi)
        };
        let (Some((hlo, hhi)), Some((flo, fhi))) = (by(|p| p.1), by(|p| p.2)) else {
            continue;
        };
        out.push(format!(
            "**Block shape → hit rate → frame rate**, view ({view}), bare build over {} shapes: \
             texture hit rate {:.1} % ({}) to {:.1} % ({}), kernel rate {:.0} ({}) to {:.0} \
             ({}) frames/s; Pearson r(hit rate, frame rate) = {}.",
            pts.len(),
            100.0 * hlo.1,
            hlo.0,
            100.0 * hhi.1,
            hhi.0,
            flo.2,
            flo.0,
            fhi.2,
            fhi.0,
            pearson(&hits, &fps).map_or("undefined".into(), |r| format!("{r:.2}"))
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micro(mode: ProbeMode, mean: f64) -> MicroRow {
        MicroRow {
            case: MicroCase::LoadsDram,
            mode,
            mean_cycles: mean,
            min_cycles: mean,
            max_cycles: mean,
            configured_cycles: Some(650),
            samples: 16,
        }
    }

    /// What the H200 showed before the fence was fixed: the verdict must say so, not pass it.
    #[test]
    fn a_fence_that_times_the_issue_is_called_out() {
        let rows = [
            micro(ProbeMode::Naive, 9.6),
            micro(ProbeMode::Fence, 20.6),
            micro(ProbeMode::Dummy, 694.0),
        ];
        let l = probes(&rows);
        assert!(
            l.contains("the fence does NOT wait for the load (21 cycles)"),
            "{l}"
        );
        assert!(l.contains("the dummy waits (694)"), "{l}");
        let l = probes(&rows[..2]);
        assert!(l.contains("did not run in every mode"), "{l}");
    }

    fn row(shape: &str, view: &str, mode: &str, ms: f64, overhead: f64, hit: f64) -> SweepRow {
        SweepRow {
            shape: shape.into(),
            view: view.into(),
            mode: mode.into(),
            kernel_ms: Some(ms),
            overhead: Some(overhead),
            occupancy_bare: Some(16),
            occupancy_probed: Some(if shape == "1x128" { 12 } else { 16 }),
            tex_hit_rate_bare: Some(hit),
            image_matches_bare: Some(true),
            ..Default::default()
        }
    }

    #[test]
    fn the_study_lines_count_disturbance_and_relate_hit_rate_to_frame_rate() {
        // Bare kernel time = probed ÷ overhead: 1.0, 2.0 and 4.0 ms; hit rates fall with it.
        let rows = vec![
            row("128x1", "0,0,0", "naive", 1.1, 1.1, 0.7),
            row("128x1", "0,0,0", "fence", 1.3, 1.3, 0.7),
            row("16x8", "0,0,0", "naive", 2.2, 1.1, 0.5),
            row("1x128", "0,0,0", "naive", 4.4, 1.1, 0.2),
        ];
        let s = StudyStep {
            scale: "paper".into(),
            geometry: String::new(),
            frames: 10,
            rows,
            counters_expected: false,
            counters_note: None,
            findings: Vec::new(),
        };
        let l = study(&s);
        assert!(
            l[0].contains("fence 1.30–1.30×, naive 1.10–1.10×"),
            "{}",
            l[0]
        );
        assert!(l[0].contains("kept in 3 of 4 runs"), "{}", l[0]);
        assert!(
            l[1].contains("20.0 % (1x128) to 70.0 % (128x1)"),
            "{}",
            l[1]
        );
        assert!(l[1].contains("250 (1x128) to 1000 (128x1)"), "{}", l[1]);
        let r = pearson(&[0.7, 0.5, 0.2], &[1000.0, 500.0, 250.0]).unwrap();
        assert!(l[1].contains(&format!("= {r:.2}")), "{}", l[1]);
    }
}
