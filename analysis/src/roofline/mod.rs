//! The roofline room: the model (`model.rs`: roofs, ridge points, a run's point per level), the
//! throughput bound of the memory hierarchy (`bound.rs`), the GPU both are computed for
//! (`spec.rs`), and the report section and measured ceilings (`report.rs`).
//!
//! `model` and `bound` both read `spec`; `bound` reads the model's [`RunCounters`], the model
//! reads nothing of `bound`, so the files import in one direction.

pub(crate) mod bound;
pub(crate) mod model;
pub(crate) mod report;
pub(crate) mod spec;

pub use bound::{
    Component, ComponentKind, ComponentUse, Edge, Hierarchy, RunBound, bound_of, busy_cycles,
    run_bound,
};
pub use model::{
    Bound, Ceilings, Level, RooflinePoint, RunCounters, RunRoofline, WorkKind, attainable,
    ridge_point, roofline_point, run_roofline,
};
pub use report::{BenchMeasurement, MeasuredCeilings, write_ceilings};
pub use spec::{CacheSpec, DramSpec, GpuSpec, L2Spec, PipelineSpec, SmSpec, TextureSpec};
