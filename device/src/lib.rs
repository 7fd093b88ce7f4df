//! What warpscope needs from a GPU, and its two implementations: the CUDA driver and the emulator.
//!
//! Why a crate of its own: everything after a launch — the probes' log, the trace, the exports,
//! the analysis — is one code path whichever backend ran the kernel, so the backends must look
//! the same from above. This crate knows nothing of probes: a probed launch is an ordinary launch
//! with one more argument and more dynamic shared memory (the `instrument` crate builds both).
//!
//! Main items: the [`Device`] trait with [`CudaDevice`] (cudarc, dynamic loading: no link-time
//! CUDA) and [`EmuDevice`]; [`open_device`] for `--backend gpu|emu|auto`; [`Arg`],
//! [`LaunchConfig`] and [`LaunchOutcome`], what a launch takes and gives.
//!
//! ```no_run
//! use device::{open_device, BackendChoice};
//! let config = emulator::GpuConfig::preset("gtx480").unwrap();
//! let (dev, note) = open_device(BackendChoice::Auto, config, Default::default()).unwrap();
//! println!("running on {} ({note})", dev.name());
//! ```

mod api;
mod cuda;
mod emu;
mod error;

pub use api::{
    Arg, Backend, BackendChoice, DevBuf, Device, DeviceProperties, LaunchConfig, LaunchOutcome,
    ModuleId, sim_warp_instructions_per_second, thread_seconds,
};
pub use cuda::{CudaDevice, UNGATED_ENV};
pub use emu::{DEFAULT_MAX_WARP_INSTRUCTIONS, EmuDevice, EmuLimits, host_available_bytes};
pub use error::DeviceError;

/// Opens the backend the user chose. `Auto` takes the GPU when one is usable and otherwise the
/// emulator; the returned note says which and why (e.g. "no CUDA driver").
pub fn open_device(
    choice: BackendChoice,
    emu_config: emulator::GpuConfig,
    limits: EmuLimits,
) -> Result<(Box<dyn Device>, String), DeviceError> {
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
pub fn choose_backend(choice: BackendChoice) -> Result<(Option<CudaDevice>, String), DeviceError> {
    match choice {
        BackendChoice::Emu => Ok((None, "emulator (--backend emu)".into())),
        BackendChoice::Gpu => Ok((Some(CudaDevice::open(0)?), "GPU (--backend gpu)".into())),
        BackendChoice::Auto => match CudaDevice::open(0) {
            Ok(dev) => Ok((Some(dev), "GPU found".into())),
            Err(why) => Ok((None, format!("emulator, because {why}"))),
        },
    }
}
