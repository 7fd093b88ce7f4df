//! Helpers shared by the integration tests.

use emulator::{Emulator, GpuConfig, LaunchParams, LaunchStats, Module, ModuleId};

pub struct Rig {
    pub emu: Emulator,
    pub m: ModuleId,
}

impl Rig {
    pub fn new(ptx: &str) -> Rig {
        Rig::with_preset(ptx, "v100")
    }
    pub fn with_preset(ptx: &str, preset: &str) -> Rig {
        Rig::with_config(ptx, GpuConfig::preset(preset).expect("preset"))
    }
    pub fn with_config(ptx: &str, cfg: GpuConfig) -> Rig {
        let module = Module::parse(ptx).expect("PTX parses");
        let mut emu = Emulator::new(cfg);
        let m = emu.load(&module).expect("module loads");
        Rig { emu, m }
    }
    pub fn buf<T: bytemuck::Pod>(&mut self, data: &[T]) -> u64 {
        let bytes = as_bytes(data);
        let a = self.emu.alloc(bytes.len().max(1) as u64).unwrap();
        self.emu.write(a, &bytes).unwrap();
        a
    }
    pub fn zeros(&mut self, bytes: usize) -> u64 {
        self.emu.alloc(bytes as u64).unwrap()
    }
    pub fn get_u32(&self, addr: u64, n: usize) -> Vec<u32> {
        let mut b = vec![0u8; n * 4];
        self.emu.read(addr, &mut b).unwrap();
        b.chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
    /// The little-endian 64-bit word at `addr`.
    pub fn get_u64(&self, addr: u64) -> u64 {
        let v = self.get_u32(addr, 2);
        u64::from(v[0]) | u64::from(v[1]) << 32
    }
    pub fn get_f32(&self, addr: u64, n: usize) -> Vec<f32> {
        self.get_u32(addr, n)
            .into_iter()
            .map(f32::from_bits)
            .collect()
    }
    pub fn launch(
        &mut self,
        kernel: &str,
        grid: [u32; 3],
        block: [u32; 3],
        args: Vec<Vec<u8>>,
    ) -> LaunchStats {
        self.try_launch(kernel, grid, block, 0, args)
            .unwrap_or_else(|e| panic!("{kernel}: {e}"))
    }
    pub fn try_launch(
        &mut self,
        kernel: &str,
        grid: [u32; 3],
        block: [u32; 3],
        dyn_shared: u32,
        args: Vec<Vec<u8>>,
    ) -> Result<LaunchStats, emulator::EmuError> {
        let p = LaunchParams {
            grid,
            block,
            dynamic_shared_bytes: dyn_shared,
            regs_per_thread: 32,
            args,
            max_warp_instructions: 200_000_000,
        };
        self.emu.launch(self.m, kernel, &p)
    }
}

pub fn as_bytes<T: bytemuck::Pod>(data: &[T]) -> Vec<u8> {
    bytemuck::cast_slice(data).to_vec()
}

pub fn a64(v: u64) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}
pub fn a32(v: i32) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}
pub fn af(v: f32) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

/// Deterministic pseudo-random numbers (xorshift64*), so inputs need no external crate.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

pub fn corpus_ptx(name: &str) -> &'static str {
    kernels::find_corpus(name)
        .unwrap_or_else(|| panic!("corpus kernel {name}"))
        .ptx
}

