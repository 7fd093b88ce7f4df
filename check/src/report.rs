//! `gpu-report.md`, rendered from [`GpuResults`] alone (so the JSON and the report never disagree).

use crate::results::StepData;
use crate::results::{GpuResults, StepStatus};
use analysis::md_table;
use std::fmt::Write;

/// A table row from cells of any displayable kind.
macro_rules! row {
    ($($c:expr),* $(,)?) => { vec![$($c.to_string()),*] };
}

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref().map_or("–".into(), |v| v.to_string())
}

fn pct(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| analysis::fmt::pct(v, 1))
}

fn mib(b: Option<u64>) -> String {
    b.map_or("–".into(), |b| {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    })
}

pub fn markdown(r: &GpuResults) -> String {
    let mut s = String::new();
    let device = r.steps.iter().find_map(|st| match &st.data {
        Some(StepData::Device(d)) => Some(d.properties.name.clone()),
        _ => None,
    });
    let _ = writeln!(
        s,
        "# warpscope gpu-check: {}\n",
        device.as_deref().unwrap_or(&r.backend)
    );
    let _ = writeln!(
        s,
        "warpscope {} (kernels built with {}), backend **{}**, emulator preset **{}** ({}), \
         budget {} min, host {}, started at Unix time {}.\n",
        r.warpscope_version,
        r.nvcc_version,
        r.backend,
        r.preset,
        r.preset_note,
        r.budget_minutes,
        if r.host.is_empty() { "?" } else { &r.host },
        r.started_unix
    );
    if r.backend == "emu" {
        let _ = writeln!(
            s,
            "> **Emulator run.** Every step ran on warpscope's emulator, not on silicon: the numbers \
             below are the model's, and the hardware run is pending (`gpu-check` from the bundle \
             on an H100/H200).\n"
        );
    }
    let verdict = crate::verdict::lines(r);
    if !verdict.is_empty() {
        let _ = writeln!(s, "## Verdict\n");
        for l in &verdict {
            let _ = writeln!(s, "- {l}");
        }
        s.push('\n');
    }
    let mut rows = vec![row!["step", "status", "seconds"]];
    for st in &r.steps {
        let verdict = match (&st.status, &st.data) {
            (StepStatus::Done, Some(d)) if !d.passed() => " (checks FAILED)",
            _ => "",
        };
        rows.push(row![
            format!("{}. {}", st.id, st.title),
            format!("{}{verdict}", st.status.word()),
            format!("{:.1}", st.seconds),
        ]);
    }
    s.push_str(&md_table(&rows));
    for st in &r.steps {
        let _ = writeln!(s, "## {}. {} — {}\n", st.id, st.title, st.status.word());
        for n in &st.notes {
            let _ = writeln!(s, "- {n}");
        }
        if !st.notes.is_empty() {
            s.push('\n');
        }
        if let Some(d) = &st.data {
            section(&mut s, d);
        }
    }
    s
}

