//! Prints simulated warp instructions per second for a corpus kernel (release build):
//! `cargo run --release -p warpscope-emulator --example speed`.

use emulator::{
    Emulator, GpuConfig, LaunchParams, Module, TexAddress, TexFilter, TexFormat, TextureDesc,
};

fn main() {
    // `speed [n] [matmul|collatz|volume_render]`: one kernel alone, e.g. under a profiler.
    let only = std::env::args().nth(2);
    let want = |k: &str| only.as_deref().is_none_or(|o| o == k);
    let mut emu = Emulator::new(GpuConfig::preset("v100").expect("preset"));
    if want("matmul") {
        let ptx = kernels::find_corpus("matmul")
            .map(|k| k.ptx)
            .unwrap_or_default();
        let module = Module::parse(ptx).expect("matmul PTX parses");
        let m = emu.load(&module).expect("loads");
        let n: usize = std::env::args()
            .nth(1)
            .and_then(|a| a.parse().ok())
            .unwrap_or(256);
        let bytes: Vec<u8> = (0..n * n)
            .flat_map(|i| ((i % 13) as f32).to_le_bytes())
            .collect();
        let mut bufs = Vec::new();
        for _ in 0..3 {
            let a = emu.alloc((n * n * 4) as u64).expect("alloc");
            emu.write(a, &bytes).expect("write");
            bufs.push(a);
        }
        let dim = (n as i32).to_le_bytes().to_vec();
        let p = LaunchParams {
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
        let t = std::time::Instant::now();
        let s = emu.launch(m, "matmul", &p).expect("launch");
        let secs = t.elapsed().as_secs_f64();
        println!(
            "matmul {n}: {} warp instructions, {} cycles, {:.3} s, {:.2} M warp instr/s",
            s.warp_instructions,
            s.cycles,
            secs,
            s.warp_instructions as f64 / secs / 1e6
        );
        println!("stalls {:?}", s.stall_cycles);
    }
    if want("collatz") {
        // An ALU-bound divergent loop: Collatz step counts.
        let ptx = kernels::find_corpus("collatz")
            .map(|k| k.ptx)
            .unwrap_or_default();
        let module = Module::parse(ptx).expect("collatz PTX parses");
        let c = emu.load(&module).expect("loads");
        let n = 1usize << 16;
        let start: Vec<u8> = (1..=n as u32).flat_map(|v| v.to_le_bytes()).collect();
        let ds = emu.alloc((n * 4) as u64).expect("alloc");
        emu.write(ds, &start).expect("write");
        let dout = emu.alloc((n * 4) as u64).expect("alloc");
        let p = LaunchParams {
            grid: [(n / 256) as u32, 1, 1],
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
        let t = std::time::Instant::now();
        let s = emu.launch(c, "collatz", &p).expect("launch");
        let secs = t.elapsed().as_secs_f64();
        println!(
            "collatz {n}: {} warp instructions, {} cycles, {:.3} s, {:.2} M warp instr/s",
            s.warp_instructions,
            s.cycles,
            secs,
            s.warp_instructions as f64 / secs / 1e6
        );
    }
    if want("volume_render") {
        // The paper's workload: the SDK volume renderer, fenced probes, 128x128 image, 64^3 volume.
        let Some(b) = kernels::find("volume_render", 2) else {
            return;
        };
        let module = Module::parse(b.ptx).expect("volume_render parses");
        let v = emu.load(&module).expect("loads");
        let vw = 64u32;
        let c = (vw as f32 - 1.0) / 2.0;
        let vol: Vec<u8> = (0..vw * vw * vw)
            .map(|i| {
                let (x, y, z) = (
                    (i % vw) as f32 - c,
                    ((i / vw) % vw) as f32 - c,
                    (i / (vw * vw)) as f32 - c,
                );
                ((x * x + y * y + z * z).sqrt() * 4.0) as u8
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
        let vt = emu.create_texture(&vdesc, &vol).expect("volume");
        let tf: Vec<u8> = [
            0.0f32, 0.0, 0.0, 0.0, 1.0, 0.5, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0,
        ]
        .iter()
        .flat_map(|f| f.to_le_bytes())
        .collect();
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
        let tt = emu.create_texture(&tdesc, &tf).expect("transfer function");
        let inv: Vec<u8> = [
            1.0f32, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 4.0,
        ]
        .iter()
        .flat_map(|f| f.to_le_bytes())
        .collect();
        emu.write_symbol(v, "c_invViewMatrix", &inv)
            .expect("view matrix");
        let iw = 128u32;
        let out = emu.alloc((iw * iw * 4) as u64).expect("alloc");
        // The probe log (kernels/warpscope.cuh): statistics for the 2 sites of every warp, no warp
        // traced; the warps' state lives in dynamic shared memory.
        use kernels::layout as L;
        let (sites, wpb) = (2u32, 8u32);
        let n_warps = (iw / 16) * (iw / 16) * wpb;
        let area = L::WS_WARP_HEADER_BYTES + sites * L::WS_SUMMARY_SITE_BYTES;
        let log = emu
            .alloc(u64::from(L::WS_LOG_HEADER_BYTES + n_warps * area))
            .expect("alloc");
        let mut logarg = Vec::new();
        logarg.extend_from_slice(&log.to_le_bytes());
        // slots, dummy, flags, shared_offset, sites, n_warps
        for v in [0, 0, 0, 0, sites, n_warps] {
            logarg.extend_from_slice(&v.to_le_bytes());
        }
        let f = |x: f32| x.to_le_bytes().to_vec();
        let p = LaunchParams {
            grid: [iw / 16, iw / 16, 1],
            block: [16, 16, 1],
            dynamic_shared_bytes: wpb * area,
            regs_per_thread: 40,
            args: vec![
                out.to_le_bytes().to_vec(),
                iw.to_le_bytes().to_vec(),
                iw.to_le_bytes().to_vec(),
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
        let t = std::time::Instant::now();
        let s = emu.launch(v, "d_render", &p).expect("launch");
        let secs = t.elapsed().as_secs_f64();
        println!(
            "volume_render {iw}x{iw}, {vw}^3: {} warp instructions, {} cycles, {:.3} s, {:.2} M warp instr/s",
            s.warp_instructions,
            s.cycles,
            secs,
            s.warp_instructions as f64 / secs / 1e6
        );
    }
}
