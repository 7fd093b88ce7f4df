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
        let module = Module::parse(ptx).expect("PTX parses");
        let mut emu = Emulator::new(GpuConfig::preset(preset).expect("preset"));
        let m = emu.load(&module).expect("module loads");
        Rig { emu, m }
    }
    pub fn buf<T: Copy>(&mut self, data: &[T]) -> u64 {
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

pub fn as_bytes<T: Copy>(data: &[T]) -> Vec<u8> {
    let n = std::mem::size_of_val(data);
    let mut v = vec![0u8; n];
    // SAFETY: T is Copy plain data (integers/floats) in every use; we copy its bytes.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr() as *const u8, v.as_mut_ptr(), n) };
    v
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
