//! The GPU bundle (`scripts/gpu-bundle`) must keep running on the GPU machines: the binary may
//! need no glibc symbol version above 2.35 (their glibc) and must not link libcuda (it is loaded
//! at run time, so the binary also runs where there is none). Checked with binutils on every
//! warpscope binary built in this target folder (the test's own build, the release build) and on
//! the bundle's stripped copy when `dist/` holds one. And `gpu-check`, cut off by its budget,
//! still leaves a report that says so. Every microbenchmark under `docs/gpu` is packed, named by
//! the bundle's `experiments/run` and compiles as the GPU machine compiles it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The GPU machines' glibc (Ubuntu 22.04).
const MAX_GLIBC: (u32, u32) = (2, 35);

fn binaries() -> Vec<PathBuf> {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_warpscope"));
    let mut v = vec![exe.clone()];
    // <target>/<profile>/warpscope → <target>/release/warpscope, and the library `warpscope run`
    // preloads beside each
    if let Some(target) = exe.parent().and_then(Path::parent) {
        let release = target.join("release").join("warpscope");
        if release.is_file() && release != exe {
            v.push(release);
        }
        for profile in ["debug", "release"] {
            let lib = target.join(profile).join("libwarpscope_inject.so");
            if lib.is_file() {
                v.push(lib);
            }
        }
    }
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("../dist/warpscope-gpu/bin");
    for f in ["warpscope", "libwarpscope_inject.so"] {
        if bundled.join(f).is_file() {
            v.push(bundled.join(f));
        }
    }
    v
}

fn tool(name: &str, args: &[&str], bin: &Path) -> Option<String> {
    let out = Command::new(name).args(args).arg(bin).output().ok()?;
    assert!(
        out.status.success(),
        "{name} {}: {}",
        bin.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The highest `GLIBC_x.y` version in `objdump -T` output.
fn max_glibc(objdump: &str) -> Option<(u32, u32)> {
    objdump
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter_map(|w| w.strip_prefix("GLIBC_"))
        .filter_map(|v| {
            let mut it = v.split('.').map(|p| p.parse::<u32>().ok());
            Some((it.next()??, it.next().flatten().unwrap_or(0)))
        })
        .max()
}

/// The `NEEDED` entries of `readelf -d` output.
fn needed(readelf: &str) -> Vec<String> {
    readelf
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| {
            let (_, rest) = l.split_once('[')?;
            Some(rest.trim_end_matches(']').to_string())
        })
        .collect()
}

#[test]
fn the_parsers_see_a_too_new_glibc_and_a_libcuda_link() {
    let dump = "0000 DF *UND* 0000 (GLIBC_2.2.5) memcpy\n0000 DF *UND* 0000 (GLIBC_2.36) foo\n\
                0000 DF *UND* 0000 (GLIBC_2.34) __libc_start_main\n";
    assert_eq!(max_glibc(dump), Some((2, 36)));
    assert!(max_glibc(dump).unwrap() > MAX_GLIBC);
    let elf = " 0x0000000000000001 (NEEDED)             Shared library: [libcuda.so.1]\n \
               0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]\n";
    assert_eq!(needed(elf), vec!["libcuda.so.1", "libc.so.6"]);
}

#[test]
fn binaries_need_glibc_2_35_at_most_and_no_libcuda() {
    for bin in binaries() {
        let (Some(dump), Some(elf)) = (
            tool("objdump", &["-T"], &bin),
            tool("readelf", &["-d"], &bin),
        ) else {
            eprintln!("skipped: objdump/readelf (binutils) not installed");
            return;
        };
        let top = max_glibc(&dump).expect("a dynamically linked binary names glibc versions");
        assert!(
            top <= MAX_GLIBC,
            "{} needs GLIBC_{}.{}; the GPU machines have {}.{}",
            bin.display(),
            top.0,
            top.1,
            MAX_GLIBC.0,
            MAX_GLIBC.1
        );
        let libs = needed(&elf);
        assert!(libs.iter().any(|l| l.starts_with("libc.so")), "{libs:?}");
        assert!(
            !libs.iter().any(|l| l.contains("cuda")),
            "{} links {libs:?}: libcuda must be loaded at run time",
            bin.display()
        );
        eprintln!("{}: GLIBC_{}.{}, {libs:?}", bin.display(), top.0, top.1);
    }
}

/// A budget of 3 seconds cuts the plan off early (the whole plan takes ~10 s): the watchdog
/// ends the process, and the report and the JSON say which step was cut off and keep the steps
/// that finished.
#[test]
fn gpu_check_cut_off_by_its_budget_still_reports() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("check");
    let status = Command::new(env!("CARGO_BIN_EXE_warpscope"))
        .args([
            "gpu-check",
            "--backend",
            "emu",
            "--budget-minutes",
            "0.05",
            "--out",
        ])
        .arg(&out)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(3), "the watchdog's exit status");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("gpu-results.json")).unwrap()).unwrap();
    let steps = json["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 7);
    assert_eq!(steps[0]["status"], "done", "{:#}", steps[0]);
    assert_eq!(steps[0]["data"]["properties"]["backend"], "emu");
    assert_eq!(steps[5]["status"], "cut_off", "{:#}", steps[5]);
    let report = std::fs::read_to_string(out.join("gpu-report.md")).unwrap();
    assert!(report.contains("CUT OFF by the budget"), "{report}");
    assert!(report.contains("Emulator run"), "{report}");
}

