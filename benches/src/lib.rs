//! The emulator's speed workloads, set up once here for both the criterion benchmarks
//! (`benches/emulator.rs`) and the `speed` example (one kernel alone, e.g. under callgrind):
//! an ALU-bound divergent integer loop (collatz), a float loop (a tiled matrix multiply through
//! shared memory), shared-memory atomics (histogram) and the paper's workload, the SDK volume
//! renderer with the fenced probes.
//!
//! A workload is an emulator with its buffers written and one launch's parameters; every
//! [`Workload::launch`] first restores the buffers the kernel accumulates into (a histogram, the
//! probe log), so each launch runs the same simulation from the same inputs.

use emulator::{
    Emulator, GpuConfig, LaunchParams, LaunchStats, Module, ModuleId, TexFormat, TextureDesc,
};

/// One kernel launch ready to run on its own emulator.
pub struct Workload {
    /// What it is, with its size (`collatz 65536`).
    pub name: String,
    emu: Emulator,
    module: ModuleId,
    kernel: &'static str,
    params: LaunchParams,
    /// Buffers the kernel accumulates into, and what they hold before a launch.
    restore: Vec<(u64, Vec<u8>)>,
}

impl Workload {
    /// Runs the launch once.
    pub fn launch(&mut self) -> LaunchStats {
        for (addr, bytes) in &self.restore {
            self.emu.write(*addr, bytes).expect("restore");
        }
        self.emu
            .launch(self.module, self.kernel, &self.params)
            .unwrap_or_else(|e| panic!("{}: {e}", self.name))
    }
}

/// The workloads' preset: V100's 80 SMs keep many blocks resident at once.
fn emulator() -> Emulator {
    emulator_on("v100")
}

fn emulator_on(preset: &str) -> Emulator {
    Emulator::new(GpuConfig::preset(preset).unwrap_or_else(|e| panic!("{preset}: {e}")))
}

