//! The hardware counters of a GPU sweep's runs — texture, L1 and L2 hit rates and DRAM bytes,
//! as Nsight Compute counts them — for the probed and the bare build of every run, in profiling
//! launches of their own after the timed runs: the timed launches are never profiled.
//!
//! One ncu process profiles one child (`warpscope counter-frames DIR`) that loads the volume once
//! and renders the frames of [`COUNTER_FRAMES_JSON`] in order: per shape and view the bare build,
//! then each probe mode's build. Each frame is launched twice, a warm-up and the launch whose
//! counters count, so the counters describe a warm launch at the default clocks (ncu neither
//! flushes the caches nor locks the clocks, see `ncu.rs`), as the timed frames run. The parent
//! pairs ncu's launches with the frames by order and checks each launch's block size against its
//! frame's shape; a count or a shape that does not match is an error, never a guess.

use crate::StudyError;
use crate::ncu::{NcuLaunch, run_ncu};
use crate::plan::{CommonInputs, PlannedRun};
use crate::render::{KERNEL_NAME, RenderConfig, Session};
use crate::view::{BlockShape, View};
use crate::volume::Volume;
use device::Device;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;
use trace::ProbeMode;

/// The frames of a counter pass, in the sweep folder.
pub const COUNTER_FRAMES_JSON: &str = "counter-frames.json";

/// One frame of the pass: a shape and a view in one build (`off`: the bare build).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterFrame {
    pub shape: String,
    pub view: String,
    pub mode: ProbeMode,
}

/// What the child renders: the sweep's shared inputs and the frames, in launch order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterFrames {
    pub common: CommonInputs,
    pub frames: Vec<CounterFrame>,
}

/// How the sweep runs the pass on a GPU: this program under `ncu`, within `limit`.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterPass {
    /// The `warpscope` executable, whose `counter-frames` command the child runs.
    pub program: PathBuf,
    pub ncu: PathBuf,
    pub limit: Duration,
}

/// The frames that give `runs` their counters: per shape and view, in the runs' order, the bare
/// build first, then each probe mode's build once.
pub fn frames_for<'a>(runs: impl IntoIterator<Item = &'a PlannedRun>) -> Vec<CounterFrame> {
    let mut frames: Vec<CounterFrame> = Vec::new();
    for r in runs {
        for mode in [ProbeMode::Off, r.mode] {
            let f = CounterFrame {
                shape: r.shape.clone(),
                view: r.view.clone(),
                mode,
            };
            if !frames.contains(&f) {
                frames.push(f);
            }
        }
    }
    frames
}

/// Runs the pass: writes the frames into `dir`, profiles the child under ncu, and gives each
/// frame its launch's counters.
pub fn collect(
    dir: &Path,
    common: &CommonInputs,
    frames: &[CounterFrame],
    pass: &CounterPass,
) -> Result<Vec<(CounterFrame, NcuLaunch)>, StudyError> {
    let list = CounterFrames {
        common: common.clone(),
        frames: frames.to_vec(),
    };
    trace::write_json_atomic(&dir.join(COUNTER_FRAMES_JSON), &list)?;
    let args = vec!["counter-frames".to_string(), dir.display().to_string()];
    let launches = run_ncu(&pass.ncu, KERNEL_NAME, &pass.program, &args, pass.limit)?;
    pair(frames, launches)
}

/// The launch that counts (the second of each frame's two) of each frame, checked.
fn pair(
    frames: &[CounterFrame],
    launches: Vec<NcuLaunch>,
) -> Result<Vec<(CounterFrame, NcuLaunch)>, StudyError> {
    if launches.len() != 2 * frames.len() {
        return Err(StudyError::Ncu(format!(
            "ncu profiled {} launches with counters; the {} frames of the pass launch {}",
            launches.len(),
            frames.len(),
            2 * frames.len()
        )));
    }
    frames
        .iter()
        .zip(launches.into_iter().skip(1).step_by(2))
        .map(|(f, l)| {
            let shape: BlockShape = f.shape.parse()?;
            if l.block.is_some_and(|b| b != [shape.x, shape.y, 1]) {
                return Err(StudyError::Ncu(format!(
                    "launch {} has block {:?} where frame {}/{}/{} has shape {}",
                    l.id, l.block, f.shape, f.view, f.mode, f.shape
                )));
            }
            Ok((f.clone(), l))
        })
        .collect()
}

