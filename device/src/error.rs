/// What can go wrong between choosing a device and a launch's end. Each variant carries what the
/// user needs to act: the kernel, the sizes, what to install.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error(
        "no CUDA driver: libcuda could not be loaded. Install the NVIDIA driver, or use --backend emu to run on the emulator"
    )]
    NoDriver,
    #[error("no usable CUDA GPU: {0}. Use --backend emu to run on the emulator")]
    NoGpu(String),
    #[error("CUDA error in {call}: {message}")]
    Cuda { call: &'static str, message: String },
    #[error(transparent)]
    Emulator(#[from] emulator::EmuError),
    #[error("kernel {kernel:?} not found in the module (it has: {available})")]
    NoSuchKernel { kernel: String, available: String },
    #[error(
        "not enough device memory for {what}: {needed_bytes} bytes needed, {available_bytes} available"
    )]
    OutOfMemory {
        what: String,
        needed_bytes: u64,
        available_bytes: u64,
    },
    #[error("{what}: {reason}")]
    Launch { what: String, reason: String },
}
