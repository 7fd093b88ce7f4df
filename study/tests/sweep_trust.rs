//! A sweep folder's trust on the emulator: it keeps its plan and refuses other parameters, admits
//! one writer, redoes an incomplete run, and a sweep run as three shards and merged is the same,
//! byte for byte, as the sweep run whole.

use std::path::{Path, PathBuf};
use study::{
    BlockShape, FolderLock, RenderParams, Shard, StudyError, SweepConfig, View, VolumeKind,
    VolumeSource, merge, sweep, sweep_shard,
};
use trace::{ProbeMode, RunMetrics, TRACE_FILE_NAME};

/// 2 shapes × 2 views × 2 modes of a tiny volume and image: eight quick runs.
fn tiny(out: &Path) -> SweepConfig {
    SweepConfig {
        out_dir: out.to_path_buf(),
        backend: device::BackendChoice::Emu,
        emu_config: emulator::GpuConfig::preset("gtx480").unwrap(),
        volume: VolumeSource::Generated {
            kind: VolumeKind::Blobs,
            dims: [16, 16, 16],
            seed: 1,
        },
        params: RenderParams::with_size(16, 16),
        shapes: vec![BlockShape::new(16, 2), BlockShape::new(2, 16)],
        views: vec![View::new(0.0, 0.0, 0.0), View::new(90.0, 0.0, 90.0)],
        modes: vec![ProbeMode::Naive, ProbeMode::Fence],
        trace_warps: instrument::WarpSelection::all(),
        time_warps: instrument::WarpSelection::all(),
        time_accesses: instrument::AccessPeriod::ALL,
        slots_per_warp: 256,
        frames: 1,
        measure_overhead: true,
        limits: device::EmuLimits::default(),
        counters: None,
    }
}

fn quiet(_: usize, _: usize) {}

fn run_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            e.file_type()
                .unwrap()
                .is_dir()
                .then(|| e.file_name().to_string_lossy().into_owned())
        })
        .collect();
    v.sort();
    v
}

/// run.json without what the host's clock measured.
fn counters(run_dir: &Path) -> serde_json::Value {
    let m = RunMetrics::read(&run_dir.join("run.json")).unwrap();
    serde_json::to_value(m.without_host_timing()).unwrap()
}

#[test]
fn a_folder_refuses_a_sweep_of_other_parameters_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = tiny(&dir.path().join("s"));
    cfg.shapes.truncate(1);
    cfg.views.truncate(1);
    cfg.modes.truncate(1);
    let s = sweep(&cfg, &quiet).unwrap();
    let table = std::fs::read(&s.csv).unwrap();
    let mut other = cfg.clone();
    other.emu_config = emulator::GpuConfig::preset("h100").unwrap();
    other.params = RenderParams::with_size(32, 16);
    let e = sweep(&other, &quiet).unwrap_err();
    assert!(matches!(e, StudyError::PlanMismatch { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("preset: \"gtx480\" -> \"h100\""), "{msg}");
    assert!(msg.contains("params.width: 16 -> 32"), "{msg}");
    assert!(msg.contains("another --out folder"), "{msg}");
    assert_eq!(
        std::fs::read(&s.csv).unwrap(),
        table,
        "the refused sweep wrote nothing"
    );
    // the same parameters resume
    let again = sweep(&cfg, &quiet).unwrap();
    assert_eq!((again.rendered, again.resumed), (0, 1));
}

#[test]
fn a_second_writer_is_refused_while_the_first_holds_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = tiny(&dir.path().join("s"));
    cfg.shapes.truncate(1);
    cfg.views.truncate(1);
    cfg.modes.truncate(1);
    std::fs::create_dir_all(&cfg.out_dir).unwrap();
    let held = FolderLock::acquire(&cfg.out_dir, "sweep").unwrap();
    let e = sweep(&cfg, &quiet).unwrap_err().to_string();
    assert!(
        e.contains("sweep.lock") && e.contains("one writer per sweep folder"),
        "{e}"
    );
    assert!(!cfg.out_dir.join("sweep.csv").exists());
    drop(held);
    assert_eq!(sweep(&cfg, &quiet).unwrap().rendered, 1);
}

#[test]
fn a_run_with_a_truncated_trace_is_detected_and_redone() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = tiny(&dir.path().join("s"));
    cfg.shapes.truncate(1);
    cfg.views.truncate(1);
    let first = sweep(&cfg, &quiet).unwrap();
    assert_eq!(first.rendered, 2);
    let run = cfg.out_dir.join(&first.rows[1].run);
    let trace_path = run.join(TRACE_FILE_NAME);
    let whole = std::fs::read(&trace_path).unwrap();
    std::fs::write(&trace_path, &whole[..whole.len() / 2]).unwrap();
    let again = sweep(&cfg, &quiet).unwrap();
    assert_eq!((again.rendered, again.resumed), (1, 1));
    assert_eq!(again.redone.len(), 1, "{:?}", again.redone);
    assert!(
        again.redone[0].starts_with(&first.rows[1].run) && again.redone[0].contains("trace.wst"),
        "{:?}",
        again.redone
    );
    assert_eq!(
        std::fs::read(&trace_path).unwrap(),
        whole,
        "the redone trace is whole again"
    );
    assert_eq!(again.rows, first.rows);
}

