//! The roofline and throughput-bound section of the analysis: per run of a sweep, `roofline.csv`
//! and `bound.csv`, the hierarchical roofline figure (log–log, every run a point per level), the
//! hierarchy of each configuration as JSON and Graphviz DOT with the bottleneck of its slowest
//! run marked, and the report text; plus [`write_ceilings`], which turns microbenchmark
//! measurements (run by the study crate) into `ceilings.csv` and a roofline figure.
//!
//! Why a module of its own: `analyze` stays one pipeline; this file only reads `run.json` and
//! `config.toml` of each run (runs without emulator counters, e.g. GPU runs, are listed as left
//! out) and hands back ready HTML/Markdown.
//!
//! # Output files
//! | file | one row per | columns |
//! |---|---|---|
//! | `roofline.csv` | (run, level) | run, preset, level (l1, l2, dram), work_kind (flop, intop), work, bytes, seconds, intensity, achieved_per_s, peak_per_s, bandwidth_bytes_per_s, ridge, attainable_per_s, bound (memory, compute), pct_of_attainable, pct_of_peak, binding (the level with the lowest roof) |
//! | `bound.csv` | run | run, preset, t_sim_cycles, t_est_cycles, ratio, bottleneck, `busy_cycles_<component>` … |
//! | `ceilings.csv` | microbenchmark | bench, kind (compute, bandwidth, sweep), ops, bytes_dram, cycles, measured_per_s, theoretical_per_s, pct_of_theoretical, intensity, attainable_per_s, pct_of_attainable |
//! | `hierarchy_<preset>.toml` / `.json` / `.dot` | configuration | the [`Hierarchy`] (TOML: loadable with `Hierarchy::from_toml_str`, editable), and in JSON and DOT with the bound of the run with the highest T_est/T_sim |
//!
//! Percentages are 0–100; `_per_s` columns are operations (or bytes) per second.

use super::bound::{Hierarchy, RunBound, run_bound};
use super::model::{Ceilings, Level, RunCounters, RunRoofline, roofline_point, run_roofline};
use crate::AnalysisError;
use crate::figures::Drawn;
use crate::fmt::sig;
use crate::output::{slug, write_atomic};
use crate::report::{Block, Inline, Section};
use crate::table::{Col, Table};
use emulator::GpuConfig;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

/// One run with what the roofline and the bound need.
struct RunInput {
    run: String,
    preset: String,
    cfg: GpuConfig,
    counters: RunCounters,
}

/// Reads each run's `run.json` and `config.toml`; returns the usable runs and `run: reason` for
/// the others.
fn read_runs(sweep_dir: &Path, runs: &[(String, String)]) -> (Vec<RunInput>, Vec<String>) {
    let mut ok = Vec::new();
    let mut left = Vec::new();
    for (run, preset) in runs {
        let dir = sweep_dir.join(run);
        let counters = trace::RunMetrics::read(&dir.join(trace::RUN_FILE_NAME))
            .ok()
            .and_then(|m| RunCounters::from_metrics(&m));
        let Some(counters) = counters else {
            left.push(format!("{run}: run.json has no emulator counters"));
            continue;
        };
        match GpuConfig::from_file(&dir.join("config.toml")) {
            Ok(cfg) => ok.push(RunInput {
                run: run.clone(),
                preset: preset.clone(),
                cfg,
                counters,
            }),
            Err(e) => left.push(format!("{run}: {}", trace::error_chain(&e))),
        }
    }
    (ok, left)
}

