//! Scalar PTX arithmetic: IEEE rounding modes, flush-to-zero, saturation, conversions and the
//! approximate transcendental functions, one lane at a time.
//!
//! Why separate: `exec` keeps the per-warp loops; this file is pure functions of bits, tested
//! against the PTX ISA's definitions. Directed rounding (`.rz/.rm/.rp`) is computed exactly: the
//! round-to-nearest result plus the sign of its error (from an error-free transformation — two-sum
//! for add, an FMA residual for mul/div/sqrt — or from the exact f64 value for f32 operations)
//! tells which neighbour the directed mode picks.

use crate::ir::{Inst, Op, Rnd, Ty};
use half::f16;

#[inline]
pub(crate) fn f32v(v: u64) -> f32 {
    f32::from_bits(v as u32)
}
#[inline]
pub(crate) fn f64v(v: u64) -> f64 {
    f64::from_bits(v)
}
#[inline]
pub(crate) fn b32(f: f32) -> u64 {
    f.to_bits() as u64
}
#[inline]
pub(crate) fn ftz32(f: f32) -> f32 {
    if f.is_subnormal() {
        0.0f32.copysign(f)
    } else {
        f
    }
}
#[inline]
pub(crate) fn sat(f: f64) -> f64 {
    if f.is_nan() { 0.0 } else { f.clamp(0.0, 1.0) }
}

/// Moves the round-to-nearest result `r` to its directed neighbour given the sign of
/// `exact - r` (`err`).
fn direct64(r: f64, err: f64, rnd: Rnd) -> f64 {
    if err == 0.0 || err.is_nan() || !r.is_finite() {
        return r;
    }
    match rnd {
        Rnd::Rz if r > 0.0 && err < 0.0 => r.next_down(),
        Rnd::Rz if r < 0.0 && err > 0.0 => r.next_up(),
        Rnd::Rm if err < 0.0 => r.next_down(),
        Rnd::Rp if err > 0.0 => r.next_up(),
        _ => r,
    }
}

/// Rounds an (exact or nearly exact) f64 value to f32 in mode `rnd`.
pub(crate) fn f64_to_f32(v: f64, rnd: Rnd) -> f32 {
    f64_to_f32_err(v, 0.0, rnd)
}

/// Rounds the exact value `v + lo` (`|lo|` far below an ulp of `v`) to f32 in mode `rnd`.
pub(crate) fn f64_to_f32_err(v: f64, lo: f64, rnd: Rnd) -> f32 {
    let r = v as f32;
    if !matches!(rnd, Rnd::Rz | Rnd::Rm | Rnd::Rp) || (r as f64 == v && lo == 0.0) || v.is_nan() {
        return r;
    }
    if r.is_infinite() {
        // overflow: directed modes may saturate to the largest finite value
        let toward_zero = match rnd {
            Rnd::Rz => true,
            Rnd::Rm => r > 0.0,
            _ => r < 0.0,
        };
        return if toward_zero { f32::MAX.copysign(r) } else { r };
    }
    let err = (v - r as f64) + lo;
    match rnd {
        Rnd::Rz if r > 0.0 && err < 0.0 => r.next_down(),
        Rnd::Rz if r < 0.0 && err > 0.0 => r.next_up(),
        Rnd::Rm if err < 0.0 => r.next_down(),
        Rnd::Rp if err > 0.0 => r.next_up(),
        _ => r,
    }
}

fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let err = (a - (s - bb)) + (b - bb);
    (s, err)
}

/// Float arithmetic of one lane for `Inst`s of float type. Returns the result bits.
pub(crate) fn float_op(x: &Inst, a: u64, b: u64, c: u64) -> u64 {
    match x.ty {
        Ty::F32 => f32_op(x, a, b, c),
        Ty::F64 => f64_op(x, a, b, c),
        Ty::F16 | Ty::BF16 => half_op(x, a & 0xFFFF, b & 0xFFFF, c & 0xFFFF),
        Ty::F16x2 | Ty::BF16x2 => {
            let lo = half_op(x, a & 0xFFFF, b & 0xFFFF, c & 0xFFFF);
            let hi = half_op(
                x,
                (a >> 16) & 0xFFFF,
                (b >> 16) & 0xFFFF,
                (c >> 16) & 0xFFFF,
            );
            (lo & 0xFFFF) | ((hi & 0xFFFF) << 16)
        }
        _ => 0,
    }
}

