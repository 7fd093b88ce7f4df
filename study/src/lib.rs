//! The volume-rendering study: the paper's experiment (Kanda et al., IPSJ 2011, §5) as warpscope's
//! main job.
//!
//! Why a crate: the experiment has many parts that must agree — the kernel's host contract
//! (`kernels/volume_render.cu`), the volumes, the view matrix, an independent CPU reference to check
//! the image, and the orchestration of renders and sweeps — and the CLI only turns arguments into
//! the plain config structs defined here.
//!
//! Main types: [`Volume`] / [`VolumeSource`] (procedural or raw volumes), [`View`] and
//! [`BlockShape`] (the experiment's axes), [`RenderParams`] and [`render_reference`] (the CPU
//! reference), [`parse_launches`] (Nsight Compute CSV), [`RenderConfig`] / [`render`] (one
//! frame on a `device::Device`, written to a run folder), [`SweepConfig`] / [`sweep`] /
//! [`demo_config`] (the cross product of shapes × views × modes, and `sweep.csv`), [`SweepPlan`]
//! / [`Shard`] / [`merge`] (the sweep's runs and their hashes, one part of them, shards joined
//! into one sweep) and [`Scale`]
//! (the paper's geometry, and the smaller one that keeps its sampling regime).
//!
//! ```
//! use study::{render_reference, BlockShape, RenderParams, View, Volume, VolumeKind};
//! let vol = Volume::generate(VolumeKind::Shell, [16, 16, 16], 0).unwrap();
//! let view: View = "0,0,0".parse().unwrap();
//! let img = render_reference(&vol, &view, &RenderParams::with_size(32, 32));
//! assert_eq!(img.rgba.len(), 32 * 32 * 4);
//! assert_eq!(BlockShape::PAPER[0].name(), "128x1");
//! ```

mod complete;
mod config;
mod counters;
mod error;
mod image;
mod lock;
mod merge;
mod ncu;
mod params;
mod plan;
mod reference;
mod render;
mod reuse_study;
mod roofline_bench;
mod scale;
mod sweep;
mod view;
mod volume;

pub use complete::{COMPLETE_JSON, MarkedFile, RunMarker, RunState, run_state};
pub use config::{SweepConfig, demo_config};
pub use counters::{
    COUNTER_FRAMES_JSON, CounterFrame, CounterFrames, CounterPass, frames_for,
    render_counter_frames,
};
pub use error::StudyError;
pub use image::{Image, ImageDiff};
pub use lock::{FolderLock, LOCK_FILE};
pub use merge::{MergeSummary, merge};
pub use ncu::{
    DRAM_BYTES_METRIC, L1_HIT_RATE_METRIC, L2_HIT_RATE_METRIC, NCU_LIMIT, NcuLaunch,
    TEX_HIT_RATE_METRIC, mean_counters, ncu_args, ncu_path, parse_launches, run_ncu,
};
pub use params::{MAX_STEPS, OPACITY_THRESHOLD, RenderParams, TRANSFER_FUNCTION, TSTEP};
pub use plan::{
    CommonInputs, PLAN_FORMAT, PLAN_JSON, PLAN_ORDER, PlanInputs, PlannedRun, Shard, SweepPlan,
};
pub use reference::{render_pixel, render_reference, sample_transfer, sample_volume};
pub use render::{
    KERNEL_NAME, KERNEL_SOURCE, NcuProfile, RenderConfig, RenderResult, VIEW_MATRIX_SYMBOL,
    default_trace_warps, render, render_volume, sites, transfer_texture, volume_texture,
};
pub use reuse_study::{HitRow, ReuseRow, ReuseStudyConfig, ReuseStudySummary, reuse_study};
pub use roofline_bench::{BenchOptions, BenchResult, roofline_command, run_roofline_benches};
pub use scale::{Geometry, Scale};
pub use sweep::{SweepSummary, open_sweep_folder, sweep, sweep_shard, write_csv};
pub use view::{
    BlockShape, CAMERA_DISTANCE, MAX_THREADS_PER_BLOCK, View, parse_shapes, parse_views,
};
pub use volume::{
    MAX_EDGE, RawDType, Volume, VolumeKind, VolumeSource, check_fits, host_available_bytes,
    parse_dims,
};