/// A fraction as a number of percent (0–100) for the CSV columns, where it is finite.
fn percent(x: f64) -> Option<f64> {
    x.is_finite().then_some(100.0 * x)
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

fn roofline_table(rows: &[(&RunInput, RunRoofline, Ceilings)]) -> Table {
    let mut run = Vec::new();
    let mut preset = Vec::new();
    let mut level = Vec::new();
    let mut kind = Vec::new();
    let mut cols: BTreeMap<&str, Vec<Option<f64>>> = BTreeMap::new();
    let mut bound = Vec::new();
    let mut binding = Vec::new();
    for (r, rl, ce) in rows {
        for (l, q, p) in &rl.levels {
            run.push(r.run.clone());
            preset.push(r.preset.clone());
            level.push(l.name().to_string());
            kind.push(rl.work_kind.name().to_string());
            for (k, v) in [
                ("work", Some(rl.work)),
                ("bytes", Some(*q)),
                ("seconds", Some(rl.seconds)),
                ("intensity", finite(p.intensity)),
                ("achieved_per_s", Some(p.achieved)),
                ("peak_per_s", Some(rl.peak)),
                ("bandwidth_bytes_per_s", Some(ce.bandwidth(*l))),
                ("ridge", Some(p.ridge)),
                ("attainable_per_s", Some(p.attainable)),
                ("pct_of_attainable", percent(p.fraction_of_attainable)),
                ("pct_of_peak", percent(p.fraction_of_peak)),
            ] {
                cols.entry(k).or_default().push(v);
            }
            bound.push(format!("{:?}", p.bound).to_lowercase());
            binding.push(rl.binding.name().to_string());
        }
    }
    let mut t = Table::default();
    t.push("run", Col::Str(run));
    t.push("preset", Col::Str(preset));
    t.push("level", Col::Str(level));
    t.push("work_kind", Col::Str(kind));
    // Fixed column order (the map above is only a collector).
    for k in [
        "work",
        "bytes",
        "seconds",
        "intensity",
        "achieved_per_s",
        "peak_per_s",
        "bandwidth_bytes_per_s",
        "ridge",
        "attainable_per_s",
    ] {
        t.push(k, Col::F64(cols.remove(k).unwrap_or_default()));
    }
    t.push("bound", Col::Str(bound));
    for k in ["pct_of_attainable", "pct_of_peak"] {
        t.push(k, Col::F64(cols.remove(k).unwrap_or_default()));
    }
    t.push("binding", Col::Str(binding));
    t
}

fn bound_table(rows: &[(&RunInput, RunBound)]) -> Table {
    let names: Vec<String> = {
        let mut seen = Vec::new();
        for (_, b) in rows {
            for u in &b.components {
                if !seen.contains(&u.name) {
                    seen.push(u.name.clone());
                }
            }
        }
        seen
    };
    let mut t = Table::default();
    t.push(
        "run",
        Col::Str(rows.iter().map(|r| r.0.run.clone()).collect()),
    );
    t.push(
        "preset",
        Col::Str(rows.iter().map(|r| r.0.preset.clone()).collect()),
    );
    t.push(
        "t_sim_cycles",
        Col::F64(rows.iter().map(|r| Some(r.1.t_sim_cycles)).collect()),
    );
    t.push(
        "t_est_cycles",
        Col::F64(rows.iter().map(|r| Some(r.1.t_est_cycles)).collect()),
    );
    t.push(
        "ratio",
        Col::F64(rows.iter().map(|r| Some(r.1.ratio)).collect()),
    );
    t.push(
        "bottleneck",
        Col::Str(rows.iter().map(|r| r.1.bottleneck.clone()).collect()),
    );
    for n in &names {
        t.push(
            &format!("busy_cycles_{n}"),
            Col::F64(
                rows.iter()
                    .map(|r| {
                        r.1.components
                            .iter()
                            .find(|u| &u.name == n)
                            .map(|u| u.busy_cycles)
                    })
                    .collect(),
            ),
        );
    }
    t
}

/// Writes roofline.csv, bound.csv, the hierarchy files and (when `figures`) the roofline figure
/// for `runs` = (run folder, preset) of the sweep; returns the report section.
pub(crate) fn section(
    sweep_dir: &Path,
    out_dir: &Path,
    runs: &[(String, String)],
    figures: bool,
) -> Result<Section, AnalysisError> {
    let (inputs, left) = read_runs(sweep_dir, runs);
    // A run without instruction counts still has a bound over its memory components.
    let mut sec = Section::default();
    let no_work: Vec<&str> = inputs
        .iter()
        .filter(|r| !r.counters.has_work())
        .map(|r| r.run.as_str())
        .collect();
    let rl: Vec<(&RunInput, RunRoofline, Ceilings)> = inputs
        .iter()
        .filter(|r| r.counters.has_work())
        .map(|r| {
            let ce = Ceilings::theoretical(&r.cfg);
            (r, run_roofline(&r.counters, &r.cfg, &ce), ce)
        })
        .collect();
    let bounds: Vec<(&RunInput, RunBound)> = inputs
        .iter()
        .map(|r| {
            let h = Hierarchy::from_config(&r.cfg);
            (r, run_bound(&h, &r.counters, &r.cfg))
        })
        .collect();
    let rt = roofline_table(&rl);
    let bt = bound_table(&bounds);
    for (name, t) in [("roofline.csv", &rt), ("bound.csv", &bt)] {
        let p = out_dir.join(name);
        t.write_csv(&p)?;
        sec.files.push(p);
    }
    // One hierarchy per configuration, with the bound of its run closest to its bound.
    let mut per_cfg: BTreeMap<String, (&RunInput, &RunBound)> = BTreeMap::new();
    for (r, b) in &bounds {
        let key = slug(&r.cfg.name);
        let e = per_cfg.entry(key).or_insert((r, b));
        if b.ratio > e.1.ratio {
            *e = (r, b);
        }
    }
    let mut dots = Vec::new();
    for (key, (r, b)) in &per_cfg {
        let h = Hierarchy::from_config(&r.cfg);
        let json = serde_json::json!({ "hierarchy": h, "run": r.run, "bound": b });
        let jp = out_dir.join(format!("hierarchy_{key}.json"));
        let text = serde_json::to_string_pretty(&json).unwrap_or_default() + "\n";
        write_atomic(&jp, text.as_bytes())?;
        let tp = out_dir.join(format!("hierarchy_{key}.toml"));
        write_atomic(&tp, h.to_toml().as_bytes())?;
        sec.files.push(tp);
        let dp = out_dir.join(format!("hierarchy_{key}.dot"));
        write_atomic(&dp, h.to_dot(Some(b)).as_bytes())?;
        sec.files.push(jp);
        sec.files.push(dp);
        dots.push((key.clone(), r.run.clone(), b.bottleneck.clone(), b.ratio));
    }
    let mut drawn: Option<Drawn> = None;
    if figures && !rl.is_empty() {
        let mut roofs = Vec::new();
        let mut seen = Vec::new();
        for (r, _, ce) in &rl {
            if !seen.contains(&r.cfg.name) {
                seen.push(r.cfg.name.clone());
                roofs.push((r.cfg.name.clone(), ce.clone()));
            }
        }
        let points: Vec<(Level, f64, f64)> = rl
            .iter()
            .flat_map(|(_, x, _)| {
                x.levels
                    .iter()
                    .map(|(l, _, p)| (*l, p.intensity, p.achieved))
            })
            .collect();
        let d = render_roofline(
            out_dir,
            "roofline",
            "Hierarchical roofline of the sweep (theoretical ceilings)",
            &roofs,
            &points,
        )?;
        sec.files.push(out_dir.join("roofline.png"));
        sec.files.push(out_dir.join("roofline.svg"));
        drawn = Some(d);
    }

    // Report text.
    let mut b = vec![
        Block::Heading(2, "Roofline".into()),
        Block::Para(vec![
            Inline::Text("Roofline (Williams, Waterman, Patterson 2009): work W (flops, or integer ops where they dominate) per byte moved at each level (L1/TEX, L2, DRAM) against the theoretical ceilings of the run's configuration; attainable = min(π, β·I). The binding level has the lowest roof. Ceilings measured by microbenchmarks: ".into()),
            Inline::Code("warpscope roofline".into()),
            Inline::Text(".".into()),
        ]),
    ];
    let rcols = [
        "run",
        "level",
        "work_kind",
        "intensity",
        "achieved_per_s",
        "attainable_per_s",
        "bound",
        "pct_of_attainable",
        "binding",
    ];
    b.push(Block::Table(rt.select(&rcols).text_rows(None)));
    b.extend(drawn.map(Block::Figure));
    b.push(Block::Heading(2, "Throughput bound".into()));
    b.push(Block::para("Throughput bound (PMNet-style): each component's busy time = bytes read / read bandwidth + bytes written / write bandwidth (ops / peak for the SMs); T_est = the largest, and that component is the bottleneck. T_est / T_sim near 1 means the bottleneck ran flat out; per-window bounds are not available (the emulator's counters are per launch), so each run (one frame) is one phase."));
    b.push(Block::Table(bt.text_rows(None)));
    for (key, run, bn, ratio) in &dots {
        b.push(Block::Para(vec![
            Inline::Text(format!(
                "Hierarchy of {key}: hierarchy_{key}.dot / .json (Graphviz; "
            )),
            Inline::Code("dot -Tsvg".into()),
            Inline::Text(format!(
                "), with the bound of run {run}: bottleneck {bn}, T_est/T_sim = {}.",
                sig(*ratio)
            )),
        ]));
    }
    if !no_work.is_empty() {
        b.push(Block::Para(vec![
            Inline::Text(format!(
                "No roofline for {} run(s) ({}): their run.json has no instruction counts (",
                no_work.len(),
                no_work.join(", ")
            )),
            Inline::Code("emulator.instructions_by_class".into()),
            Inline::Text("), so the work W is unknown; their bound leaves the SMs out.".into()),
        ]));
    }
    if !left.is_empty() {
        b.push(Block::para(format!(
            "Left out of the roofline and the bound: {}.",
            left.join("; ")
        )));
    }
    sec.blocks = b;
    Ok(sec)
}

/// One microbenchmark measurement (from `study::roofline_bench`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BenchMeasurement {
    /// `fma`, `read`, `write`, `copy`, `triad`, `sweep_n<N>`.
    pub bench: String,
    /// `compute`, `bandwidth` or `sweep`.
    pub kind: String,
    /// Flops executed.
    pub ops: u64,
    /// DRAM bytes read + written.
    pub bytes_dram: u64,
    pub cycles: u64,
}

