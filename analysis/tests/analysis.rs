//! End-to-end tests of `analyze` on small synthetic sweeps whose every number
//! is computed by hand in the comments, plus the headless-Chromium check of report.html.

use analysis::{AnalyzeOptions, analyze};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use trace::{
    Cycles, Dim3, LaunchInfo, ProbeMode, Record, RecordKind, Region, RunMetrics, SiteInfo, SmId,
    Trace, TraceWriter, WarpTrace,
};

/// One synthetic warp: SM, kernel begin, kernel end, records as (site, duration).
struct W {
    sm: u32,
    begin: u64,
    end: u64,
    recs: Vec<(u16, u64)>,
}

fn w(sm: u32, begin: u64, end: u64, recs: &[(u16, u64)]) -> W {
    W {
        sm,
        begin,
        end,
        recs: recs.to_vec(),
    }
}

/// One synthetic run of the sweep.
struct RunSpec {
    shape: &'static str,
    view: &'static str,
    mode: &'static str,
    hit: Option<f64>,
    fps: Option<f64>,
    warps: Vec<W>,
}

fn run_name(r: &RunSpec) -> String {
    format!("{}_v{}_{}", r.shape, r.view.replace(',', "-"), r.mode)
}

/// Writes SWEEPDIR/sweep.csv and each run's trace.wst, run.json and config.toml.
fn make_sweep(dir: &Path, runs: &[RunSpec]) {
    make_sweep_with_sites(dir, runs, ["volume sample", "transfer function"]);
}

/// [`make_sweep`] with the two sites named `sites`.
fn make_sweep_with_sites(dir: &Path, runs: &[RunSpec], sites: [&str; 2]) {
    let mut csv = String::from(
        "run,backend,preset,shape,view,mode,cycles,kernel_ms,frame_rate,tex_hit_rate,dropped_records,overhead,occupancy_bare,occupancy_probed\n",
    );
    for r in runs {
        let name = run_name(r);
        let rd = dir.join(&name);
        std::fs::create_dir_all(&rd).unwrap();
        let mode: ProbeMode = r.mode.parse().unwrap();
        let (bx, by) = r.shape.split_once('x').unwrap();
        let block = Dim3::new(bx.parse().unwrap(), by.parse().unwrap(), 1);
        let launch = LaunchInfo::new("d_render", Dim3::new(2, 1, 1), block)
            .with_probe(mode, RecordKind::Trace)
            .with_sites(vec![
                SiteInfo::new(0, sites[0], Region::Texture),
                SiteInfo::new(1, sites[1], Region::Texture),
            ]);
        let warps = r
            .warps
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                let mut t =
                    WarpTrace::new([i as u32 % 2, 0, 0], i as u32 / 2, i as u32, SmId(spec.sm));
                t.begin = Cycles(spec.begin);
                t.end = Cycles(spec.end);
                let mut clock = spec.begin + 1;
                for (k, &(site, d)) in spec.recs.iter().enumerate() {
                    t.records.push(Record {
                        site,
                        seq: k as u32,
                        start: Cycles(clock),
                        end: Cycles(clock + d),
                    });
                    clock += d + 1;
                }
                t
            })
            .collect();
        let trace = Trace { launch, warps };
        TraceWriter::write_all(&rd.join("trace.wst"), &trace).unwrap();
        let mut m = RunMetrics::new("emu", "d_render", Dim3::new(2, 1, 1), block, mode);
        m.tex_hit_rate = r.hit;
        m.frame_rate = r.fps;
        m.study = Some(trace::StudyFacts {
            shape: r.shape.into(),
            view: r.view.into(),
            ..trace::StudyFacts::default()
        });
        m.write(&rd.join("run.json")).unwrap();
        std::fs::write(rd.join("config.toml"), "[core]\nclock_mhz = 1401.0\n").unwrap();
        let opt = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
        csv.push_str(&format!(
            "{name},emu,gtx480,{},\"{}\",{},1000,1.0,{},{},0,1.1,8,8\n",
            r.shape,
            r.view,
            r.mode,
            opt(r.fps),
            opt(r.hit)
        ));
    }
    std::fs::write(dir.join("sweep.csv"), csv).unwrap();
}