fn f32_op(x: &Inst, a: u64, b: u64, c: u64) -> u64 {
    let (mut fa, mut fb, mut fc) = (f32v(a), f32v(b), f32v(c));
    if x.ftz {
        fa = ftz32(fa);
        fb = ftz32(fb);
        fc = ftz32(fc);
    }
    let (da, db, dc) = (fa as f64, fb as f64, fc as f64);
    let directed = matches!(x.rnd, Rnd::Rz | Rnd::Rm | Rnd::Rp);
    let r: f32 = match x.op {
        Op::Add | Op::Sub => {
            let db = if x.op == Op::Sub { -db } else { db };
            if directed {
                let (s, e) = two_sum(da, db);
                f64_to_f32_err(s, e, x.rnd)
            } else {
                (da + db) as f32
            }
        }
        Op::Mul => {
            if directed {
                f64_to_f32(da * db, x.rnd)
            } else {
                fa * fb
            }
        }
        Op::Fma if x.sub == 1 => {
            // legacy mad.f32: rounded multiply, then rounded add
            let p = if x.ftz { ftz32(fa * fb) } else { fa * fb };
            p + fc
        }
        Op::Fma => {
            if directed {
                f64_to_f32(da.mul_add(db, dc), x.rnd)
            } else {
                fa.mul_add(fb, fc)
            }
        }
        Op::Div => {
            if directed {
                f64_to_f32(da / db, x.rnd)
            } else {
                fa / fb
            }
        }
        Op::Min => {
            if fa.is_nan() {
                fb
            } else if fb.is_nan() {
                fa
            } else if fa == fb && fa == 0.0 {
                if fa.is_sign_negative() { fa } else { fb }
            } else {
                fa.min(fb)
            }
        }
        Op::Max => {
            if fa.is_nan() {
                fb
            } else if fb.is_nan() {
                fa
            } else if fa == fb && fa == 0.0 {
                if fa.is_sign_positive() { fa } else { fb }
            } else {
                fa.max(fb)
            }
        }
        Op::Abs => fa.abs(),
        Op::Neg => -fa,
        Op::Rcp => {
            if directed {
                f64_to_f32(1.0 / da, x.rnd)
            } else {
                1.0 / fa
            }
        }
        Op::Sqrt => {
            if directed {
                f64_to_f32(da.sqrt(), x.rnd)
            } else {
                fa.sqrt()
            }
        }
        Op::Rsqrt => (1.0 / da.sqrt()) as f32,
        Op::Sin => fa.sin(),
        Op::Cos => fa.cos(),
        Op::Lg2 => fa.log2(),
        Op::Ex2 => fa.exp2(),
        Op::Tanh => fa.tanh(),
        Op::Copysign => fb.copysign(fa),
        _ => 0.0,
    };
    let mut r = r;
    if x.ftz {
        r = ftz32(r);
    }
    if x.sat {
        r = sat(r as f64) as f32;
    }
    b32(r)
}

fn f64_op(x: &Inst, a: u64, b: u64, c: u64) -> u64 {
    let (fa, fb, fc) = (f64v(a), f64v(b), f64v(c));
    let rnd = x.rnd;
    let r = match x.op {
        Op::Add | Op::Sub => {
            let fb = if x.op == Op::Sub { -fb } else { fb };
            let (s, e) = two_sum(fa, fb);
            direct64(s, e, rnd)
        }
        Op::Mul => {
            let p = fa * fb;
            direct64(p, fa.mul_add(fb, -p), rnd)
        }
        Op::Fma => fa.mul_add(fb, fc),
        Op::Div => {
            let q = fa / fb;
            let resid = (-q).mul_add(fb, fa);
            direct64(q, if fb < 0.0 { -resid } else { resid }, rnd)
        }
        Op::Rcp => {
            let q = 1.0 / fa;
            let resid = (-q).mul_add(fa, 1.0);
            direct64(q, if fa < 0.0 { -resid } else { resid }, rnd)
        }
        Op::Sqrt => {
            let q = fa.sqrt();
            direct64(q, (-q).mul_add(q, fa), rnd)
        }
        Op::Rsqrt => 1.0 / fa.sqrt(),
        Op::Min => {
            if fa.is_nan() {
                fb
            } else if fb.is_nan() {
                fa
            } else {
                fa.min(fb)
            }
        }
        Op::Max => {
            if fa.is_nan() {
                fb
            } else if fb.is_nan() {
                fa
            } else {
                fa.max(fb)
            }
        }
        Op::Abs => fa.abs(),
        Op::Neg => -fa,
        Op::Sin => fa.sin(),
        Op::Cos => fa.cos(),
        Op::Lg2 => fa.log2(),
        Op::Ex2 => fa.exp2(),
        Op::Tanh => fa.tanh(),
        Op::Copysign => fb.copysign(fa),
        _ => 0.0,
    };
    let r = if x.sat { sat(r) } else { r };
    r.to_bits()
}

