use super::*;
use crate::config::TextureLayout;

fn desc(dims: u8, w: u32, h: u32, d: u32, filter: TexFilter) -> TextureDesc {
    TextureDesc {
        dims,
        width: w,
        height: h,
        depth: d,
        format: TexFormat::F32,
        channels: 1,
        normalized_read: false,
        filter,
        address: [TexAddress::Clamp; 3],
        normalized_coords: false,
        linear_buffer: None,
    }
}

fn at(desc: TextureDesc, layout: TextureLayout) -> Texture {
    let storage = Storage::new(&desc, layout);
    Texture::new(desc, 0, storage)
}

/// A u8 texture (1 channel) or one with `tb`-byte texels, for address tests.
fn texels(dims: u8, [w, h, d]: [u32; 3], tb: u8) -> TextureDesc {
    let (format, channels) = match tb {
        1 => (TexFormat::U8, 1),
        2 => (TexFormat::U16, 1),
        4 => (TexFormat::F32, 1),
        8 => (TexFormat::F32, 2),
        _ => (TexFormat::F32, 4),
    };
    TextureDesc {
        format,
        channels,
        ..desc(dims, w, h, d, TexFilter::Point)
    }
}

fn make_in(d: TextureDesc, data: &[f32], layout: TextureLayout) -> (DeviceMemory, Texture) {
    let mut dev = DeviceMemory::default();
    let storage = Storage::new(&d, layout);
    let base = dev
        .alloc_aligned(storage.bytes(&d), storage.align())
        .unwrap();
    let t = Texture::new(d, base, storage);
    let bytes: Vec<u8> = data.iter().flat_map(|f| f.to_le_bytes()).collect();
    t.upload(&mut dev, &bytes).unwrap();
    (dev, t)
}

fn make(d: TextureDesc, data: &[f32]) -> (DeviceMemory, Texture) {
    make_in(d, data, TextureLayout::BlockLinear)
}

#[test]
fn linear_filter_uses_8bit_weights() {
    let (dev, t) = make(desc(1, 4, 1, 1, TexFilter::Linear), &[0.0, 1.0, 2.0, 3.0]);
    let mut a = Vec::new();
    // u = 1.5 + 1/3 -> xb = 1.3333, alpha = round(85.33)/256 = 85/256
    let v = t.sample(&dev, [1.5 + 1.0 / 3.0, 0.0, 0.0], &mut a).unwrap();
    assert_eq!(v[0], 1.0 + 85.0 / 256.0);
    assert_eq!(a.len(), 2);
    assert_eq!(a[1] - a[0], 4);
}

#[test]
fn address_modes() {
    let mut d = desc(1, 4, 1, 1, TexFilter::Point);
    d.normalized_coords = true;
    d.address[0] = TexAddress::Wrap;
    let (dev, t) = make(d.clone(), &[10.0, 11.0, 12.0, 13.0]);
    let mut a = Vec::new();
    assert_eq!(
        t.sample(&dev, [1.25 + 0.01, 0.0, 0.0], &mut a).unwrap()[0],
        11.0
    );
    d.address[0] = TexAddress::Mirror;
    let t2 = Texture::new(d.clone(), t.base, t.storage);
    // u = 1.125*4 = 4.5 -> index 4 mirrors to 3
    assert_eq!(t2.sample(&dev, [1.125, 0.0, 0.0], &mut a).unwrap()[0], 13.0);
    d.address[0] = TexAddress::Border;
    let t3 = Texture::new(d, t.base, t.storage);
    assert_eq!(t3.sample(&dev, [1.5, 0.0, 0.0], &mut a).unwrap()[0], 0.0);
    assert_eq!(
        t.sample(&dev, [-0.25 + 0.01, 0.0, 0.0], &mut a).unwrap()[0],
        13.0
    );
}

