//! Running probed kernels on a device and getting their records back.
//!
//! Why this crate: the CUDA driver and the emulator must look the same to everything after the
//! launch (docs/ARCHITECTURE.md), and the probe log must be laid out, initialised and decoded in exactly one
//! place, in step with `kernels/warpscope.cuh`.
//!
//! Main items: the [`Device`] trait with [`CudaDevice`] (cudarc, dynamic loading: no link-time
//! CUDA) and [`EmuDevice`]; [`open_device`] for `--backend gpu|emu|auto`; [`launch_probed`], which
//! gives the probes their shared-memory state, launches, reports what that did to occupancy, and
//! decodes the log into a `trace::Trace` ([`decode`] checks magic, sizes, sites and reports
//! dropped records); [`rewrite`], which puts the same probes into a kernel's PTX without
//! editing its source.
//!
//! ```no_run
//! use instrument::{open_device, BackendChoice};
//! let config = emulator::GpuConfig::preset("gtx480").unwrap();
//! let (dev, note) = open_device(BackendChoice::Auto, config, Default::default()).unwrap();
//! println!("running on {} ({note})", dev.name());
//! ```

mod cuda;
mod device;
mod emu;
mod error;
mod log;
mod probe;
pub mod rewrite;

pub use cuda::{CudaDevice, UNGATED_ENV};
pub use device::{
    Arg, Backend, BackendChoice, DevBuf, Device, DeviceProperties, LaunchConfig, LaunchOutcome,
    ModuleId, sim_warp_instructions_per_second,
};
pub use emu::{DEFAULT_MAX_WARP_INSTRUCTIONS, EmuDevice, EmuLimits, host_available_bytes};
pub use error::InstrumentError;
pub use log::{LogShape, TraceWarps, decode, initial_log};
pub use probe::{Probe, ProbedLaunch, launch_probed};

/// Opens the backend the user chose. `Auto` takes the GPU when one is usable and otherwise the
/// emulator; the returned note says which and why (e.g. "no CUDA driver").
pub fn open_device(
    choice: BackendChoice,
    emu_config: emulator::GpuConfig,
    limits: EmuLimits,
) -> Result<(Box<dyn Device>, String), InstrumentError> {
    let (gpu, why) = choose_backend(choice)?;
    let dev: Box<dyn Device> = match gpu {
        Some(gpu) => Box::new(gpu),
        None => Box::new(EmuDevice::new(emu_config).with_limits(limits)),
    };
    Ok((dev, why))
}

/// The backend `choice` means on this machine, with the reason in words: the GPU (opened) for
/// `gpu`, an error without one; `None` (the emulator) for `emu`; for `auto` the GPU when one
/// opens, else the emulator. [`open_device`] and the demo decide by it alike.
pub fn choose_backend(
    choice: BackendChoice,
) -> Result<(Option<CudaDevice>, String), InstrumentError> {
    match choice {
        BackendChoice::Emu => Ok((None, "emulator (--backend emu)".into())),
        BackendChoice::Gpu => Ok((Some(CudaDevice::open(0)?), "GPU (--backend gpu)".into())),
        BackendChoice::Auto => match CudaDevice::open(0) {
            Ok(dev) => Ok((Some(dev), "GPU found".into())),
            Err(why) => Ok((None, format!("emulator, because {why}"))),
        },
    }
}
