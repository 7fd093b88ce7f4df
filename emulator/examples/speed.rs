//! Prints simulated warp instructions per second for a corpus kernel (release build):
//! `cargo run --release -p warpscope-emulator --example speed`.

use emulator::{Emulator, GpuConfig, LaunchParams, Module};

fn main() {
    let ptx = kernels::find_corpus("matmul")
        .map(|k| k.ptx)
        .unwrap_or_default();
    let module = Module::parse(ptx).expect("matmul PTX parses");
    let mut emu = Emulator::new(GpuConfig::preset("v100").expect("preset"));
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
