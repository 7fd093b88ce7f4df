//! The crate's public face: parse a PTX [`Module`], [`Emulator::load`] it into device memory,
//! allocate buffers and textures, and [`Emulator::launch`] kernels, getting [`LaunchStats`].

use std::collections::BTreeMap;

use serde::Serialize;

use crate::config::GpuConfig;
use crate::decode::{DYN_SHARED_SYM, DecodedModule, decode_module};
use crate::devmem::DeviceMemory;
use crate::engine::{LaunchInput, LoadEvent, LoadWarps, run};
use crate::error::EmuError;
use crate::ir::{EntrySignature, Opnd, Program};
use crate::memory::{AddressEvent, L2Lines, MemorySystem};
use crate::occupancy::{fit_registers, occupancy};
use crate::ptx;
use crate::schedule;
use crate::texture::{HANDLE_BASE, Storage, Texture, TextureDesc};
use crate::watch::Watch;

/// A parsed and decoded PTX module (all of its kernels), not yet in device memory.
#[derive(Debug, Clone)]
pub struct Module {
    decoded: DecodedModule,
}

impl Module {
    /// Parses PTX text (what `nvcc -ptx` emits). Errors carry the line and column.
    pub fn parse(ptx_text: &str) -> Result<Module, EmuError> {
        let ast = ptx::parse(ptx_text)?;
        let mut decoded = decode_module(&ast)?;
        for k in &mut decoded.kernels {
            if let Some(EmuError::Unusable { line, text, .. }) = &mut k.unusable {
                let src = ptx_text.lines().nth((*line as usize).saturating_sub(1));
                *text = src.unwrap_or("").trim().to_string();
            }
        }
        Ok(Module { decoded })
    }

    /// The kernels (`.entry`) of the module with their parameters.
    pub fn entries(&self) -> Vec<EntrySignature> {
        self.decoded
            .kernels
            .iter()
            .map(|k| EntrySignature {
                name: k.name.clone(),
                params: k.params.clone(),
                static_shared_bytes: k.shared_static_bytes,
            })
            .collect()
    }
}

/// Handle of a module loaded into an [`Emulator`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ModuleId(pub u32);

struct Loaded {
    kernels: Vec<Program>,
    symbols: BTreeMap<String, Symbol>,
}

/// A module-level variable: where it lives, its size, and whether it is in constant space.
#[derive(Debug, Clone, Copy)]
struct Symbol {
    addr: u64,
    size: u64,
    constant: bool,
}

/// CUDA's launch limits on every architecture since sm_30, checked before a launch so that a
/// shape no GPU accepts is refused up front rather than simulated: block dimensions ≤ 1024 ×
/// 1024 × 64 with ≤ 1024 threads, grid dimensions ≤ (2³¹−1) × 65535 × 65535, none zero.
pub fn check_launch_dims(grid: [u32; 3], block: [u32; 3]) -> Result<(), String> {
    const BLOCK_MAX: [u32; 3] = [1024, 1024, 64];
    const GRID_MAX: [u32; 3] = [i32::MAX as u32, 65535, 65535];
    const AXES: [char; 3] = ['x', 'y', 'z'];
    if grid.contains(&0) || block.contains(&0) {
        return Err(format!(
            "grid {grid:?} and block {block:?} must be positive"
        ));
    }
    for i in 0..3 {
        if block[i] > BLOCK_MAX[i] {
            return Err(format!(
                "block {} = {} exceeds CUDA's limit of {}",
                AXES[i], block[i], BLOCK_MAX[i]
            ));
        }
        if grid[i] > GRID_MAX[i] {
            return Err(format!(
                "grid {} = {} exceeds CUDA's limit of {}",
                AXES[i], grid[i], GRID_MAX[i]
            ));
        }
    }
    let threads: u64 = block.iter().map(|&b| u64::from(b)).product();
    if threads > 1024 {
        return Err(format!(
            "block {block:?} has {threads} threads; CUDA allows at most 1024 per block"
        ));
    }
    Ok(())
}

/// How to launch a kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaunchParams {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_shared_bytes: u32,
    /// Registers per thread for the occupancy calculation (PTX does not fix it; ptxas does).
    pub regs_per_thread: u32,
    /// One little-endian blob per PTX parameter, in order; sizes are checked.
    pub args: Vec<Vec<u8>>,
    /// Runaway guard: the launch fails with `EmuError::Budget` past this many warp instructions
    /// (counted between rounds, so up to one round of every SM further).
    pub max_warp_instructions: u64,
}

