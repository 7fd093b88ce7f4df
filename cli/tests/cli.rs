//! The `warpscope` binary end to end, on the emulator: what a user types, what lands on disk.

mod common;
use common::*;
use std::path::Path;

#[test]
fn presets_are_listed_and_printable() {
    let names = ok(&["presets"]);
    for p in ["gtx480", "v100", "a100", "h100"] {
        assert!(names.lines().any(|l| l == p), "{names}");
    }
    let toml = ok(&["presets", "h100"]);
    assert!(toml.contains("clock_mhz"), "{toml}");
}

/// The README's launch example, run as is, with the input also written out so the histogram can
/// be checked against a CPU count.
#[test]
fn histogram_example_launches_and_matches_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let example = repo().join("examples/histogram");
    std::fs::copy(
        example.join("histogram.cu"),
        dir.path().join("histogram.cu"),
    )
    .unwrap();
    let spec = std::fs::read_to_string(example.join("histogram.toml"))
        .unwrap()
        .replace(
            "fill = \"random:42\"",
            "fill = \"random:42\"\noutput = \"input.npy\"",
        );
    let spec_path = dir.path().join("histogram.toml");
    std::fs::write(&spec_path, spec).unwrap();
    let out = dir.path().join("out");
    let said = ok(&[
        "launch",
        spec_path.to_str().unwrap(),
        "--backend",
        "emu",
        "--mode",
        "fence",
        "--out",
        out.to_str().unwrap(),
    ]);
    // The verdict: the kernel's memory share over its 128 warps and 2048 timed accesses, then
    // its one site.
    assert!(
        said.contains("histogram: memory is ")
            && said.contains("of warp time over 128 warps (2048 timed accesses")
            && said.contains("site 0 (input[i]): 100 % of the memory time, 2048 accesses")
            && said.contains("probes: kernel time "),
        "{said}"
    );
    let input = read_u32_npy(&out.join("input.npy"));
    let hist = read_u32_npy(&out.join("hist.npy"));
    assert_eq!(input.len(), 65536);
    let mut want = vec![0u32; 256];
    for v in &input {
        want[(v & 255) as usize] += 1;
    }
    assert_eq!(hist, want);
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["backend"], "emu");
    assert_eq!(run["mode"], "fence");
    assert!(run["errors"].as_array().unwrap().is_empty());
    assert!(run["cycles"].as_u64().unwrap() > 0);
    // The bare run beside it: the same launch built without probes, which the probes slow.
    let (overhead, bare) = (
        run["overhead"].as_f64().unwrap(),
        run["bare"]["kernel_ms"].as_f64().unwrap(),
    );
    assert!(
        overhead > 1.0 && bare > 0.0,
        "overhead {overhead}, bare {bare} ms"
    );
    let probed = run["kernel_ms"].as_f64().unwrap();
    assert!((probed / bare - overhead).abs() < 1e-9);
    // 65536 loads / 32 lanes = 2048 warp-level accesses; 64 slots per warp × 128 warps = 8192
    // fit, so nothing is dropped, and every access is a record.
    assert_eq!(run["records"].as_u64().unwrap(), 2048);
    assert_eq!(run["dropped_records"].as_u64().unwrap(), 0);
    assert!(out.join("trace.wst").exists());
    assert!(out.join("config.toml").exists());
}

/// Timing every other warp: the .cu is built with the bare path, the histogram is still right,
/// and the verdict's statistics are the timed warps' (their memory share is not diluted by the
/// untimed warps' lifetimes).
#[test]
fn a_sampled_launch_reports_per_timed_warp() {
    let dir = tempfile::tempdir().unwrap();
    let example = repo().join("examples/histogram");
    for f in ["histogram.cu", "histogram.toml"] {
        std::fs::copy(example.join(f), dir.path().join(f)).unwrap();
    }
    let spec = dir.path().join("histogram.toml");
    let share = |said: &str| -> f64 {
        let at = said.find("memory is ").expect("verdict") + "memory is ".len();
        said[at..].split(' ').next().unwrap().parse().unwrap()
    };
    let launch = |time: &str, out: &str| {
        ok(&[
            "launch",
            spec.to_str().unwrap(),
            "--backend",
            "emu",
            "--mode",
            "fence",
            "--trace-warps",
            "none",
            "--time-warps",
            time,
            "--out",
            dir.path().join(out).to_str().unwrap(),
        ])
    };
    let all = launch("all", "all");
    let half = launch("every:2", "half");
    assert!(
        half.contains("over 64 timed warps of 128 (1024 timed accesses"),
        "{half}"
    );
    // (A build without the bare path would have failed the launch: its untimed warps' flag
    // does not come back.)
    let (a, h) = (share(&all), share(&half));
    assert!(
        h > 0.8 * a,
        "memory share {h} % timing half the warps, {a} % timing all"
    );
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("half/run.json")).unwrap())
            .unwrap();
    assert_eq!(run["probes"]["timed_warps"], 64);
    assert_eq!(run["probes"]["timed_accesses"], 1024);
    assert_eq!(
        std::fs::read(dir.path().join("all/hist.npy")).ok(),
        std::fs::read(dir.path().join("half/hist.npy")).ok()
    );
}