#[test]
fn bricks_and_linear_layouts() {
    let d = desc(3, 16, 16, 16, TexFilter::Point);
    let t = at(d.clone(), TextureLayout::Bricks);
    let linear = at(d, TextureLayout::Linear);
    // Row-major: a row of 16 texels of 4 bytes, a slice of 16 rows.
    assert_eq!(linear.texel_offset(1, 0, 0), 4);
    assert_eq!(linear.texel_offset(0, 1, 0), 64);
    assert_eq!(linear.texel_offset(0, 0, 1), 1024);
    assert_eq!(t.texel_offset(1, 0, 0), 4);
    assert_eq!(t.texel_offset(0, 1, 0), 32);
    assert_eq!(t.texel_offset(0, 0, 1), 256);
    assert_eq!(t.texel_offset(8, 0, 0), 2048);
    // 2D under `bricks` stays row-major, as before block-linear existed.
    let flat = at(desc(2, 16, 16, 1, TexFilter::Point), TextureLayout::Bricks);
    assert_eq!(flat.storage, Storage::Linear);
}

/// Offsets worked out by hand from the rules in the module docs: block = one GOB (64 B)
/// wide, 2^h GOBs high, 2^d slices deep, h = min(5, ceil(log2(ceil(rows / 8)))),
/// d = min(5, ceil(log2(depth))); blocks x, then y, then z; GOBs in a block y, then z;
/// inside a GOB byte x of row r goes to
/// x[3:0] + 16·r0 + 32·(r1 ^ x4 ^ 1) + 64·(x4 ^ r2) + 128·r2 + 256·x5.
#[test]
fn block_linear_offsets_match_hand_computed_values() {
    let bl = |dims, ext, tb| at(texels(dims, ext, tb), TextureLayout::BlockLinear);

    // 64³ u8: 64 B rows = 1 block across; 8 GOBs of rows -> h = 3 (64 rows); depth 64 ->
    // d = 5 (32 slices); block = 512 · 2^8 = 131072 B; 1 × 1 × 2 blocks = 262144 B.
    let t = bl(3, [64, 64, 64], 1);
    assert_eq!(t.storage.bytes(&t.desc), 262_144);
    assert_eq!(t.storage.align(), 131_072);
    assert_eq!(t.texel_offset(0, 0, 0), 32); // r1 ^ x4 ^ 1 = 1
    assert_eq!(t.texel_offset(1, 0, 0), 33);
    assert_eq!(t.texel_offset(0, 1, 0), 48); // 16 + 32
    assert_eq!(t.texel_offset(0, 8, 0), 544); // next GOB down: 512 + 32
    assert_eq!(t.texel_offset(0, 0, 1), 4128); // GOB 1·2^3 = 8: 4096 + 32
    assert_eq!(t.texel_offset(0, 0, 32), 131_104); // second block: 131072 + 32
    // (63, 63, 63): x = 63 (x5 = x4 = 1, x[3:0] = 15), r = 7: 15 + 16 + 32·(1^1^1) +
    // 64·(1^1) + 128 + 256 = 447; block 1, GOB 31·8 + 7 = 255: (256 + 255)·512 + 447.
    assert_eq!(t.texel_offset(63, 63, 63), 262_079);

    // 1024³ u8: 16 blocks across; 128 GOBs of rows -> h = 5 (256 rows), 4 blocks down;
    // d = 5, 32 blocks deep; block = 512 · 2^10 = 524288 B; 2048 blocks = 1 GiB.
    let t = bl(3, [1024, 1024, 1024], 1);
    assert_eq!(t.storage.bytes(&t.desc), 1 << 30);
    assert_eq!(t.texel_offset(64, 0, 0), 524_320); // block 1
    assert_eq!(t.texel_offset(0, 256, 0), 8_388_640); // block 16: 16 · 524288 + 32
    assert_eq!(t.texel_offset(0, 0, 32), 33_554_464); // block 64: 64 · 524288 + 32
    assert_eq!(t.texel_offset(0, 8, 1), 16_928); // GOB 32 + 1 = 33: 16896 + 32
    // (1000, 500, 700): byte 1000 = block x 15, x = 40 (x5 = 1, x4 = 0, x[3:0] = 8);
    // row 500 = GOB row 62 (block y 1, GOB 30), r = 4 (r2 = 1); slice 700 = block z 21,
    // slice 28. Block (21·4 + 1)·16 + 15 = 1375, GOB 28·32 + 30 = 926, in-GOB
    // 8 + 32 + 64 + 128 + 256 = 488: (1375·1024 + 926)·512 + 488 = 721370600.
    assert_eq!(t.texel_offset(1000, 500, 700), 721_370_600);

    // 2D 300×200 float4: rows of 4800 B = 75 blocks across; 25 GOBs of rows -> h = 5
    // (32 GOBs, 256 rows: the block is taller than the texture); block = 16384 B.
    let t = bl(2, [300, 200, 1], 16);
    assert_eq!(t.storage.bytes(&t.desc), 75 * 16_384);
    assert_eq!(t.texel_offset(1, 0, 0), 64); // x = 16: x4 = 1 -> 64, r1^x4^1 = 0
    assert_eq!(t.texel_offset(2, 3, 0), 272); // x = 32 (x5), r = 3: 256 + 16
    assert_eq!(t.texel_offset(4, 0, 0), 16_416); // block 1: 16384 + 32
    // (299, 199): byte 4784 = block 74, x = 48 (x5 = x4 = 1); row 199 = GOB 24, r = 7:
    // 16 + 32 + 128 + 256 = 432; (74·32 + 24)·512 + 432 = 1225136.
    assert_eq!(t.texel_offset(299, 199, 0), 1_225_136);

    // Smaller than one GOB: 10×3 u8 is one 512-B GOB.
    let t = bl(2, [10, 3, 1], 1);
    assert_eq!(t.storage.bytes(&t.desc), 512);
    assert_eq!(t.storage.align(), 4096);
    assert_eq!(t.texel_offset(9, 2, 0), 9); // r1 = 1: r1 ^ x4 ^ 1 = 0
    assert_eq!(t.texel_offset(3, 1, 0), 51); // 3 + 16 + 32
    // 5×5×3 u16: 10-B rows, one GOB of rows (h = 0), depth 3 -> d = 2 (4 slices): 2048 B.
    // (4, 4, 2): byte 8, r = 4: 8 + 32 + 64 + 128 = 232; GOB 2: 1024 + 232.
    let t = bl(3, [5, 5, 3], 2);
    assert_eq!(t.storage.bytes(&t.desc), 2048);
    assert_eq!(t.texel_offset(4, 4, 2), 1256);

    // Non-power-of-two 100×50×40 u8: 2 blocks across; 7 GOBs of rows -> h = 3, 1 block
    // down; depth 40 -> d = 5, 2 blocks deep; block 131072 B, 4 blocks.
    let t = bl(3, [100, 50, 40], 1);
    assert_eq!(t.storage.bytes(&t.desc), 524_288);
    // (99, 49, 39): block x 1, x = 35 (x5, x[3:0] = 3); GOB row 6, r = 1; block z 1,
    // slice 7. Block (1·1 + 0)·2 + 1 = 3, GOB 7·8 + 6 = 62, in-GOB 3 + 16 + 32 + 256 = 307:
    // (3·256 + 62)·512 + 307 = 425267.
    assert_eq!(t.texel_offset(99, 49, 39), 425_267);
    // (70, 10, 0): block 1, GOB 1, x = 6, r = 2: 131072 + 512 + 6.
    assert_eq!(t.texel_offset(70, 10, 0), 131_590);
}