/// Reads a CSV output into rows of column → text.
fn read_csv(path: &Path) -> Vec<BTreeMap<String, String>> {
    let mut rdr = csv::Reader::from_path(path).unwrap();
    let headers = rdr.headers().unwrap().clone();
    rdr.records()
        .map(|r| {
            let r = r.unwrap();
            headers
                .iter()
                .zip(r.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn num(row: &BTreeMap<String, String>, col: &str) -> f64 {
    row[col]
        .parse()
        .unwrap_or_else(|_| panic!("{col} = {:?}", row[col]))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// Runs whose mean access time is `t` cycles with one warp of 4 accesses of `t` each.
fn uniform_run(
    shape: &'static str,
    mode: &'static str,
    t: u64,
    hit: Option<f64>,
    fps: Option<f64>,
) -> RunSpec {
    RunSpec {
        shape,
        view: "0,0,0",
        mode,
        hit,
        fps,
        warps: vec![w(0, 0, 10 * t, &[(0, t), (1, t), (0, t), (0, t)])],
    }
}

/// The sweep most tests use.
fn standard_sweep(dir: &Path) {
    let mut runs = vec![
        // Breakdown by hand: warp 0 mem 100+50 = 150, other 1000−150 = 850; warp 1 mem
        // 200+100 = 300, other 600−300 = 300. Means: mem 225, other 575, share 225/800.
        // Site 0: (100+300)/2 = 200 per warp (share 0.25); site 1: 50/2 = 25 (0.03125).
        // Mean access 450/4 = 112.5; warp means 75 and 150: variance 37.5² = 1406.25, spread 75.
        RunSpec {
            shape: "16x8",
            view: "90,0,90",
            mode: "fence",
            hit: Some(0.5),
            fps: Some(10.0),
            warps: vec![
                w(0, 0, 1000, &[(0, 100), (1, 50)]),
                w(1, 10, 610, &[(0, 200), (0, 100)]),
            ],
        },
    ];
    // (0,0,0), fence: mean access 100, 50, 25 → frequency 0.01, 0.02, 0.04; hit rate rises
    // linearly with frequency (r = 1) and frame rate falls (ρ = −1); one run lacks a hit rate.
    runs.push(uniform_run("128x1", "fence", 100, Some(0.1), Some(30.0)));
    runs.push(uniform_run("64x2", "fence", 50, Some(0.2), Some(20.0)));
    runs.push(uniform_run("32x4", "fence", 25, Some(0.4), Some(10.0)));
    runs.push(uniform_run("8x16", "fence", 10, None, Some(5.0)));
    // (0,0,0), naive: the same shapes, shorter times.
    runs.push(uniform_run("128x1", "naive", 5, Some(0.1), Some(30.0)));
    runs.push(uniform_run("64x2", "naive", 6, Some(0.2), Some(20.0)));
    make_sweep(dir, &runs);
}

#[test]
fn breakdown_matches_hand_computed_values() {
    let sweep = tempfile::tempdir().unwrap();
    standard_sweep(sweep.path());
    let out = sweep.path().join("analysis");
    let summary = analyze(sweep.path(), &out, &AnalyzeOptions::default()).unwrap();
    assert_eq!(summary.runs_analyzed, 7);
    let rows = read_csv(&out.join("breakdown.csv"));
    let r = rows.iter().find(|r| r["shape"] == "16x8").unwrap();
    assert_eq!(r["view"], "90,0,90");
    assert_eq!(r["mode"], "fence");
    assert_eq!(num(r, "warps"), 2.0);
    assert_eq!(num(r, "accesses"), 4.0);
    assert!(close(num(r, "mem_cycles"), 225.0));
    assert!(close(num(r, "other_cycles"), 575.0));
    assert!(close(num(r, "mem_share"), 225.0 / 800.0));
    assert!(close(num(r, "mem_cycles_site0"), 200.0));
    assert!(close(num(r, "mem_share_site0"), 0.25));
    assert!(close(num(r, "mem_cycles_site1"), 25.0));
    assert!(close(num(r, "mem_share_site1"), 0.03125));
    assert!(close(num(r, "mean_access_cycles"), 112.5));
    assert!(close(num(r, "mem_ref_freq"), 1.0 / 112.5));
    assert!(close(num(r, "warp_mean_var"), 1406.25));
    assert!(close(num(r, "warp_mean_spread"), 75.0));
    assert!(close(num(r, "tex_hit_rate"), 0.5));
    // Per-warp rows: warp 1 is on SM 1, first in issue order there.
    let warps = read_csv(&out.join("warps.csv"));
    let w1 = warps
        .iter()
        .find(|r| r["run"] == "16x8_v90-0-90_fence" && r["global_warp"] == "1")
        .unwrap();
    assert_eq!(w1["sm"], "1");
    assert_eq!(w1["issue_order"], "0");
    assert!(close(num(w1, "mean_access"), 150.0));
    // Durations 200 and 100: variance 50² = 2500.
    assert!(close(num(w1, "var_access"), 2500.0));
    assert_eq!(num(w1, "other_cycles"), 300.0);
}

#[test]
fn correlation_matches_hand_computed_values_and_leaves_out_missing_metrics() {
    let sweep = tempfile::tempdir().unwrap();
    standard_sweep(sweep.path());
    let out = sweep.path().join("analysis");
    let summary = analyze(sweep.path(), &out, &AnalyzeOptions::default()).unwrap();
    let rows = read_csv(&out.join("correlation.csv"));
    let get = |view: &str, mode: &str, y: &str| {
        rows.iter()
            .find(|r| r["view"] == view && r["mode"] == mode && r["y"] == y)
            .unwrap()
            .clone()
    };
    let hit = get("0,0,0", "fence", "tex_hit_rate");
    assert_eq!(hit["x"], "mem_ref_freq");
    // 8x16 has no hit rate: n = 3 of 4, and the points lie on a line.
    assert_eq!(hit["n"], "3");
    assert_eq!(hit["excluded"], "1");
    assert!(close(num(&hit, "pearson"), 1.0));
    assert!(close(num(&hit, "spearman"), 1.0));
    let fps = get("0,0,0", "fence", "frame_rate");
    assert_eq!(fps["n"], "4");
    // Frequencies 0.01, 0.02, 0.04, 0.1 vs frame rates 30, 20, 10, 5: ranks reversed.
    assert!(close(num(&fps, "spearman"), -1.0));
    let (x, y) = ([0.01, 0.02, 0.04, 0.1], [30.0, 20.0, 10.0, 5.0]);
    assert!(close(
        num(&fps, "pearson"),
        analysis::stats::pearson(&x, &y).unwrap()
    ));
    // A single run: no coefficient, empty cells.
    let single = get("90,0,90", "fence", "tex_hit_rate");
    assert_eq!(single["pearson"], "");
    assert_eq!(single["n"], "1");
    assert!(
        summary
            .excluded_from_correlation
            .iter()
            .any(|e| e.contains("8x16_v0-0-0_fence") && e.contains("tex_hit_rate")),
        "{:?}",
        summary.excluded_from_correlation
    );
    let md = std::fs::read_to_string(&summary.report_md).unwrap();
    assert!(md.contains("8x16_v0-0-0_fence has no tex_hit_rate"), "{md}");
}

/// A group none of whose runs has a hit rate (a GPU sweep without Nsight Compute) is said once,
/// not once per run; a group where only some lack it still names each of them.
#[test]
fn a_group_without_any_hit_rate_is_one_note() {
    let sweep = tempfile::tempdir().unwrap();
    let runs = vec![
        uniform_run("128x1", "fence", 100, None, Some(30.0)),
        uniform_run("64x2", "fence", 50, None, Some(20.0)),
        uniform_run("32x4", "fence", 25, None, Some(10.0)),
        uniform_run("128x1", "naive", 5, Some(0.1), Some(30.0)),
        uniform_run("64x2", "naive", 6, None, Some(20.0)),
    ];
    make_sweep(sweep.path(), &runs);
    let out = sweep.path().join("analysis");
    let summary = analyze(sweep.path(), &out, &AnalyzeOptions::default()).unwrap();
    let md = std::fs::read_to_string(&summary.report_md).unwrap();
    assert!(
        md.contains("None of the 3 runs at (0,0,0), fence has a tex_hit_rate"),
        "{md}"
    );
    assert!(
        !md.contains("32x4_v0-0-0_fence has no tex_hit_rate"),
        "{md}"
    );
    assert!(md.contains("64x2_v0-0-0_naive has no tex_hit_rate"), "{md}");
    // The machine-readable list keeps every run.
    assert_eq!(
        summary
            .excluded_from_correlation
            .iter()
            .filter(|e| e.contains("has no tex_hit_rate"))
            .count(),
        4
    );
}

#[test]
fn findings_state_naive_vs_fenced_shares_and_correlations() {
    let sweep = tempfile::tempdir().unwrap();
    standard_sweep(sweep.path());
    let out = sweep.path().join("analysis");
    let s = analyze(sweep.path(), &out, &AnalyzeOptions::default()).unwrap();
    // Uniform runs: mem = 4t of 10t → 40 % in both modes; naive is not below half.
    let f = s
        .findings
        .iter()
        .find(|f| f.starts_with("At (0,0,0), naive"))
        .unwrap();
    assert!(f.contains("0 of 2 shapes"), "{f}");
    // Uniform runs: 3 of 4 accesses at site 0, all of t cycles → 75 % of memory time.
    let site = "At (0,0,0) (fence), site 0 (volume sample) accounts for 75 % of the memory time (mean over 4 shapes).";
    assert!(s.findings.iter().any(|f| f == site), "{:?}", s.findings);
    assert!(
        s.findings.iter().any(
            |f| f.contains("correlates positively with texture-cache hit rate across 3 shapes")
        ),
        "{:?}",
        s.findings
    );
}

#[test]
fn the_report_opens_with_a_verdict_and_its_figure() {
    let sweep = tempfile::tempdir().unwrap();
    standard_sweep(sweep.path());
    let out = sweep.path().join("analysis");
    let s = analyze(sweep.path(), &out, &AnalyzeOptions::default()).unwrap();
    // (0,0,0), fence: every run 40 % memory, site 0 three quarters of it; frame rates × the
    // overhead 1.1 (bare): 128×1 33, 64×2 22, 32×4 11, 8×16 5.5 fps.
    let v = s
        .verdict
        .iter()
        .find(|v| v.starts_with("At (0,0,0)"))
        .unwrap_or_else(|| panic!("{:?}", s.verdict));
    for part in [
        "timed with fence: memory is 40 % of warp time, 75 % of it at site 0 (volume sample).",
        "(bare kernel): 8×16 is slowest",
        "128×1 fastest",
        "(6.00×)",
        "Use 128×1.",
    ] {
        assert!(v.contains(part), "{part:?} not in {v:?}");
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let (verdict, findings) = (
        md.find("## Verdict").unwrap(),
        md.find("## Findings").unwrap(),
    );
    assert!(verdict < findings);
    assert!(md[verdict..findings].contains("](breakdown_0-0-0.png)"));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(html.matches("<figure id=\"breakdown_0-0-0\">").count(), 1);
}

#[test]
fn hot_spots_flag_the_slow_warp_and_say_so() {
    let sweep = tempfile::tempdir().unwrap();
    // Nine warps with accesses of 10 cycles, one with 100: baseline (median warp mean) 10;
    // the slow warp's excess is 4·100 − 4·10 = 360 (ratio 10), everyone else's 0 (ratio 1), so
    // the ratios' MAD = 0 and the mean-absolute-deviation fallback (median 1, mean |dev| 0.9)
    // gives z = 9 / (1.253314 · 0.9) ≈ 7.98 > 3.5.
    let mut warps: Vec<W> = (0..9).map(|i| w(0, i, 1000 + i, &[(0, 10); 4])).collect();
    warps.push(w(0, 9, 1009, &[(0, 100); 4]));
    let run = RunSpec {
        shape: "8x16",
        view: "90,0,90",
        mode: "fence",
        hit: Some(0.9),
        fps: Some(1.0),
        warps,
    };
    make_sweep(sweep.path(), &[run]);
    let out = sweep.path().join("analysis");
    let s = analyze(sweep.path(), &out, &AnalyzeOptions::default()).unwrap();
    let rows = read_csv(&out.join("hotspots.csv"));
    let slow = rows
        .iter()
        .find(|r| r["kind"] == "warp" && r["id"] == "warp 9")
        .unwrap();
    assert_eq!(slow["rank_excess"], "1");
    assert_eq!(slow["outlier"], "true");
    assert!(close(num(slow, "excess_cycles"), 360.0));
    assert!(close(num(slow, "excess_ratio"), 10.0));
    assert!(close(num(slow, "z_excess_ratio"), 9.0 / (1.253314 * 0.9)));
    let normal: Vec<_> = rows
        .iter()
        .filter(|r| r["kind"] == "warp" && r["id"] != "warp 9")
        .collect();
    assert!(normal.iter().all(|r| r["outlier"] == "false"));
    assert!(
        s.findings
            .iter()
            .any(|f| f.contains("flags 1 of 10 warps over 1 runs; the strongest is warp 9 on SM 0 of 8×16, with 10.0× the typical memory time (360.0 excess cycles")),
        "{:?}",
        s.findings
    );
}

#[test]
fn same_hit_rate_different_variance_is_a_finding() {
    let sweep = tempfile::tempdir().unwrap();
    // 8x16: warp means 10 and 50 → variance 400. 2x64: warp means 20 and 30 → variance 25.
    // Hit rates 0.900 and 0.905 are "the same"; 400 / 25 = 16×.
    let a = RunSpec {
        shape: "8x16",
        view: "90,0,90",
        mode: "fence",
        hit: Some(0.9),
        fps: Some(1.0),
        warps: vec![w(0, 0, 500, &[(0, 10)]), w(0, 1, 501, &[(0, 50)])],
    };
    let b = RunSpec {
        shape: "2x64",
        view: "90,0,90",
        mode: "fence",
        hit: Some(0.905),
        fps: Some(1.0),
        warps: vec![w(0, 0, 500, &[(0, 20)]), w(0, 1, 501, &[(0, 30)])],
    };
    make_sweep(sweep.path(), &[a, b]);
    let s = analyze(
        sweep.path(),
        &sweep.path().join("out"),
        &AnalyzeOptions::default(),
    )
    .unwrap();
    assert!(
        s.findings.iter().any(|f| f.contains(
            "At (90,0,90) (fence), 8×16 has the same texture hit rate as 2×64 (90.0 % vs 90.5 %) but 16.0× the per-warp variance"
        )),
        "{:?}",
        s.findings
    );
}

/// A site named like markup is text in both reports: escaped in the HTML (its figures' SVG
/// included) and in the Markdown, where a `<` would open a tag and a `|` end a table cell.
#[test]
fn a_site_named_like_markup_is_escaped_in_both_reports() {
    let sweep = tempfile::tempdir().unwrap();
    let site = "<b>x|y</b>";
    let runs = vec![
        uniform_run("128x1", "fence", 100, Some(0.1), Some(30.0)),
        uniform_run("64x2", "fence", 50, Some(0.2), Some(20.0)),
    ];
    make_sweep_with_sites(sweep.path(), &runs, [site, "plain"]);
    let out = sweep.path().join("analysis");
    let s = analyze(sweep.path(), &out, &AnalyzeOptions::default()).unwrap();
    let html = std::fs::read_to_string(&s.report_html).unwrap();
    assert!(!html.contains(site), "a raw site name in report.html");
    assert!(html.contains("site0 = &lt;b&gt;x|y&lt;/b&gt; (texture)"));
    let md = std::fs::read_to_string(&s.report_md).unwrap();
    assert!(!md.contains(site), "a raw site name in report.md");
    assert!(md.contains("site0 = \\<b>x\\|y\\</b> (texture)"), "{md}");
    // The verdict names the site that takes most of the memory time, escaped the same way.
    assert!(
        md.contains("75 % of it at site 0 (\\<b>x\\|y\\</b>)"),
        "{md}"
    );
}

#[test]
fn rejects_directories_that_are_not_sweeps() {
    let dir = tempfile::tempdir().unwrap();
    let e = analyze(
        dir.path(),
        &dir.path().join("o"),
        &AnalyzeOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("not a warpscope sweep") && e.contains("sweep.csv"),
        "{e}"
    );
    std::fs::write(
        dir.path().join("sweep.csv"),
        "run,shape,view,mode,cycles\nghost,1x1,\"0,0,0\",fence,\n",
    )
    .unwrap();
    let e = analyze(
        dir.path(),
        &dir.path().join("o"),
        &AnalyzeOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("ghost") && e.contains("trace.wst"), "{e}");
}

/// A run whose run.json is damaged is left out of everything (roofline and bound included), and
/// the report counts and names it; the summary says why.
#[test]
fn a_malformed_run_json_is_counted_as_left_out() {
    let sweep = tempfile::tempdir().unwrap();
    standard_sweep(sweep.path());
    let before = analyze(
        sweep.path(),
        &sweep.path().join("a"),
        &AnalyzeOptions::default(),
    )
    .unwrap();
    let run = read_csv(&sweep.path().join("sweep.csv"))[0]["run"].clone();
    std::fs::write(sweep.path().join(&run).join("run.json"), "{\"backend\": ").unwrap();
    let out = sweep.path().join("b");
    let after = analyze(sweep.path(), &out, &AnalyzeOptions::default()).unwrap();
    assert_eq!(after.runs_analyzed + 1, before.runs_analyzed);
    assert_eq!(after.skipped.len(), before.skipped.len() + 1);
    let why = after.skipped.iter().find(|s| s.starts_with(&run)).unwrap();
    assert!(
        why.contains("run.json") && why.contains("invalid JSON"),
        "{why}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let counted = format!(
        "{} runs analysed, {} left out",
        after.runs_analyzed,
        after.skipped.len()
    );
    assert!(md.contains(&counted) && md.contains(&run), "{counted}");
}

fn all_files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.strip_prefix(dir).unwrap().to_path_buf(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect()
}

#[test]
fn outputs_are_complete_atomic_and_deterministic() {
    let sweep = tempfile::tempdir().unwrap();
    standard_sweep(sweep.path());
    let a = sweep.path().join("a");
    let b = sweep.path().join("b");
    let s = analyze(sweep.path(), &a, &AnalyzeOptions::default()).unwrap();
    analyze(sweep.path(), &b, &AnalyzeOptions::default()).unwrap();
    let fa = all_files(&a);
    let fb = all_files(&b);
    assert_eq!(fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>());
    for (k, v) in &fa {
        // The report names its sweep folder, which is the same here.
        assert!(v == &fb[k], "{} differs between two runs", k.display());
        assert!(
            !k.to_string_lossy().starts_with(".tmp"),
            "temp file left: {}",
            k.display()
        );
    }
    for name in [
        "breakdown.csv",
        "correlation.csv",
        "warps.csv",
        "hotspots.csv",
        "report.html",
        "report.md",
        "breakdown_0-0-0.png",
        "breakdown_0-0-0.svg",
        "frequency_90-0-90.png",
    ] {
        assert!(fa.contains_key(Path::new(name)), "missing {name}");
    }
    assert!(fa.keys().any(|k| k.to_string_lossy().starts_with("warps_")));
    assert!(
        fa.keys()
            .any(|k| k.to_string_lossy().starts_with("series_"))
    );
    assert_eq!(s.files.len(), fa.len());
    let html = String::from_utf8(fa[Path::new("report.html")].clone()).unwrap();
    assert!(html.contains("<svg") && html.contains("clock_mhz = 1401.0"));
    assert!(!html.contains("<script") && !html.contains("src=\"http"));
}

/// The installed Chromium, or `None` (and the reason printed) when it is absent outside CI; in CI
/// (CI=true) its absence fails the test.
fn chromium() -> Option<&'static str> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            std::process::Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    if found.is_none() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("chromium is required in CI (apt-get install -y chromium)");
        }
        eprintln!("skipped: chromium not installed (apt-get install -y chromium)");
    }
    found
}

/// Loads `page` in headless Chromium, screenshots it to `shot`, and returns whether it exited
/// cleanly and its log (console errors appear as "Uncaught …" / "ERROR:CONSOLE").
fn screenshot(chromium: &str, page: &Path, shot: &Path) -> (bool, String) {
    let profile = tempfile::tempdir().unwrap();
    let log_path = profile.path().join("chromium.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut child = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1280,2000")
        .arg(format!("file://{}", page.display()))
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    // A headless browser that hangs must fail the test, not stall CI.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within 180 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    (
        status.success(),
        std::fs::read_to_string(&log_path).unwrap_or_default(),
    )
}

fn has_console_error(log: &str) -> bool {
    log.contains("Uncaught") || log.contains("ERROR:CONSOLE")
}

#[test]
fn console_errors_are_detected() {
    // The check below is only worth something if a broken page does trip it.
    let Some(chromium) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("broken.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><script>no_such_function();</script></body></html>",
    )
    .unwrap();
    let (ok, log) = screenshot(chromium, &page, &dir.path().join("b.png"));
    assert!(ok, "{log}");
    assert!(
        has_console_error(&log),
        "no console error reported for a broken page: {log}"
    );
}

#[test]
fn report_renders_in_headless_chromium() {
    let Some(chromium) = chromium() else { return };
    let sweep = tempfile::tempdir().unwrap();
    standard_sweep(sweep.path());
    let out = sweep.path().join("analysis");
    let s = analyze(sweep.path(), &out, &AnalyzeOptions::default()).unwrap();
    let shot = out.join("screenshot.png");
    let (ok, stderr) = screenshot(chromium, &s.report_html, &shot);
    assert!(ok, "chromium failed: {stderr}");
    assert!(
        !has_console_error(&stderr),
        "console error in report.html: {stderr}"
    );
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    // A blank page compresses to a few KiB; tables and figures make it much larger.
    assert!(png.len() > 50_000, "screenshot only {} bytes", png.len());
    // For a human look at the report, its figures and the screenshot.
    if let Ok(keep) = std::env::var("WARPSCOPE_KEEP_REPORT") {
        std::fs::create_dir_all(&keep).unwrap();
        for (name, bytes) in all_files(&out) {
            std::fs::write(Path::new(&keep).join(name), bytes).unwrap();
        }
    }
}

/// An emulator's effective config.toml with what the roofline and the bound read set to small
/// numbers: 2 SMs × 64 FP32 lanes × 2 = 256 flops/cycle, L1 2 × 128 = 256 B/cycle, L2 4 × 32 =
/// 128 B/cycle, DRAM 64 B/cycle, at 1000 MHz (the rest is gtx480's).
fn small_gpu() -> String {
    let mut c = emulator::GpuConfig::preset("gtx480").unwrap();
    c.name = "small".into();
    c.clock_mhz = 1000.0;
    c.sm.count = 2;
    c.sm.warp_schedulers = 4;
    c.pipeline.int_issue_cycles = 2;
    c.pipeline.fp32_issue_cycles = 2;
    c.l1.line_bytes = 128;
    c.l1.sector_bytes = 32;
    c.l2.slices = 4;
    c.l2.sector_bytes = 32;
    c.l2.bandwidth_bytes_per_cycle = 32.0;
    c.dram.bandwidth_bytes_per_cycle = 64.0;
    c.validate("small").unwrap();
    c.to_toml()
}

#[test]
fn roofline_and_bound_land_in_the_report() {
    let sweep = tempfile::tempdir().unwrap();
    standard_sweep(sweep.path());
    let rows = read_csv(&sweep.path().join("sweep.csv"));
    // Run 0: whole launch statistics (as the emulator API returns them): 25 600 flops over
    // 1000 cycles, DRAM 6400 B read → I(DRAM) = 4, ridge 256/64 = 4 → exactly at the ridge.
    // Run 1: memory counters only, no instruction counts: bound only.
    // Other runs keep the test's placeholder config and are left out with a reason.
    let r0 = rows[0]["run"].clone();
    let r1 = rows[1]["run"].clone();
    let json0 = r#"{"backend":"emu","cycles":1000,"clock_mhz":1000.0,"emulator":{"warp_instructions":100,"thread_instructions":3200,"instructions_by_class":{"flops":25600,"int":10},"mem":{"l1":{"sector_misses":200},"texture":{},"l2":{"sector_misses":200},"dram_bytes_read":6400,"dram_bytes_written":0}}}"#;
    let json1 = r#"{"backend":"emu","cycles":100,"clock_mhz":1000.0,"emulator":{"mem":{"l1":{"sector_hits":10},"texture":{},"l2":{"sector_misses":100},"dram_bytes_read":3200,"dram_bytes_written":0}}}"#;
    for (run, json) in [(&r0, json0), (&r1, json1)] {
        // The run's own run.json (a whole RunMetrics) with these keys put in.
        let path = sweep.path().join(run).join("run.json");
        let mut full: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let keys: serde_json::Value = serde_json::from_str(json).unwrap();
        for (k, v) in keys.as_object().unwrap() {
            full[k] = v.clone();
        }
        std::fs::write(&path, full.to_string()).unwrap();
        std::fs::write(sweep.path().join(run).join("config.toml"), small_gpu()).unwrap();
    }
    let out = sweep.path().join("out");
    let s = analyze(sweep.path(), &out, &AnalyzeOptions::default()).unwrap();
    let roof = read_csv(&out.join("roofline.csv"));
    assert_eq!(roof.len(), 3, "one row per level of the one run with work");
    let dram = roof.iter().find(|r| r["level"] == "dram").unwrap();
    assert_eq!(dram["run"], r0);
    assert!(close(num(dram, "intensity"), 4.0));
    assert!(close(num(dram, "ridge"), 4.0));
    // P = 25 600 flops / 1 µs = 25.6 GFLOP/s; attainable = min(256, 64 × 4) GFLOP/s = 256.
    assert!(close(num(dram, "achieved_per_s"), 25.6e9));
    assert!(close(num(dram, "pct_of_attainable"), 10.0));
    let bound = read_csv(&out.join("bound.csv"));
    assert_eq!(bound.len(), 2);
    // Run 0: DRAM 6400/64 = 100 cycles, L2 6400/128 = 50, L1 6400/256 = 25, SMs 25 600/256 = 100
    // (tie: the first component, sm, is named). Run 1: DRAM 3200/64 = 50 of 100 cycles.
    let b0 = bound.iter().find(|r| r["run"] == r0).unwrap();
    assert!(close(num(b0, "t_est_cycles"), 100.0) && close(num(b0, "ratio"), 0.1));
    assert_eq!(b0["bottleneck"], "sm");
    let b1 = bound.iter().find(|r| r["run"] == r1).unwrap();
    assert_eq!(b1["bottleneck"], "dram");
    assert!(close(num(b1, "ratio"), 0.5));
    assert_eq!(b1["busy_cycles_sm"], "");
    let dot = std::fs::read_to_string(out.join("hierarchy_small.dot")).unwrap();
    assert!(dot.starts_with("digraph") && dot.contains("\"l2\" -> \"dram\""));
    let toml = std::fs::read_to_string(out.join("hierarchy_small.toml")).unwrap();
    let h = analysis::Hierarchy::from_toml_str(&toml, "hierarchy_small.toml").unwrap();
    assert_eq!(h.components[3].read_bytes_per_cycle, 64.0);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("hierarchy_small.json")).unwrap())
            .unwrap();
    assert_eq!(json["hierarchy"]["components"].as_array().unwrap().len(), 4);
    let html = std::fs::read_to_string(&s.report_html).unwrap();
    assert!(html.contains("<h2>Roofline</h2>") && html.contains("<h2>Throughput bound</h2>"));
    assert!(html.contains("no instruction counts"));
    let md = std::fs::read_to_string(&s.report_md).unwrap();
    assert!(md.contains("![") && md.contains("roofline.png"));
    for f in ["roofline.csv", "bound.csv", "roofline.png", "roofline.svg"] {
        assert!(s.files.contains(&out.join(f)), "{f}");
    }
}

