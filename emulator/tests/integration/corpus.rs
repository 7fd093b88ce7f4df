//! The kernel corpus (`kernels::corpus()`, nvcc -O3 PTX) against independent CPU references.

use crate::common::*;

#[test]
fn every_corpus_and_probe_ptx_parses() {
    let mut errors = Vec::new();
    for k in kernels::corpus() {
        match emulator::Module::parse(k.ptx) {
            Ok(m) => assert_eq!(m.entries().len(), k.entries.len(), "{}", k.name),
            Err(e) => errors.push(format!("{}: {e}", k.name)),
        }
    }
    for b in kernels::builds() {
        if let Err(e) = emulator::Module::parse(b.ptx) {
            errors.push(format!("{} mode {}: {e}", b.source, b.mode));
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

fn lin1(n: u32, b: u32) -> ([u32; 3], [u32; 3]) {
    ([n.div_ceil(b), 1, 1], [b, 1, 1])
}

#[test]
fn reduce_shared_matches_cpu() {
    let mut r = Rig::new(corpus_ptx("reduce_shared"));
    let mut rng = Rng(1);
    let n = 5000usize;
    let b = 128u32;
    let input: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
    let blocks = (n as u32).div_ceil(2 * b);
    let i = r.buf(&input);
    let o = r.zeros(blocks as usize * 4);
    r.launch(
        "reduce_shared",
        [blocks, 1, 1],
        [b, 1, 1],
        vec![a64(i), a64(o), a32(n as i32)],
    );
    let got = r.get_u32(o, blocks as usize);
    for (blk, g) in got.iter().enumerate() {
        let lo = blk * 2 * b as usize;
        let want = input[lo..(lo + 2 * b as usize).min(n)]
            .iter()
            .fold(0u32, |s, v| s.wrapping_add(*v));
        assert_eq!(*g, want, "block {blk}");
    }
}

#[test]
fn reduce_shuffle_matches_cpu() {
    let mut r = Rig::new(corpus_ptx("reduce_shuffle"));
    let mut rng = Rng(2);
    let n = 10_000usize;
    let input: Vec<i32> = (0..n).map(|_| rng.next() as i32 >> 8).collect();
    let i = r.buf(&input);
    let t = r.zeros(4);
    r.launch(
        "reduce_shuffle",
        [8, 1, 1],
        [256, 1, 1],
        vec![a64(i), a64(t), a32(n as i32)],
    );
    let want = input.iter().fold(0i32, |s, v| s.wrapping_add(*v));
    assert_eq!(r.get_u32(t, 1)[0] as i32, want);
}

#[test]
fn scans_match_cpu() {
    let mut r = Rig::new(corpus_ptx("scan"));
    let mut rng = Rng(3);
    let n = 1000usize;
    let b = 256usize;
    let input: Vec<u32> = (0..n).map(|_| rng.below(1000) as u32).collect();
    let i = r.buf(&input);
    let o = r.zeros(n * 4);
    let (g, bl) = lin1(n as u32, b as u32);
    r.launch(
        "scan_hillis_steele",
        g,
        bl,
        vec![a64(i), a64(o), a32(n as i32)],
    );
    let inc = r.get_u32(o, n);
    let o2 = r.zeros(n * 4);
    r.launch("scan_blelloch", g, bl, vec![a64(i), a64(o2), a32(n as i32)]);
    let exc = r.get_u32(o2, n);
    for start in (0..n).step_by(b) {
        let mut acc = 0u32;
        for j in start..(start + b).min(n) {
            assert_eq!(exc[j], acc, "exclusive {j}");
            acc = acc.wrapping_add(input[j]);
            assert_eq!(inc[j], acc, "inclusive {j}");
        }
    }
}

#[test]
fn histograms_match_cpu() {
    for k in ["histogram_global", "histogram_shared"] {
        let mut r = Rig::new(corpus_ptx(k));
        let mut rng = Rng(4);
        let n = 20_000usize;
        let data: Vec<u8> = (0..n).map(|_| (rng.below(256) as u8) & 0xF7).collect();
        let d = r.buf(&data);
        let h = r.zeros(1024);
        r.launch(
            k,
            [16, 1, 1],
            [256, 1, 1],
            vec![a64(d), a64(h), a32(n as i32)],
        );
        let mut want = [0u32; 256];
        for v in &data {
            want[*v as usize] += 1;
        }
        assert_eq!(r.get_u32(h, 256), want.to_vec(), "{k}");
    }
}

#[test]
fn transpose_matches_cpu() {
    let mut r = Rig::new(corpus_ptx("transpose"));
    let (w, h) = (70usize, 45usize);
    let input: Vec<f32> = (0..w * h).map(|i| i as f32 * 0.5).collect();
    let i = r.buf(&input);
    let o = r.zeros(w * h * 4);
    r.launch(
        "transpose",
        [(w as u32).div_ceil(32), (h as u32).div_ceil(32), 1],
        [32, 8, 1],
        vec![a64(i), a64(o), a32(w as i32), a32(h as i32)],
    );
    let got = r.get_f32(o, w * h);
    for y in 0..h {
        for x in 0..w {
            assert_eq!(got[x * h + y], input[y * w + x]);
        }
    }
}

#[test]
fn stencils_match_cpu() {
    let mut r = Rig::new(corpus_ptx("stencil"));
    let mut rng = Rng(5);
    let n = 3000usize;
    let input: Vec<f32> = (0..n)
        .map(|_| (rng.below(1 << 20) as f32) / 1024.0)
        .collect();
    let i = r.buf(&input);
    let o = r.zeros(n * 4);
    let (g, b) = lin1(n as u32, 256);
    r.launch("stencil_1d", g, b, vec![a64(i), a64(o), a32(n as i32)]);
    let got = r.get_f32(o, n);
    let wts = [1.0f32, 2.0, 3.0, 4.0, 3.0, 2.0, 1.0].map(|v| v / 16.0);
    for j in 0..n {
        let mut acc = 0.0f32;
        for k in -3i64..=3 {
            let idx = (j as i64 + k).clamp(0, n as i64 - 1) as usize;
            acc = wts[(k + 3) as usize].mul_add(input[idx], acc);
        }
        let plain: f32 = (-3i64..=3).fold(0.0f32, |a, k| {
            a + wts[(k + 3) as usize] * input[(j as i64 + k).clamp(0, n as i64 - 1) as usize]
        });
        assert!(
            (got[j] - acc).abs() <= 1e-5 * acc.abs().max(1.0) || got[j] == plain,
            "stencil {j}: {} vs {acc}",
            got[j]
        );
    }
    let (w, h) = (50usize, 37usize);
    let grid: Vec<f32> = (0..w * h).map(|_| rng.below(1000) as f32).collect();
    let gi = r.buf(&grid);
    let go = r.zeros(w * h * 4);
    r.launch(
        "jacobi_2d",
        [4, 3, 1],
        [16, 16, 1],
        vec![a64(gi), a64(go), a32(w as i32), a32(h as i32)],
    );
    let got = r.get_f32(go, w * h);
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            let want = if x == 0 || y == 0 || x == w - 1 || y == h - 1 {
                grid[i]
            } else {
                0.25f32 * (grid[i - 1] + grid[i + 1] + grid[i - w] + grid[i + w])
            };
            assert_eq!(got[i], want, "jacobi ({x},{y})");
        }
    }
}

#[test]
fn matmul_matches_cpu() {
    let mut r = Rig::new(corpus_ptx("matmul"));
    let mut rng = Rng(6);
    let (m, n, k) = (40usize, 33usize, 50usize);
    let a: Vec<f32> = (0..m * k).map(|_| rng.below(17) as f32 - 8.0).collect();
    let b: Vec<f32> = (0..k * n).map(|_| rng.below(17) as f32 - 8.0).collect();
    let (da, db) = (r.buf(&a), r.buf(&b));
    let dc = r.zeros(m * n * 4);
    r.launch(
        "matmul",
        [(n as u32).div_ceil(16), (m as u32).div_ceil(16), 1],
        [16, 16, 1],
        vec![
            a64(da),
            a64(db),
            a64(dc),
            a32(m as i32),
            a32(n as i32),
            a32(k as i32),
        ],
    );
    let got = r.get_f32(dc, m * n);
    for row in 0..m {
        for col in 0..n {
            let want: f32 = (0..k).map(|t| a[row * k + t] * b[t * n + col]).sum();
            assert_eq!(got[row * n + col], want);
        }
    }
}

#[test]
fn bitonic_sorts_each_block() {
    let mut r = Rig::new(corpus_ptx("bitonic"));
    let mut rng = Rng(7);
    let n = 1000usize;
    let b = 256usize;
    let data: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
    let d = r.buf(&data);
    r.launch(
        "bitonic_sort",
        [(n as u32).div_ceil(b as u32), 1, 1],
        [b as u32, 1, 1],
        vec![a64(d), a32(n as i32)],
    );
    let got = r.get_u32(d, n);
    for s in (0..n).step_by(b) {
        let mut want = data[s..(s + b).min(n)].to_vec();
        want.sort_unstable();
        assert_eq!(&got[s..(s + b).min(n)], &want[..]);
    }
}

#[test]
fn collatz_divergent_loop_matches_cpu() {
    let mut r = Rig::new(corpus_ptx("collatz"));
    let n = 777usize;
    let start: Vec<u32> = (1..=n as u32).collect();
    let s = r.buf(&start);
    let o = r.zeros(n * 4);
    let (g, b) = lin1(n as u32, 128);
    r.launch(
        "collatz",
        g,
        b,
        vec![a64(s), a64(o), a32(n as i32), a32(500)],
    );
    let got = r.get_u32(o, n);
    for (i, &x0) in start.iter().enumerate() {
        let (mut x, mut steps) = (x0, 0u32);
        while x != 1 && steps < 500 {
            x = if x % 2 == 0 {
                x / 2
            } else {
                x.wrapping_mul(3).wrapping_add(1)
            };
            steps += 1;
        }
        assert_eq!(got[i], steps, "start {x0}");
    }
}

#[test]
fn ldg_kernels_match_cpu() {
    let mut r = Rig::new(corpus_ptx("ldg"));
    let n = 1000usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
    let y: Vec<f32> = (0..n).map(|i| 1000.0 - i as f32).collect();
    let (dx, dy) = (r.buf(&x), r.buf(&y));
    let o = r.zeros(n * 4);
    let (g, b) = lin1(n as u32, 256);
    r.launch(
        "saxpy_ldg",
        g,
        b,
        vec![a64(dx), a64(dy), a64(o), af(1.5), a32(n as i32)],
    );
    let got = r.get_f32(o, n);
    for i in 0..n {
        assert_eq!(got[i], 1.5f32.mul_add(x[i], y[i]));
    }
    let m = 37usize;
    let idx: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let table: Vec<u32> = (0..m as u32).map(|i| i * i + 7).collect();
    let (di, dt) = (r.buf(&idx), r.buf(&table));
    let o2 = r.zeros(n * 4);
    r.launch(
        "gather_ldg",
        g,
        b,
        vec![a64(di), a64(dt), a64(o2), a32(m as i32), a32(n as i32)],
    );
    let got = r.get_u32(o2, n);
    for i in 0..n {
        assert_eq!(got[i], table[(idx[i] % m as u32) as usize]);
    }
}

#[test]
fn vote_matches_cpu() {
    let mut r = Rig::new(corpus_ptx("vote"));
    let mut rng = Rng(8);
    let n = 300usize;
    let mut input: Vec<i32> = (0..n).map(|_| rng.below(7) as i32 - 2).collect();
    input[32..64].iter_mut().for_each(|v| *v = 5);
    let warps = 320 / 32;
    let i = r.buf(&input);
    let (bo, co, fo) = (r.zeros(warps * 4), r.zeros(warps * 4), r.zeros(warps * 4));
    r.launch(
        "vote",
        [5, 1, 1],
        [64, 1, 1],
        vec![a64(i), a64(bo), a64(co), a64(fo), a32(n as i32)],
    );
    let (bal, cnt, fl) = (
        r.get_u32(bo, warps),
        r.get_u32(co, warps),
        r.get_u32(fo, warps),
    );
    for w in 0..warps {
        let v = |l: usize| if 32 * w + l < n { input[32 * w + l] } else { 0 };
        let ballot = (0..32).fold(0u32, |b, l| b | (((v(l) > 0) as u32) << l));
        assert_eq!(bal[w], ballot);
        assert_eq!(cnt[w], ballot.count_ones());
        let f = (ballot == u32::MAX) as u32
            | (((ballot != 0) as u32) << 1)
            | (((v(0) & 1) as u32) << 2);
        assert_eq!(fl[w], f, "warp {w}");
    }
}

#[test]
fn fp16_matches_cpu() {
    use half::f16;
    let mut r = Rig::new(corpus_ptx("fp16"));
    let n = 500usize;
    let x: Vec<u16> = (0..n)
        .map(|i| f16::from_f32(i as f32 * 0.37 - 50.0).to_bits())
        .collect();
    let y: Vec<u16> = (0..n)
        .map(|i| f16::from_f32(3.0 - i as f32 * 0.11).to_bits())
        .collect();
    let (dx, dy) = (r.buf(&x), r.buf(&y));
    let o = r.zeros(n * 2);
    let (g, b) = lin1(n as u32, 128);
    r.launch(
        "half_axpy",
        g,
        b,
        vec![a64(dx), a64(dy), a64(o), af(1.7), a32(n as i32)],
    );
    let mut raw = vec![0u8; n * 2];
    r.emu.read(o, &mut raw).unwrap();
    let al = f16::from_f32(1.7).to_f64();
    for i in 0..n {
        let want =
            f16::from_f64(al.mul_add(f16::from_bits(x[i]).to_f64(), f16::from_bits(y[i]).to_f64()));
        assert_eq!(
            u16::from_le_bytes([raw[2 * i], raw[2 * i + 1]]),
            want.to_bits(),
            "half_axpy {i}"
        );
    }
    let pairs = n / 2;
    let (dx2, dy2) = (r.buf(&x[..pairs * 2]), r.buf(&y[..pairs * 2]));
    let (o2, of) = (r.zeros(pairs * 4), r.zeros(pairs * 4));
    r.launch(
        "half2_ops",
        g,
        b,
        vec![a64(dx2), a64(dy2), a64(o2), a64(of), a32(pairs as i32)],
    );
    let (got2, gotf) = (r.get_u32(o2, pairs), r.get_f32(of, pairs));
    for i in 0..pairs {
        let h = |v: u16| f16::from_bits(v).to_f32();
        let one = |p: u16, q: u16| {
            let s = f16::from_f32(h(p) + h(q));
            let d = f16::from_f32(h(p) - h(q));
            f16::from_f32(s.to_f32() * d.to_f32())
        };
        let lo = one(x[2 * i], y[2 * i]);
        let hi = one(x[2 * i + 1], y[2 * i + 1]);
        assert_eq!(
            got2[i],
            lo.to_bits() as u32 | (hi.to_bits() as u32) << 16,
            "half2 {i}"
        );
        assert_eq!(gotf[i], lo.to_f32() + hi.to_f32());
    }
}

#[test]
fn bitops_match_cpu() {
    let mut r = Rig::new(corpus_ptx("bitops"));
    let mut rng = Rng(9);
    let n = 300usize;
    let mut a: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
    let b: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
    a[0] = 0;
    let (da, db) = (r.buf(&a), r.buf(&b));
    let (o, wd, fu) = (r.zeros(n * 36), r.zeros(n * 8), r.zeros(n * 4));
    let (g, bl) = lin1(n as u32, 128);
    r.launch(
        "bitops",
        g,
        bl,
        vec![a64(da), a64(db), a64(o), a64(wd), a64(fu), a32(n as i32)],
    );
    let out = r.get_u32(o, 9 * n);
    let fun = r.get_u32(fu, n);
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        let w = x as u64 * y as u64 + y as u64;
        let bytes = ((y as u64) << 32) | x as u64;
        let perm = [5u32, 1, 7, 3]
            .iter()
            .enumerate()
            .fold(0u32, |acc, (k, s)| {
                acc | ((((bytes >> (s * 8)) & 0xFF) as u32) << (8 * k))
            });
        let want = [
            x.reverse_bits(),
            x.leading_zeros() + 32 * y.count_ones(),
            if x == 0 { 0 } else { x.trailing_zeros() + 1 },
            (x >> (y & 31)) & 0xFF,
            perm,
            ((x as u64 * y as u64) >> 32) as u32,
            w as u32,
            (w >> 32) as u32,
            (x & !0xFF00) | ((y & 0xFF) << 8),
        ];
        assert_eq!(&out[9 * i..9 * i + 9], &want[..], "bitops {i}");
        let s = y & 31;
        assert_eq!(
            fun[i],
            ((((y as u64) << 32 | x as u64) << s) >> 32) as u32,
            "funnel {i}"
        );
    }
}

