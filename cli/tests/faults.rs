//! The binary on damaged inputs and dangerous output paths: each fails with one clear message
//! (exit status 1, never a panic's 101 or an abort), names the file, says each cause once, and
//! leaves its inputs as they were.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The histogram example in `dir`, with `edit` applied to its spec; returns the spec's path.
fn histogram_spec(dir: &Path, edit: impl Fn(String) -> String) -> PathBuf {
    let example = repo().join("examples/histogram");
    std::fs::copy(example.join("histogram.cu"), dir.join("histogram.cu")).unwrap();
    let spec = edit(std::fs::read_to_string(example.join("histogram.toml")).unwrap());
    let path = dir.join("histogram.toml");
    std::fs::write(&path, spec).unwrap();
    path
}

fn launch(spec: &Path, out: &Path) -> Output {
    warpscope(&[
        "launch",
        spec.to_str().unwrap(),
        "--backend",
        "emu",
        "--mode",
        "fence",
        "--out",
        out.to_str().unwrap(),
    ])
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

#[test]
fn damaged_npy_inputs_are_refused_naming_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.npy");
    // A valid input: the histogram's 65536 words, written by a first launch.
    let spec = histogram_spec(dir.path(), |s| {
        s.replace("len = 65536\nfill = \"random:42\"", "from = \"input.npy\"")
    });
    let data: Vec<u8> = (0..65536u32).flat_map(|v| v.to_le_bytes()).collect();
    trace::write_npy(&good, "<u4", 4, &data).unwrap();
    let valid = std::fs::read(&good).unwrap();
    let shorter = valid[..valid.len() - 6].to_vec();
    let mut longer = valid.clone();
    longer.extend_from_slice(&[0; 4]);
    // The shape's length grown by 8 digits, as many padding spaces taken out.
    let huge = {
        let at = valid.windows(8).position(|w| w == b"(65536,)").unwrap();
        let newline = valid.iter().position(|&c| c == b'\n').unwrap();
        let mut b = valid[..at].to_vec();
        b.extend_from_slice(b"(99999999999999,)");
        b.extend_from_slice(&valid[at + 8..newline - 9]);
        b.extend_from_slice(&valid[newline..]);
        b
    };
    for (bytes, want) in [
        (shorter, "data ends early"),
        (longer, "4 bytes after the data"),
        (huge, "data ends early"),
    ] {
        std::fs::write(dir.path().join("input.npy"), &bytes).unwrap();
        let err = fails(&[
            "launch",
            spec.to_str().unwrap(),
            "--backend",
            "emu",
            "--out",
            dir.path().join("out").to_str().unwrap(),
        ]);
        assert!(
            err.contains("input.npy") && err.contains("at byte") && err.contains(want),
            "{err}"
        );
    }
    // A missing input: the OS's reason, said once.
    std::fs::remove_file(dir.path().join("input.npy")).unwrap();
    let err = fails(&["launch", spec.to_str().unwrap(), "--backend", "emu"]);
    assert_eq!(count(&err, "No such file or directory"), 1, "{err}");
    assert!(err.contains("input.npy"), "{err}");
}