#[test]
fn three_shards_merged_equal_the_whole_sweep_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let whole_dir = dir.path().join("whole");
    let whole = sweep(&tiny(&whole_dir), &quiet).unwrap();
    assert_eq!(whole.rows.len(), 8);
    let shard_dirs: Vec<PathBuf> = (1..=3).map(|k| dir.path().join(format!("s{k}"))).collect();
    for (k, d) in shard_dirs.iter().enumerate() {
        let s = sweep_shard(&tiny(d), Shard::new(k as u32 + 1, 3).unwrap(), &quiet).unwrap();
        assert_eq!(s.plan_hash, whole.plan_hash);
        assert_eq!(s.rows.len(), [2, 3, 3][k], "contiguous blocks of 8/3");
    }
    let merged_dir = dir.path().join("merged");
    let m = merge(&merged_dir, &shard_dirs).unwrap();
    assert_eq!((m.copied, m.in_place), (8, 0));
    assert!(m.duplicates.is_empty(), "{:?}", m.duplicates);
    assert_eq!(
        std::fs::read(&m.csv).unwrap(),
        std::fs::read(&whole.csv).unwrap(),
        "sweep.csv"
    );
    assert_eq!(run_names(&merged_dir), run_names(&whole_dir));
    for row in &whole.rows {
        let (a, b) = (whole_dir.join(&row.run), merged_dir.join(&row.run));
        for f in [TRACE_FILE_NAME, "image.png", "config.toml"] {
            assert_eq!(
                std::fs::read(a.join(f)).unwrap(),
                std::fs::read(b.join(f)).unwrap(),
                "{}/{f}",
                row.run
            );
        }
        assert_eq!(counters(&a), counters(&b), "{}/run.json", row.run);
    }
    assert_eq!(
        std::fs::read(merged_dir.join("plan.json")).unwrap(),
        std::fs::read(whole_dir.join("plan.json")).unwrap()
    );

    // merging again copies nothing and changes nothing
    let table = std::fs::read(&m.csv).unwrap();
    let again = merge(&merged_dir, &shard_dirs).unwrap();
    assert_eq!((again.copied, again.in_place), (0, 8));
    assert_eq!(std::fs::read(&again.csv).unwrap(), table);

    // runs held by two folders are reported, and the first folder given wins
    let mut with_whole = shard_dirs.clone();
    with_whole.push(whole_dir.clone());
    let both = merge(&dir.path().join("dup"), &with_whole).unwrap();
    assert_eq!(both.duplicates.len(), 8, "{:?}", both.duplicates);
    assert!(
        both.duplicates[0].contains("identical records")
            && both.duplicates[0].contains(&format!("taken from {}", shard_dirs[0].display())),
        "{}",
        both.duplicates[0]
    );

    // a missing shard: nothing is written, and the runs are named
    let partial = dir.path().join("partial");
    let e = merge(&partial, &shard_dirs[..2]).unwrap_err().to_string();
    let last3: Vec<&str> = whole.rows[5..].iter().map(|r| r.run.as_str()).collect();
    assert!(e.starts_with("3 of 8 runs are missing"), "{e}");
    for name in &last3 {
        assert!(e.contains(name), "{name} in {e}");
    }
    assert!(!partial.join("sweep.csv").exists());

    // a shard of another sweep: refused, with the parameter named
    let mut other = tiny(&dir.path().join("other"));
    other.emu_config = emulator::GpuConfig::preset("h100").unwrap();
    sweep_shard(&other, Shard::new(3, 3).unwrap(), &quiet).unwrap();
    let e = merge(
        &dir.path().join("mixed"),
        &[
            shard_dirs[0].clone(),
            shard_dirs[1].clone(),
            other.out_dir.clone(),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("preset: \"gtx480\" -> \"h100\""), "{e}");

    // the output may be one of the shard folders: its own runs stay in place
    let into_first = merge(&shard_dirs[0], &shard_dirs).unwrap();
    assert_eq!((into_first.copied, into_first.in_place), (6, 2));
    assert!(
        into_first.duplicates.is_empty(),
        "{:?}",
        into_first.duplicates
    );
    assert_eq!(std::fs::read(&into_first.csv).unwrap(), table);
}
