//! What a run does before its launch, which every frame of a sweep repeats or a sweep does once:
//! generating the blobs volume (once per sweep or `render`) and laying it out as a texture in a
//! fresh emulator's device memory (once per frame: every frame starts on a new emulator).
//! Throughput is in "elements" = voxels. Run with `cargo bench -p warpscope-benches --bench setup`.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use emulator::{Emulator, GpuConfig, TextureLayout};
use study::{Volume, VolumeKind};

/// The demo's quick volume: blobs, 256³, seed 1.
const DIMS: [u32; 3] = [256, 256, 256];

fn voxels() -> u64 {
    DIMS.iter().map(|&n| u64::from(n)).product()
}

fn generate(c: &mut Criterion) {
    let mut g = c.benchmark_group("setup");
    g.throughput(Throughput::Elements(voxels()));
    g.sample_size(10);
    g.bench_function("volume_generate/blobs_256", |b| {
        b.iter(|| Volume::generate(VolumeKind::Blobs, DIMS, 1).expect("the demo's volume"))
    });
    g.finish();
}

fn upload(c: &mut Criterion) {
    let volume = Volume::generate(VolumeKind::Blobs, DIMS, 1).expect("the demo's volume");
    let desc = study::volume_texture(DIMS);
    let mut g = c.benchmark_group("setup");
    g.throughput(Throughput::Elements(voxels()));
    g.sample_size(10);
    for layout in TextureLayout::ALL {
        let mut config = GpuConfig::preset("gtx480").expect("a preset");
        config.texture.layout = layout;
        g.bench_function(format!("texture_upload/{layout}_256"), |b| {
            b.iter_batched(
                || Emulator::new(config.clone()),
                |mut emu| {
                    emu.create_texture(&desc, &volume.data)
                        .expect("the volume's texture");
                    emu
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, generate, upload);
criterion_main!(benches);