fn half_to_f32(ty: Ty, v: u64) -> f32 {
    if matches!(ty, Ty::BF16 | Ty::BF16x2) {
        f32::from_bits((v as u32) << 16)
    } else {
        f16::from_bits(v as u16).to_f32()
    }
}

fn f32_to_half(ty: Ty, f: f32) -> u64 {
    if matches!(ty, Ty::BF16 | Ty::BF16x2) {
        half::bf16::from_f32(f).to_bits() as u64
    } else {
        f16::from_f32(f).to_bits() as u64
    }
}

fn half_op(x: &Inst, a: u64, b: u64, c: u64) -> u64 {
    let (fa, fb, fc) = (
        half_to_f32(x.ty, a),
        half_to_f32(x.ty, b),
        half_to_f32(x.ty, c),
    );
    // f32 has more than 2×11+2 significand bits, so one f32 operation rounded again to f16 is
    // correctly rounded for add/sub/mul; fma goes through f64 for the same reason.
    let r = match x.op {
        Op::Add => fa + fb,
        Op::Sub => fa - fb,
        Op::Mul => fa * fb,
        Op::Fma => (fa as f64).mul_add(fb as f64, fc as f64) as f32,
        Op::Min => fa.min(fb),
        Op::Max => fa.max(fb),
        Op::Abs => return a & 0x7FFF,
        Op::Neg => return a ^ 0x8000,
        Op::Rcp => 1.0 / fa,
        Op::Sqrt => fa.sqrt(),
        Op::Rsqrt => 1.0 / fa.sqrt(),
        Op::Sin => fa.sin(),
        Op::Cos => fa.cos(),
        Op::Lg2 => fa.log2(),
        Op::Ex2 => fa.exp2(),
        Op::Tanh => fa.tanh(),
        _ => 0.0,
    };
    let r = if x.sat { sat(r as f64) as f32 } else { r };
    f32_to_half(x.ty, r)
}

/// Float value of a register word of float type `ty`, widened to f64.
pub(crate) fn float_to_f64(ty: Ty, v: u64) -> f64 {
    match ty {
        Ty::F64 => f64v(v),
        Ty::F32 => f32v(v) as f64,
        Ty::F16 | Ty::BF16 => half_to_f32(ty, v & 0xFFFF) as f64,
        _ => 0.0,
    }
}

fn round_int(f: f64, rnd: Rnd) -> f64 {
    match rnd {
        Rnd::Rzi | Rnd::Rz => f.trunc(),
        Rnd::Rmi | Rnd::Rm => f.floor(),
        Rnd::Rpi | Rnd::Rp => f.ceil(),
        _ => f.round_ties_even(),
    }
}

fn int_range(ty: Ty) -> (i128, i128) {
    let b = ty.bits().min(64);
    if ty.is_signed() {
        (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1)
    } else {
        (0, (1i128 << b) - 1)
    }
}

fn int_to_float(v: i128, dst: Ty, rnd: Rnd) -> u64 {
    match dst {
        Ty::F64 => {
            let r = v as f64;
            let err = if r.is_finite() {
                (v - r as i128).signum() as f64
            } else {
                0.0
            };
            direct64(r, err, rnd).to_bits()
        }
        Ty::F32 => {
            let r = v as f32;
            let err = (v - r as i128).signum() as f32;
            let r = match rnd {
                Rnd::Rz if r > 0.0 && err < 0.0 => r.next_down(),
                Rnd::Rz if r < 0.0 && err > 0.0 => r.next_up(),
                Rnd::Rm if err < 0.0 => r.next_down(),
                Rnd::Rp if err > 0.0 => r.next_up(),
                _ => r,
            };
            b32(r)
        }
        _ => f32_to_half(dst, v as f32),
    }
}

