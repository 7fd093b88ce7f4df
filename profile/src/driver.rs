//! What the interceptor needs from the CUDA driver of the program's context: the few calls that
//! load, launch and read back an instrumented kernel beside the program's own. The injected
//! library implements it over the driver's real entry points; tests implement it over the
//! emulator.

/// A driver handle: a `CUmodule`, `CUlibrary`, `CUfunction`, `CUkernel` or `CUstream` (pointers
/// in the C API, compared and stored, never dereferenced here).
pub type Handle = u64;

/// A launch's shape as the program asked for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchShape {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory per block.
    pub shared_bytes: u32,
    pub stream: Handle,
}

/// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`: dynamic shared memory above 48 KiB must be
/// allowed per function.
pub const MAX_DYNAMIC_SHARED_ATTRIBUTE: i32 = 8;

/// Dynamic shared memory a launch may use without [`MAX_DYNAMIC_SHARED_ATTRIBUTE`].
pub const DEFAULT_DYNAMIC_SHARED_LIMIT: u32 = 48 << 10;

/// The device the program's context runs on.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceInfo {
    pub name: String,
    /// SM clock (the device's maximum), which turns the probes' cycles into time.
    pub clock_mhz: f64,
    /// Compute capability × 10 (`90` for 9.0): the newest PTX target its driver can run.
    pub arch: u32,
}

/// Why a launch the interceptor made did not give a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaunchFailure {
    /// The driver refused the launch: nothing ran, and the original can still be launched.
    NotLaunched(String),
    /// The kernel ran and failed (a fault is sticky for the context).
    Failed(String),
}

/// The driver calls of an instrumented launch. Errors are the driver's words.
pub trait Driver {
    fn device(&mut self) -> Result<DeviceInfo, String>;
    /// Registers per thread of one of the program's own functions.
    fn registers(&mut self, function: Handle) -> Result<u32, String>;
    /// Loads PTX into the program's context (the driver compiles it); the error carries the
    /// compiler's log.
    fn load_ptx(&mut self, ptx: &str) -> Result<Handle, String>;
    fn function(&mut self, module: Handle, name: &str) -> Result<Handle, String>;
    /// Sets a function attribute (`CUfunction_attribute`: the program's own settings carried
    /// over, and the dynamic shared memory the probes need).
    fn set_attribute(&mut self, function: Handle, attribute: i32, value: i32)
    -> Result<(), String>;
    fn alloc(&mut self, bytes: u64) -> Result<u64, String>;
    fn free(&mut self, ptr: u64);
    fn upload(&mut self, ptr: u64, data: &[u8]) -> Result<(), String>;
    fn download(&mut self, ptr: u64, out: &mut [u8]) -> Result<(), String>;
    /// Launches `function` on the shape's stream with `params` (one byte string per parameter),
    /// waits for it, and says how long it ran in milliseconds.
    fn launch_timed(
        &mut self,
        function: Handle,
        shape: &LaunchShape,
        params: &[Vec<u8>],
    ) -> Result<f64, LaunchFailure>;
    /// Whether work on `stream` is being captured into a graph (nothing may be launched and
    /// waited for on it then).
    fn capturing(&mut self, stream: Handle) -> bool;
}
