//! The kernel corpus (`kernels::corpus()`, nvcc -O3 PTX) against independent CPU references:
//! the cases of `kernels::corpus_cases`, which the GPU check runs too, and here the two files whose
//! references need what only this side has (half-precision rounding, the emulator's textures).

use crate::common::*;
use kernels::corpus_cases::{self, CaseArg, CaseRun, CaseSize};

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

/// Runs a corpus case (`kernels::corpus_cases`) at its check size on a fresh emulator: uploads
/// its buffers, makes its launches, and returns the bytes of each of its outputs.
fn run_case(run: &CaseRun, file: &str) -> Vec<Vec<u8>> {
    let mut r = Rig::new(corpus_ptx(file));
    let addrs: Vec<u64> = run.buffers.iter().map(|b| r.buf(b)).collect();
    for l in &run.launches {
        let args = l
            .args
            .iter()
            .map(|a| match *a {
                CaseArg::Buf(i) => a64(addrs[i]),
                CaseArg::I32(v) => a32(v),
                CaseArg::U32(v) => v.to_le_bytes().to_vec(),
                CaseArg::F32(v) => af(v),
            })
            .collect();
        r.launch(l.entry, l.grid, l.block, args);
    }
    run.outputs
        .iter()
        .map(|o| {
            let mut bytes = vec![0u8; run.buffers[o.buffer].len()];
            r.emu.read(addrs[o.buffer], &mut bytes).unwrap();
            bytes
        })
        .collect()
}

/// Every shared corpus case gives its CPU reference's outputs: exactly, or within the case's
/// tolerance where the contract leaves the order of float operations (or an `.approx`
/// instruction's error) open.
#[test]
fn every_corpus_case_matches_its_cpu_reference() {
    let mut failures = Vec::new();
    for case in corpus_cases::cases() {
        let run = case.prepare(CaseSize::Check);
        let read = run_case(&run, case.file);
        failures.extend(
            run.mismatches(&read)
                .iter()
                .map(|m| format!("{} ({}): {m}", case.name, case.file)),
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
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
