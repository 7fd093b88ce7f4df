//! `gpu-report.md`, rendered from [`GpuResults`] alone (so the JSON and the report never disagree).

use super::steps::StepData;
use super::{GpuResults, StepStatus};
use std::fmt::Write;

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref().map_or("–".into(), |v| v.to_string())
}

fn pct(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{:.1} %", 100.0 * v))
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
    let _ = writeln!(s, "| step | status | seconds |\n|---|---|---|");
    for st in &r.steps {
        let verdict = match (&st.status, &st.data) {
            (StepStatus::Done, Some(d)) if !d.passed() => " (checks FAILED)",
            _ => "",
        };
        let _ = writeln!(
            s,
            "| {}. {} | {}{} | {:.1} |",
            st.id,
            st.title,
            st.status.word(),
            verdict,
            st.seconds
        );
    }
    s.push('\n');
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
            let _ = writeln!(s, "| property | value |\n|---|---|");
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
                let _ = writeln!(s, "| {k} | {v} |");
            }
            if let Some(smi) = &d.nvidia_smi {
                let _ = writeln!(s, "\nnvidia-smi:\n\n```\n{smi}\n```");
            }
            s.push('\n');
        }
        StepData::Corpus { rows } => {
            let _ = writeln!(
                s,
                "| file | entries | CPU reference | same bytes as the emulator | kernel time | problem |\n|---|---|---|---|---|---|"
            );
            for r in rows {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {:.1} µs | {} |",
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
                    r.kernel_ms * 1000.0,
                    r.problem.as_deref().unwrap_or("")
                );
            }
            s.push('\n');
        }
        StepData::Probes(p) => {
            let _ = writeln!(
                s,
                "Cycles per access read through the probe header (`kernels/micro/pointer_chase.cu`, \
                 one warp, every record kept); \"configured\" is the preset's end-to-end latency.\n"
            );
            let _ = writeln!(
                s,
                "| case | mode | mean | min | max | configured (preset) | samples |\n|---|---|---|---|---|---|---|"
            );
            for r in &p.rows {
                let _ = writeln!(
                    s,
                    "| {} | {} | {:.1} | {:.1} | {:.1} | {} | {} |",
                    r.case.label(),
                    r.mode.name(),
                    r.mean_cycles,
                    r.min_cycles,
                    r.max_cycles,
                    opt(&r.configured_cycles),
                    r.samples
                );
            }
            s.push('\n');
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
            let _ = writeln!(
                s,
                "| case | unit | device | emulator | ratio |\n|---|---|---|---|---|"
            );
            for r in rows {
                let _ = writeln!(
                    s,
                    "| {} | {} | {:.1} | {:.1} | {:.2} |",
                    r.case, r.unit, r.device, r.emulator, r.ratio
                );
            }
            s.push('\n');
        }
        StepData::Study(st) => {
            let _ = writeln!(
                s,
                "Geometry **{}**: {}. Kernel time: {} (mean of {} frame(s)); overhead = probed ÷ \
                 bare kernel time; occupancy = resident blocks per SM (bare / probed).\n",
                st.scale,
                st.geometry,
                if st.rows.first().is_some_and(|r| r.backend == "gpu") {
                    "CUDA events"
                } else {
                    "simulated cycles ÷ clock"
                },
                st.frames
            );
            let _ = writeln!(
                s,
                "| shape | view | mode | kernel time | overhead | occupancy | tex hit rate (bare) | tex hit rate (probed) | image = bare |\n|---|---|---|---|---|---|---|---|---|"
            );
            for r in &st.rows {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} / {} | {} | {} | {} |",
                    r.shape,
                    r.view,
                    r.mode,
                    r.kernel_ms.map_or("–".into(), |v| format!("{v:.3} ms")),
                    r.overhead.map_or("–".into(), |v| format!("{v:.2}×")),
                    opt(&r.occupancy_bare),
                    opt(&r.occupancy_probed),
                    pct(r.tex_hit_rate_bare),
                    pct(r.tex_hit_rate),
                    opt(&r.image_matches_bare)
                );
            }
            let _ = writeln!(s, "\nNsight Compute: {}\n", st.ncu_note);
            if !st.ncu.is_empty() {
                let _ = writeln!(
                    s,
                    "| shape | view | metric | bare texture hit rate |\n|---|---|---|---|"
                );
                for n in &st.ncu {
                    let _ = writeln!(
                        s,
                        "| {} | {} | `{}` | {:.1} % |",
                        n.shape,
                        n.view,
                        n.metric,
                        100.0 * n.hit_rate
                    );
                }
                s.push('\n');
            }
        }
        StepData::Export(e) => {
            let _ = writeln!(
                s,
                "Run `{}`: {} records of {} warps; each file read back by warpscope's reader of \
                 its format.\n",
                e.run, e.records, e.warps
            );
            let _ = writeln!(
                s,
                "| format | file | bytes | records read back |\n|---|---|---|---|"
            );
            for f in &e.formats {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {}{} |",
                    f.format,
                    f.file,
                    f.bytes,
                    f.read_back,
                    if f.read_back == e.records {
                        ""
                    } else {
                        " (MISMATCH)"
                    }
                );
            }
            s.push('\n');
        }
    }
}