#[test]
fn launch_spec_mistakes_fail_with_the_field_named_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("bad.toml");
    std::fs::write(
        &spec,
        "source = \"k.ptx\"\nkernel = \"k\"\ngrid = [1,1,1]\nblock = [32,1,1]\n[[arg]]\nname = \"n\"\nscalar = \"i33\"\nvalue = 1\n",
    )
    .unwrap();
    let out = warpscope(&["launch", spec.to_str().unwrap(), "--backend", "emu"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("arg[0] (\"n\").scalar"), "{err}");
    assert!(err.contains("i33"), "{err}");
}

/// A small sweep on two presets, its analysis, a comparison and every export format: the
/// commands as the README shows them.
#[test]
fn sweep_analyze_compare_and_export() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = |preset: &str, out: &Path| {
        ok(&[
            "sweep",
            "--shapes",
            "16x8,1x128",
            "--views",
            "0,0,0;-90,0,90",
            "--modes",
            "naive,fence",
            "--image",
            "24x24",
            "--volume-size",
            "16",
            "--backend",
            "emu",
            "--preset",
            preset,
            "--formats",
            "csv",
            "--out",
            out.to_str().unwrap(),
        ]);
    };
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    sweep("gtx480", &a);
    sweep("v100", &b);
    let csv = std::fs::read_to_string(a.join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 2 * 2 * 2, "{csv}");
    assert!(csv.contains("1x128_v-90-0-90_fence"), "{csv}");
    let report = ok(&["analyze", a.to_str().unwrap()]);
    assert!(report.contains("report.html"), "{report}");
    assert!(a.join("report/report.html").exists());
    ok(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        dir.path().join("cmp").to_str().unwrap(),
    ]);
    assert!(dir.path().join("cmp/compare.md").exists());
    let run = a.join("16x8_v0-0-0_fence");
    assert!(
        run.join("records.csv").exists(),
        "sweep writes CSV by default"
    );
    for format in ["warp-csv", "clog2", "chrome", "parquet"] {
        ok(&["export", "--in", run.to_str().unwrap(), "--format", format]);
    }
    for f in ["warps.csv", "trace.clog2", "trace.json", "records.parquet"] {
        assert!(run.join(f).metadata().unwrap().len() > 0, "{f}");
    }
    let out = warpscope(&["analyze", dir.path().to_str().unwrap()]);
    assert!(
        !out.status.success(),
        "a folder without sweep.csv is not a sweep"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("sweep.csv"));
}

/// The report puts each probe beside the emulator's true access times: per run in sweep.csv and
/// the verdict, per site in `truth_sites.csv`.
#[test]
fn the_report_reads_each_probe_beside_the_true_access_time() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = dir.path().join("sweep");
    ok(&[
        "sweep",
        "--shapes",
        "16x8",
        "--views",
        "0,0,0",
        "--modes",
        "naive,fence",
        "--image",
        "32x32",
        "--volume-size",
        "16",
        "--backend",
        "emu",
        "--preset",
        "gtx480",
        "--trace-warps",
        "all",
        "--formats",
        "none",
        "--out",
        sweep.to_str().unwrap(),
    ]);
    let csv = std::fs::read_to_string(sweep.join("sweep.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    for column in [
        "probe_error",
        "probe_bias_cycles",
        "truth_shift",
        "load_shift",
    ] {
        assert!(header.contains(&column), "{column} not in {header:?}");
    }
    ok(&["analyze", sweep.to_str().unwrap()]);
    let sites = std::fs::read_to_string(sweep.join("report/truth_sites.csv")).unwrap();
    assert!(sites.starts_with("run,mode,site,accesses,"), "{sites}");
    for run in ["16x8_v0-0-0_fence,fence,", "16x8_v0-0-0_naive,naive,"] {
        assert_eq!(
            sites.lines().filter(|l| l.starts_with(run)).count(),
            2,
            "{sites}"
        );
    }
    // A site with fewer than 1,000 timed accesses is marked thin, and the verdict says so.
    let header: Vec<&str> = sites.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (accesses, timed, thin) = (col("accesses"), col("timed_accesses"), col("thin"));
    let (probe, bare, vs) = (
        col("probe_mean_cycles"),
        col("bare_true_mean_cycles"),
        col("probe_vs_bare"),
    );
    let mut thin_rows = 0;
    for line in sites.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        // The reading against the bare build's true time of the same accesses.
        let num = |i: usize| f[i].parse::<f64>().unwrap();
        assert!(
            (num(vs) - (num(probe) / num(bare) - 1.0)).abs() < 1e-9,
            "{line}"
        );
        let n: u64 = f[timed].parse().unwrap();
        // Every warp is traced here, so every timed access is compared.
        assert_eq!(f[accesses].parse::<f64>().unwrap(), n as f64, "{line}");
        assert_eq!(f[thin], (n < 1000).to_string(), "{line}");
        thin_rows += usize::from(n < 1000);
    }
    assert!(thin_rows > 0, "a 32×32 image gives thin sites: {sites}");
    let md = std::fs::read_to_string(sweep.join("report/report.md")).unwrap();
    assert!(md.contains("Probe against the true access time"), "{md}");
    assert!(
        md.contains("Each site's mean reading against the bare build's true time")
            && md.contains("of 2 within 5 %"),
        "{md}"
    );
    assert!(
        md.contains(&format!("Thinly sampled: {thin_rows} of 4 sites")),
        "{md}"
    );
}