/// Measured ceilings: compute = the best `compute` bench, DRAM = the best `bandwidth` bench.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MeasuredCeilings {
    pub flops_per_s: f64,
    pub dram_bytes_per_s: f64,
    pub pct_of_theoretical_flops: f64,
    pub pct_of_theoretical_dram: f64,
}

/// Writes `ceilings.csv` and (when `figures`) `roofline_ceilings.{png,svg}` for microbenchmark
/// measurements run on the configuration `cfg`; returns the measured ceilings.
pub fn write_ceilings(
    out_dir: &Path,
    cfg: &GpuConfig,
    benches: &[BenchMeasurement],
    figures: bool,
) -> Result<MeasuredCeilings, AnalysisError> {
    std::fs::create_dir_all(out_dir).map_err(|e| AnalysisError::io(out_dir, e))?;
    let th = Ceilings::theoretical(cfg);
    let hz = cfg.clock_mhz * 1e6;
    let rate = |b: &BenchMeasurement, x: u64| {
        if b.cycles == 0 {
            0.0
        } else {
            x as f64 * hz / b.cycles as f64
        }
    };
    let best = |kind: &str, f: &dyn Fn(&BenchMeasurement) -> f64| {
        benches
            .iter()
            .filter(|b| b.kind == kind)
            .map(f)
            .fold(0.0f64, f64::max)
    };
    let flops = best("compute", &|b| rate(b, b.ops));
    let dram = best("bandwidth", &|b| rate(b, b.bytes_dram));
    let dram_th = th.bandwidth(Level::Dram);
    let measured = MeasuredCeilings {
        flops_per_s: flops,
        dram_bytes_per_s: dram,
        pct_of_theoretical_flops: 100.0 * flops / th.flops_per_s,
        pct_of_theoretical_dram: 100.0 * dram / dram_th,
    };
    let mut t = Table::default();
    t.push(
        "bench",
        Col::Str(benches.iter().map(|b| b.bench.clone()).collect()),
    );
    t.push(
        "kind",
        Col::Str(benches.iter().map(|b| b.kind.clone()).collect()),
    );
    t.push("ops", Col::U64(benches.iter().map(|b| b.ops).collect()));
    t.push(
        "bytes_dram",
        Col::U64(benches.iter().map(|b| b.bytes_dram).collect()),
    );
    t.push(
        "cycles",
        Col::U64(benches.iter().map(|b| b.cycles).collect()),
    );
    let measured_rate = |b: &BenchMeasurement| match b.kind.as_str() {
        "bandwidth" => rate(b, b.bytes_dram),
        _ => rate(b, b.ops),
    };
    let theo = |b: &BenchMeasurement| match b.kind.as_str() {
        "bandwidth" => dram_th,
        "compute" => th.flops_per_s,
        _ => {
            let p = roofline_point(
                b.ops as f64,
                b.bytes_dram as f64,
                1.0,
                th.flops_per_s,
                dram_th,
            );
            p.attainable
        }
    };
    t.push(
        "measured_per_s",
        Col::F64(benches.iter().map(|b| Some(measured_rate(b))).collect()),
    );
    t.push(
        "theoretical_per_s",
        Col::F64(benches.iter().map(|b| Some(theo(b))).collect()),
    );
    t.push(
        "pct_of_theoretical",
        Col::F64(
            benches
                .iter()
                .map(|b| Some(100.0 * measured_rate(b) / theo(b)))
                .collect(),
        ),
    );
    let intensity =
        |b: &BenchMeasurement| (b.bytes_dram > 0).then(|| b.ops as f64 / b.bytes_dram as f64);
    t.push(
        "intensity",
        Col::F64(benches.iter().map(intensity).collect()),
    );
    // Attainable under the *measured* ceilings: the sweep must trace this roof.
    let att = |b: &BenchMeasurement| intensity(b).map(|i| flops.min(dram * i));
    t.push(
        "attainable_per_s",
        Col::F64(benches.iter().map(att).collect()),
    );
    t.push(
        "pct_of_attainable",
        Col::F64(
            benches
                .iter()
                .map(|b| {
                    att(b)
                        .filter(|a| *a > 0.0 && b.kind == "sweep")
                        .map(|a| 100.0 * rate(b, b.ops) / a)
                })
                .collect(),
        ),
    );
    t.write_csv(&out_dir.join("ceilings.csv"))?;
    if figures {
        let measured_ce = Ceilings {
            flops_per_s: flops,
            int_ops_per_s: th.int_ops_per_s,
            // Only DRAM is measured; 0 leaves the L1 and L2 roofs undrawn.
            bytes_per_s: [0.0, 0.0, dram],
        };
        let points: Vec<(Level, f64, f64)> = benches
            .iter()
            .filter(|b| b.kind == "sweep")
            .filter_map(|b| intensity(b).map(|i| (Level::Dram, i, rate(b, b.ops))))
            .collect();
        render_roofline(
            out_dir,
            "roofline_ceilings",
            &format!(
                "{}: theoretical vs measured ceilings, intensity sweep",
                cfg.name
            ),
            &[
                (format!("{} theoretical", cfg.name), th),
                (format!("{} measured", cfg.name), measured_ce),
            ],
            &points,
        )?;
    }
    Ok(measured)
}