#[test]
fn block_linear_sectors_are_16_bytes_by_2_rows_and_lines_32_by_4() {
    let t = at(texels(2, [64, 8, 1], 1), TextureLayout::BlockLinear);
    // How many `bytes`-sized units the `w`×`h` texels from (x0, y0) fall in.
    let units = |(x0, y0): (u32, u32), [w, h]: [u32; 2], bytes: u64| {
        (0..w)
            .flat_map(|dx| (0..h).map(move |dy| (dx, dy)))
            .map(|(dx, dy)| t.texel_offset(x0 + dx, y0 + dy, 0) / bytes)
            .collect::<std::collections::BTreeSet<u64>>()
            .len()
    };
    for corner in [(0u32, 0u32), (16, 2), (32, 4), (48, 6)] {
        assert_eq!(units(corner, [16, 2], 32), 1, "sector at {corner:?}");
    }
    for corner in [(0u32, 0u32), (32, 0), (0, 4), (32, 4)] {
        assert_eq!(units(corner, [32, 4], 128), 1, "line at {corner:?}");
    }
}

#[test]
fn a_1d_array_is_block_linear_and_a_texture_over_linear_memory_is_not() {
    // float4 texels 0 and 1: two 32-byte sectors, as silicon read them (tex-footprint.cu
    // case 17), where row-major storage puts both in one.
    let array = at(texels(1, [64, 1, 1], 16), TextureLayout::BlockLinear);
    assert!(matches!(array.storage, Storage::BlockLinear(_)));
    assert_ne!(
        array.texel_offset(0, 0, 0) / 32,
        array.texel_offset(1, 0, 0) / 32
    );
    let over_memory = TextureDesc {
        linear_buffer: Some(0x1000),
        ..texels(1, [64, 1, 1], 16)
    };
    let fetch = at(over_memory, TextureLayout::BlockLinear);
    assert_eq!(fetch.storage, Storage::Linear);
    assert_eq!(fetch.texel_offset(1, 0, 0), 16);
}