/// One launch, then: exports that would destroy an input are refused; a damaged trace is
/// refused by every export and leaves no temp file; a failed launch into the same folder says
/// its fault once and leaves a trace that export refuses as stale.
#[test]
fn exports_protect_inputs_and_refuse_damaged_or_stale_traces() {
    let dir = tempfile::tempdir().unwrap();
    let spec = histogram_spec(dir.path(), |s| s);
    let run = dir.path().join("run");
    let out = launch(&spec, &run);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace_path = run.join("trace.wst");
    let original = std::fs::read(&trace_path).unwrap();
    let run_s = run.to_str().unwrap();

    // Outputs that are inputs, directories, devices or links are refused; the trace is intact.
    let err = fails(&[
        "export",
        "--in",
        run_s,
        "--format",
        "csv",
        "--out",
        trace_path.to_str().unwrap(),
    ]);
    assert!(
        err.contains("refusing to write") && err.contains("it is the input"),
        "{err}"
    );
    let err = fails(&["export", "--in", run_s, "--format", "csv", "--out", run_s]);
    assert!(err.contains("a directory"), "{err}");
    #[cfg(unix)]
    {
        let err = fails(&[
            "export",
            "--in",
            run_s,
            "--format",
            "csv",
            "--out",
            "/dev/null",
        ]);
        assert!(err.contains("device"), "{err}");
        let link = dir.path().join("link.csv");
        std::os::unix::fs::symlink(&trace_path, &link).unwrap();
        let err = fails(&[
            "export",
            "--in",
            run_s,
            "--format",
            "csv",
            "--out",
            link.to_str().unwrap(),
        ]);
        assert!(err.contains("refusing"), "{err}");
    }
    assert_eq!(std::fs::read(&trace_path).unwrap(), original);
    ok(&["export", "--in", run_s, "--format", "csv"]);

    // Damaged traces: every format refuses them, naming the file and the byte.
    let json_len_max = {
        let mut b = original.clone();
        b[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        b
    };
    let flipped_record = {
        let mut b = original.clone();
        let at = b.len() / 2;
        b[at] ^= 0x10;
        b
    };
    let huge_count = {
        // The first warp's n_records, just after the header's JSON and its checksum.
        let mut b = original.clone();
        let json_len = u64::from_le_bytes(b[16..24].try_into().unwrap()) as usize;
        let at = 24 + json_len + 8 + 48;
        b[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        b
    };
    for (bytes, want) in [
        (&json_len_max, "exceeds"),
        (&flipped_record, "checksum mismatch"),
        (&huge_count, "trace.wst"),
    ] {
        std::fs::write(&trace_path, bytes).unwrap();
        for format in ["csv", "warp-csv", "clog2", "chrome", "parquet"] {
            let err = fails(&["export", "--in", run_s, "--format", format]);
            assert!(
                err.contains("trace.wst") && err.contains("byte") && err.contains(want),
                "{format}: {err}"
            );
        }
        assert!(!run.join(".tmp-records.parquet").exists());
    }
    std::fs::write(&trace_path, &original).unwrap();

    // A launch that faults (the input is 16 words, the kernel reads n = 65536 of them) into
    // the same folder: its fault said once, and the old trace is not exported as its result.
    let bad = histogram_spec(dir.path(), |s| s.replace("len = 65536", "len = 16"));
    let out = launch(&bad, &run);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(count(&err, "fault in kernel histogram"), 1, "{err}");
    let run_json = std::fs::read_to_string(run.join("run.json")).unwrap();
    assert_eq!(
        count(&run_json, "fault in kernel histogram"),
        1,
        "{run_json}"
    );
    let err = fails(&["export", "--in", run_s, "--format", "csv"]);
    assert!(err.contains("left over from an earlier run"), "{err}");
}

#[test]
fn a_launch_whose_output_would_overwrite_its_input_is_refused_before_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let first = histogram_spec(dir.path(), |s| {
        s.replace(
            "fill = \"random:42\"",
            "fill = \"random:42\"\noutput = \"input.npy\"",
        )
    });
    let run = dir.path().join("run");
    ok(&[
        "launch",
        first.to_str().unwrap(),
        "--backend",
        "emu",
        "--out",
        run.to_str().unwrap(),
    ]);
    let input = run.join("input.npy");
    let before = std::fs::read(&input).unwrap();
    // The same input read back and written to the same file.
    let spec = std::fs::read_to_string(&first)
        .unwrap()
        .replace("len = 65536\nfill = \"random:42\"", "from = \"input.npy\"")
        .replace("source = \"histogram.cu\"", "source = \"../histogram.cu\"");
    let spec_path = run.join("again.toml");
    std::fs::write(&spec_path, spec).unwrap();
    let err = fails(&[
        "launch",
        spec_path.to_str().unwrap(),
        "--backend",
        "emu",
        "--out",
        run.to_str().unwrap(),
    ]);
    assert!(
        err.contains("input.npy") && err.contains("refusing to write"),
        "{err}"
    );
    assert_eq!(std::fs::read(&input).unwrap(), before);
}