#[test]
fn fastmath_within_ptx_approx_bounds() {
    let mut r = Rig::new(corpus_ptx("fastmath"));
    let n = 400usize;
    let x: Vec<f32> = (0..n).map(|i| (i as f32 - 200.0) * 0.0311).collect();
    let dx = r.buf(&x);
    let o = r.zeros(n * 20);
    let (g, b) = lin1(n as u32, 128);
    r.launch("fastmath", g, b, vec![a64(dx), a64(o), a32(n as i32)]);
    let got = r.get_f32(o, 5 * n);
    for i in 0..n {
        let v = x[i] as f64;
        let rel = |g: f32, w: f64, tol: f64| ((g as f64 - w).abs() / w.abs().max(1e-30)) <= tol;
        assert!(
            rel(got[5 * i], v.exp(), 2e-6 * (2.0 + 1.16 * v.abs())),
            "exp {v}"
        );
        assert!(
            (got[5 * i + 1] as f64 - v.sin()).abs() <= 2f64.powf(-20.5),
            "sin {v}"
        );
        assert!(
            (got[5 * i + 2] as f64 - v.cos()).abs() <= 2f64.powf(-20.5),
            "cos {v}"
        );
        assert!(
            rel(got[5 * i + 3], 1.0 / (v.abs() + 1.0).sqrt(), 3e-7),
            "rsqrt {v}"
        );
        let want4 = (v.abs() + 1.0).ln() + v / 3.0;
        assert!(
            (got[5 * i + 4] as f64 - want4).abs() <= 1e-5 * want4.abs().max(1.0),
            "log+div {v}"
        );
    }
}

