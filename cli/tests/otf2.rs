//! `warpscope export --format otf2` end to end: a small emulator run exported into its run
//! folder as an OTF2 archive that the OTF2 library's `otf2-print` reads with one Enter and one
//! Leave per record (and per warp, for the kernel); exporting again replaces the archive; an
//! output that is the run folder or a file is refused. Without the OTF2 library or otf2-print
//! the test says so and skips the read-back, and fails under CI (`scripts/test` installs both).

mod common;
use common::*;
use std::process::Command;

fn skip(why: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("the OTF2 export test cannot run under CI: {why}");
    }
    eprintln!("SKIPPED an_emulator_run_exports_to_an_archive_otf2_print_reads: {why}");
}

#[test]
fn an_emulator_run_exports_to_an_archive_otf2_print_reads() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let run_s = run.to_str().unwrap();
    ok(&[
        "render",
        "--backend",
        "emu",
        "--volume-size",
        "16",
        "--image",
        "32x32",
        "--trace-warps",
        "all",
        "--slots",
        "12",
        "--no-overhead",
        "--formats",
        "none",
        "--out",
        run_s,
    ]);
    let trace_path = run.join("trace.wst");
    let original = std::fs::read(&trace_path).unwrap();

    // Never over an input: not the run folder, not a file. These need no library.
    let err = fails(&["export", "--in", run_s, "--format", "otf2", "--out", run_s]);
    assert!(err.contains("holds the input"), "{err}");
    let trace_s = trace_path.to_str().unwrap();
    let err = fails(&[
        "export", "--in", run_s, "--format", "otf2", "--out", trace_s,
    ]);
    assert!(err.contains("is a file"), "{err}");
    assert_eq!(std::fs::read(&trace_path).unwrap(), original);

    let out = warpscope(&["export", "--in", run_s, "--format", "otf2"]);
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && err.contains("libopen-trace-format2-10") {
        assert_eq!(out.status.code(), Some(1), "{err}");
        skip(err.trim());
        return;
    }
    assert!(out.status.success(), "{err}");
    // The default output is the run folder's `otf2`; dropped records are reported as marked.
    let anchor = run.join("otf2/traces.otf2");
    assert!(anchor.is_file(), "{err}");
    assert!(err.contains("records dropped by full logs"), "{err}");
    // A second export replaces the first whole, leaving no temp folder.
    ok(&["export", "--in", run_s, "--format", "otf2"]);
    assert!(anchor.is_file());
    assert!(!run.join(".tmp-otf2").exists() && !run.join(".old-otf2").exists());

    let reader = trace::TraceReader::open(&trace_path).unwrap();
    let (records, warps) = (reader.record_count(), reader.warp_count() as u64);
    assert!(records > 0);
    let Ok(print) = Command::new("otf2-print").arg(&anchor).output() else {
        skip("otf2-print is not installed (apt-get install otf2-tools)");
        return;
    };
    assert!(
        print.status.success() && print.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&print.stderr)
    );
    let text = String::from_utf8_lossy(&print.stdout);
    let kind = |k: &str| {
        text.lines()
            .filter(|l| l.split_whitespace().next() == Some(k))
            .count() as u64
    };
    assert_eq!(kind("ENTER"), records + warps);
    assert_eq!(kind("LEAVE"), records + warps);
}
