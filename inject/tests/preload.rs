//! The preloaded library in a program that reaches a stand-in driver the way the statically
//! linked CUDA runtime reaches libcuda (dlopen, dlsym of `cuGetProcAddress_v2`, every entry point
//! through it): the hooks see the module, the function and each launch — plain, per-thread
//! stream, parameters in `extra` — and every launch either reaches the driver as the program
//! made it or is replaced by the probed kernel. The programs are built here with the system C
//! compiler; a machine without one skips (CI has one).

use profile::RunConfig;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use trace::{LaunchCounts, LaunchRecord, Outcome};

/// The library under test, built through cargo into this test's own target folder once per
/// test run: `cargo test` builds a cdylib-only package's tests but not its shared object, and a
/// copy left by an earlier `cargo build` could be stale.
fn library() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            // <target>/<profile>/deps/preload-… → <target>/<profile>
            let exe = std::env::current_exe().unwrap();
            let profile_dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
            let target = profile_dir.parent().unwrap();
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let mut cmd = Command::new(cargo);
            cmd.args(["build", "--quiet", "-p", "warpscope-inject", "--target-dir"])
                .arg(target);
            if profile_dir.file_name().is_some_and(|n| n == "release") {
                cmd.arg("--release");
            }
            let status = cmd.status().expect("cargo runs");
            assert!(
                status.success(),
                "building libwarpscope_inject.so: {status}"
            );
            let lib = profile_dir.join("libwarpscope_inject.so");
            assert!(lib.is_file(), "{} after the build", lib.display());
            lib
        })
        .clone()
}

/// Builds the stand-in driver and the program into `dir`; `None` without a C compiler.
fn build(dir: &Path) -> Option<()> {
    let c = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c");
    let cc = |args: &[&str]| Command::new("cc").args(args).status();
    let stub = dir.join("libcuda.so.1");
    let app = dir.join("app");
    match cc(&[
        "-shared",
        "-fPIC",
        "-o",
        stub.to_str()?,
        c.join("stub_cuda.c").to_str()?,
    ]) {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("the stand-in driver did not build: {s}"),
        Err(e) if std::env::var_os("CI").is_some() => panic!("no C compiler under CI: {e}"),
        Err(e) => {
            eprintln!("skipped: no C compiler ({e})");
            return None;
        }
    }
    let s = cc(&["-o", app.to_str()?, c.join("app.c").to_str()?, "-ldl"]).unwrap();
    assert!(s.success(), "the program did not build");
    Some(())
}

struct Run {
    out: Output,
    stub: String,
    records: Vec<LaunchRecord>,
    counts: Option<LaunchCounts>,
}

fn run(dir: &Path, config: Option<&RunConfig>, jit: &str) -> Run {
    let log = dir.join(format!("stub-{jit}.log"));
    let _ = std::fs::remove_file(&log);
    let mut cmd = Command::new(dir.join("app"));
    cmd.env("LD_PRELOAD", library())
        .env("LD_LIBRARY_PATH", dir)
        .env("STUB_LOG", &log)
        .env("STUB_JIT", jit)
        .env_remove(profile::CONFIG_ENV);
    if let Some(c) = config {
        std::fs::create_dir_all(&c.out).unwrap();
        let path = c.out.join("run-config.json");
        c.write(&path).unwrap();
        cmd.env(profile::CONFIG_ENV, path);
    }
    let out = cmd.output().unwrap();
    let read = |p: PathBuf| std::fs::read_to_string(p).unwrap_or_default();
    let records = config.map_or_else(Vec::new, |c| {
        trace::read_launch_records(&c.out.join(trace::LAUNCHES_FILE))
            .map(|(r, _)| r)
            .unwrap_or_default()
    });
    let counts = config.and_then(|c| LaunchCounts::read(&c.out.join(trace::COUNTS_FILE)).ok());
    Run {
        out,
        stub: read(log),
        records,
        counts,
    }
}

fn config(out: PathBuf, count: Option<u64>) -> RunConfig {
    RunConfig {
        out,
        launch_count: count,
        ..RunConfig::default()
    }
}