#[test]
fn textures_match_cpu() {
    use emulator::{TexAddress, TexFilter, TexFormat, TextureDesc};
    let mut r = Rig::new(corpus_ptx("texture"));
    let (w, h, n) = (20usize, 13usize, 37usize);
    let img: Vec<f32> = (0..w * h).map(|i| ((i * 7) % 23) as f32).collect();
    let lin: Vec<f32> = (0..n).map(|i| i as f32 * 100.0).collect();
    let dl = r.buf(&lin);
    let base = TextureDesc {
        dims: 2,
        width: w as u32,
        height: h as u32,
        depth: 1,
        format: TexFormat::F32,
        channels: 1,
        normalized_read: false,
        filter: TexFilter::Linear,
        address: [TexAddress::Clamp; 3],
        normalized_coords: false,
        linear_buffer: None,
    };
    let timg = r.emu.create_texture(&base, &as_bytes(&img)).unwrap();
    let lind = TextureDesc {
        dims: 1,
        width: n as u32,
        height: 1,
        filter: TexFilter::Point,
        linear_buffer: Some(dl),
        ..base.clone()
    };
    let tlin = r.emu.create_texture(&lind, &[]).unwrap();
    let o = r.zeros(w * h * 4);
    r.launch(
        "texture_sample",
        [2, 1, 1],
        [16, 16, 1],
        vec![
            a64(timg),
            a64(tlin),
            a64(o),
            a32(w as i32),
            a32(h as i32),
            a32(n as i32),
        ],
    );
    let got = r.get_f32(o, w * h);
    let at = |x: i64, y: i64| {
        img[(y.clamp(0, h as i64 - 1) as usize) * w + x.clamp(0, w as i64 - 1) as usize]
    };
    for y in 0..h as i64 {
        for x in 0..w as i64 {
            // x+0.25 -> xb = x-0.25: taps x-1, x with weight 0.75; y+0.75 -> taps y, y+1, weight 0.25
            let (ax, ay) = (0.75f32, 0.25f32);
            let top = (1.0 - ax) * at(x - 1, y) + ax * at(x, y);
            let bot = (1.0 - ax) * at(x - 1, y + 1) + ax * at(x, y + 1);
            let want = (1.0 - ay) * top + ay * bot + lin[(y as usize * w + x as usize) % n];
            let g = got[y as usize * w + x as usize];
            assert!(
                (g - want).abs() <= 1e-4 * want.abs().max(1.0),
                "({x},{y}) {g} vs {want}"
            );
        }
    }
    // RGBA8, point sampling, wrap, normalized coordinates and normalized-float reads.
    let rgba: Vec<u8> = (0..w * h * 4).map(|i| (i * 37 % 256) as u8).collect();
    let d8 = TextureDesc {
        format: TexFormat::U8,
        channels: 4,
        normalized_read: true,
        filter: TexFilter::Point,
        address: [TexAddress::Wrap; 3],
        normalized_coords: true,
        ..base
    };
    let t8 = r.emu.create_texture(&d8, &rgba).unwrap();
    let o8 = r.zeros(w * h * 4);
    r.launch(
        "texture_rgba8",
        [2, 1, 1],
        [16, 16, 1],
        vec![a64(t8), a64(o8), a32(w as i32), a32(h as i32)],
    );
    let got = r.get_f32(o8, w * h);
    for i in 0..w * h {
        let t = |c: usize| rgba[4 * i + c] as f32 / 255.0;
        let want = t(0) + 2.0 * t(1) + 4.0 * t(2) + 8.0 * t(3);
        assert!(
            (got[i] - want).abs() <= 1e-5 * want.max(1.0),
            "rgba {i}: {} vs {want}",
            got[i]
        );
    }
}
