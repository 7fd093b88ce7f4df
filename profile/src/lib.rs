//! Profiling an unmodified CUDA program (`warpscope run -- ./app`): the library that
//! `warpscope run` injects into the program's process does what this crate decides, and the
//! command reads back what it wrote.
//!
//! Why a crate apart from the injected library: everything here is decided over a [`Driver`]
//! trait and plain data, so it is tested on the emulator with real kernels — which launches are
//! profiled ([`Selection`]), how their parameters are read ([`ParamLayout`]), the probed launch in
//! place of the original with every check before it ([`Interceptor`]) — while the injected library
//! keeps only the driver's C entry points.
//!
//! Main items: [`RunConfig`] (what the command asks for, one typed file), [`Interceptor`] with
//! [`Image`] and [`Action`], [`Driver`], [`trace::LaunchRecord`] (what happened to each launch).

mod app;
mod config;
mod driver;
mod error;
mod image;
mod intercept;
mod params;
mod select;

pub use app::{AppRun, CONFIG_FILE, LIBRARY_FILE, find_library, run_app};
pub use config::{CONFIG_ENV, DEFAULT_SITES, Resolved, RunConfig};
pub use driver::{
    DEFAULT_DYNAMIC_SHARED_LIMIT, DeviceInfo, Driver, Handle, LaunchFailure, LaunchShape,
    MAX_DYNAMIC_SHARED_ATTRIBUTE,
};
pub use error::ProfileError;
pub use intercept::{Action, Image, Interceptor, ReadParams};
pub use params::ParamLayout;
pub use select::{KernelName, NameFilter, Selection};