/// `cvt.rnd.sat.ftz.dst.src` of one lane.
pub(crate) fn cvt(x: &Inst, v: u64) -> u64 {
    let (dst, src) = (x.ty, x.ty2);
    match (dst.is_float(), src.is_float()) {
        (false, false) => {
            let s = src.extend(v) as i64 as i128;
            let s = if src.is_signed() {
                s
            } else {
                src.extend(v) as i128
            };
            if x.sat {
                let (lo, hi) = int_range(dst);
                s.clamp(lo, hi) as u64 & dst.mask()
            } else {
                // truncate to destination, then extend as the destination type
                dst.extend(s as u64)
            }
        }
        (false, true) => {
            let mut f = float_to_f64(src, v);
            if x.ftz && src == Ty::F32 && (f as f32).is_subnormal() {
                f = 0.0;
            }
            if f.is_nan() {
                return 0;
            }
            let r = round_int(f, x.rnd);
            let (lo, hi) = int_range(dst);
            let i = if r >= hi as f64 {
                hi
            } else if r <= lo as f64 {
                lo
            } else {
                r as i128
            };
            i as u64 & dst.mask()
        }
        (true, false) => {
            let s = if src.is_signed() {
                src.extend(v) as i64 as i128
            } else {
                src.extend(v) as i128
            };
            let r = int_to_float(s, dst, x.rnd);
            if x.sat { float_sat_bits(dst, r) } else { r }
        }
        (true, true) => {
            let mut f = float_to_f64(src, v);
            if x.ftz && src == Ty::F32 && (f as f32).is_subnormal() {
                f = 0.0f64.copysign(f);
            }
            if matches!(x.rnd, Rnd::Rni | Rnd::Rzi | Rnd::Rmi | Rnd::Rpi) {
                f = round_int(f, x.rnd);
            }
            let r = match dst {
                Ty::F64 => f.to_bits(),
                Ty::F32 => {
                    let mut r = f64_to_f32(f, x.rnd);
                    if x.ftz {
                        r = ftz32(r);
                    }
                    b32(r)
                }
                Ty::BF16 => half::bf16::from_f64(f).to_bits() as u64,
                _ => f16::from_f64(f).to_bits() as u64,
            };
            if x.sat { float_sat_bits(dst, r) } else { r }
        }
    }
}

fn float_sat_bits(ty: Ty, bits: u64) -> u64 {
    let f = sat(float_to_f64(ty, bits));
    match ty {
        Ty::F64 => f.to_bits(),
        Ty::F32 => b32(f as f32),
        _ => f16::from_f64(f).to_bits() as u64,
    }
}

/// `testp.op.type` of one lane.
pub(crate) fn testp(ty: Ty, kind: u8, v: u64) -> bool {
    let f = float_to_f64(ty, v);
    let sub = if ty == Ty::F32 {
        f32v(v).is_subnormal()
    } else {
        f.is_subnormal()
    };
    match kind {
        0 => f.is_finite(),
        1 => f.is_infinite(),
        2 => !f.is_nan(),
        3 => f.is_nan(),
        4 => f.is_normal() && !sub,
        _ => sub,
    }
}