/// The child's side: renders each frame of `dir`'s [`COUNTER_FRAMES_JSON`] on `dev`, a warm-up
/// launch and one more, writing nothing; returns how many frames it rendered.
pub fn render_counter_frames(dir: &Path, dev: &mut dyn Device) -> Result<usize, StudyError> {
    let path = dir.join(COUNTER_FRAMES_JSON);
    let text = std::fs::read(&path).map_err(|e| StudyError::io(&path, e))?;
    let list: CounterFrames = serde_json::from_slice(&text).map_err(|e| StudyError::BadFile {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    let c = &list.common;
    let volume: Volume = c.volume.load()?;
    let mut session = Session::new(dev, &volume);
    for f in &list.frames {
        let cfg = RenderConfig {
            volume: c.volume.clone(),
            params: c.params,
            shape: f.shape.parse()?,
            view: f.view.parse::<View>()?,
            mode: f.mode,
            trace_warps: c.trace_warps.parse().map_err(|reason| StudyError::Config {
                field: "trace_warps",
                value: c.trace_warps.clone(),
                reason,
            })?,
            time_warps: c.time_warps.parse().map_err(|reason| StudyError::Config {
                field: "time_warps",
                value: c.time_warps.clone(),
                reason,
            })?,
            time_accesses: c
                .time_accesses
                .parse()
                .map_err(|reason| StudyError::Config {
                    field: "time_accesses",
                    value: c.time_accesses.clone(),
                    reason,
                })?,
            slots_per_warp: c.slots_per_warp,
            frames: 1,
            measure_overhead: false,
            compare_reference: false,
            ncu: None,
            emu_config: Some(c.emu_config.clone()),
        };
        session.counter_frame(&cfg)?;
    }
    Ok(list.frames.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(shape: &str, view: &str, mode: ProbeMode) -> PlannedRun {
        PlannedRun {
            index: 0,
            name: format!("{shape}_{view}_{mode}"),
            shape: shape.into(),
            view: view.into(),
            mode,
            hash: String::new(),
        }
    }

    fn launch(id: u64, block: [u32; 3], hit: f64) -> NcuLaunch {
        NcuLaunch {
            id,
            kernel: KERNEL_NAME.into(),
            block: Some(block),
            counters: trace::HardwareCounters {
                tex_hit_rate: Some(hit),
                ..Default::default()
            },
            tex_from_l1: false,
        }
    }

    #[test]
    fn each_shape_and_view_has_its_bare_frame_first_and_each_build_once() {
        let runs = [
            run("16x8", "0,0,0", ProbeMode::Naive),
            run("16x8", "0,0,0", ProbeMode::Fence),
            run("16x8", "0,0,0", ProbeMode::Off),
            run("1x128", "0,0,0", ProbeMode::Fence),
        ];
        let f = frames_for(&runs);
        let got: Vec<(&str, ProbeMode)> = f.iter().map(|f| (f.shape.as_str(), f.mode)).collect();
        assert_eq!(
            got,
            [
                ("16x8", ProbeMode::Off),
                ("16x8", ProbeMode::Naive),
                ("16x8", ProbeMode::Fence),
                ("1x128", ProbeMode::Off),
                ("1x128", ProbeMode::Fence),
            ]
        );
    }

    #[test]
    fn the_second_launch_of_each_frame_counts_and_shapes_are_checked() {
        let frames = frames_for(&[run("16x8", "0,0,0", ProbeMode::Fence)]);
        let launches = vec![
            launch(0, [16, 8, 1], 0.1),
            launch(1, [16, 8, 1], 0.6),
            launch(2, [16, 8, 1], 0.2),
            launch(3, [16, 8, 1], 0.7),
        ];
        let p = pair(&frames, launches.clone()).unwrap();
        assert_eq!(p[0].0.mode, ProbeMode::Off);
        assert_eq!(p[0].1.counters.tex_hit_rate, Some(0.6));
        assert_eq!(p[1].1.counters.tex_hit_rate, Some(0.7));
        let e = pair(&frames, launches[..3].to_vec())
            .unwrap_err()
            .to_string();
        assert!(e.contains("3 launches"), "{e}");
        let mut wrong = launches;
        wrong[3].block = Some([1, 128, 1]);
        let e = pair(&frames, wrong).unwrap_err().to_string();
        assert!(e.contains("shape 16x8"), "{e}");
    }
}