/// A texture coordinate, normalized: mostly inside the texture and across its edges, at times
/// NaN, infinite or far outside.
fn coordinate() -> impl proptest::strategy::Strategy<Value = f32> {
    proptest::prop_oneof![
        4 => -0.5f32..1.5,
        1 => proptest::sample::select(vec![f32::NAN, -0.0, 1.0, f32::INFINITY, -1.0e30]),
    ]
}

proptest::proptest! {
    /// A warp's volume samples are each lane's sample by the general path, bit for bit, with
    /// the same texel addresses in the same order, for any set of lanes and coordinates
    /// (outside the volume and NaN included) in every layout and mode.
    #[test]
    fn a_warps_volume_samples_are_its_lanes_samples(
        coords in proptest::collection::vec(coordinate(), 96),
        mask in proptest::num::u32::ANY,
        layout in proptest::sample::select(TextureLayout::ALL.to_vec()),
        mode in proptest::sample::select(vec![TexAddress::Clamp, TexAddress::Wrap, TexAddress::Mirror]),
    ) {
        let desc = TextureDesc {
            dims: 3,
            width: 13,
            height: 9,
            depth: 7,
            format: TexFormat::U8,
            channels: 1,
            normalized_read: true,
            filter: TexFilter::Linear,
            address: [mode; 3],
            normalized_coords: true,
            linear_buffer: None,
        };
        let mut dev = DeviceMemory::default();
        let storage = Storage::new(&desc, layout);
        let base = dev.alloc_aligned(storage.bytes(&desc), storage.align()).unwrap();
        let t = Texture::new(desc, base, storage);
        let bytes: Vec<u8> = (0..13 * 9 * 7).map(|i| (i * 37 % 251) as u8).collect();
        t.upload(&mut dev, &bytes).unwrap();
        // The warp's path reads its parts from the tables, the general one computes them.
        proptest::prop_assert!(t.parts.iter().all(|p| !p.is_empty()));
        let s = t.sampler(&dev);
        proptest::prop_assert!(s.volume_path());
        let mut by_axis = [[0.0f32; 32]; 3];
        for (i, &v) in coords.iter().enumerate() {
            by_axis[i % 3][i / 3] = v;
        }
        let (mut warp, mut lanes) = (Vec::new(), Vec::new());
        let mut out = [[0.0f32; 32]; 4];
        let mut scratch = WarpSamples::default();
        proptest::prop_assert!(
            s.sample_volume(&by_axis, mask, &mut scratch, &mut warp, &mut out)
        );
        for l in (0..32).filter(|&l| mask & (1 << l) != 0) {
            let p = [0, 1, 2].map(|k| by_axis[k][l]);
            let v = s.sample(p, l as u8, &mut lanes).unwrap();
            let got = [0, 1, 2, 3].map(|k| out[k][l].to_bits());
            proptest::prop_assert_eq!(got, v.map(f32::to_bits), "lane {}", l);
        }
        proptest::prop_assert_eq!(warp, lanes);
    }

    /// A warp's samples of a 1D float texture are each lane's sample by the general path, bit
    /// for bit, with the same texel addresses in the same order, for any set of lanes and
    /// coordinates (outside the texture and NaN included), channel count, layout and mode.
    #[test]
    fn a_warps_line_samples_are_its_lanes_samples(
        coords in proptest::array::uniform32(coordinate()),
        mask in proptest::num::u32::ANY,
        channels in proptest::sample::select(vec![1u8, 2, 4]),
        layout in proptest::sample::select(TextureLayout::ALL.to_vec()),
        mode in proptest::sample::select(vec![TexAddress::Clamp, TexAddress::Wrap, TexAddress::Mirror]),
        normalized_coords in proptest::bool::ANY,
    ) {
        let desc = TextureDesc {
            channels,
            filter: TexFilter::Linear,
            address: [mode; 3],
            normalized_coords,
            ..TextureDesc::floats(21)
        };
        let mut dev = DeviceMemory::default();
        let storage = Storage::new(&desc, layout);
        let base = dev.alloc_aligned(storage.bytes(&desc), storage.align()).unwrap();
        let t = Texture::new(desc, base, storage);
        let values: Vec<u8> = (0..21 * usize::from(channels))
            .flat_map(|i| (i as f32 * 0.37 - 3.0).to_le_bytes())
            .collect();
        t.upload(&mut dev, &values).unwrap();
        proptest::prop_assert_eq!(t.parts[0].len(), 21);
        let s = t.sampler(&dev);
        proptest::prop_assert!(s.line_path());
        // Unnormalized coordinates span the texture's 21 texels.
        let by_lane = coords.map(|c| if normalized_coords { c } else { c * 21.0 });
        let (mut warp, mut lanes) = (Vec::new(), Vec::new());
        let mut out = [[0.0f32; 32]; 4];
        proptest::prop_assert!(s.sample_line(&by_lane, mask, &mut warp, &mut out));
        for l in (0..32).filter(|&l| mask & (1 << l) != 0) {
            let v = s.sample([by_lane[l], 0.0, 0.0], l as u8, &mut lanes).unwrap();
            let got = [0, 1, 2, 3].map(|k| out[k][l].to_bits());
            proptest::prop_assert_eq!(got, v.map(f32::to_bits), "lane {}", l);
        }
        proptest::prop_assert_eq!(warp, lanes);
    }
}