const LEVEL_COLORS: [RGBColor; 3] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(213, 94, 0),
];

/// Draws a log–log roofline: for each roof set, the compute roof and one bandwidth roof per
/// level; points are (level, intensity, achieved ops/s).
fn render_roofline(
    dir: &Path,
    stem: &str,
    title: &str,
    roofs: &[(String, Ceilings)],
    points: &[(Level, f64, f64)],
) -> Result<Drawn, AnalysisError> {
    crate::figures::register_font();
    let svg_path = dir.join(format!("{stem}.svg"));
    let png_path = dir.join(format!("{stem}.png"));
    let plot_err = |path: &Path, reason: String| AnalysisError::Plot {
        path: path.to_path_buf(),
        reason,
    };
    let size = (900, 620);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw(&root, title, roofs, points).map_err(|r| plot_err(&svg_path, r))?;
        root.present()
            .map_err(|e| plot_err(&svg_path, e.to_string()))?;
    }
    write_atomic(&svg_path, svg.as_bytes())?;
    crate::output::write_atomic_path(
        &png_path,
        |tmp| {
            let root = BitMapBackend::new(tmp, size).into_drawing_area();
            draw(&root, title, roofs, points)?;
            root.present().map_err(|e| e.to_string())
        },
        |reason| plot_err(&png_path, reason),
    )?;
    Ok(Drawn {
        stem: stem.to_string(),
        title: title.to_string(),
        // The title says what the figure shows.
        caption: String::new(),
        svg,
    })
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    roofs: &[(String, Ceilings)],
    points: &[(Level, f64, f64)],
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    // Axis ranges cover every point and every ridge, a decade either side, in GOP/s.
    let g = 1e9;
    let mut xs: Vec<f64> = points
        .iter()
        .map(|p| p.1)
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    let mut ys: Vec<f64> = points
        .iter()
        .map(|p| p.2 / g)
        .filter(|y| y.is_finite() && *y > 0.0)
        .collect();
    for (_, c) in roofs {
        ys.push(c.flops_per_s / g);
        for b in c.bytes_per_s {
            if b > 0.0 {
                xs.push(c.flops_per_s / b);
            }
        }
    }
    let lo = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = |v: &[f64]| v.iter().copied().fold(0.0f64, f64::max);
    let decade_down = |x: f64| 10f64.powf(x.log10().floor());
    let decade_up = |x: f64| 10f64.powf(x.log10().floor() + 1.0);
    let (x0, x1) = if xs.is_empty() {
        (0.01, 100.0)
    } else {
        (decade_down(lo(&xs)) / 10.0, decade_up(hi(&xs)) * 10.0)
    };
    let (y0, y1) = if ys.is_empty() {
        (0.01, 100.0)
    } else {
        (decade_down(lo(&ys)) / 10.0, decade_up(hi(&ys)))
    };
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("arithmetic intensity (ops per byte)")
        .y_desc("performance (GOP/s)")
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(e)?;
    let steps = 200;
    for (ri, (name, c)) in roofs.iter().enumerate() {
        let dash = ri > 0;
        for l in Level::ALL {
            let bw = c.bandwidth(l);
            if bw <= 0.0 {
                continue;
            }
            let color = LEVEL_COLORS[l as usize];
            let line: Vec<(f64, f64)> = (0..=steps)
                .map(|i| {
                    let x = x0 * (x1 / x0).powf(i as f64 / steps as f64);
                    (x, c.flops_per_s.min(bw * x) / g)
                })
                // Below the axis a point would be drawn clamped onto it, as a false flat roof.
                .filter(|p| p.1 >= y0)
                .collect();
            let style = ShapeStyle {
                color: color.to_rgba(),
                filled: false,
                stroke_width: if dash { 1 } else { 2 },
            };
            let s = chart.draw_series(LineSeries::new(line, style)).map_err(e)?;
            s.label(format!("{name} {}", l.name()))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
        }
    }
    chart
        .draw_series(
            points
                .iter()
                .filter(|p| p.1 > 0.0 && p.2 > 0.0)
                .map(|p| Circle::new((p.1, p.2 / g), 4, LEVEL_COLORS[p.0 as usize].filled())),
        )
        .map_err(e)?;
    crate::figures::draw_legend(&mut chart, SeriesLabelPosition::LowerRight, 12)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceilings_from_benches_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let spec = crate::roofline::example_gpu();
        // Theoretical: 256 flops/cycle, 64 DRAM B/cycle at 1 GHz.
        let benches = vec![
            BenchMeasurement {
                bench: "fma".into(),
                kind: "compute".into(),
                ops: 25_600,
                bytes_dram: 0,
                cycles: 200,
            },
            BenchMeasurement {
                bench: "triad".into(),
                kind: "bandwidth".into(),
                ops: 0,
                bytes_dram: 6400,
                cycles: 200,
            },
            BenchMeasurement {
                bench: "sweep_n8".into(),
                kind: "sweep".into(),
                ops: 800,
                bytes_dram: 800,
                cycles: 100,
            },
        ];
        let m = write_ceilings(dir.path(), &spec, &benches, true).unwrap();
        assert!((m.pct_of_theoretical_flops - 50.0).abs() < 1e-9);
        assert!((m.pct_of_theoretical_dram - 50.0).abs() < 1e-9);
        let csv = std::fs::read_to_string(dir.path().join("ceilings.csv")).unwrap();
        assert!(csv.lines().next().unwrap().starts_with("bench,kind,ops"));
        assert_eq!(csv.lines().count(), 4);
        // Sweep at I = 1: attainable = min(128e9, 32e9 × 1) = 32e9; achieved 8e9 → 25 %.
        assert!(csv.lines().nth(3).unwrap().ends_with(",25.0"), "{csv}");
        assert!(dir.path().join("roofline_ceilings.svg").is_file());
        assert!(dir.path().join("roofline_ceilings.png").is_file());
    }

    /// A run's config.toml is read with the emulator's loader: a file that is not a GPU
    /// configuration, or one with a bad field, leaves the run out naming the file and the field.
    #[test]
    fn a_runs_configuration_is_read_and_checked_by_the_emulator() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("r");
        std::fs::create_dir_all(&run).unwrap();
        let mut m = trace::RunMetrics::new(
            "emu",
            "k",
            trace::Dim3::new(1, 1, 1),
            trace::Dim3::new(32, 1, 1),
            trace::ProbeMode::Off,
        );
        m.cycles = Some(100);
        m.emulator = Some(trace::EmuCounters::default());
        m.write(&run.join("run.json")).unwrap();
        let runs = [("r".to_string(), "p".to_string())];
        let cfg = run.join("config.toml");
        std::fs::write(&cfg, Hierarchy::example().to_toml()).unwrap();
        let (ok, left) = read_runs(dir.path(), &runs);
        assert!(ok.is_empty() && left[0].contains("config.toml"), "{left:?}");
        let text = crate::roofline::example_gpu().to_toml();
        std::fs::write(&cfg, &text).unwrap();
        let (ok, _) = read_runs(dir.path(), &runs);
        assert_eq!(ok[0].cfg, crate::roofline::example_gpu());
        std::fs::write(&cfg, text.replace("slices = 4", "slices = 0")).unwrap();
        let (_, left) = read_runs(dir.path(), &runs);
        let e = &left[0];
        assert!(
            e.starts_with("r: ") && e.contains("config.toml: l2.slices: "),
            "{e}"
        );
    }
}
