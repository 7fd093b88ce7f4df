/// What can go wrong in a probed launch, beyond what the device says: a launch the log cannot
/// describe, a log that does not decode. Each variant carries what the user needs to act.
#[derive(Debug, thiserror::Error)]
pub enum InstrumentError {
    #[error(transparent)]
    Device(#[from] device::DeviceError),
    #[error("kernel {kernel:?}: argument {index}: {what}")]
    Arg {
        kernel: String,
        index: usize,
        what: String,
    },
    #[error(
        "not enough device memory for {what}: {needed_bytes} bytes needed, {available_bytes} available"
    )]
    OutOfMemory {
        what: String,
        needed_bytes: u64,
        available_bytes: u64,
    },
    #[error("probe log of kernel {kernel:?} is invalid at byte {offset}: {what}")]
    BadLog {
        kernel: String,
        offset: usize,
        what: String,
    },
    #[error("{what}: {reason}")]
    Launch { what: String, reason: String },
}