/// What a launch measured, as run.json keeps it (its `emulator` table, defined by the trace
/// crate). All counts are deterministic.
pub type LaunchStats = trace::EmuCounters;

/// A CPU-emulated GPU: device memory, loaded modules, textures and the timing model.
pub struct Emulator {
    config: GpuConfig,
    dev: DeviceMemory,
    modules: Vec<Loaded>,
    textures: Vec<Texture>,
    /// Record the L1/texture address stream of each launch (off by default; memory/record.rs).
    record_addresses: bool,
    addresses: Vec<Vec<AddressEvent>>,
    /// The warps whose loads each launch records (off by default; engine/loads.rs).
    record_loads: Option<LoadWarps>,
    /// The last launch's recorded loads; `None` when it recorded none.
    loads: Option<Vec<LoadEvent>>,
    /// How each host thread spent the last launch; empty before one.
    thread_seconds: Vec<trace::ThreadSeconds>,
    watch: Watch,
    /// The L2 as the last launch left it: a GPU's L2 keeps its lines from one launch to the
    /// next. `None` after a reset, a flush or a launch that failed while it ran (one refused
    /// for its arguments leaves it as it was); the next launch then starts with it empty.
    l2: Option<L2Lines>,
}

impl Emulator {
    pub fn new(config: GpuConfig) -> Emulator {
        Emulator {
            config,
            dev: DeviceMemory::default(),
            modules: Vec::new(),
            textures: Vec::new(),
            record_addresses: false,
            addresses: Vec::new(),
            record_loads: None,
            loads: None,
            thread_seconds: Vec::new(),
            watch: Watch::default(),
            l2: None,
        }
    }

    /// Returns to the state of a new emulator with the same configuration and settings: no
    /// allocations, modules or textures, so the next allocations get the same addresses as on a
    /// new emulator, and an empty L2. Makes a launch's result independent of what ran before it.
    pub fn reset(&mut self) {
        self.dev = DeviceMemory::default();
        self.modules.clear();
        self.textures.clear();
        self.addresses.clear();
        self.loads = None;
        self.thread_seconds.clear();
        self.l2 = None;
    }

    /// Empties the L2, as writing a buffer several times its size does on a GPU (the
    /// experiments under `docs/gpu` flush it that way). Every launch's SM caches start empty;
    /// the L2 keeps what earlier launches left in it until this, [`Emulator::reset`] or a launch
    /// that fails while it runs. Device memory already holds every write, so nothing is lost.
    pub fn flush_l2(&mut self) {
        self.l2 = None;
    }

    /// Sets the time limit and progress callback of later launches (none by default).
    pub fn set_watch(&mut self, watch: Watch) {
        self.watch = watch;
    }

    /// Turns the address recorder on or off for later launches. Off (the default) changes no
    /// result and costs one branch per memory request.
    pub fn set_record_addresses(&mut self, on: bool) {
        self.record_addresses = on;
    }

    /// The last launch's recorded address stream, one list per SM (index = SM id), each in the
    /// order the memory model saw the requests; empty when recording was off. Taking it frees it.
    pub fn take_address_streams(&mut self) -> Vec<Vec<AddressEvent>> {
        std::mem::take(&mut self.addresses)
    }

    /// Records, in later launches, each load of the given warps (their indices in the grid):
    /// its issue cycle and the cycle its data arrives. `None` (the default) records nothing;
    /// recording changes no result.
    pub fn set_record_loads(&mut self, warps: Option<LoadWarps>) {
        self.record_loads = warps;
    }

    /// The last launch's recorded loads, by warp and then issue cycle; `None` when recording
    /// was off. Taking them frees them.
    pub fn take_loads(&mut self) -> Option<Vec<LoadEvent>> {
        self.loads.take()
    }

    /// How each host thread spent the last launch, the coordinating thread first (see
    /// [`trace::ThreadSeconds`]); empty when no launch ran since the last take. Host timings:
    /// they change no result and are not deterministic.
    pub fn take_thread_seconds(&mut self) -> Vec<trace::ThreadSeconds> {
        std::mem::take(&mut self.thread_seconds)
    }

