//! The binary's guards on the emulator: runaway kernels end with an error that says where they
//! were, shapes CUDA would refuse are refused before anything runs, and a probed `.ptx` gets its
//! log (or a clear refusal) instead of faulting.

use std::path::Path;
use std::process::{Command, Output};

fn launch(spec: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_warpscope"))
        .args(["launch", spec.to_str().unwrap(), "--backend", "emu"])
        .args(extra)
        .output()
        .expect("the warpscope binary runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const SPIN_PTX: &str = ".version 8.0\n.target sm_75\n.address_size 64\n\
    .visible .entry spin(.param .u64 out)\n{\n .reg .b32 %r<4>;\n\
    $L:\n add.s32 %r1, %r1, 1;\n bra.uni $L;\n}\n";

/// A spec for `SPIN_PTX` in `dir` with the given grid.
fn spin_spec(dir: &Path, grid: [u32; 3]) -> std::path::PathBuf {
    std::fs::write(dir.join("spin.ptx"), SPIN_PTX).unwrap();
    let spec = dir.join("spin.toml");
    std::fs::write(
        &spec,
        format!(
            "source = \"spin.ptx\"\nkernel = \"spin\"\ngrid = {grid:?}\nblock = [32, 1, 1]\n\
             [[arg]]\nname = \"out\"\nbuffer = \"u32\"\nlen = 32\nfill = \"zeros\"\n"
        ),
    )
    .unwrap();
    spec
}

#[test]
fn the_instruction_budget_reaches_the_emulator_and_names_where_the_warp_was() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spin_spec(dir.path(), [1, 1, 1]);
    let out_dir = dir.path().join("out");
    let out = launch(
        &spec,
        &[
            "--max-warp-instructions",
            "1000",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("budget of 1000 warp instructions"), "{err}");
    assert!(err.contains("block [0, 0, 0] warp 0"), "{err}");
    // run.json records the failure
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("run.json")).unwrap()).unwrap();
    assert!(
        run["errors"][0]
            .as_str()
            .is_some_and(|e| e.contains("budget")),
        "{run}"
    );
}

#[test]
fn a_time_limit_ends_a_launch_that_would_run_for_hours() {
    let dir = tempfile::tempdir().unwrap();
    // 65535 × 65535 blocks of an endless loop: hours under any budget.
    let spec = spin_spec(dir.path(), [65535, 65535, 1]);
    let started = std::time::Instant::now();
    let out = launch(
        &spec,
        &[
            "--time-limit",
            "0.5",
            "--out",
            dir.path().join("out").to_str().unwrap(),
        ],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("was still running at its time limit"), "{err}");
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
}

#[test]
fn shapes_cuda_refuses_are_refused_before_anything_runs_or_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spin_spec(dir.path(), [1, 70000, 1]);
    let out_dir = dir.path().join("out");
    let out = launch(&spec, &["--out", out_dir.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("grid y = 70000 exceeds CUDA's limit of 65535"),
        "{err}"
    );
    assert!(!out_dir.exists());
}

/// The histogram example compiled to PTX in `mode`, with a spec naming the `.ptx`.
fn histogram_ptx(dir: &Path, mode: u32) -> std::path::PathBuf {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/histogram");
    let ptx = kernels::compile_ptx(&example.join("histogram.cu"), mode, false)
        .expect("nvcc compiles the example (run scripts/setup-cuda)")
        .ptx;
    std::fs::write(dir.join("histogram.ptx"), ptx).unwrap();
    let spec = std::fs::read_to_string(example.join("histogram.toml"))
        .unwrap()
        .replace("source = \"histogram.cu\"", "source = \"histogram.ptx\"");
    let path = dir.join("histogram.toml");
    std::fs::write(&path, spec).unwrap();
    path
}

#[test]
fn a_probed_ptx_gets_its_log_when_its_mode_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let spec = histogram_ptx(dir.path(), kernels::layout::WS_FENCE);
    let out_dir = dir.path().join("out");
    let out = launch(&spec, &["--out", out_dir.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("built with probes"), "{err}");
    assert!(err.contains("--mode"), "{err}");

    let out = launch(
        &spec,
        &["--mode", "fence", "--out", out_dir.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["mode"], "fence", "{run}");
    assert!(run["records"].as_u64().unwrap() > 0, "{run}");
}

#[test]
fn a_bare_ptx_refuses_a_probe_mode_it_was_not_built_with() {
    let dir = tempfile::tempdir().unwrap();
    let spec = histogram_ptx(dir.path(), kernels::layout::WS_OFF);
    let out_dir = dir.path().join("out");
    let out = launch(
        &spec,
        &["--mode", "fence", "--out", out_dir.to_str().unwrap()],
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("has no probes"), "{}", stderr(&out));
    let out = launch(&spec, &["--out", out_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn the_companion_commands_honour_the_budget_too() {
    let dir = tempfile::tempdir().unwrap();
    for command in ["roofline", "reuse"] {
        let out = Command::new(env!("CARGO_BIN_EXE_warpscope"))
            .args([command, "--max-warp-instructions", "1000", "--out"])
            .arg(dir.path().join(command))
            .output()
            .expect("the warpscope binary runs");
        assert!(!out.status.success(), "{command} ran past a budget of 1000");
        let err = stderr(&out);
        assert!(
            err.contains("budget of 1000 warp instructions"),
            "{command}: {err}"
        );
    }
}
