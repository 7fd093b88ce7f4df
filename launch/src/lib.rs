//! Runs any kernel — or a pipeline of kernels sharing buffers — from a launch spec (TOML) on any
//! device, with the probes the header put in, with probes the PTX rewriter puts in on the fly, or
//! without probes; and measures what the probes cost by running the same launches bare.
//!
//! Why a library: `warpscope launch`, the GPU check and `warpscope run` all need to check a
//! launch against its PTX before anything reaches the device, build it with or without probes,
//! and write the same run folder; the binary only parses arguments and prints.
//!
//! Main items: [`run`] with [`LaunchOptions`] (a spec in, a run folder and its
//! [`trace::RunMetrics`] out); [`Spec`] and [`load_spec`], the spec's one definition and its
//! validation (errors name the file and the field); [`instrument_source`], a `.cu` or `.ptx`
//! with probes put in; [`LaunchError`].
//!
//! ```no_run
//! let opts = launch::LaunchOptions {
//!     spec: "histogram.toml".into(),
//!     from_dir: None,
//!     mode: None,
//!     instrument: Some(trace::ProbeMode::Auto),
//!     trace_warps: instrument::WarpSelection::all(),
//!     time_warps: instrument::WarpSelection::all(),
//!     time_accesses: instrument::AccessPeriod::ALL,
//!     out: "launch-out".into(),
//!     cache: launch::Cache::Default,
//!     measure_overhead: true,
//!     backend: device::BackendChoice::Emu,
//!     emu_config: emulator::GpuConfig::preset("gtx480")?,
//!     limits: device::EmuLimits::default(),
//! };
//! let metrics = launch::run(&opts, &|note| eprintln!("{note}"))?;
//! println!("{} records, overhead {:?}", metrics.records, metrics.overhead);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod run;
mod source;
mod spec;

pub use error::LaunchError;
pub use run::{LaunchOptions, run};
pub use source::{Cache, instrument_source};
pub use spec::{
    ArgPlan, BufferPlan, Elem, LaunchPlan, SPEC_EXAMPLE, SiteSpec, Spec, load as load_spec,
    schema as spec_schema,
};
