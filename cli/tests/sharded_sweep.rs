//! A sharded sweep from the command line: `sweep --plan`, `--shard K/N` and the Slurm array
//! environment, `merge`, and `analyze` on the merged sweep; then the Slurm scripts on a real
//! one-node Slurm (`scripts/slurm/test-local`), which skips itself, saying why, where it cannot
//! run (not root, Slurm or munge not installed).

mod common;

use common::TINY_SWEEP as SWEEP;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn warpscope(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_warpscope"));
    c.args(args);
    // a test run inside a Slurm job must not pick up the job's shard
    for k in [
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_MIN",
        "SLURM_ARRAY_TASK_COUNT",
        "JOB_COMPLETION_INDEX",
    ] {
        c.env_remove(k);
    }
    c.envs(env.iter().copied());
    c.output().expect("the warpscope binary runs")
}

fn sweep(out: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut args = vec!["sweep", "--out", out.to_str().unwrap()];
    args.extend_from_slice(SWEEP);
    args.extend_from_slice(extra);
    warpscope(&args, env)
}

fn ok(o: Output) -> (String, String) {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "failed:\n{err}");
    (String::from_utf8_lossy(&o.stdout).into_owned(), err)
}

fn fails(o: Output) -> String {
    assert!(!o.status.success(), "succeeded, expected a refusal");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn plan_shards_from_flag_and_slurm_merge_and_analyze() {
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n);

    let (plan, _) = ok(sweep(&d("whole"), &["--plan"], &[]));
    let lines: Vec<&str> = plan.lines().collect();
    assert_eq!(lines.len(), 5, "{plan}");
    assert!(
        lines[0].starts_with("plan ") && lines[0].contains("4 runs"),
        "{plan}"
    );
    assert!(lines[1].starts_with("0\t16x2_v0-0-0_naive\t"), "{plan}");
    assert!(lines[4].starts_with("3\t2x16_v0-0-0_fence\t"), "{plan}");
    assert!(d("whole/plan.json").exists());
    assert!(!d("whole/sweep.csv").exists(), "--plan runs nothing");

    ok(sweep(&d("whole"), &[], &[]));
    let refused = fails(sweep(&d("whole"), &["--preset", "h100"], &[]));
    assert!(
        refused.contains("preset: \"gtx480\" -> \"h100\""),
        "{refused}"
    );
    let dup = fails(sweep(&d("dup"), &["--views", "0,0,0;0.0,0,-0"], &[]));
    assert!(dup.contains("views = 0,0,0: given twice"), "{dup}");

    ok(sweep(&d("s1"), &["--shard", "1/3"], &[]));
    ok(sweep(&d("s2"), &["--shard", "2/3"], &[]));
    let missing = fails(warpscope(
        &[
            "merge",
            d("m").to_str().unwrap(),
            d("s1").to_str().unwrap(),
            d("s2").to_str().unwrap(),
        ],
        &[],
    ));
    assert!(
        missing.contains("2 of 4 runs are missing")
            && missing.contains("2x16_v0-0-0_naive (#2")
            && missing.contains("2x16_v0-0-0_fence (#3"),
        "{missing}"
    );
    // the third shard as a Slurm array task (ids 0..2) would run it
    let (_, said) = ok(sweep(
        &d("s3"),
        &[],
        &[
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ],
    ));
    assert!(
        said.contains("shard 3/3 from the scheduler (SLURM_ARRAY_TASK_ID=2"),
        "{said}"
    );
    let dirs: Vec<PathBuf> = ["s1", "s2", "s3"].iter().map(|s| d(s)).collect();
    let merged_dir = d("m");
    let mut args = vec!["merge", merged_dir.to_str().unwrap()];
    args.extend(dirs.iter().map(|p| p.to_str().unwrap()));
    let (_, merged) = ok(warpscope(&args, &[]));
    assert!(merged.contains("4 copied now, 0 already there"), "{merged}");
    assert_eq!(
        std::fs::read(d("m/sweep.csv")).unwrap(),
        std::fs::read(d("whole/sweep.csv")).unwrap()
    );
    let (_, again) = ok(warpscope(&args, &[]));
    assert!(again.contains("0 copied now, 4 already there"), "{again}");
    let (report, _) = ok(warpscope(&["analyze", d("m").to_str().unwrap()], &[]));
    assert!(report.contains("report.html"), "{report}");
    assert!(d("m/report/report.html").exists());
}

#[test]
fn slurm_array_and_merge_on_a_local_cluster() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/slurm/test-local");
    let out = Command::new("bash")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_warpscope"))
        .output()
        .expect("bash runs");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    match out.status.code() {
        Some(0) => assert!(log.contains("sweep.csv identical"), "{log}"),
        Some(77) => eprintln!("{}", log.trim()),
        _ => panic!("scripts/slurm/test-local failed:\n{log}"),
    }
}
