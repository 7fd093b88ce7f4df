//! A sweep's configuration: what is crossed (block shapes × viewpoints × probe modes) and what
//! every run shares; and the demo's.

use crate::StudyError;
use crate::params::RenderParams;
use crate::render::RenderConfig;
use crate::scale::Scale;
use crate::view::{BlockShape, View};
use crate::volume::{VolumeKind, VolumeSource};
use device::BackendChoice;
use instrument::{AccessPeriod, WarpSelection};
use std::path::{Path, PathBuf};
use trace::ProbeMode;

/// A sweep: everything of a [`RenderConfig`] except shape, view and mode, which are crossed.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepConfig {
    pub out_dir: PathBuf,
    pub backend: BackendChoice,
    /// The emulator configuration (each parallel run gets its own emulator with it).
    pub emu_config: emulator::GpuConfig,
    pub volume: VolumeSource,
    pub params: RenderParams,
    pub shapes: Vec<BlockShape>,
    pub views: Vec<View>,
    pub modes: Vec<ProbeMode>,
    /// Warps that keep per-access records; they are timed too.
    pub trace_warps: WarpSelection,
    /// Warps that time their accesses; the others run the bare path.
    pub time_warps: WarpSelection,
    /// Which of its accesses a timed warp times.
    pub time_accesses: AccessPeriod,
    pub slots_per_warp: u32,
    /// Timed launches per run on a GPU.
    pub frames: u32,
    pub measure_overhead: bool,
    /// The emulator's runaway guards per launch.
    pub limits: device::EmuLimits,
    /// On a GPU: the pass that reads each run's hardware counters (`None`: no counters).
    pub counters: Option<crate::CounterPass>,
}

/// The demo at `scale` ([`Scale`]): a molecule-like volume and image of that geometry, the GTX 480
/// preset (the paper's GPU), the paper's eight shapes × its two views × modes naive and fence.
pub fn demo_config(out_dir: &Path, scale: Scale) -> Result<SweepConfig, StudyError> {
    let emu_config = emulator::GpuConfig::preset("gtx480").map_err(|e| StudyError::Config {
        field: "preset",
        value: "gtx480".into(),
        reason: e.to_string(),
    })?;
    let geometry = scale.geometry();
    Ok(SweepConfig {
        out_dir: out_dir.to_path_buf(),
        backend: BackendChoice::Emu,
        emu_config,
        volume: geometry.volume(VolumeKind::Blobs, 1),
        params: geometry.params(),
        shapes: BlockShape::PAPER.to_vec(),
        views: View::PAPER.to_vec(),
        modes: vec![ProbeMode::Naive, ProbeMode::Fence],
        trace_warps: crate::render::default_trace_warps(),
        time_warps: WarpSelection::all(),
        time_accesses: scale.time_accesses(),
        slots_per_warp: 1024,
        frames: 10,
        measure_overhead: true,
        limits: device::EmuLimits::default(),
        counters: None,
    })
}

impl SweepConfig {
    /// The render of one cell of the cross product.
    pub fn run_config(&self, shape: BlockShape, view: View, mode: ProbeMode) -> RenderConfig {
        RenderConfig {
            volume: self.volume.clone(),
            params: self.params,
            shape,
            view,
            mode,
            trace_warps: self.trace_warps.clone(),
            time_warps: self.time_warps.clone(),
            time_accesses: self.time_accesses,
            slots_per_warp: self.slots_per_warp,
            frames: self.frames,
            measure_overhead: self.measure_overhead,
            compare_reference: false,
            ncu: None,
            emu_config: Some(self.emu_config.clone()),
        }
    }

    /// Every run's config, in table order (shapes × views × modes).
    pub fn runs(&self) -> Vec<RenderConfig> {
        let mut v = Vec::new();
        for &shape in &self.shapes {
            for &view in &self.views {
                for &mode in &self.modes {
                    v.push(self.run_config(shape, view, mode));
                }
            }
        }
        v
    }
}
