//! Emulator speed: simulated warp instructions per second on fixed corpus kernels.
//!
//! Throughput is reported in "elements" = warp instructions, so criterion prints warp
//! instructions per second directly. Run with `cargo bench -p warpscope-benches --bench emulator`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use emulator::{Emulator, GpuConfig, LaunchParams, Module};

fn setup(name: &str) -> (Emulator, emulator::ModuleId) {
    let ptx = kernels::find_corpus(name)
        .map(|k| k.ptx)
        .unwrap_or_default();
    let module = Module::parse(ptx).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut emu = Emulator::new(GpuConfig::preset("v100").unwrap_or_else(|e| panic!("{e}")));
    let m = emu.load(&module).unwrap_or_else(|e| panic!("{e}"));
    (emu, m)
}

fn bytes_f32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn matmul(c: &mut Criterion) {
    let (mut emu, m) = setup("matmul");
    let n = 128usize;
    let a: Vec<f32> = (0..n * n).map(|i| (i % 13) as f32).collect();
    let da = emu.alloc((n * n * 4) as u64).unwrap();
    let db = emu.alloc((n * n * 4) as u64).unwrap();
    let dc = emu.alloc((n * n * 4) as u64).unwrap();
    emu.write(da, &bytes_f32(&a)).unwrap();
    emu.write(db, &bytes_f32(&a)).unwrap();
    let dim = (n as i32).to_le_bytes().to_vec();
    let p = LaunchParams {
        grid: [(n / 16) as u32, (n / 16) as u32, 1],
        block: [16, 16, 1],
        dynamic_shared_bytes: 0,
        regs_per_thread: 32,
        args: vec![
            da.to_le_bytes().to_vec(),
            db.to_le_bytes().to_vec(),
            dc.to_le_bytes().to_vec(),
            dim.clone(),
            dim.clone(),
            dim,
        ],
        max_warp_instructions: u64::MAX,
    };
    let instrs = emu.launch(m, "matmul", &p).unwrap().warp_instructions;
    let mut g = c.benchmark_group("emulator");
    g.throughput(Throughput::Elements(instrs));
    g.sample_size(10);
    g.bench_function("matmul_128", |b| {
        b.iter(|| emu.launch(m, "matmul", &p).unwrap().cycles)
    });
    g.finish();
}

fn histogram(c: &mut Criterion) {
    let (mut emu, m) = setup("histogram_shared");
    let n = 1 << 20;
    let data: Vec<u8> = (0..n)
        .map(|i| ((i * 2_654_435_761u64 as usize) >> 7) as u8)
        .collect();
    let d = emu.alloc(n as u64).unwrap();
    emu.write(d, &data).unwrap();
    let h = emu.alloc(1024).unwrap();
    let p = LaunchParams {
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
    let instrs = emu
        .launch(m, "histogram_shared", &p)
        .unwrap()
        .warp_instructions;
    let mut g = c.benchmark_group("emulator");
    g.throughput(Throughput::Elements(instrs));
    g.sample_size(10);
    g.bench_function("histogram_shared_1M", |b| {
        b.iter(|| emu.launch(m, "histogram_shared", &p).unwrap().cycles)
    });
    g.finish();
}

criterion_group!(benches, matmul, histogram);
criterion_main!(benches);
