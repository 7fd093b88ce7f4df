//! The probes: how a kernel's loads are timed, and what their log says.
//!
//! Why this crate: the probe log must be laid out, initialised and decoded in exactly one place,
//! in step with `kernels/warpscope.cuh`, and the probes must be the same whether the header's
//! macros or the PTX rewriter put them into a kernel. It runs on any [`device::Device`]; the
//! devices know nothing of probes.
//!
//! Main items: [`launch_probed`], which gives the probes their shared-memory state, fills in the
//! `ws::Log` argument ([`ProbedArg::Log`]), launches, reports what that did to occupancy, and
//! decodes the log into a `trace::Trace` ([`decode`] checks magic, sizes, sites and reports
//! dropped records); [`WarpSelection`], which warps time their accesses and which keep every
//! access; [`rewrite`], which puts the same probes into a kernel's PTX without editing its
//! source; [`ground_truth`], the probes' readings beside the emulator's true access times.

mod error;
mod layout;
mod log;
mod probe;
pub mod rewrite;
mod selection;
mod truth;

pub use error::InstrumentError;
pub use layout::{LOG_LAYOUT, LayoutField, LayoutStruct};
pub use log::{LogShape, decode, initial_log};
pub use probe::{Probe, ProbePlan, ProbedArg, ProbedLaunch, launch_probed};
pub use selection::{AccessPeriod, WarpSelection, needs_sampled_build};
pub use truth::ground_truth;