/// With the probes off nothing is recorded: a render and a sweep that include mode `off` still
/// succeed with the default `--formats csv`, write their images and run.json, say that no log
/// was written, and write the other runs' logs as usual.
#[test]
fn runs_with_the_probes_off_write_no_log_and_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let render = dir.path().join("render");
    let mut args: Vec<&str> = "render --backend emu --volume-size 16 --image 16x16 --no-overhead"
        .split_whitespace()
        .collect();
    args.extend(["--mode", "off", "--out", render.to_str().unwrap()]);
    let out = warpscope(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("no log written"), "{err}");
    assert!(render.join("run.json").exists() && render.join("image.png").exists());
    assert!(!render.join("records.csv").exists());

    let sweep = dir.path().join("sweep");
    let mut args = vec![
        "sweep",
        "--out",
        sweep.to_str().unwrap(),
        "--modes",
        "off,fence",
    ];
    // The tiny sweep's own modes left out.
    let modes = TINY_SWEEP.iter().position(|&a| a == "--modes").unwrap();
    args.extend(&TINY_SWEEP[..modes]);
    args.extend(&TINY_SWEEP[modes + 2..]);
    let out = warpscope(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("no log written"), "{err}");
    assert!(!sweep.join("16x2_v0-0-0_off/records.csv").exists());
    assert!(sweep.join("16x2_v0-0-0_fence/records.csv").exists());
}

/// `scripts/speed-ab` renders "reuse" runs with command-line flags, so that binaries from before
/// any option for the study's geometry compare too. Those flags are a copy of the reuse study's
/// render (`ReuseStudyConfig::render_config`); this holds the copy to the one definition by
/// rendering both and comparing what they counted.
#[test]
fn speed_abs_reuse_runs_render_the_reuse_studys_geometry() {
    let script = std::fs::read_to_string(repo().join("scripts/speed-ab")).unwrap();
    let flags: Vec<&str> = script
        .lines()
        .find_map(|l| l.trim().strip_prefix("geometry=(--volume-kind"))
        .and_then(|rest| rest.strip_suffix(')'))
        .map(|rest| {
            std::iter::once("--volume-kind")
                .chain(rest.split_whitespace())
                .collect()
        })
        .expect("speed-ab sets the reuse geometry in one `geometry=(--volume-kind …)` line");
    let dir = tempfile::tempdir().unwrap();
    let cli = dir.path().join("cli");
    let mut args = vec!["render", "--backend", "emu", "--preset", "gtx480"];
    args.extend(["--shape", "16x8", "--view", "0,0,0", "--no-overhead"]);
    args.extend(["--formats", "none", "--out", cli.to_str().unwrap()]);
    args.extend(&flags);
    ok(&args);

    let gpu = emulator::GpuConfig::preset("gtx480").unwrap();
    let study = study::ReuseStudyConfig::demo(gpu.clone());
    let cfg = study.render_config(study::BlockShape::new(16, 8), gpu.clone());
    let mut dev = device::EmuDevice::new(gpu);
    let lib = study::render(&mut dev, &cfg, &dir.path().join("lib")).unwrap();

    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cli.join("run.json")).unwrap()).unwrap();
    let m = &lib.metrics;
    assert_eq!(run["mode"], "off", "{flags:?}");
    assert_eq!(
        run["warp_instructions"],
        serde_json::json!(m.warp_instructions)
    );
    assert_eq!(run["cycles"], serde_json::json!(m.cycles));
    // The counters, not the rates derived from them, which run.json writes rounded.
    let counters = |mut v: serde_json::Value| {
        if let Some(mem) = v["mem"].as_object_mut() {
            mem.retain(|k, _| !k.ends_with("_rate"));
        }
        if let Some(all) = v.as_object_mut() {
            all.remove("achieved_occupancy");
        }
        v
    };
    assert_eq!(
        counters(run["emulator"].clone()),
        counters(serde_json::to_value(&m.emulator).unwrap())
    );
}

/// Without a GPU, `warpscope run` says so in one line and starts nothing: no result folder, an
/// error status that is not a panic's.
#[test]
fn run_without_a_gpu_fails_in_one_line() {
    if device::CudaDevice::open(0).is_ok() {
        eprintln!("skipped: this machine has a GPU");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("result");
    let o = warpscope(&["run", "--out", out.to_str().unwrap(), "--", "/bin/true"]);
    let code = o.status.code();
    assert!(code.is_some_and(|c| c != 0 && c != 101), "{code:?}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("needs an NVIDIA GPU"), "{stderr}");
    assert!(!out.exists(), "nothing written");
}
