//! `--threads`: how many threads simulate a sweep (its runs, and the SMs of each launch) changes
//! how fast it goes and nothing it writes; run.json says the threads and the simulation speed,
//! and the sweep says the median speed.

mod common;

use common::warpscope;
use std::path::Path;

fn sweep(out: &Path, threads: &str) -> String {
    let mut args = vec![
        "sweep",
        "--threads",
        threads,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(common::TINY_SWEEP);
    let o = warpscope(&args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        o.status.success(),
        "sweep --threads {threads} failed:\n{err}"
    );
    err
}

/// run.json without the host's clock and pool (wall time, the speed measured with it, how each
/// thread spent it, the threads), having checked that it names the pool it ran in.
fn deterministic_part(run: &Path, threads: u32) -> serde_json::Value {
    let m = trace::RunMetrics::read(&run.join("run.json")).unwrap();
    let rate = m.sim_warp_instructions_per_second.unwrap_or(0.0);
    assert!(rate > 0.0, "{}: speed {rate}", run.display());
    assert_eq!(m.threads, Some(threads), "{}", run.display());
    // How each thread spent the launches: one entry a thread, the coordinating thread's first.
    assert_eq!(
        m.thread_seconds.len(),
        threads as usize,
        "{}",
        run.display()
    );
    assert!(m.thread_seconds[0].coordinating > 0.0, "{}", run.display());
    serde_json::to_value(m.without_host_timing()).unwrap()
}

#[test]
fn one_thread_and_two_write_the_same_sweep_and_say_the_speed() {
    let dir = tempfile::tempdir().unwrap();
    let (one, two) = (dir.path().join("one"), dir.path().join("two"));
    let said = sweep(&one, "1");
    sweep(&two, "2");
    assert!(
        said.contains("simulation speed: median") && said.contains("over 4 runs"),
        "{said}"
    );
    assert_eq!(
        std::fs::read(one.join("sweep.csv")).unwrap(),
        std::fs::read(two.join("sweep.csv")).unwrap()
    );
    let mut runs = 0;
    for entry in std::fs::read_dir(&one).unwrap() {
        let run = entry.unwrap().path();
        if !run.join("run.json").exists() {
            continue;
        }
        let twin = two.join(run.file_name().unwrap());
        assert_eq!(deterministic_part(&run, 1), deterministic_part(&twin, 2));
        for file in ["trace.wst", "image.png", "records.csv"] {
            assert_eq!(
                std::fs::read(run.join(file)).unwrap(),
                std::fs::read(twin.join(file)).unwrap(),
                "{file} of {}",
                run.display()
            );
        }
        runs += 1;
    }
    assert_eq!(runs, 4);
    // a usage error, as clap reports them (status 2)
    let refused = warpscope(&["sweep", "--threads", "0", "--plan"]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(err.contains("'0' for '--threads"), "{err}");
}
