//! Features beyond the corpus, from `tests/fixtures/breadth.cu` (nvcc -O3 PTX checked in with
//! the command that made it in `breadth.cmd`): real `.func` calls, local arrays, dynamic shared
//! memory with sub-warp shuffles, f64 / 64-bit integer math, every kind of atomic, printf.

use crate::common::*;

/// The same source compiled -O3 for sm_75, -G (debug: stack frames, real calls, no
/// optimization) and -O3 for sm_90.
const PTXS: [(&str, &str); 3] = [
    ("O3", include_str!("../fixtures/breadth.ptx")),
    ("debug", include_str!("../fixtures/breadth_debug.ptx")),
    ("sm90", include_str!("../fixtures/breadth_sm90.ptx")),
];

#[test]
fn noinline_function_calls() {
    for (variant, ptx) in PTXS {
        let mut r = Rig::new(ptx);
        let n = 300usize;
        let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.01 - 1.0).collect();
        let dx = r.buf(&x);
        let o = r.zeros(n * 4);
        r.launch(
            "calls",
            [3, 1, 1],
            [128, 1, 1],
            vec![a64(dx), a64(o), a32(n as i32)],
        );
        let got = r.get_f32(o, n);
        for i in 0..n {
            let mut want = 0.0f32;
            for k in 0..(1 + i % 5) {
                want = want.mul_add(x[i], (k + 1) as f32);
            }
            let plain = (0..(1 + i % 5)).fold(0.0f32, |acc, k| acc * x[i] + (k + 1) as f32);
            assert!(
                got[i] == want || got[i] == plain,
                "{variant} {i}: {} vs {want}",
                got[i]
            );
        }
    }
}

#[test]
fn local_memory_arrays() {
    for (variant, ptx) in PTXS {
        let mut r = Rig::new(ptx);
        let n = 200usize;
        let o = r.zeros(n * 4);
        r.launch(
            "local_array",
            [2, 1, 1],
            [128, 1, 1],
            vec![a64(o), a32(n as i32)],
        );
        let got = r.get_u32(o, n);
        for i in 0..n as u32 {
            let a: Vec<u32> = (0..16u32).map(|k| k.wrapping_mul(i)).collect();
            let want = (0..16u32).fold(0u32, |s, k| {
                s.wrapping_add(a[((k * (i + 1)) % 16) as usize])
            });
            assert_eq!(got[i as usize], want, "{variant} {i}");
        }
    }
}

#[test]
fn loads_of_one_address_for_the_whole_warp() {
    // Every lane loads the same address: a vector from global memory, a word whose address
    // register is also its destination, and a word of local memory at one offset, which is
    // each lane's own word. Lane l writes (v0 + v1 + v2 + v3) + 100 * w + 10,000 * own.
    let ptx = r#".version 8.0
.target sm_75
.address_size 64
.visible .entry uniform(.param .u64 buf, .param .u64 out)
{
 .local .align 4 .b8 own[8];
 .reg .b64 %rd<8>;
 .reg .b32 %r<16>;
 ld.param.u64 %rd1, [buf];
 ld.param.u64 %rd2, [out];
 mov.u32 %r1, %tid.x;
 mov.u64 %rd3, own;
 st.local.u32 [%rd3+4], %r1;
 ld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd1];
 add.u32 %r6, %r2, %r3;
 add.u32 %r6, %r6, %r4;
 add.u32 %r6, %r6, %r5;
 ld.global.u64 %rd4, [%rd1+16];
 ld.global.u32 %r7, [%rd4];
 mul.lo.u32 %r7, %r7, 100;
 add.u32 %r6, %r6, %r7;
 ld.local.u32 %r8, [%rd3+4];
 mul.lo.u32 %r8, %r8, 10000;
 add.u32 %r6, %r6, %r8;
 mul.wide.u32 %rd5, %r1, 4;
 add.s64 %rd6, %rd2, %rd5;
 st.global.u32 [%rd6], %r6;
 ret;
}"#;
    let mut r = Rig::new(ptx);
    let word = r.buf(&[7u32]);
    let mut buf = vec![1u32, 2, 3, 4];
    buf.extend([word as u32, (word >> 32) as u32]);
    let buf = r.buf(&buf);
    let out = r.zeros(64 * 4);
    r.launch("uniform", [1, 1, 1], [64, 1, 1], vec![a64(buf), a64(out)]);
    let want: Vec<u32> = (0..64).map(|l| 10 + 700 + 10_000 * l).collect();
    assert_eq!(r.get_u32(out, 64), want);
}