/// The volume-render tests' scene: a `vw`³ u8 volume whose voxel at centred coordinates
/// (x, y, z) (centre `c`) is `voxel(x, y, z, c)`, the 3-entry transfer function
/// black → orange → white, and the identity view at distance 4 in `c_invViewMatrix`.
/// Returns the volume and transfer-function texture handles.
pub fn volume_scene(r: &mut Rig, vw: u32, voxel: impl Fn(f32, f32, f32, f32) -> u8) -> (u64, u64) {
    use emulator::{TexAddress, TexFilter, TexFormat, TextureDesc};
    let c = (vw as f32 - 1.0) / 2.0;
    let vol: Vec<u8> = (0..vw * vw * vw)
        .map(|i| {
            let (x, y, z) = (
                (i % vw) as f32 - c,
                ((i / vw) % vw) as f32 - c,
                (i / (vw * vw)) as f32 - c,
            );
            voxel(x, y, z, c)
        })
        .collect();
    let vdesc = TextureDesc {
        dims: 3,
        width: vw,
        height: vw,
        depth: vw,
        format: TexFormat::U8,
        channels: 1,
        normalized_read: true,
        filter: TexFilter::Linear,
        address: [TexAddress::Clamp; 3],
        normalized_coords: true,
        linear_buffer: None,
    };
    let vt = r.emu.create_texture(&vdesc, &vol).unwrap();
    let tf: [f32; 12] = [0.0, 0.0, 0.0, 0.0, 1.0, 0.5, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0];
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
    let tt = r.emu.create_texture(&tdesc, &as_bytes(&tf)).unwrap();
    let inv: [f32; 12] = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 4.0];
    r.emu
        .write_symbol(r.m, "c_invViewMatrix", &as_bytes(&inv))
        .unwrap();
    (vt, tt)
}

/// A probe log (`kernels/warpscope.cuh`, layout version 2) for tests that launch probed builds
/// straight on the emulator: the bytes to upload, the `ws::Log` argument, the dynamic shared
/// memory the probes' state needs, and readers for what the kernel wrote.
pub struct ProbeLog {
    pub initial: Vec<u8>,
    pub sites: u32,
    pub slots: u32,
    pub n_warps: u32,
    /// Every warp traced (trace area index = warp index) or none.
    pub traced: bool,
    /// Dynamic shared bytes per block for the probes' state.
    pub shared_per_block: u32,
}

impl ProbeLog {
    pub fn new(n_warps: u32, warps_per_block: u32, sites: u32, slots: u32, traced: bool) -> Self {
        use kernels::layout as L;
        let area = L::WS_WARP_HEADER_BYTES + sites * L::WS_SUMMARY_SITE_BYTES;
        let traces = if traced {
            n_warps * slots * L::WS_RECORD_BYTES
        } else {
            0
        };
        let mut b = vec![0u8; (L::WS_LOG_HEADER_BYTES + n_warps * area + traces) as usize];
        let mut put = |off: u32, v: u32| {
            b[off as usize..off as usize + 4].copy_from_slice(&v.to_le_bytes());
        };
        put(L::WS_HDR_MAGIC_OFFSET, L::WS_LOG_MAGIC);
        put(L::WS_HDR_VERSION_OFFSET, L::WS_LOG_VERSION);
        for w in 0..n_warps {
            let base = L::WS_LOG_HEADER_BYTES + w * area;
            put(
                base + L::WS_WH_TRACE_OFFSET,
                if traced { w } else { L::WS_NOT_TRACED },
            );
            for s in 0..sites {
                put(
                    base + L::WS_WARP_HEADER_BYTES
                        + s * L::WS_SUMMARY_SITE_BYTES
                        + L::WS_SUM_MIN_OFFSET,
                    u32::MAX,
                );
            }
        }
        ProbeLog {
            initial: b,
            sites,
            slots,
            n_warps,
            traced,
            shared_per_block: warps_per_block * area,
        }
    }

    /// `ws::Log {buf, slots, dummy = 0, flags, shared_offset = 0, sites, n_warps}`.
    pub fn arg(&self, addr: u64) -> Vec<u8> {
        let flags = if self.traced {
            kernels::layout::WS_LOG_FLAG_TRACED
        } else {
            0
        };
        let mut a = Vec::new();
        a.extend(addr.to_le_bytes());
        for v in [self.slots, 0, flags, 0, self.sites, self.n_warps] {
            a.extend(v.to_le_bytes());
        }
        a
    }