#[test]
fn rounding_halves_away_from_trunc_is_std_round() {
    let specials = [
        0.5f32,
        -0.5,
        0.49999997,
        -0.49999997,
        2.5,
        -2.5,
        8388607.5,
        -8388607.5,
        8388609.0,
        -0.0,
        0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MIN_POSITIVE,
        -1.0e-40,
    ];
    let patterns = (0..=u32::MAX).step_by(61).map(f32::from_bits);
    for v in specials.into_iter().chain(patterns) {
        let (got, want) = (round_half_away(v), v.round());
        assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "{v:e} ({:#x}): {got:e}, std {want:e}",
            v.to_bits()
        );
    }
}

#[test]
fn upload_then_sample_round_trips_in_every_layout() {
    for layout in TextureLayout::ALL {
        for (dims, [w, h, d]) in [(3u8, [19u32, 13, 11]), (2, [37, 21, 1]), (1, [45, 1, 1])] {
            let n = (w * h * d) as usize;
            let vals: Vec<f32> = (0..n).map(|i| i as f32).collect();
            let (dev, t) = make_in(desc(dims, w, h, d, TexFilter::Point), &vals, layout);
            let mut a = Vec::new();
            for (x, y, z) in [(0, 0, 0), (w - 1, h - 1, d - 1), (9, 3, d / 2), (17, 12, 0)] {
                let v = t
                    .sample(
                        &dev,
                        [x as f32 + 0.5, y as f32 + 0.5, z as f32 + 0.5],
                        &mut a,
                    )
                    .unwrap();
                // A 1D texture reads row 0 whatever its y: clamped, as a GPU does.
                let (y, z) = (y.min(h - 1), z.min(d - 1));
                assert_eq!(
                    v[0],
                    ((z * h + y) * w + x) as f32,
                    "{layout} {dims}D ({x},{y},{z})"
                );
            }
        }
    }
}