#[test]
fn dynamic_shared_memory_and_subwarp_shuffles() {
    for (variant, ptx) in PTXS {
        let mut r = Rig::new(ptx);
        let n = 250usize;
        let b = 64usize;
        let input: Vec<i32> = (0..n as i32).map(|i| i * 3 - 100).collect();
        let di = r.buf(&input);
        let o = r.zeros(n * 4);
        r.try_launch(
            "dyn_shared_shfl",
            [4, 1, 1],
            [b as u32, 1, 1],
            (b * 4) as u32,
            vec![a64(di), a64(o), a32(n as i32)],
        )
        .unwrap();
        let got = r.get_u32(o, n);
        let v = |j: usize| if j < n { input[j] } else { 0 };
        for (i, got) in got.iter().enumerate() {
            let g = i / 8 * 8;
            let group: i32 = (g..g + 8).map(v).sum();
            let blk = i / b * b;
            let next = v(blk + (i - blk + 1) % b);
            assert_eq!(*got as i32, group + next, "{variant} {i}");
        }
    }
}

#[test]
fn f64_and_64bit_integer_math() {
    for (variant, ptx) in PTXS {
        let mut r = Rig::new(ptx);
        let n = 100usize;
        let a: Vec<i64> = (0..n as i64).map(|i| i * i * 12345 + 7).collect();
        let b: Vec<i64> = (0..n as i64).map(|i| (i - 50) * 987_654_321_987).collect();
        let (da, db) = (r.buf(&a), r.buf(&b));
        let o = r.zeros(n * 8);
        r.launch(
            "wide_math",
            [1, 1, 1],
            [128, 1, 1],
            vec![a64(da), a64(db), a64(o), a32(n as i32)],
        );
        let mut raw = vec![0u8; n * 8];
        r.emu.read(o, &mut raw).unwrap();
        for i in 0..n {
            let got = f64::from_le_bytes(raw[8 * i..8 * i + 8].try_into().unwrap());
            let want = (a[i] as f64).sqrt() / 3.0 + (b[i] / 7 % 1000) as f64;
            assert_eq!(got, want, "{variant} {i}");
        }
    }
}

#[test]
fn atomics_of_every_kind_and_printf() {
    for (variant, ptx) in PTXS {
        let mut r = Rig::new(ptx);
        let n = 1000usize;
        let x: Vec<f32> = (0..n)
            .map(|i| ((i * 7919) % 1000) as f32 * 0.5 - 100.0)
            .collect();
        let dx = r.buf(&x);
        let f = r.buf(&[f32::MIN]);
        let u = r.buf(&[0u32, u32::MAX, 0]);
        let w = r.zeros(8);
        let e = r.buf(&[-1i32]);
        r.launch(
            "atomics",
            [4, 1, 1],
            [256, 1, 1],
            vec![a64(dx), a64(f), a64(u), a64(w), a64(e), a32(n as i32)],
        );
        assert_eq!(
            r.get_f32(f, 1)[0],
            x.iter().cloned().fold(f32::MIN, f32::max),
            "{variant}"
        );
        let us = r.get_u32(u, 3);
        let hs: Vec<u32> = (0..n as u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        assert_eq!(us[0], n as u32);
        assert_eq!(us[1], *hs.iter().min().unwrap());
        assert_eq!(us[2], *hs.iter().max().unwrap());
        assert_eq!(r.get_u64(w), (0..n as u64).sum::<u64>());
        let last = r.get_u32(e, 1)[0] as i32;
        assert!((0..n as i32).contains(&last));
    }
}

#[test]
fn float_min_max_division_and_reciprocal_of_special_values() {
    // PTX: min and max take the operand that is not NaN and order -0 below +0; division and
    // the reciprocal round to nearest as the host's f32 does. `min.ftz` flushes subnormals.
    let ptx = r#".version 8.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 b, .param .u64 out)
{
 .reg .b64 %rd<8>;
 .reg .b32 %r<4>;
 .reg .f32 %f<12>;
 ld.param.u64 %rd1, [a];
 ld.param.u64 %rd2, [b];
 ld.param.u64 %rd3, [out];
 mov.u32 %r1, %tid.x;
 mul.wide.u32 %rd4, %r1, 4;
 add.s64 %rd5, %rd1, %rd4;
 add.s64 %rd6, %rd2, %rd4;
 ld.global.f32 %f1, [%rd5];
 ld.global.f32 %f2, [%rd6];
 min.f32 %f3, %f1, %f2;
 max.f32 %f4, %f1, %f2;
 div.rn.f32 %f5, %f1, %f2;
 rcp.rn.f32 %f6, %f1;
 min.ftz.f32 %f7, %f1, %f2;
 add.s64 %rd7, %rd3, %rd4;
 st.global.f32 [%rd7], %f3;
 st.global.f32 [%rd7+256], %f4;
 st.global.f32 [%rd7+512], %f5;
 st.global.f32 [%rd7+768], %f6;
 st.global.f32 [%rd7+1024], %f7;
 ret;
}"#;
    let sub = f32::from_bits(1);
    let special = [
        (f32::NAN, 1.0),
        (1.0, f32::NAN),
        (-0.0, 0.0),
        (0.0, -0.0),
        (f32::INFINITY, f32::NEG_INFINITY),
        (sub, 0.0),
        (-sub, 0.0),
        (0.0, 0.0),
        (3.0, 0.0),
        (-2.5, -2.5),
    ];
    let pairs: Vec<(f32, f32)> = (0..64)
        .map(|t| {
            special
                .get(t)
                .copied()
                .unwrap_or(((t as f32 * 0.37).sin() * 9.0, (t as f32 * 1.3).cos() * 3.0))
        })
        .collect();
    let mut r = Rig::new(ptx);
    let a = r.buf(&pairs.iter().map(|p| p.0).collect::<Vec<_>>());
    let b = r.buf(&pairs.iter().map(|p| p.1).collect::<Vec<_>>());
    let out = r.zeros(5 * 64 * 4);
    r.launch("k", [1, 1, 1], [64, 1, 1], vec![a64(a), a64(b), a64(out)]);
    let got = r.get_u32(out, 5 * 64);
    let min = |x: f32, y: f32| match (x.is_nan(), y.is_nan()) {
        (true, _) => y,
        (_, true) => x,
        _ if x == 0.0 && y == 0.0 => f32::from_bits(x.to_bits() | y.to_bits()),
        _ => x.min(y),
    };
    let max = |x: f32, y: f32| match (x.is_nan(), y.is_nan()) {
        (true, _) => y,
        (_, true) => x,
        _ if x == 0.0 && y == 0.0 => f32::from_bits(x.to_bits() & y.to_bits()),
        _ => x.max(y),
    };
    let flush = |x: f32| {
        if x.is_subnormal() {
            0.0f32.copysign(x)
        } else {
            x
        }
    };
    for (t, &(x, y)) in pairs.iter().enumerate() {
        let want = [
            min(x, y),
            max(x, y),
            x / y,
            1.0 / x,
            min(flush(x), flush(y)),
        ];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(
                got[k * 64 + t],
                w.to_bits(),
                "result {k} of thread {t}: {x:?}, {y:?}"
            );
        }
    }
}