fn section(s: &mut String, d: &StepData) {
    match d {
        StepData::Device(d) => {
            let p = &d.properties;
            let mut rows = vec![row!["property", "value"]];
            for (k, v) in [
                ("name", p.name.clone()),
                ("backend", p.backend.clone()),
                ("compute capability", opt(&p.compute_capability)),
                ("driver (CUDA version)", opt(&p.driver_cuda_version)),
                ("SM clock (max)", format!("{:.0} MHz", p.clock_mhz)),
                (
                    "memory clock",
                    p.memory_clock_mhz
                        .map_or("–".into(), |m| format!("{m:.0} MHz")),
                ),
                (
                    "memory bus",
                    opt(&p.memory_bus_bits.map(|b| format!("{b} bit"))),
                ),
                ("SMs", opt(&p.sm_count)),
                ("L2", mib(p.l2_bytes)),
                (
                    "L2 fetch granularity (limit)",
                    opt(&p.l2_fetch_granularity_bytes.map(|b| format!("{b} B"))),
                ),
                ("memory", mib(p.total_memory_bytes)),
                (
                    "embedded fatbins",
                    format!(
                        "SASS {} + compute_{} PTX",
                        d.sass_archs
                            .iter()
                            .map(|a| format!("sm_{a}"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        d.ptx_arch
                    ),
                ),
            ] {
                rows.push(row![k, v]);
            }
            s.push_str(&md_table(&rows));
            if let Some(smi) = &d.nvidia_smi {
                let _ = writeln!(s, "nvidia-smi:\n\n```\n{smi}\n```\n");
            }
        }
        StepData::Corpus { rows } => {
            let _ = writeln!(
                s,
                "Small check sizes; kernel time is each file's first launch of its module \
                 (step 4 times warm launches at larger sizes).\n"
            );
            let mut table = vec![row![
                "file",
                "entries",
                "CPU reference",
                "same bytes as the emulator",
                "kernel time",
                "problem",
            ]];
            for r in rows {
                table.push(row![
                    r.file,
                    r.entries,
                    if r.matches_reference {
                        "match"
                    } else {
                        "MISMATCH"
                    },
                    match r.matches_emulator {
                        Some(true) => "yes",
                        Some(false) => "NO",
                        None => "– (is the emulator)",
                    },
                    format!("{:.1} µs", r.kernel_ms * 1000.0),
                    r.problem.as_deref().unwrap_or(""),
                ]);
            }
            s.push_str(&md_table(&table));
        }
        StepData::Probes(p) => {
            let _ = writeln!(
                s,
                "Cycles per access read through the probe header (`kernels/micro/pointer_chase.cu`, \
                 one warp, every record kept); \"configured\" is the preset's end-to-end latency.\n"
            );
            let mut rows = vec![row![
                "case",
                "mode",
                "mean",
                "min",
                "max",
                "configured (preset)",
                "samples",
            ]];
            for r in &p.rows {
                rows.push(row![
                    r.case.label(),
                    r.mode.name(),
                    format!("{:.1}", r.mean_cycles),
                    format!("{:.1}", r.min_cycles),
                    format!("{:.1}", r.max_cycles),
                    opt(&r.configured_cycles),
                    r.samples,
                ]);
            }
            s.push_str(&md_table(&rows));
            for v in &p.verdicts {
                let _ = writeln!(
                    s,
                    "- {}: {}",
                    if v.passed { "PASS" } else { "FAIL" },
                    v.check
                );
            }
            s.push('\n');
        }
        StepData::Calibration { rows } => {
            let _ = writeln!(
                s,
                "Ratio = emulator ÷ device: above 1 the preset is slower than the device.\n"
            );
            let mut table = vec![row!["case", "unit", "device", "emulator", "ratio"]];
            for r in rows {
                table.push(row![
                    r.case,
                    r.unit,
                    format!("{:.1}", r.device),
                    format!("{:.1}", r.emulator),
                    format!("{:.2}", r.ratio),
                ]);
            }
            s.push_str(&md_table(&table));
        }
        StepData::Study(st) => {
            let _ = writeln!(
                s,
                "Geometry **{}**: {}. Kernel time: {} (mean of {} frame(s)); overhead = probed ÷ \
                 bare kernel time; occupancy = resident blocks per SM, achieved = warps resident \
                 per active cycle over the SM's warp slots (both bare / probed).\n",
                st.scale,
                st.geometry,
                if st.rows.first().is_some_and(|r| r.backend == "gpu") {
                    "CUDA events"
                } else {
                    "simulated cycles ÷ clock"
                },
                st.frames
            );
            let mut rows = vec![row![
                "shape",
                "view",
                "mode",
                "kernel time",
                "overhead",
                "occupancy",
                "achieved",
                "tex hit rate (bare)",
                "tex hit rate (probed)",
                "image = bare",
            ]];
            // A GPU's measured clock, where ncu gave one: the frames' cycles at their clock.
            let clocked = st.rows.iter().any(|r| r.sm_clock_mhz_bare.is_some());
            if clocked {
                rows[0].push("SM clock (bare)".into());
            }
            for r in &st.rows {
                let mut cells = row![
                    r.shape,
                    r.view,
                    r.mode,
                    r.kernel_ms.map_or("–".into(), |v| format!("{v:.3} ms")),
                    r.overhead.map_or("–".into(), |v| format!("{v:.2}×")),
                    format!("{} / {}", opt(&r.occupancy_bare), opt(&r.occupancy_probed)),
                    format!(
                        "{} / {}",
                        pct(r.achieved_occupancy_bare),
                        pct(r.achieved_occupancy)
                    ),
                    pct(r.tex_hit_rate_bare),
                    pct(r.tex_hit_rate),
                    opt(&r.image_matches_bare),
                ];
                if clocked {
                    cells.push(
                        r.sm_clock_mhz_bare
                            .map_or("–".into(), |v| format!("{v:.0} MHz")),
                    );
                }
                rows.push(cells);
            }
            s.push_str(&md_table(&rows));
            if !st.findings.is_empty() {
                let _ = writeln!(s, "`warpscope analyze` on this sweep:\n");
                for f in &st.findings {
                    let _ = writeln!(s, "- {f}");
                }
                s.push('\n');
            }
            match (&st.counters_note, st.counters_expected) {
                (Some(note), _) => {
                    let _ = writeln!(s, "Hardware counters: {note}\n");
                }
                (None, true) => {
                    let _ = writeln!(
                        s,
                        "Hardware counters: Nsight Compute's, on both builds of every run \
                         (warm, default clocks), in the table above and in `sweep.csv`.\n"
                    );
                }
                (None, false) => {}
            }
        }
        StepData::Export(e) => {
            let _ = writeln!(
                s,
                "Run `{}`: {} records of {} warps; each file read back by warpscope's reader of \
                 its format.\n",
                e.run, e.records, e.warps
            );
            let mut rows = vec![row!["format", "file", "bytes", "records read back"]];
            for f in &e.formats {
                rows.push(row![
                    f.format,
                    f.file,
                    f.bytes,
                    format!(
                        "{}{}",
                        f.read_back,
                        if f.read_back == e.records {
                            ""
                        } else {
                            " (MISMATCH)"
                        }
                    ),
                ]);
            }
            s.push_str(&md_table(&rows));
        }
        StepData::Programs(p) => {
            if let Some(note) = &p.note {
                let _ = writeln!(s, "{note}\n");
            }
            if !p.rows.is_empty() {
                let mut rows = vec![row![
                    "program",
                    "build",
                    "kernel",
                    "same output",
                    "profiled",
                    "records (loads)",
                    "sites, or why unprofiled",
                    "overhead"
                ]];
                for r in &p.rows {
                    let records = match r.expected_records {
                        Some(n) => format!("{} ({n})", r.records),
                        None => format!("{} (must stay unprofiled)", r.records),
                    };
                    let sites = match (&r.unprofiled, r.expected_records) {
                        (Some(why), None) => why.clone(),
                        _ => r.sites.join("; "),
                    };
                    rows.push(row![
                        r.program,
                        r.build,
                        r.kernel,
                        r.same_output,
                        r.profiled,
                        records,
                        sites,
                        r.overhead.map_or("unknown".into(), |v| format!("{v:.2}×")),
                    ]);
                }
                s.push_str(&md_table(&rows));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{StepResult, StudyStep};
    use trace::SweepRow;

    fn report(rows: Vec<SweepRow>) -> String {
        markdown(&GpuResults {
            warpscope_version: "0".into(),
            nvcc_version: "13.0".into(),
            backend: "gpu".into(),
            preset: "h200".into(),
            preset_note: String::new(),
            budget_minutes: 1.0,
            host: String::new(),
            started_unix: 0,
            steps: vec![StepResult {
                id: 5,
                title: "study".into(),
                status: StepStatus::Done,
                seconds: 1.0,
                notes: Vec::new(),
                data: Some(StepData::Study(StudyStep {
                    scale: "paper".into(),
                    geometry: String::new(),
                    frames: 1,
                    rows,
                    counters_expected: true,
                    counters_note: None,
                    findings: Vec::new(),
                })),
            }],
        })
    }

    #[test]
    fn the_study_table_shows_the_sm_clock_only_where_a_gpu_measured_it() {
        let row = |clock| SweepRow {
            shape: "32x4".into(),
            view: "0,0,0".into(),
            mode: "off".into(),
            kernel_ms: Some(0.25),
            sm_clock_mhz_bare: clock,
            ..SweepRow::default()
        };
        let clocked = report(vec![row(Some(1494.66)), row(None)]);
        assert!(clocked.contains("| SM clock (bare) |"), "{clocked}");
        assert!(
            clocked.contains("| 1495 MHz |") && clocked.contains("| – |"),
            "{clocked}"
        );
        let unclocked = report(vec![row(None)]);
        assert!(!unclocked.contains("SM clock"), "{unclocked}");
    }
}