#[test]
fn without_a_configuration_the_program_runs_untouched_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let Some(()) = build(dir.path()) else { return };
    let r = run(dir.path(), None, "ok");
    assert_eq!(r.out.status.code(), Some(7), "the program's exit status");
    assert!(String::from_utf8_lossy(&r.out.stdout).contains("app done 0"));
    let stderr = String::from_utf8_lossy(&r.out.stderr);
    assert!(stderr.contains("warpscope: not profiling"), "{stderr}");
    assert_eq!(r.stub.matches("launch 0x200").count(), 3, "{}", r.stub);
}

#[test]
fn a_launch_that_cannot_be_probed_reaches_the_driver_as_the_program_made_it() {
    let dir = tempfile::tempdir().unwrap();
    let Some(()) = build(dir.path()) else { return };
    let cfg = config(dir.path().join("out"), None);
    let r = run(dir.path(), Some(&cfg), "fail");
    assert_eq!(r.out.status.code(), Some(7));
    assert!(String::from_utf8_lossy(&r.out.stdout).contains("app done 0"));
    // All three launches, each through its own entry point, with its own arguments.
    for line in [
        "launch 0x200 legacy arg0=5",
        "launch 0x200 ptsz arg0=5",
        "launch 0x200 legacy extra arg0=5",
    ] {
        assert!(r.stub.contains(line), "{line}: {}", r.stub);
    }
    assert_eq!(r.records.len(), 3, "{:?}", r.records);
    for rec in &r.records {
        assert_eq!(rec.kernel, "k");
        let Outcome::Unprofiled { reason } = &rec.outcome else {
            panic!("{rec:?}")
        };
        assert!(reason.contains("stub refuses"), "{reason}");
    }
    assert_eq!(r.counts.unwrap().kernels["k"], 3);
}

#[test]
fn a_selected_launch_runs_the_probed_kernel_with_the_programs_arguments_and_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let Some(()) = build(dir.path()) else { return };
    let cfg = config(dir.path().join("out"), Some(1));
    let r = run(dir.path(), Some(&cfg), "ok");
    assert_eq!(r.out.status.code(), Some(7));
    let lines: Vec<&str> = r.stub.lines().collect();
    assert!(lines.contains(&"jit"), "{}", r.stub);
    let alloc = lines
        .iter()
        .find_map(|l| l.strip_prefix("alloc "))
        .expect("the probe log allocated");
    // The probed function (0x400) in place of the first launch, with the program's argument and
    // the log appended; the program's own function only for the two later launches.
    let probed = format!("launch 0x400 legacy arg0=5 log={alloc}");
    assert!(lines.contains(&probed.as_str()), "{probed}: {}", r.stub);
    assert_eq!(r.stub.matches("launch 0x200").count(), 2, "{}", r.stub);
    // The stand-in runs no kernel: the log comes back as it went, which the decoder refuses
    // (no warp reached the kernel's end). The launch was still the probed one, in place.
    assert_eq!(r.records.len(), 1, "{:?}", r.records);
    assert_eq!(r.records[0].seq, 0);
    assert!(
        matches!(&r.records[0].outcome, Outcome::Unprofiled { reason } if reason.contains("never reached")),
        "{:?}",
        r.records
    );
}

/// `warpscope run`'s side around the same program: the exit status passes through, and the
/// index gathers the launch records and counts.
#[test]
fn run_app_passes_the_exit_status_through_and_writes_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let Some(()) = build(dir.path()) else { return };
    let d = dir.path().display();
    // The stand-in driver's folder and log reach the program through a shell, as a user's
    // environment would.
    let script = format!("LD_LIBRARY_PATH={d} STUB_LOG={d}/stub.log STUB_JIT=fail exec {d}/app");
    let out = dir.path().join("result");
    let run = profile::AppRun {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
        config: config(out.clone(), None),
        library: library(),
    };
    let index = profile::run_app(&run).unwrap();
    assert_eq!((index.exit_code, index.signal), (Some(7), None));
    assert_eq!(index.launches.len(), 3, "{index:?}");
    assert_eq!(index.counts.as_ref().unwrap()["k"], 3);
    assert_eq!(
        trace::ProgramIndex::read(&out.join(trace::INDEX_FILE)).unwrap(),
        index
    );
    assert!(out.join(profile::CONFIG_FILE).is_file());
    // A second run into the same folder replaces the first's files.
    let again = profile::run_app(&run).unwrap();
    assert_eq!(again.launches.len(), 3);
}