/// The whole plan on the emulator, with time to spare: every step finishes and passes its checks
/// (the study too, swept one shape per shard and merged), the study's table has all 8 shapes × 2
/// views × 2 modes, and the report opens with its verdict.
#[test]
fn gpu_check_on_the_emulator_passes_every_step() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("check");
    let run = Command::new(env!("CARGO_BIN_EXE_warpscope"))
        .args(["gpu-check", "--backend", "emu", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(stdout.contains("every step done and passed"), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("gpu-results.json")).unwrap()).unwrap();
    let steps = json["steps"].as_array().unwrap();
    for s in steps {
        assert_eq!(s["status"], "done", "{s:#}");
    }
    let rows = steps[4]["data"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 32, "{:#}", steps[4]);
    // Unmodified programs need a GPU: the step says so and passes without rows.
    assert_eq!(
        steps[6]["data"]["note"], "not run: warpscope run needs a GPU",
        "{:#}",
        steps[6]
    );
    // The shards merged into one sweep, which the analysis read.
    let findings = steps[4]["data"]["findings"].as_array().unwrap();
    assert!(
        findings
            .iter()
            .any(|f| f.as_str().unwrap().contains("naive timing puts memory at")),
        "{findings:#?}"
    );
    let report = std::fs::read_to_string(out.join("gpu-report.md")).unwrap();
    let verdict = report.find("## Verdict").expect("a verdict section");
    assert!(
        verdict < report.find("| step |").unwrap(),
        "the verdict leads"
    );
    assert!(report.contains("the fence waits for the load"), "{report}");
}

/// The names `experiments/run` knows: the bundle script's `all="..."` list.
fn experiment_names(script: &str) -> Vec<&str> {
    let start = script
        .find("\nall=\"")
        .expect("the experiments' all=\"...\" list")
        + 6;
    let len = script[start..].find('"').expect("the list's closing quote");
    script[start..start + len].split_whitespace().collect()
}

/// A GPU session is minutes long: a microbenchmark that does not compile, or that the bundle
/// leaves out, should fail here rather than there. Built as `experiments/run` builds it (nvcc
/// -O3, host code included), for sm_90, the GPU machines' architecture.
#[test]
fn every_microbenchmark_is_packed_named_and_compiles_for_sm_90() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let script = std::fs::read_to_string(root.join("scripts/gpu-bundle")).unwrap();
    let names = experiment_names(&script);
    let nvcc = kernels::nvcc_path().expect("nvcc (run scripts/setup-cuda)");
    let scratch = tempfile::tempdir().unwrap();
    let mut sources: Vec<PathBuf> = std::fs::read_dir(root.join("docs/gpu"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cu"))
        .collect();
    sources.sort();
    assert!(sources.len() >= 12, "{sources:?}");
    for src in sources {
        let stem = src.file_stem().unwrap().to_str().unwrap();
        assert!(
            script.contains(&format!("docs/gpu/{stem}.cu")),
            "scripts/gpu-bundle does not pack docs/gpu/{stem}.cu"
        );
        assert!(
            names.contains(&stem),
            "experiments/run has no experiment named {stem}: {names:?}"
        );
        let out = Command::new(&nvcc)
            .args(["-arch=sm_90", "-O3", "-c", "-o"])
            .arg(scratch.path().join(format!("{stem}.o")))
            .arg(&src)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "nvcc {stem}.cu: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
