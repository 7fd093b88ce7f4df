//! `warpscope instrument` and `launch --instrument` end to end on the emulator, on the histogram
//! example without any warpscope line (`examples/histogram_plain/`); site names of inlined loads
//! and of a PTX without a line table, on the rewriter's fixtures (`instrument/tests/fixtures/`).

mod common;
use common::*;
use std::path::{Path, PathBuf};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/histogram_plain")
}

fn cpu_histogram(input: &[u32]) -> Vec<u32> {
    let mut want = vec![0u32; 256];
    for v in input {
        want[(v & 255) as usize] += 1;
    }
    want
}

#[test]
fn an_unmodified_kernel_is_instrumented_and_launched() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(example().join("histogram.cu"), d.join("histogram.cu")).unwrap();
    let spec = std::fs::read_to_string(example().join("histogram.toml"))
        .unwrap()
        .replace(
            "fill = \"random:42\"",
            "fill = \"random:42\"\noutput = \"input.npy\"",
        );
    std::fs::write(d.join("histogram.toml"), &spec).unwrap();

    // On the fly: the spec has no log argument.
    let out = d.join("out");
    ok(&[
        "launch",
        d.join("histogram.toml").to_str().unwrap(),
        "--backend",
        "emu",
        "--instrument",
        "auto",
        "--out",
        out.to_str().unwrap(),
    ]);
    let hist = read_u32_npy(&out.join("hist.npy"));
    assert_eq!(hist, cpu_histogram(&read_u32_npy(&out.join("input.npy"))));
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["mode"], "auto");
    // 65536 loads / 32 lanes: 2048 warp-level accesses, all kept (64 slots × 128 warps).
    assert_eq!(run["records"].as_u64().unwrap(), 2048);
    assert_eq!(run["dropped_records"].as_u64().unwrap(), 0);
    let csv = d.join("records.csv");
    ok(&[
        "export",
        "--in",
        out.to_str().unwrap(),
        "--format",
        "csv",
        "--out",
        csv.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 2049);
    assert!(
        text.lines().skip(1).all(|l| l.contains(",histogram.cu:8,")),
        "sites are named by source line:\n{}",
        text.lines().take(3).collect::<Vec<_>>().join("\n")
    );

    // Written out, then launched as a .ptx with a log argument: same sites, same output.
    let ptx = d.join("histogram.ws.ptx");
    let listing = ok(&[
        "instrument",
        d.join("histogram.cu").to_str().unwrap(),
        "--out",
        ptx.to_str().unwrap(),
    ]);
    assert!(listing.contains("histogram: 1 sites"), "{listing}");
    assert!(
        listing.contains("global    fence  histogram.cu:8"),
        "{listing}"
    );
    let spec2 = spec.replace("histogram.cu", "histogram.ws.ptx")
        + "\n[[arg]]\nname = \"log\"\nlog = true\n";
    std::fs::write(d.join("ptx.toml"), spec2).unwrap();
    let out2 = d.join("out2");
    ok(&[
        "launch",
        d.join("ptx.toml").to_str().unwrap(),
        "--backend",
        "emu",
        "--out",
        out2.to_str().unwrap(),
    ]);
    assert_eq!(read_u32_npy(&out2.join("hist.npy")), hist);
    let run2: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out2.join("run.json")).unwrap()).unwrap();
    assert_eq!(run2["mode"], "auto", "the mode is read from the PTX");
    assert_eq!(run2["records"], run["records"]);

    // The output never replaces the input, and a spec with its own log argument is refused.
    let same = warpscope(&[
        "instrument",
        ptx.to_str().unwrap(),
        "--out",
        ptx.to_str().unwrap(),
    ]);
    assert!(!same.status.success());
    let refused = warpscope(&[
        "launch",
        d.join("ptx.toml").to_str().unwrap(),
        "--backend",
        "emu",
        "--instrument",
        "auto",
        "--out",
        d.join("out3").to_str().unwrap(),
    ]);
    assert!(!refused.status.success());
}

fn fixture(name: &str) -> PathBuf {
    repo().join("instrument/tests/fixtures").join(name)
}

#[test]
fn inlined_loads_are_listed_by_the_users_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for f in ["inlined.cu", "inlined.cuh"] {
        std::fs::copy(fixture(f), d.join(f)).unwrap();
    }
    let out = warpscope(&["instrument", d.join("inlined.cu").to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for want in [
        "gather: 4 sites",
        "site  0  global    fence  inlined.cu:15\n",
        "site  1  readonly  dummy  inlined.cu:16 (inlined: sm_32_intrinsics.hpp:134)\n",
        "site  3  global    fence  inlined.cu:17 (inlined: inlined.cu:6)\n",
        "in_header: 1 sites",
        "site  0  readonly  dummy  inlined.cuh:4 (inlined: sm_32_intrinsics.hpp:134)\n",
    ] {
        assert!(stdout.contains(want), "{want:?} in:\n{stdout}");
    }
    assert!(!stderr.contains("line table"), "{stderr}");
    assert!(d.join("inlined.ws.ptx").exists());
}

#[test]
fn a_ptx_without_a_line_table_is_named_by_ptx_line_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let ptx = dir.path().join("inlined_noline.ptx");
    std::fs::copy(fixture("inlined_noline.ptx"), &ptx).unwrap();
    let out = warpscope(&["instrument", ptx.to_str().unwrap(), "--kernel", "gather"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // PTX line 69 is the `idx[i]` load.
    assert!(stdout.contains("global    fence  ptx:69\n"), "{stdout}");
    assert!(
        stderr.contains("no line table") && stderr.contains("-lineinfo"),
        "{stderr}"
    );
}