    pub fn config(&self) -> &GpuConfig {
        &self.config
    }

    /// Frees an allocation made by [`Emulator::alloc`]; later accesses to it fault.
    pub fn free(&mut self, addr: u64) -> Result<(), EmuError> {
        self.dev.free(addr)
    }

    /// Allocates zeroed device memory; returns its 256-aligned device address.
    pub fn alloc(&mut self, bytes: u64) -> Result<u64, EmuError> {
        self.dev.alloc(bytes)
    }

    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), EmuError> {
        self.dev.write(addr, data)
    }

    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), EmuError> {
        self.dev.read(addr, out)
    }

    /// Loads a module: allocates and initializes its `.global`/`.const` variables and resolves
    /// their addresses in the kernels.
    pub fn load(&mut self, module: &Module) -> Result<ModuleId, EmuError> {
        let d = &module.decoded;
        let mut addrs = Vec::with_capacity(d.globals.len());
        let mut symbols = BTreeMap::new();
        for g in &d.globals {
            let a = self.dev.alloc(g.size.max(1))?;
            addrs.push(a);
            symbols.insert(
                g.name.clone(),
                Symbol {
                    addr: a,
                    size: g.size,
                    constant: g.constant,
                },
            );
        }
        for (g, &a) in d.globals.iter().zip(&addrs) {
            let mut bytes = g.init.clone();
            for &(off, target) in &g.relocs {
                let ta = addrs.get(target as usize).copied().unwrap_or(0);
                let o = off as usize;
                if o + 8 <= bytes.len() {
                    bytes[o..o + 8].copy_from_slice(&ta.to_le_bytes());
                }
            }
            if !bytes.is_empty() {
                self.dev.write(a, &bytes)?;
            }
        }
        let mut kernels = d.kernels.clone();
        for k in &mut kernels {
            schedule::reorder(k, &self.config.pipeline);
            let dyn_off = k.dyn_shared_offset as u64;
            for x in k.insts.iter_mut().chain(k.exec.iter_mut()) {
                let patch = |o: &mut Opnd| {
                    if let Opnd::Sym(s) = *o {
                        *o = Opnd::Imm(if s == DYN_SHARED_SYM {
                            dyn_off
                        } else {
                            addrs.get(s as usize).copied().unwrap_or(0)
                        });
                    }
                };
                x.s.iter_mut().for_each(patch);
                patch(&mut x.a);
            }
        }
        self.modules.push(Loaded { kernels, symbols });
        Ok(ModuleId(self.modules.len() as u32 - 1))
    }

    fn symbol(&self, m: ModuleId, name: &str) -> Result<Symbol, EmuError> {
        let l = self.modules.get(m.0 as usize).ok_or(EmuError::NotFound {
            kind: "module",
            name: m.0.to_string(),
        })?;
        l.symbols.get(name).copied().ok_or(EmuError::NotFound {
            kind: "symbol",
            name: name.to_string(),
        })
    }

    /// Writes a module-level `.global`/`.const` variable (`cudaMemcpyToSymbol`). Where
    /// `l2.holds_constant_uploads` says so, a constant variable's written lines are in the L2
    /// for the next launch.
    pub fn write_symbol(&mut self, m: ModuleId, name: &str, data: &[u8]) -> Result<(), EmuError> {
        let Symbol {
            addr: a,
            size,
            constant,
        } = self.symbol(m, name)?;
        if data.len() as u64 > size {
            return Err(EmuError::Memory {
                addr: a,
                what: format!(
                    "{} bytes do not fit symbol {name} ({size} bytes)",
                    data.len()
                ),
            });
        }
        self.dev.write(a, data)?;
        if constant && self.config.l2.holds_constant_uploads && !data.is_empty() {
            let lines = self.l2.take();
            self.l2 = Some(L2Lines::holding(&self.config, lines, a, data.len() as u64));
        }
        Ok(())
    }

    /// Reads a module-level variable (`cudaMemcpyFromSymbol`).
    pub fn read_symbol(&self, m: ModuleId, name: &str, out: &mut [u8]) -> Result<(), EmuError> {
        let Symbol { addr: a, size, .. } = self.symbol(m, name)?;
        if out.len() as u64 > size {
            return Err(EmuError::Memory {
                addr: a,
                what: format!("{} bytes exceed symbol {name} ({size} bytes)", out.len()),
            });
        }
        self.dev.read(a, out)
    }

    /// Creates a texture object from row-major texel data (ignored for `linear_buffer`
    /// textures); returns the 64-bit handle to pass as a kernel argument.
    pub fn create_texture(&mut self, desc: &TextureDesc, data: &[u8]) -> Result<u64, EmuError> {
        desc.validate().map_err(|what| EmuError::Args {
            kernel: "create_texture".into(),
            what,
        })?;
        let storage = Storage::new(desc, self.config.texture.layout);
        let base = match desc.linear_buffer {
            Some(a) => {
                let len = desc.width as u64 * desc.texel_bytes();
                if self.dev.slice(a, len as usize).is_none() {
                    return Err(EmuError::Memory {
                        addr: a,
                        what: format!("linear texture of {len} bytes outside any allocation"),
                    });
                }
                a
            }
            None => {
                let [w, h, d] = [desc.width, desc.height.max(1), desc.depth.max(1)].map(u64::from);
                let want = w
                    * if desc.dims >= 2 { h } else { 1 }
                    * if desc.dims == 3 { d } else { 1 }
                    * desc.texel_bytes();
                if data.len() as u64 != want {
                    return Err(EmuError::Args {
                        kernel: "create_texture".into(),
                        what: format!("data has {} bytes, the texture needs {want}", data.len()),
                    });
                }
                self.dev
                    .alloc_aligned(storage.bytes(desc), storage.align())?
            }
        };
        let t = Texture::new(desc.clone(), base, storage);
        if desc.linear_buffer.is_none() {
            t.upload(&mut self.dev, data)?;
        }
        self.textures.push(t);
        Ok(HANDLE_BASE + self.textures.len() as u64 - 1)
    }

    /// Runs a kernel to completion and returns what it measured.
    pub fn launch(
        &mut self,
        m: ModuleId,
        kernel: &str,
        p: &LaunchParams,
    ) -> Result<LaunchStats, EmuError> {
        let l = self.modules.get(m.0 as usize).ok_or(EmuError::NotFound {
            kind: "module",
            name: m.0.to_string(),
        })?;
        let prog = l
            .kernels
            .iter()
            .find(|k| k.name == kernel)
            .ok_or(EmuError::NotFound {
                kind: "kernel",
                name: kernel.to_string(),
            })?;
        if let Some(e) = &prog.unusable {
            return Err(e.clone());
        }
        let args_err = |what: String| EmuError::Args {
            kernel: kernel.to_string(),
            what,
        };
        if p.args.len() != prog.params.len() {
            return Err(args_err(format!(
                "{} arguments given, the kernel has {} parameters",
                p.args.len(),
                prog.params.len()
            )));
        }
        let mut params = vec![0u8; prog.param_bytes as usize];
        for (i, (a, decl)) in p.args.iter().zip(&prog.params).enumerate() {
            if a.len() != decl.size_bytes as usize {
                return Err(args_err(format!(
                    "argument {i} ({}) has {} bytes, expected {}",
                    decl.name,
                    a.len(),
                    decl.size_bytes
                )));
            }
            let o = prog.param_offsets[i] as usize;
            params[o..o + a.len()].copy_from_slice(a);
        }
        check_launch_dims(p.grid, p.block).map_err(args_err)?;
        let threads = p.block.iter().map(|&b| b as u64).product::<u64>();
        let shared = prog.dyn_shared_offset as u64 + p.dynamic_shared_bytes as u64;
        let shared = shared.max(prog.shared_static_bytes as u64);
        let threads = threads.min(u32::MAX as u64) as u32;
        let shared = shared.min(u32::MAX as u64) as u32;
        let regs = fit_registers(&self.config.sm, threads, p.regs_per_thread);
        let occ = occupancy(&self.config.sm, threads, regs, shared).map_err(|e| {
            args_err(format!(
                "{e} on {}{}",
                self.config.name,
                fitting_presets(&self.config.name, threads, p.regs_per_thread, shared)
            ))
        })?;
        let mut mem = MemorySystem::after(&self.config, self.l2.take());
        // The driver writes a launch's parameters to constant memory, an upload like a
        // `__constant__` variable's: where the L2 keeps uploads, the launch finds them there.
        // Parameter reads are timed at their offsets, so the held bytes are `[0, len)` widened
        // to whole constant lines, as a constant read fills them.
        if self.config.l2.holds_constant_uploads && !params.is_empty() {
            let line = u64::from(self.config.constant.line_bytes);
            mem.below
                .hold(0, (params.len() as u64).next_multiple_of(line));
        }
        self.addresses.clear();
        if self.record_addresses {
            mem.record_addresses();
        }
        let inp = LaunchInput {
            prog,
            cfg: &self.config,
            params: &params,
            grid: p.grid,
            block: p.block,
            dyn_smem: p.dynamic_shared_bytes,
            blocks_per_sm: occ.blocks_per_sm,
            budget: p.max_warp_instructions,
            watch: &self.watch,
            record_loads: self.record_loads.as_ref(),
        };
        self.thread_seconds.clear();
        let out = run(&inp, &mut self.dev, &self.textures, &mut mem)?;
        self.addresses = mem.take_addresses();
        self.loads = self.record_loads.is_some().then_some(out.loads);
        self.thread_seconds = out.threads;
        let stats = LaunchStats {
            cycles: out.cycles,
            sm_cycles: out.sm_cycles,
            warp_instructions: out.warp_instructions,
            thread_instructions: out.thread_instructions,
            instructions_by_class: out.by_class,
            stall_cycles: out.stalls,
            achieved_occupancy: (out.active_cycles > 0).then(|| {
                out.warp_cycles as f64
                    / (out.active_cycles as f64 * f64::from(self.config.sm.max_warps))
            }),
            mem: mem.counters(),
            blocks_per_sm: occ.blocks_per_sm,
            registers_per_thread: regs,
            spilled_registers_per_thread: p.regs_per_thread.saturating_sub(regs),
        };
        self.l2 = Some(mem.into_l2());
        Ok(stats)
    }
}

