//! The emulator backend: the same PTX the GPU runs, interpreted on the CPU with the timing model
//! of a preset. Kernel time is simulated cycles ÷ the preset's clock; the emulator's counters
//! (cache hit rates, stalls) come back with every launch.

use crate::DeviceError;
use crate::api::{Arg, Backend, DevBuf, Device, LaunchConfig, LaunchOutcome, ModuleId};
use emulator::{Emulator, GpuConfig, LaunchParams, Module, TextureDesc};
use std::time::Instant;

/// Runaway-kernel budget when the caller sets none: 10⁹ warp instructions, minutes of work at the
/// emulator's few million warp instructions per second (a paper-scale frame is ~4.5·10⁷).
pub const DEFAULT_MAX_WARP_INSTRUCTIONS: u64 = 1_000_000_000;

/// The runaway guards of emulator launches: an instruction budget per launch, and the emulator's
/// [`emulator::Watch`] (a wall-clock deadline and a progress callback).
#[derive(Clone, Debug, PartialEq)]
pub struct EmuLimits {
    pub max_warp_instructions: u64,
    pub watch: emulator::Watch,
}

impl Default for EmuLimits {
    fn default() -> Self {
        EmuLimits {
            max_warp_instructions: DEFAULT_MAX_WARP_INSTRUCTIONS,
            watch: emulator::Watch::default(),
        }
    }
}

/// The emulator as a [`Device`].
pub struct EmuDevice {
    emu: Emulator,
    modules: Vec<(Module, emulator::ModuleId)>,
    limits: EmuLimits,
    /// Whether launches record their address streams (a twin would not have this device's).
    recording: bool,
}

impl EmuDevice {
    pub fn new(config: GpuConfig) -> Self {
        EmuDevice {
            emu: Emulator::new(config),
            modules: Vec::new(),
            limits: EmuLimits::default(),
            recording: false,
        }
    }

    /// Sets the runaway guards of later launches.
    pub fn with_limits(mut self, limits: EmuLimits) -> Self {
        self.emu.set_watch(limits.watch.clone());
        self.limits = limits;
        self
    }

    pub fn config(&self) -> &GpuConfig {
        self.emu.config()
    }

    /// Records the L1/texture address stream of later launches (off by default; see
    /// `emulator::Emulator::set_record_addresses`). For working-set and reuse-distance studies.
    pub fn set_record_addresses(&mut self, on: bool) {
        self.emu.set_record_addresses(on);
        self.recording = on;
    }

    /// The last launch's address stream, one list per SM (empty when recording was off).
    pub fn take_address_streams(&mut self) -> Vec<Vec<emulator::AddressEvent>> {
        self.emu.take_address_streams()
    }

    /// Empties the L2, as writing a buffer larger than it does on a GPU (see
    /// `emulator::Emulator::flush_l2`); later launches find none of the lines earlier ones left.
    pub fn flush_l2(&mut self) {
        self.emu.flush_l2();
    }

    fn module(&self, m: ModuleId) -> Result<&(Module, emulator::ModuleId), DeviceError> {
        self.modules.get(m.0).ok_or_else(|| DeviceError::Launch {
            what: format!("module {}", m.0),
            reason: "was never loaded".into(),
        })
    }
}

/// Bytes of host memory available now (`MemAvailable` of /proc/meminfo), when the OS says. The
/// emulator's device memory is host memory, so this is what a volume or log must fit in.
pub fn host_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|kb| kb.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

impl Device for EmuDevice {
    fn backend(&self) -> Backend {
        Backend::Emu
    }
    fn register_target(&self) -> Option<u32> {
        self.config().sm.sass_arch
    }

    fn start_clean(&mut self) -> bool {
        self.emu.reset();
        self.modules.clear();
        true
    }

    fn record_loads(&mut self, warps: Option<emulator::LoadWarps>) {
        self.emu.set_record_loads(warps);
    }

    fn twin(&self) -> Option<EmuDevice> {
        (!self.recording)
            .then(|| EmuDevice::new(self.emu.config().clone()).with_limits(self.limits.clone()))
    }

    fn name(&self) -> String {
        format!("warpscope emulator ({})", self.emu.config().name)
    }

    fn clock_mhz(&self) -> f64 {
        self.emu.config().clock_mhz
    }

    fn properties(&self) -> crate::DeviceProperties {
        let c = self.emu.config();
        crate::DeviceProperties {
            sm_count: Some(c.sm.count),
            l2_bytes: Some(c.l2.size_bytes),
            ..crate::DeviceProperties::basic(Backend::Emu, self.name(), c.clock_mhz)
        }
    }

    fn free_memory_bytes(&self) -> u64 {
        // Unknown (not Linux): do not refuse up front; the allocator still reports failure.
        host_available_bytes().unwrap_or(u64::MAX)
    }

