//! The `Device` trait: what warpscope needs from a GPU, implemented by the CUDA driver
//! ([`crate::CudaDevice`]) and by the emulator ([`crate::EmuDevice`]), so that everything after
//! the launch is one code path; and what a launch takes ([`Arg`], [`LaunchConfig`]) and gives
//! ([`LaunchOutcome`]).

use crate::DeviceError;
use emulator::TextureDesc;
use std::fmt;
use std::str::FromStr;
use trace::Dim3;

/// Which backend ran a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Gpu,
    Emu,
}

impl Backend {
    /// `gpu` or `emu`, as written in run.json and sweep.csv.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Gpu => "gpu",
            Backend::Emu => "emu",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the user asked for with `--backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    Gpu,
    Emu,
    /// The GPU if one is usable, else the emulator.
    #[default]
    Auto,
}

impl FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "gpu" => Ok(BackendChoice::Gpu),
            "emu" => Ok(BackendChoice::Emu),
            "auto" => Ok(BackendChoice::Auto),
            _ => Err(format!("unknown backend {s:?}; expected gpu, emu or auto")),
        }
    }
}

/// A device allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevBuf {
    pub addr: u64,
    pub bytes: u64,
}

/// A module loaded on a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModuleId(pub usize);

/// Grid, block and dynamic shared memory of a launch; `regs_per_thread` (from ptxas) feeds the
/// emulator's occupancy calculation (the GPU driver knows it itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: Dim3,
    pub block: Dim3,
    pub dynamic_shared_bytes: u32,
    pub regs_per_thread: u32,
}

/// A kernel argument.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    Buf(DevBuf),
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F32(f32),
    F64(f64),
    /// A texture object handle (`cudaTextureObject_t`).
    Tex(u64),
    /// Raw bytes of a by-value struct parameter.
    Bytes(Vec<u8>),
}

impl Arg {
    /// The little-endian bytes the kernel receives.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Arg::Buf(b) => b.addr.to_le_bytes().to_vec(),
            Arg::U32(v) => v.to_le_bytes().to_vec(),
            Arg::I32(v) => v.to_le_bytes().to_vec(),
            Arg::U64(v) | Arg::Tex(v) => v.to_le_bytes().to_vec(),
            Arg::I64(v) => v.to_le_bytes().to_vec(),
            Arg::F32(v) => v.to_le_bytes().to_vec(),
            Arg::F64(v) => v.to_le_bytes().to_vec(),
            Arg::Bytes(b) => b.clone(),
        }
    }
}

/// What a launch measured.
#[derive(Debug, Clone)]
pub struct LaunchOutcome {
    /// Kernel time: CUDA events on a GPU, simulated cycles ÷ clock on the emulator.
    pub kernel_ms: f64,
    /// Simulated cycles (emulator only).
    pub cycles: Option<u64>,
    /// The emulator's counters (emulator only).
    pub stats: Option<emulator::LaunchStats>,
    /// Host seconds the launch took.
    pub wall_seconds: f64,
    /// The recorded warps' loads, each with its issue and data-return cycle (emulator only,
    /// when [`Device::record_loads`] asked for them).
    pub loads: Option<Vec<emulator::LoadEvent>>,
    /// How each of the emulator's host threads spent the launch, the coordinating thread first
    /// (empty on a GPU).
    pub thread_seconds: Vec<trace::ThreadSeconds>,
}

/// Simulated warp instructions per host second over the emulator launches among `outcomes`
/// (their instructions over their launch seconds); `None` without one, or on a GPU.
pub fn sim_warp_instructions_per_second<'a>(
    outcomes: impl IntoIterator<Item = &'a LaunchOutcome>,
) -> Option<f64> {
    let (mut instructions, mut seconds) = (0u64, 0.0f64);
    for o in outcomes {
        if let Some(s) = &o.stats {
            instructions += s.warp_instructions;
            seconds += o.wall_seconds;
        }
    }
    (seconds > 0.0).then(|| instructions as f64 / seconds)
}

/// The emulator launches' host threads among `outcomes`, each thread's seconds summed over
/// them thread by thread (the coordinating thread first, then the others from the busiest
/// down); empty without an emulator launch.
pub fn thread_seconds<'a>(
    outcomes: impl IntoIterator<Item = &'a LaunchOutcome>,
) -> Vec<trace::ThreadSeconds> {
    let mut sum: Vec<trace::ThreadSeconds> = Vec::new();
    for o in outcomes {
        if sum.len() < o.thread_seconds.len() {
            sum.resize(o.thread_seconds.len(), trace::ThreadSeconds::default());
        }
        for (s, &t) in sum.iter_mut().zip(&o.thread_seconds) {
            *s += t;
        }
    }
    sum
}

/// What a device says about itself, for reports: every field a backend cannot tell is `None`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeviceProperties {
    /// `gpu` or `emu`.
    pub backend: String,
    pub name: String,
    /// SM clock in MHz (the GPU's maximum, the preset's on the emulator).
    pub clock_mhz: f64,
    /// `9.0` for an H100.
    pub compute_capability: Option<String>,
    /// The CUDA version the driver supports, `13.0` (cuDriverGetVersion).
    pub driver_cuda_version: Option<String>,
    pub sm_count: Option<u32>,
    pub l2_bytes: Option<u64>,
    pub memory_clock_mhz: Option<f64>,
    pub memory_bus_bits: Option<u32>,
    pub total_memory_bytes: Option<u64>,
    /// The context's L2 fetch granularity limit in bytes (`cudaLimitMaxL2FetchGranularity`):
    /// how much the L2 may fetch from DRAM for one missed 32-byte sector, which decides the DRAM
    /// bytes a scattered-read kernel such as the volume renderer moves.
    #[serde(default)]
    pub l2_fetch_granularity_bytes: Option<u32>,
}

impl DeviceProperties {
    /// Name, backend and clock only.
    pub fn basic(backend: Backend, name: String, clock_mhz: f64) -> Self {
        DeviceProperties {
            backend: backend.name().into(),
            name,
            clock_mhz,
            compute_capability: None,
            driver_cuda_version: None,
            sm_count: None,
            l2_bytes: None,
            memory_clock_mhz: None,
            memory_bus_bits: None,
            total_memory_bytes: None,
            l2_fetch_granularity_bytes: None,
        }
    }
}

/// What any backend must provide. Object safe: callers hold a `Box<dyn Device>`.
pub trait Device {
    fn backend(&self) -> Backend;
    /// GPU name, or the emulator preset.
    fn name(&self) -> String;
    /// SM clock in MHz.
    fn clock_mhz(&self) -> f64;
    /// Name, clock, SM count, L2 size, … as far as the backend knows them.
    fn properties(&self) -> DeviceProperties {
        DeviceProperties::basic(self.backend(), self.name(), self.clock_mhz())
    }
    /// Free device memory in bytes.
    fn free_memory_bytes(&self) -> u64;
    fn alloc(&mut self, bytes: u64) -> Result<DevBuf, DeviceError>;
    /// Releases an allocation (a probed launch frees its log after decoding it).
    fn free(&mut self, buf: &DevBuf) -> Result<(), DeviceError>;
    fn upload(&mut self, buf: &DevBuf, data: &[u8]) -> Result<(), DeviceError>;
    fn download(&mut self, buf: &DevBuf, out: &mut [u8]) -> Result<(), DeviceError>;
    /// Creates a texture object over `data` (laid out x fastest) and returns its handle.
    fn create_texture(&mut self, desc: &TextureDesc, data: &[u8]) -> Result<u64, DeviceError>;
    /// Loads a module: the emulator runs `ptx`; the GPU loads `fatbin` if given, else JITs `ptx`.
    fn load(&mut self, ptx: &str, fatbin: Option<&[u8]>) -> Result<ModuleId, DeviceError>;
    /// Writes a module-scope `__constant__`/`__device__` variable.
    fn write_symbol(&mut self, m: ModuleId, name: &str, data: &[u8]) -> Result<(), DeviceError>;
    /// Resident blocks per SM for this kernel and configuration.
    fn occupancy(
        &mut self,
        m: ModuleId,
        kernel: &str,
        cfg: &LaunchConfig,
    ) -> Result<u32, DeviceError>;
    fn launch(
        &mut self,
        m: ModuleId,
        kernel: &str,
        cfg: &LaunchConfig,
        args: &[Arg],
    ) -> Result<LaunchOutcome, DeviceError>;
    /// Returns the device to the state it had when opened — no modules, buffers or textures,
    /// cold caches — where the backend can, and says whether it did. The emulator can, so a
    /// launch after it gives the same result whatever ran before; a GPU cannot (its caches and
    /// clocks are its own), and keeps everything.
    fn start_clean(&mut self) -> bool {
        false
    }
    /// The SASS target whose ptxas register counts set a kernel's occupancy here: the
    /// emulator's preset's (`sm.sass_arch`); `None` on a GPU, whose driver runs the kernel's
    /// own, and on a preset that names none (sm_75's counts then).
    fn register_target(&self) -> Option<u32> {
        None
    }
    /// A second device that gives what this one gives after [`Device::start_clean`], for a
    /// frame that can run beside this device's own: the emulator makes a new emulator with the
    /// same configuration and guards; a GPU is one piece of hardware, and has none.
    fn twin(&self) -> Option<crate::EmuDevice> {
        None
    }

    /// Asks later launches for the loads of the given warps (indices in the grid), each with
    /// its issue and data-return cycle: the ground truth a probe's reading is compared with.
    /// Only a device that decides when data arrives knows it; on one that cannot (a GPU) this
    /// does nothing and its outcomes carry none.
    fn record_loads(&mut self, warps: Option<emulator::LoadWarps>) {
        let _ = warps;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's launches are summed thread by thread, each part apart, over as many threads as
    /// the launch with the most had; a GPU launch (no threads) adds nothing.
    #[test]
    fn thread_seconds_are_summed_thread_by_thread() {
        let t = |sm_rounds: f64, waiting: f64| trace::ThreadSeconds {
            sm_rounds,
            waiting,
            ..trace::ThreadSeconds::default()
        };
        let outcome = |thread_seconds: Vec<trace::ThreadSeconds>| LaunchOutcome {
            kernel_ms: 1.0,
            cycles: None,
            stats: None,
            wall_seconds: 1.0,
            loads: None,
            thread_seconds,
        };
        let runs = [
            outcome(vec![t(1.0, 0.5), t(2.0, 0.25)]),
            outcome(Vec::new()),
            outcome(vec![t(0.5, 0.0), t(1.0, 1.0), t(4.0, 2.0)]),
        ];
        assert_eq!(
            thread_seconds(&runs),
            vec![t(1.5, 0.5), t(3.0, 1.25), t(4.0, 2.0)]
        );
        assert!(thread_seconds(&[]).is_empty());
    }

    #[test]
    fn backend_choice_parses_and_rejects() {
        assert_eq!("auto".parse::<BackendChoice>(), Ok(BackendChoice::Auto));
        assert_eq!("emu".parse::<BackendChoice>(), Ok(BackendChoice::Emu));
        assert!("cpu".parse::<BackendChoice>().unwrap_err().contains("cpu"));
    }

    #[test]
    fn args_are_little_endian() {
        assert_eq!(Arg::U32(0x01020304).to_bytes(), vec![4, 3, 2, 1]);
        assert_eq!(
            Arg::Buf(DevBuf {
                addr: 256,
                bytes: 8
            })
            .to_bytes(),
            256u64.to_le_bytes().to_vec()
        );
        assert_eq!(Arg::F32(1.0).to_bytes(), 1.0f32.to_le_bytes().to_vec());
    }
}