    fn area(&self) -> u32 {
        kernels::layout::WS_WARP_HEADER_BYTES + self.sites * kernels::layout::WS_SUMMARY_SITE_BYTES
    }

    fn word(buf: &[u8], off: u32) -> u32 {
        u32::from_le_bytes(buf[off as usize..off as usize + 4].try_into().unwrap())
    }

    /// A warp-header word (`WS_WH_*_OFFSET`).
    pub fn header(&self, buf: &[u8], warp: u32, offset: u32) -> u32 {
        Self::word(
            buf,
            kernels::layout::WS_LOG_HEADER_BYTES + warp * self.area() + offset,
        )
    }

    /// (count, min, max, sum) of one site of one warp.
    pub fn stats(&self, buf: &[u8], warp: u32, site: u32) -> (u32, u32, u32, u32) {
        use kernels::layout as L;
        let r = L::WS_LOG_HEADER_BYTES
            + warp * self.area()
            + L::WS_WARP_HEADER_BYTES
            + site * L::WS_SUMMARY_SITE_BYTES;
        (
            Self::word(buf, r + L::WS_SUM_COUNT_OFFSET),
            Self::word(buf, r + L::WS_SUM_MIN_OFFSET),
            Self::word(buf, r + L::WS_SUM_MAX_OFFSET),
            Self::word(buf, r + L::WS_SUM_SUM_OFFSET),
        )
    }

    /// (site, duration) of a traced warp's kept records, in order.
    pub fn records(&self, buf: &[u8], warp: u32) -> Vec<(u32, u32)> {
        use kernels::layout as L;
        let kept = self
            .header(buf, warp, L::WS_WH_COUNT_OFFSET)
            .min(self.slots);
        let base = L::WS_LOG_HEADER_BYTES
            + self.n_warps * self.area()
            + warp * self.slots * L::WS_RECORD_BYTES;
        (0..kept)
            .map(|k| {
                let r = base + k * L::WS_RECORD_BYTES;
                (
                    Self::word(buf, r + L::WS_REC_SITE_OFFSET),
                    Self::word(buf, r + L::WS_REC_DURATION_OFFSET),
                )
            })
            .collect()
    }
}

/// The output, probe log and launch result of one `d_render` of an `iw`×`iw` image in 16×16
/// blocks over the scene of [`volume_scene`], with the SDK's parameters (density 0.05,
/// brightness 1, transfer offset 0 and scale 1, step 0.01), every warp traced (64 slots).
pub struct VolumeRender {
    pub out: u64,
    pub log: u64,
    pub plog: ProbeLog,
    pub stats: Result<LaunchStats, emulator::EmuError>,
}

pub fn render_volume(r: &mut Rig, tex: (u64, u64), iw: u32) -> VolumeRender {
    render_volume_in(r, tex, iw, [16, 16])
}

/// [`render_volume`] in blocks of `bx`×`by` threads.
pub fn render_volume_in(
    r: &mut Rig,
    (vt, tt): (u64, u64),
    iw: u32,
    [bx, by]: [u32; 2],
) -> VolumeRender {
    let out = r.zeros((iw * iw * 4) as usize);
    let wpb = bx * by / 32;
    let plog = ProbeLog::new((iw / bx) * (iw / by) * wpb, wpb, 2, 64, true);
    let log = r.buf(&plog.initial);
    let args = vec![
        a64(out),
        a32(iw as i32),
        a32(iw as i32),
        af(0.05),
        af(1.0),
        af(0.0),
        af(1.0),
        af(0.01),
        a64(vt),
        a64(tt),
        plog.arg(log),
    ];
    let stats = r.try_launch(
        "d_render",
        [iw / bx, iw / by, 1],
        [bx, by, 1],
        plog.shared_per_block,
        args,
    );
    VolumeRender {
        out,
        log,
        plog,
        stats,
    }
}

/// `f` run in a pool of `threads` threads.
pub fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}