    fn alloc(&mut self, bytes: u64) -> Result<DevBuf, DeviceError> {
        let available = self.free_memory_bytes();
        if bytes > available {
            return Err(DeviceError::OutOfMemory {
                what: "an emulator buffer (host memory)".into(),
                needed_bytes: bytes,
                available_bytes: available,
            });
        }
        let addr = self.emu.alloc(bytes)?;
        Ok(DevBuf { addr, bytes })
    }

    fn free(&mut self, buf: &DevBuf) -> Result<(), DeviceError> {
        self.emu.free(buf.addr)?;
        Ok(())
    }

    fn upload(&mut self, buf: &DevBuf, data: &[u8]) -> Result<(), DeviceError> {
        Ok(self.emu.write(buf.addr, data)?)
    }

    fn download(&mut self, buf: &DevBuf, out: &mut [u8]) -> Result<(), DeviceError> {
        Ok(self.emu.read(buf.addr, out)?)
    }

    fn create_texture(&mut self, desc: &TextureDesc, data: &[u8]) -> Result<u64, DeviceError> {
        Ok(self.emu.create_texture(desc, data)?)
    }

    fn load(&mut self, ptx: &str, _fatbin: Option<&[u8]>) -> Result<ModuleId, DeviceError> {
        let module = Module::parse(ptx)?;
        let id = self.emu.load(&module)?;
        self.modules.push((module, id));
        Ok(ModuleId(self.modules.len() - 1))
    }

    fn write_symbol(&mut self, m: ModuleId, name: &str, data: &[u8]) -> Result<(), DeviceError> {
        let id = self.module(m)?.1;
        Ok(self.emu.write_symbol(id, name, data)?)
    }

    fn occupancy(
        &mut self,
        m: ModuleId,
        kernel: &str,
        cfg: &LaunchConfig,
    ) -> Result<u32, DeviceError> {
        let (module, _) = self.module(m)?;
        let entry = module
            .entries()
            .into_iter()
            .find(|e| e.name == kernel)
            .ok_or_else(|| no_such_kernel(module, kernel))?;
        let shared = entry
            .static_shared_bytes
            .saturating_add(cfg.dynamic_shared_bytes);
        let sm = &self.emu.config().sm;
        let threads = cfg.block.volume() as u32;
        // The registers the launch will use: fitted to this GPU as its compiler would.
        let regs = emulator::fit_registers(sm, threads, cfg.regs_per_thread);
        match emulator::occupancy(sm, threads, regs, shared) {
            Ok(o) => Ok(o.blocks_per_sm),
            Err(_) => Ok(0),
        }
    }

    fn launch(
        &mut self,
        m: ModuleId,
        kernel: &str,
        cfg: &LaunchConfig,
        args: &[Arg],
    ) -> Result<LaunchOutcome, DeviceError> {
        let (module, id) = self.module(m)?;
        if !module.entries().iter().any(|e| e.name == kernel) {
            return Err(no_such_kernel(module, kernel));
        }
        let params = LaunchParams {
            grid: [cfg.grid.x, cfg.grid.y, cfg.grid.z],
            block: [cfg.block.x, cfg.block.y, cfg.block.z],
            dynamic_shared_bytes: cfg.dynamic_shared_bytes,
            regs_per_thread: cfg.regs_per_thread,
            args: args.iter().map(Arg::to_bytes).collect(),
            max_warp_instructions: self.limits.max_warp_instructions,
        };
        let id = *id;
        let wall = Instant::now();
        let stats = self.emu.launch(id, kernel, &params)?;
        let clock = self.emu.config().clock_mhz;
        Ok(LaunchOutcome {
            kernel_ms: stats.cycles as f64 / (clock * 1e3),
            cycles: Some(stats.cycles),
            stats: Some(stats),
            wall_seconds: wall.elapsed().as_secs_f64(),
            loads: self.emu.take_loads(),
            thread_seconds: self.emu.take_thread_seconds(),
        })
    }
}

fn no_such_kernel(module: &Module, kernel: &str) -> DeviceError {
    DeviceError::NoSuchKernel {
        kernel: kernel.into(),
        available: module
            .entries()
            .iter()
            .map(|e| e.name.clone())
            .collect::<Vec<_>>()
            .join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn properties_come_from_the_preset() {
        let cfg = GpuConfig::preset("h100").unwrap();
        let p = EmuDevice::new(cfg.clone()).properties();
        assert_eq!(p.backend, "emu");
        assert_eq!(p.sm_count, Some(cfg.sm.count));
        assert_eq!(p.l2_bytes, Some(cfg.l2.size_bytes));
        assert_eq!(p.clock_mhz, cfg.clock_mhz);
        assert_eq!(p.driver_cuda_version, None, "the emulator has no driver");
    }
}