#[test]
fn a_full_warps_global_loads_read_its_own_pending_stores_and_vectors() {
    // Each lane stores a word, then loads its neighbour's: the stores are still the SM's own,
    // not yet in device memory, and the loads must see them. Then a two-word vector a lane.
    let ptx = r#".version 8.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 inp, .param .u64 out)
{
 .reg .b64 %rd<12>;
 .reg .b32 %r<12>;
 ld.param.u64 %rd1, [inp];
 ld.param.u64 %rd2, [out];
 mov.u32 %r1, %tid.x;
 add.u32 %r2, %r1, 1000;
 mul.wide.u32 %rd3, %r1, 4;
 add.s64 %rd4, %rd2, %rd3;
 st.global.u32 [%rd4], %r2;
 add.u32 %r3, %r1, 1;
 and.b32 %r3, %r3, 31;
 mul.wide.u32 %rd5, %r3, 4;
 add.s64 %rd6, %rd2, %rd5;
 ld.global.u32 %r4, [%rd6];
 mul.wide.u32 %rd7, %r1, 8;
 add.s64 %rd8, %rd1, %rd7;
 ld.global.v2.u32 {%r5, %r6}, [%rd8];
 sub.u32 %r7, %r6, %r5;
 st.global.u32 [%rd4+128], %r4;
 st.global.u32 [%rd4+256], %r7;
 ret;
}"#;
    let mut r = Rig::new(ptx);
    let inp: Vec<u32> = (0..64u32).map(|i| i * i).collect();
    let inp = r.buf(&inp);
    let out = r.zeros(3 * 32 * 4);
    r.launch("k", [1, 1, 1], [32, 1, 1], vec![a64(inp), a64(out)]);
    let got = r.get_u32(out, 3 * 32);
    for t in 0..32u32 {
        assert_eq!(
            got[32 + t as usize],
            (t + 1) % 32 + 1000,
            "neighbour's store, lane {t}"
        );
        let (a, b) = ((2 * t) * (2 * t), (2 * t + 1) * (2 * t + 1));
        assert_eq!(got[64 + t as usize], b - a, "vector, lane {t}");
    }
}