fn load(emu: &mut Emulator, ptx: &str, what: &str) -> ModuleId {
    let module = Module::parse(ptx).unwrap_or_else(|e| panic!("{what}: {e}"));
    emu.load(&module).unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn corpus(emu: &mut Emulator, name: &str) -> ModuleId {
    let ptx = kernels::find_corpus(name)
        .unwrap_or_else(|| panic!("{name} is in the kernel corpus"))
        .ptx;
    load(emu, ptx, name)
}

/// A device buffer holding `bytes`.
fn buffer(emu: &mut Emulator, bytes: &[u8]) -> u64 {
    let a = emu.alloc(bytes.len() as u64).expect("alloc");
    emu.write(a, bytes).expect("write");
    a
}

fn le<T: Copy>(values: &[T], f: impl Fn(T) -> [u8; 4]) -> Vec<u8> {
    values.iter().flat_map(|&v| f(v)).collect()
}

/// Collatz step counts of 1..=n, at most 1000 steps: a divergent integer loop.
pub fn collatz(n: usize) -> Workload {
    let mut emu = emulator();
    let module = corpus(&mut emu, "collatz");
    let start: Vec<u32> = (1..=n as u32).collect();
    let ds = buffer(&mut emu, &le(&start, u32::to_le_bytes));
    let dout = emu.alloc((n * 4) as u64).expect("alloc");
    let params = LaunchParams {
        grid: [n.div_ceil(256) as u32, 1, 1],
        block: [256, 1, 1],
        dynamic_shared_bytes: 0,
        regs_per_thread: 32,
        args: vec![
            ds.to_le_bytes().to_vec(),
            dout.to_le_bytes().to_vec(),
            (n as i32).to_le_bytes().to_vec(),
            1000u32.to_le_bytes().to_vec(),
        ],
        max_warp_instructions: u64::MAX,
    };
    Workload {
        name: format!("collatz {n}"),
        emu,
        module,
        kernel: "collatz",
        params,
        restore: Vec::new(),
    }
}

/// C = A·B of n×n floats in 16×16 tiles through shared memory (n a multiple of 16).
pub fn matmul(n: usize) -> Workload {
    let mut emu = emulator();
    let module = corpus(&mut emu, "matmul");
    let values: Vec<f32> = (0..n * n).map(|i| (i % 13) as f32).collect();
    let bytes = le(&values, f32::to_le_bytes);
    let bufs = [0; 3].map(|_| buffer(&mut emu, &bytes));
    let dim = (n as i32).to_le_bytes().to_vec();
    let params = LaunchParams {
        grid: [(n / 16) as u32, (n / 16) as u32, 1],
        block: [16, 16, 1],
        dynamic_shared_bytes: 0,
        regs_per_thread: 32,
        args: vec![
            bufs[0].to_le_bytes().to_vec(),
            bufs[1].to_le_bytes().to_vec(),
            bufs[2].to_le_bytes().to_vec(),
            dim.clone(),
            dim.clone(),
            dim,
        ],
        max_warp_instructions: u64::MAX,
    };
    Workload {
        name: format!("matmul {n}"),
        emu,
        module,
        kernel: "matmul",
        params,
        restore: Vec::new(),
    }
}

/// A 256-bin histogram of n bytes with shared-memory atomics, 80 blocks of 256 threads.
pub fn histogram(n: usize) -> Workload {
    let mut emu = emulator();
    let module = corpus(&mut emu, "histogram_shared");
    let data: Vec<u8> = (0..n)
        .map(|i| ((i * 2_654_435_761u64 as usize) >> 7) as u8)
        .collect();
    let d = buffer(&mut emu, &data);
    let h = emu.alloc(1024).expect("alloc");
    let params = LaunchParams {
        grid: [80, 1, 1],
        block: [256, 1, 1],
        dynamic_shared_bytes: 0,
        regs_per_thread: 32,
        args: vec![
            d.to_le_bytes().to_vec(),
            h.to_le_bytes().to_vec(),
            (n as i32).to_le_bytes().to_vec(),
        ],
        max_warp_instructions: u64::MAX,
    };
    Workload {
        name: format!("histogram_shared {n}"),
        emu,
        module,
        kernel: "histogram_shared",
        params,
        restore: vec![(h, vec![0; 1024])],
    }
}

/// The SDK volume renderer with fenced probes (per-site statistics for every warp, no warp
/// traced): an `image`² picture of a `volume`³ u8 sphere shell, 16×16 blocks, on v100.
pub fn volume_render(image: u32, volume: u32) -> Workload {
    volume_render_on("v100", image, volume)
}

/// [`volume_render`] on another preset (gtx480: the study's GPU, 15 SMs with a separate
/// texture cache whose MSHRs fill up over a volume larger than the caches).
pub fn volume_render_on(preset: &str, image: u32, volume: u32) -> Workload {
    volume_render_view(preset, image, volume, study::View::PAPER[0])
}

/// [`volume_render_on`] seen from the paper's second viewpoint, (90°, 0°, 90°): rays that cross
/// the volume's slices, so on gtx480 the texture cache mostly misses — the memory-bound case,
/// where the cache model and the L2 answers take most of the simulation's time.
pub fn volume_render_side(preset: &str, image: u32, volume: u32) -> Workload {
    volume_render_view(preset, image, volume, study::View::PAPER[1])
}

/// The volume renderer seen from `view` (the study's view matrix, as `c_invViewMatrix`).
fn volume_render_view(preset: &str, image: u32, volume: u32, view: study::View) -> Workload {
    let mut emu = emulator_on(preset);
    let build = kernels::find("volume_render", 2).expect("the fenced volume renderer is built");
    let module = load(&mut emu, build.ptx, "volume_render");
    let c = (volume as f32 - 1.0) / 2.0;
    let vol: Vec<u8> = (0..volume * volume * volume)
        .map(|i| {
            let (x, y, z) = (
                (i % volume) as f32 - c,
                ((i / volume) % volume) as f32 - c,
                (i / (volume * volume)) as f32 - c,
            );
            ((x * x + y * y + z * z).sqrt() * 4.0) as u8
        })
        .collect();
    // the volume renderer's own texture contract, as the study sets it up
    let vdesc = study::volume_texture([volume; 3]);
    let vt = emu.create_texture(&vdesc, &vol).expect("volume");
    let transfer = [
        0.0f32, 0.0, 0.0, 0.0, 1.0, 0.5, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0,
    ];
    let tdesc = TextureDesc {
        dims: 1,
        width: 3,
        height: 1,
        depth: 1,
        format: TexFormat::F32,
        channels: 4,
        normalized_read: false,
        ..vdesc
    };
    let tt = emu
        .create_texture(&tdesc, &le(&transfer, f32::to_le_bytes))
        .expect("transfer function");
    let inv = view.inv_view_matrix();
    emu.write_symbol(module, "c_invViewMatrix", &le(&inv, f32::to_le_bytes))
        .expect("view matrix");
    let out = emu.alloc(u64::from(image * image * 4)).expect("alloc");
    // The probe log (kernels/warpscope.cuh): statistics for the 2 sites of every warp, no warp
    // traced; the warps' state lives in dynamic shared memory.
    use kernels::layout as L;
    let (sites, wpb) = (2u32, 8u32);
    let n_warps = image.div_ceil(16) * image.div_ceil(16) * wpb;
    let area = L::WS_WARP_HEADER_BYTES + sites * L::WS_SUMMARY_SITE_BYTES;
    let log_bytes = L::WS_LOG_HEADER_BYTES + n_warps * area;
    let log = emu.alloc(u64::from(log_bytes)).expect("alloc");
    let mut logarg = log.to_le_bytes().to_vec();
    // slots, dummy, flags, shared_offset, sites, n_warps
    for v in [0, 0, 0, 0, sites, n_warps] {
        logarg.extend_from_slice(&v.to_le_bytes());
    }
    let f = |x: f32| x.to_le_bytes().to_vec();
    let params = LaunchParams {
        grid: [image.div_ceil(16), image.div_ceil(16), 1],
        block: [16, 16, 1],
        dynamic_shared_bytes: wpb * area,
        regs_per_thread: 40,
        args: vec![
            out.to_le_bytes().to_vec(),
            image.to_le_bytes().to_vec(),
            image.to_le_bytes().to_vec(),
            f(0.05),
            f(1.0),
            f(0.0),
            f(1.0),
            f(0.01),
            vt.to_le_bytes().to_vec(),
            tt.to_le_bytes().to_vec(),
            logarg,
        ],
        max_warp_instructions: u64::MAX,
    };
    Workload {
        name: format!("volume_render {image}x{image}, {volume}^3 on {preset}, view {view}"),
        emu,
        module,
        kernel: "d_render",
        params,
        restore: vec![(log, vec![0; log_bytes as usize])],
    }
}