/// "; it fits on: a, b (--preset NAME)" for the presets other than `current` where one block
/// fits, or a note that none does.
fn fitting_presets(current: &str, threads: u32, regs: u32, shared: u32) -> String {
    let fits: Vec<&str> = GpuConfig::preset_names()
        .iter()
        .copied()
        .filter(|&n| n != current)
        .filter(|&n| {
            GpuConfig::preset(n).is_ok_and(|c| {
                occupancy(&c.sm, threads, fit_registers(&c.sm, threads, regs), shared).is_ok()
            })
        })
        .collect();
    if fits.is_empty() {
        "; it fits on no preset".into()
    } else {
        format!("; it fits on: {} (--preset NAME)", fits.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LoadSpace;

    #[test]
    fn emulators_can_move_between_threads() {
        fn send<T: Send>() {}
        fn sync<T: Sync>() {}
        send::<Emulator>();
        send::<Module>();
        sync::<Module>();
        send::<LaunchStats>();
    }

    #[test]
    fn symbols_round_trip_and_are_bounds_checked() {
        let ptx = ".version 8.0\n.target sm_75\n.address_size 64\n.const .align 4 .u32 c[4] = {1, 2, 3, 4};\n.global .u64 g;\n.visible .entry k() { ret; }\n";
        let m = Module::parse(ptx).unwrap();
        assert_eq!(m.entries()[0].name, "k");
        let mut e = Emulator::new(GpuConfig::preset("v100").unwrap());
        let id = e.load(&m).unwrap();
        let mut out = [0u8; 16];
        e.read_symbol(id, "c", &mut out).unwrap();
        assert_eq!(out[4], 2);
        e.write_symbol(id, "g", &7u64.to_le_bytes()).unwrap();
        let mut g = [0u8; 8];
        e.read_symbol(id, "g", &mut g).unwrap();
        assert_eq!(u64::from_le_bytes(g), 7);
        assert!(e.write_symbol(id, "g", &[0u8; 9]).is_err());
        assert!(matches!(
            e.read_symbol(id, "nope", &mut g),
            Err(EmuError::NotFound { .. })
        ));
    }

    #[test]
    fn only_a_constant_upload_stays_in_the_l2_and_only_where_the_preset_says_so() {
        let ptx = ".version 8.0\n.target sm_75\n.address_size 64\n.const .u32 c[4];\n.global .u32 g[4];\n.visible .entry k() { ret; }\n";
        let m = Module::parse(ptx).unwrap();
        for (preset, holds) in [("h100", true), ("v100", false)] {
            let mut e = Emulator::new(GpuConfig::preset(preset).unwrap());
            let id = e.load(&m).unwrap();
            e.write_symbol(id, "g", &[1; 16]).unwrap();
            assert!(e.l2.is_none(), "{preset}");
            e.write_symbol(id, "c", &[1; 16]).unwrap();
            assert_eq!(e.l2.is_some(), holds, "{preset}");
            let mut c = [0u8; 16];
            e.read_symbol(id, "c", &mut c).unwrap();
            assert_eq!(c, [1; 16], "{preset}");
        }
    }

    #[test]
    fn a_launchs_parameters_are_in_the_l2_only_where_the_preset_keeps_uploads() {
        let m = two_buffer_kernel("params", "");
        for (preset, holds) in [("h100", true), ("v100", false)] {
            let mut e = Emulator::new(GpuConfig::preset(preset).unwrap());
            let (id, src, dst) = load_two_buffers(&mut e, &m);
            let stats = e
                .launch(id, "params", &two_buffer_launch(src, dst))
                .unwrap();
            assert_eq!(
                stats.mem.dram_bytes_read == 0,
                holds,
                "{preset}: {:?}",
                stats.mem
            );
        }
    }

    /// A kernel `name(src, dst)` whose `body` finds thread i's words at `%rd4` (src) and `%rd5`
    /// (dst); registers `%r2`–`%r5` are free.
    fn two_buffer_kernel(name: &str, body: &str) -> Module {
        let ptx = format!(
            ".version 8.0\n.target sm_75\n.address_size 64\n\
             .visible .entry {name}(.param .u64 src, .param .u64 dst) {{\n\
             .reg .b32 %r<6>;\n.reg .b64 %rd<8>;\n\
             ld.param.u64 %rd1, [src];\nld.param.u64 %rd2, [dst];\n\
             cvta.to.global.u64 %rd1, %rd1;\ncvta.to.global.u64 %rd2, %rd2;\n\
             mov.u32 %r1, %tid.x;\nmul.wide.u32 %rd3, %r1, 4;\n\
             add.s64 %rd4, %rd1, %rd3;\nadd.s64 %rd5, %rd2, %rd3;\n{body}\nret;\n}}\n"
        );
        Module::parse(&ptx).unwrap()
    }

    /// Launches `kernel(src, dst)` of `m` as one block of 64 threads over two 256-byte buffers,
    /// on a new v100 emulator that `setup` prepares: the emulator after it, the launch's
    /// statistics and the two buffers.
    fn launch_on_two_buffers(
        m: &Module,
        kernel: &str,
        setup: impl FnOnce(&mut Emulator),
    ) -> (Emulator, LaunchStats, u64, u64) {
        let mut e = Emulator::new(GpuConfig::preset("v100").unwrap());
        setup(&mut e);
        let (id, src, dst) = load_two_buffers(&mut e, m);
        let stats = e.launch(id, kernel, &two_buffer_launch(src, dst)).unwrap();
        (e, stats, src, dst)
    }

    /// Loads `m` and allocates the two 256-byte buffers of [`launch_on_two_buffers`].
    fn load_two_buffers(e: &mut Emulator, m: &Module) -> (ModuleId, u64, u64) {
        let id = e.load(m).unwrap();
        (id, e.alloc(256).unwrap(), e.alloc(256).unwrap())
    }

    /// One block of 64 threads over the buffers `src` and `dst`.
    fn two_buffer_launch(src: u64, dst: u64) -> LaunchParams {
        LaunchParams {
            grid: [1, 1, 1],
            block: [64, 1, 1],
            dynamic_shared_bytes: 0,
            regs_per_thread: 16,
            args: vec![src.to_le_bytes().to_vec(), dst.to_le_bytes().to_vec()],
            max_warp_instructions: 1_000_000,
        }
    }

    #[test]
    fn the_l2_keeps_a_launchs_lines_for_the_next_until_a_flush_or_reset() {
        // 64 threads copy 256 bytes: 8 sectors read, 8 written.
        let m = two_buffer_kernel(
            "copy",
            "ld.global.u32 %r2, [%rd4];\nst.global.u32 [%rd5], %r2;",
        );
        let (mut e, first, src, dst) = launch_on_two_buffers(&m, "copy", |_| {});
        let p = two_buffer_launch(src, dst);
        let id = e.load(&m).unwrap();
        let second = e.launch(id, "copy", &p).unwrap();
        assert!(first.mem.dram_bytes_read > 0, "{:?}", first.mem);
        // The second finds the source in the L2; its L1 starts cold, so it asks the L2.
        assert_eq!(second.mem.dram_bytes_read, 0, "{:?}", second.mem);
        assert_eq!(second.mem.l2.requests, first.mem.l2.requests);
        assert!(second.cycles < first.cycles, "{second:?} {first:?}");
        assert_eq!(e.launch(id, "copy", &p).unwrap(), second, "repeatable");
        e.flush_l2();
        assert_eq!(
            e.launch(id, "copy", &p).unwrap(),
            first,
            "flushed: cold again"
        );
        e.launch(id, "copy", &p).unwrap();
        e.reset();
        let (id, src2, dst2) = load_two_buffers(&mut e, &m);
        assert_eq!((src2, dst2), (src, dst));
        assert_eq!(
            e.launch(id, "copy", &p).unwrap(),
            first,
            "reset: a new machine"
        );
    }

    #[test]
    fn load_timeline_gives_each_recorded_load_its_latency_and_changes_no_result() {
        // Each thread loads a word (a cold miss), uses it, loads it again (an L1 hit) and
        // stores it; two warps, of which only warp 1 is recorded.
        let m = two_buffer_kernel(
            "k",
            "ld.global.u32 %r2, [%rd4];\nadd.s32 %r3, %r2, 1;\n\
             ld.global.u32 %r4, [%rd4];\nadd.s32 %r5, %r4, %r3;\n\
             st.global.u32 [%rd5], %r5;",
        );
        let launch = |record: Option<LoadWarps>| {
            let (mut e, stats, _, dst) =
                launch_on_two_buffers(&m, "k", |e| e.set_record_loads(record));
            let mut out = vec![0u8; 256];
            e.read(dst, &mut out).unwrap();
            (stats, out, e.take_loads())
        };
        let (off, out_off, none) = launch(None);
        let (on, out_on, loads) = launch(Some(LoadWarps::new(vec![1])));
        assert_eq!((off, out_off), (on, out_on));
        assert_eq!(none, None);
        let loads = loads.expect("recording was on");
        assert_eq!(loads.len(), 2, "{loads:?}");
        assert!(
            loads
                .iter()
                .all(|e| e.warp == 1 && e.space == LoadSpace::Global)
        );
        assert!(loads[0].issue < loads[1].issue);
        let u = GpuConfig::preset("v100").unwrap().unloaded_latencies();
        // The first misses every cache; the second, issued once the first's data is in, hits L1.
        assert!(loads[0].cycles() >= u.dram, "{loads:?}");
        assert_eq!(loads[1].cycles(), u.l1_hit, "{loads:?}");
        assert!(loads[1].issue >= loads[0].ready);
    }

    #[test]
    fn address_recorder_sees_each_sector_and_changes_no_result() {
        let m = two_buffer_kernel(
            "copy",
            "ld.global.u32 %r2, [%rd4];\nst.global.u32 [%rd5], %r2;",
        );
        let launch = |record: bool| {
            let (mut e, stats, src, dst) =
                launch_on_two_buffers(&m, "copy", |e| e.set_record_addresses(record));
            (stats, e.take_address_streams(), src, dst)
        };
        let (off, none, _, _) = launch(false);
        let (on, streams, src, dst) = launch(true);
        assert_eq!(off, on);
        assert!(none.is_empty());
        let events: Vec<&AddressEvent> = streams.iter().flatten().collect();
        let mut loads: Vec<u64> = events
            .iter()
            .filter(|e| e.kind == crate::AddressKind::Load)
            .map(|e| e.sector_addr)
            .collect();
        loads.sort_unstable();
        let want: Vec<u64> = (0..8).map(|i| src + 32 * i).collect();
        assert_eq!(loads, want);
        let writes = events
            .iter()
            .filter(|e| e.kind == crate::AddressKind::Write)
            .count();
        assert_eq!(writes, 8);
        assert!(events.iter().all(|e| e.sector_addr < dst + 256));
    }
}
