//! The roofline room: the model (`model.rs`: roofs, ridge points, a run's point per level, the
//! per-cycle peaks of an emulator configuration), the throughput bound of the memory hierarchy
//! (`bound.rs`), and the report section and measured ceilings (`report.rs`).
//!
//! The GPU both are computed for is the emulator's own configuration type,
//! [`emulator::GpuConfig`], read from a run's effective `config.toml` with the emulator's loader
//! (which validates it), so a configuration has one definition. `bound` reads the model's
//! [`RunCounters`] and per-cycle peaks; the model reads nothing of `bound`, so the files import in
//! one direction.

pub(crate) mod bound;
pub(crate) mod model;
pub(crate) mod report;

pub use bound::{
    Component, ComponentKind, ComponentUse, Edge, Hierarchy, RunBound, bound_of, busy_cycles,
    run_bound,
};
pub use model::{
    Bound, Ceilings, Level, RooflinePoint, RunCounters, RunRoofline, WorkKind, attainable,
    ridge_point, roofline_point, run_roofline,
};
pub(crate) use report::section;
pub use report::{BenchMeasurement, MeasuredCeilings, write_ceilings};

/// A small made-up GPU for the tests (not a preset): gtx480's configuration with 2 SMs of 4
/// schedulers issuing FP32 and integer work every 2 cycles, a 32-KiB L1 shared with the texture
/// path, a 256-KiB L2 of 4 slices at 32 B/cycle each, DRAM at 64 B/cycle, at 1 GHz; the
/// configuration of [`Hierarchy::example`].
#[cfg(test)]
pub(crate) fn example_gpu() -> emulator::GpuConfig {
    let mut c = emulator::GpuConfig::preset("gtx480").unwrap();
    c.name = "example".into();
    c.clock_mhz = 1000.0;
    c.sm.count = 2;
    c.sm.warp_schedulers = 4;
    c.pipeline.int_issue_cycles = 2;
    c.pipeline.fp32_issue_cycles = 2;
    c.l1.size_bytes = 32768;
    c.l1.line_bytes = 128;
    c.l1.sector_bytes = 32;
    c.l1.ways = 4;
    c.texture.unified_with_l1 = true;
    c.texture.cache = None;
    c.l2.size_bytes = 262144;
    c.l2.slices = 4;
    c.l2.line_bytes = 128;
    c.l2.sector_bytes = 32;
    c.l2.ways = 8;
    c.l2.bandwidth_bytes_per_cycle = 32.0;
    c.dram.bandwidth_bytes_per_cycle = 64.0;
    c.validate("example").unwrap();
    c
}