/// A 2D or 3D extent below `max` (depth 1 in 2D) and a texel size of 1 to 16 bytes.
fn extent_and_texel(
    max: [u32; 3],
) -> impl proptest::strategy::Strategy<Value = (u8, [u32; 3], u8)> {
    use proptest::strategy::Strategy;
    (2u8..=3, 1..max[0], 1..max[1], 1..max[2], 0u32..5).prop_map(|(dims, w, h, d, tb_log2)| {
        (dims, [w, h, if dims == 2 { 1 } else { d }], 1u8 << tb_log2)
    })
}

proptest::proptest! {
    /// The upload copies runs of texels whole (`Storage::x_run`); every texel must still
    /// land at its own offset, in every layout, for extents that end mid-run and mid-GOB.
    #[test]
    fn upload_puts_every_texel_at_its_offset(
        layout in proptest::sample::select(TextureLayout::ALL.to_vec()),
        (dims, [w, h, d], tb) in extent_and_texel([80, 20, 12]),
    ) {
        let desc = texels(dims, [w, h, d], tb);
        let tb = u64::from(tb);
        let mut dev = DeviceMemory::default();
        let storage = Storage::new(&desc, layout);
        let base = dev.alloc_aligned(storage.bytes(&desc), storage.align()).unwrap();
        let t = Texture::new(desc, base, storage);
        let n = (w * h * d) as u64 * tb;
        // Each byte a function of its place, so a texel in the wrong place shows.
        let bytes: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
        t.upload(&mut dev, &bytes).unwrap();
        let stored = dev.slice(base, t.storage.bytes(&t.desc) as usize).unwrap();
        for z in 0..d {
            for y in 0..h {
                for x in 0..w {
                    let off = t.texel_offset(x, y, z) as usize;
                    let at = ((z * h + y) * w + x) as usize * tb as usize;
                    proptest::prop_assert_eq!(
                        &stored[off..off + tb as usize],
                        &bytes[at..at + tb as usize],
                        "{} ({},{},{})", layout, x, y, z
                    );
                }
            }
        }
    }

    #[test]
    fn block_linear_is_injective_and_in_bounds(
        (dims, [w, h, d], tb) in extent_and_texel([80, 70, 40]),
    ) {
        let t = at(texels(dims, [w, h, d], tb), TextureLayout::BlockLinear);
        let bytes = t.storage.bytes(&t.desc);
        let tb = t.desc.texel_bytes();
        let mut used = vec![false; (bytes / tb) as usize];
        for z in 0..d {
            for y in 0..h {
                for x in 0..w {
                    let off = t.texel_offset(x, y, z);
                    proptest::prop_assert!(off.is_multiple_of(tb) && off + tb <= bytes);
                    let slot = &mut used[(off / tb) as usize];
                    proptest::prop_assert!(!*slot, "({x},{y},{z}) collides at {off}");
                    *slot = true;
                }
            }
        }
    }
}