/// A sweep none of whose runs has a texture hit rate (a GPU sweep without Nsight Compute): one
/// note for the whole sweep, with the reason its runs give, and a verdict without a clause for
/// the missing figure.
#[test]
fn a_sweep_without_hit_rates_says_so_once_and_its_verdict_has_no_placeholder() {
    let sweep = tempfile::tempdir().unwrap();
    let mut runs = Vec::new();
    for mode in ["naive", "fence"] {
        runs.push(uniform_run("128x1", mode, 100, None, Some(30.0)));
        runs.push(uniform_run("64x2", mode, 50, None, Some(20.0)));
        runs.push(uniform_run("32x4", mode, 25, None, Some(10.0)));
    }
    make_sweep(sweep.path(), &runs);
    let why = "unavailable: ncu (Nsight Compute) is not installed";
    for r in &runs {
        let path = sweep.path().join(run_name(r)).join("run.json");
        let mut m = RunMetrics::read(&path).unwrap();
        m.hit_rate_source = Some(why.into());
        m.write(&path).unwrap();
    }
    let out = sweep.path().join("analysis");
    let summary = analyze(sweep.path(), &out, &AnalyzeOptions::default()).unwrap();
    let said: Vec<&String> = (summary.notes.iter())
        .filter(|n| n.contains("tex_hit_rate"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", summary.notes);
    assert!(
        said[0].contains("None of the 6 runs has a tex_hit_rate") && said[0].contains(why),
        "{}",
        said[0]
    );
    assert!(!summary.verdict.is_empty());
    for v in &summary.verdict {
        assert!(!v.contains('–') && !v.contains("texture hit rate"), "{v}");
    }
    let md = std::fs::read_to_string(&summary.report_md).unwrap();
    assert_eq!(
        md.matches("None of the 6 runs has a tex_hit_rate").count(),
        1,
        "{md}"
    );
    assert!(!md.contains("has no tex_hit_rate"), "{md}");
}

/// Where a run has only the bare build's texture hit rate, it stands for the run's, and the
/// report says so once, with the count.
#[test]
fn only_the_bare_builds_hit_rate_stands_for_the_run_and_is_said() {
    let sweep = tempfile::tempdir().unwrap();
    let runs = vec![
        uniform_run("128x1", "fence", 100, Some(0.1), Some(30.0)),
        uniform_run("64x2", "fence", 50, None, Some(20.0)),
        uniform_run("32x4", "fence", 25, None, Some(10.0)),
    ];
    make_sweep(sweep.path(), &runs);
    let csv = sweep.path().join("sweep.csv");
    let mut rows = trace::SweepRow::read_csv(&csv).unwrap();
    for (r, bare) in rows.iter_mut().zip([0.11, 0.2, 0.4]) {
        r.tex_hit_rate_bare = Some(bare);
    }
    trace::SweepRow::write_csv(&csv, &rows).unwrap();
    let out = sweep.path().join("analysis");
    let summary = analyze(sweep.path(), &out, &AnalyzeOptions::default()).unwrap();
    let corr = read_csv(&out.join("correlation.csv"));
    let hit = corr.iter().find(|r| r["y"] == "tex_hit_rate").unwrap();
    assert_eq!(hit["n"], "3", "the bare rates fill the gaps");
    let said: Vec<&String> = (summary.notes.iter())
        .filter(|n| n.contains("bare build's texture hit rate"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", summary.notes);
    assert!(said[0].starts_with("2 runs"), "{}", said[0]);
}

/// A profiled program's report: the kernel that took the time first, its sites by memory time,
/// and the launches left unprofiled with why.
#[test]
fn a_program_report_leads_with_the_kernel_that_took_the_time() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("000-gather");
    std::fs::create_dir(&run).unwrap();
    let launch = LaunchInfo::new(
        "_Z6gatherPKjS0_Pjii",
        Dim3::new(1, 1, 1),
        Dim3::new(32, 1, 1),
    )
    .with_probe(ProbeMode::Auto, RecordKind::Trace)
    .with_sites(vec![
        SiteInfo::new(0, "gather.cu:9", Region::ReadOnly),
        SiteInfo::new(
            1,
            "gather.cu:9 (inlined: sm_32_intrinsics.hpp:134)",
            Region::ReadOnly,
        ),
    ]);
    let mut w = WarpTrace::new([0, 0, 0], 0, 0, SmId(0));
    w.end = Cycles(1000);
    w.records = vec![
        Record {
            site: 0,
            seq: 0,
            start: Cycles(10),
            end: Cycles(110),
        },
        Record {
            site: 1,
            seq: 1,
            start: Cycles(120),
            end: Cycles(420),
        },
    ];
    TraceWriter::write_all(
        &run.join("trace.wst"),
        &Trace {
            launch,
            warps: vec![w],
        },
    )
    .unwrap();
    let mut m = RunMetrics::new(
        "gpu",
        "_Z6gatherPKjS0_Pjii",
        Dim3::new(1, 1, 1),
        Dim3::new(32, 1, 1),
        ProbeMode::Auto,
    );
    m.kernel_ms = Some(0.2);
    m.bare = Some(trace::BareRun {
        kernel_ms: Some(0.1),
        ..Default::default()
    });
    m.app = Some(trace::AppFacts {
        program: "./gather".into(),
        demangled: "gather(unsigned int const*, unsigned int const*, unsigned int*, int, int)"
            .into(),
        launch: 0,
        ptx_target: "compute_90".into(),
        line_table: true,
    });
    m.write(&run.join("run.json")).unwrap();
    let record = |seq, kernel: &str, outcome| trace::LaunchRecord {
        seq,
        kernel: kernel.into(),
        demangled: kernel.into(),
        grid: [1, 1, 1],
        block: [32, 1, 1],
        shared_bytes: 0,
        outcome,
    };
    let index = trace::ProgramIndex {
        program: vec!["./gather".into()],
        exit_code: Some(0),
        signal: None,
        launches: vec![
            record(
                0,
                "_Z6gatherPKjS0_Pjii",
                trace::Outcome::Profiled {
                    run: "000-gather".into(),
                    ptx_target: "compute_90".into(),
                    kernel_ms: 0.2,
                },
            ),
            record(
                1,
                "scan_sass",
                trace::Outcome::Unprofiled {
                    reason: "kernel `scan_sass` is SASS-only".into(),
                },
            ),
        ],
        counts: Some(
            [
                ("_Z6gatherPKjS0_Pjii".to_string(), 3),
                ("scan_sass".to_string(), 1),
            ]
            .into(),
        ),
        truncated_records: 0,
    };
    index.write(&dir.path().join(trace::INDEX_FILE)).unwrap();
    let (verdict, md) = analysis::program_report(dir.path()).unwrap();
    // 3 launches × 0.1 ms (the bare time): all of the profiled time.
    assert!(
        verdict[0].starts_with("_Z6gatherPKjS0_Pjii takes 100 %"),
        "{verdict:?}"
    );
    assert!(
        verdict[0].contains("gather.cu:9 (inlined: sm_32_intrinsics.hpp:134) take 75 %"),
        "{verdict:?}"
    );
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.contains("SASS-only"), "{md}");
    assert!(
        md.contains("compute\\_90") || md.contains("compute_90"),
        "{md}"
    );
    assert!(dir.path().join("report.html").is_file());
}