/// `prmt.b32.mode` of one lane.
pub(crate) fn prmt(mode: u8, a: u64, b: u64, c: u64) -> u64 {
    let bytes = ((b as u32 as u64) << 32) | (a as u32 as u64);
    let byte = |i: u64| (bytes >> ((i & 7) * 8)) & 0xFF;
    let sel = c as u32;
    let mut r: u64 = 0;
    match mode {
        0 => {
            for k in 0..4 {
                let s = ((sel >> (k * 4)) & 0xF) as u64;
                let mut v = byte(s & 7);
                if s & 8 != 0 {
                    v = if v & 0x80 != 0 { 0xFF } else { 0 };
                }
                r |= v << (k * 8);
            }
        }
        _ => {
            let s = (sel & 3) as u64;
            let idx: [u64; 4] = match mode {
                1 => [s, (s + 1) & 7, (s + 2) & 7, (s + 3) & 7], // f4e
                2 => [s, (s + 7) & 7, (s + 6) & 7, (s + 5) & 7], // b4e
                3 => [s, s, s, s],                               // rc8
                4 => [0, 1, 2, 3].map(|k: u64| k.max(s)),        // ecl
                5 => [0, 1, 2, 3].map(|k: u64| k.min(s)),        // ecr
                _ => {
                    let h = (s & 1) * 2;
                    [h, h + 1, h, h + 1]
                }
            };
            for (k, i) in idx.iter().enumerate() {
                r |= byte(*i) << (k * 8);
            }
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Inst, Op};

    fn inst(op: Op, ty: Ty, rnd: Rnd) -> Inst {
        let mut x = Inst::new(op, 1);
        x.ty = ty;
        x.rnd = rnd;
        x
    }

    #[test]
    fn directed_rounding_of_f32_add() {
        let a = b32(1.0);
        let tiny = b32(1e-20);
        let up = f32v(f32_op(&inst(Op::Add, Ty::F32, Rnd::Rp), a, tiny, 0));
        let dn = f32v(f32_op(&inst(Op::Add, Ty::F32, Rnd::Rm), a, tiny, 0));
        let rn = f32v(f32_op(&inst(Op::Add, Ty::F32, Rnd::Rn), a, tiny, 0));
        assert_eq!(up, 1.0f32.next_up());
        assert_eq!(dn, 1.0);
        assert_eq!(rn, 1.0);
        let rz = f32v(f32_op(&inst(Op::Sub, Ty::F32, Rnd::Rz), b32(-1.0), tiny, 0));
        assert_eq!(rz, -1.0);
    }

    #[test]
    fn directed_rounding_of_f64_div_brackets_the_quotient() {
        let x = inst(Op::Div, Ty::F64, Rnd::Rm);
        let lo = f64v(f64_op(&x, 1f64.to_bits(), 3f64.to_bits(), 0));
        let hi = f64v(f64_op(
            &inst(Op::Div, Ty::F64, Rnd::Rp),
            1f64.to_bits(),
            3f64.to_bits(),
            0,
        ));
        assert_eq!(hi, lo.next_up());
        assert!(lo < 1.0 / 3.0 || hi > 1.0 / 3.0);
    }

    #[test]
    fn cvt_float_to_int_saturates_and_rounds() {
        let mut x = inst(Op::Cvt, Ty::S32, Rnd::Rni);
        x.ty2 = Ty::F32;
        assert_eq!(cvt(&x, b32(2.5)) as u32 as i32, 2);
        assert_eq!(cvt(&x, b32(-3.5)) as u32 as i32, -4);
        assert_eq!(cvt(&x, b32(1e20)) as u32 as i32, i32::MAX);
        assert_eq!(cvt(&x, b32(f32::NAN)), 0);
        x.rnd = Rnd::Rmi;
        assert_eq!(cvt(&x, b32(-0.5)) as u32 as i32, -1);
        let mut y = inst(Op::Cvt, Ty::U8, Rnd::None);
        y.ty2 = Ty::S32;
        y.sat = true;
        assert_eq!(cvt(&y, (-5i32) as u32 as u64), 0);
        assert_eq!(cvt(&y, 300), 255);
        y.sat = false;
        assert_eq!(cvt(&y, 300), 300 & 0xFF);
        let mut z = inst(Op::Cvt, Ty::S64, Rnd::None);
        z.ty2 = Ty::S32;
        assert_eq!(cvt(&z, 0xFFFF_FFFF) as i64, -1);
    }

    #[test]
    fn cvt_int_to_float_directed() {
        let mut x = inst(Op::Cvt, Ty::F32, Rnd::Rz);
        x.ty2 = Ty::U32;
        let v = 16_777_217u64; // 2^24 + 1, not representable in f32
        assert_eq!(f32v(cvt(&x, v)), 16_777_216.0);
        x.rnd = Rnd::Rp;
        assert_eq!(f32v(cvt(&x, v)), 16_777_218.0);
        let mut h = inst(Op::Cvt, Ty::F16, Rnd::Rn);
        h.ty2 = Ty::F32;
        assert_eq!(cvt(&h, b32(1.5)), f16::from_f32(1.5).to_bits() as u64);
    }

    #[test]
    fn prmt_default_and_sign_replication() {
        // select bytes 4,5,6,7 = b
        assert_eq!(prmt(0, 0x4433_2211, 0x8877_6655, 0x7654), 0x8877_6655);
        // byte 0 replicated sign of byte 7 (0x88 negative)
        assert_eq!(prmt(0, 0x4433_2211, 0x8877_6655, 0x000F) & 0xFF, 0xFF);
    }

    #[test]
    fn testp_classes() {
        assert!(testp(Ty::F32, 3, b32(f32::NAN)));
        assert!(testp(Ty::F32, 5, b32(1e-40)));
        assert!(!testp(Ty::F32, 4, b32(1e-40)));
        assert!(testp(Ty::F64, 1, f64::INFINITY.to_bits()));
    }
}
