//! Every non-memory operation: one tight loop over the 32 lanes per operation, the comparison
//! chosen once per warp instruction where it can be.

use super::mem::memory;
use super::tex::Fetch;
use super::{Ctx, Division, FULL, Faulty, Flow, Warp, ZERO_LANES, fault, put, put_bits, put_lanes};
use crate::bits::set_bits;
use crate::devmem::{LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW, WINDOW_BYTES};
use crate::hostcpu::with_host_features;
use crate::ir::*;
use crate::numeric::{self, b32, f32v, float_op, float_to_f64};

fn compare(ty: Ty, cmp: Cmp, a: u64, b: u64) -> bool {
    if ty.is_float() {
        let (x, y) = (float_to_f64(ty, a), float_to_f64(ty, b));
        let un = x.is_nan() || y.is_nan();
        return match cmp {
            Cmp::Eq => x == y,
            Cmp::Ne => !un && x != y,
            Cmp::Lt | Cmp::Lo => x < y,
            Cmp::Le | Cmp::Ls => x <= y,
            Cmp::Gt | Cmp::Hi => x > y,
            Cmp::Ge | Cmp::Hs => x >= y,
            Cmp::Equ => un || x == y,
            Cmp::Neu => un || x != y,
            Cmp::Ltu => un || x < y,
            Cmp::Leu => un || x <= y,
            Cmp::Gtu => un || x > y,
            Cmp::Geu => un || x >= y,
            Cmp::Num => !un,
            Cmp::Nan => un,
        };
    }
    let signed = ty.is_signed() && !matches!(cmp, Cmp::Lo | Cmp::Ls | Cmp::Hi | Cmp::Hs);
    let (x, y) = if signed {
        (ty.extend(a) as i64 as i128, ty.extend(b) as i64 as i128)
    } else {
        ((a & ty.mask()) as i128, (b & ty.mask()) as i128)
    };
    match cmp {
        Cmp::Eq | Cmp::Equ => x == y,
        Cmp::Ne | Cmp::Neu => x != y,
        Cmp::Lt | Cmp::Lo | Cmp::Ltu => x < y,
        Cmp::Le | Cmp::Ls | Cmp::Leu => x <= y,
        Cmp::Gt | Cmp::Hi | Cmp::Gtu => x > y,
        Cmp::Ge | Cmp::Hs | Cmp::Geu => x >= y,
        Cmp::Num => true,
        Cmp::Nan => false,
    }
}

/// `setp` of the common integer and f32 cases with the comparison chosen once per warp
/// instruction, as the lanes' bits; `None` for the cases left to [`compare`].
fn compare_fast(ty: Ty, cmp: Cmp, a: &[u64; 32], b: &[u64; 32]) -> Option<u32> {
    let mut bits = 0u32;
    // Each lane's bit chosen as a constant, which the compiler vectorizes as compares masked
    // by a vector of the lanes' bits; a lane's flag shifted into place, or the flags gathered
    // as bytes first, stayed a lane at a time (about 100 host instructions more a call).
    macro_rules! cmp_loop {
        ($conv:expr, $op:tt) => {{
            let conv = $conv;
            for l in 0..32 {
                bits |= if conv(a[l]) $op conv(b[l]) { 1 << l } else { 0 };
            }
        }};
    }
    let signed = ty.is_signed() && !matches!(cmp, Cmp::Lo | Cmp::Ls | Cmp::Hi | Cmp::Hs);
    match (ty, signed) {
        (Ty::F32, _) => match cmp {
            Cmp::Eq => cmp_loop!(f32v, ==),
            Cmp::Lt => cmp_loop!(f32v, <),
            Cmp::Le => cmp_loop!(f32v, <=),
            Cmp::Gt => cmp_loop!(f32v, >),
            Cmp::Ge => cmp_loop!(f32v, >=),
            _ => return None,
        },
        (t, _) if t.is_float() => return None,
        // 32-bit operands compared as 32-bit lanes (the same order as the 64-bit extension
        // below gives), which the compiler vectorizes; most setp are 32-bit.
        (_, true) if ty.bits() == 32 => {
            let conv = |v: u64| v as u32 as i32;
            match cmp {
                Cmp::Eq => cmp_loop!(conv, ==),
                Cmp::Ne => cmp_loop!(conv, !=),
                Cmp::Lt => cmp_loop!(conv, <),
                Cmp::Le => cmp_loop!(conv, <=),
                Cmp::Gt => cmp_loop!(conv, >),
                Cmp::Ge => cmp_loop!(conv, >=),
                _ => return None,
            }
        }
        (_, false) if ty.bits() == 32 => {
            let conv = |v: u64| v as u32;
            match cmp {
                Cmp::Eq => cmp_loop!(conv, ==),
                Cmp::Ne => cmp_loop!(conv, !=),
                Cmp::Lt | Cmp::Lo => cmp_loop!(conv, <),
                Cmp::Le | Cmp::Ls => cmp_loop!(conv, <=),
                Cmp::Gt | Cmp::Hi => cmp_loop!(conv, >),
                Cmp::Ge | Cmp::Hs => cmp_loop!(conv, >=),
                _ => return None,
            }
        }
        (_, true) => {
            let bits = 64 - ty.bits().min(64);
            let conv = |v: u64| ((v << bits) as i64) >> bits;
            match cmp {
                Cmp::Eq => cmp_loop!(conv, ==),
                Cmp::Ne => cmp_loop!(conv, !=),
                Cmp::Lt => cmp_loop!(conv, <),
                Cmp::Le => cmp_loop!(conv, <=),
                Cmp::Gt => cmp_loop!(conv, >),
                Cmp::Ge => cmp_loop!(conv, >=),
                _ => return None,
            }
        }
        (_, false) => {
            let m = ty.mask();
            let conv = |v: u64| v & m;
            match cmp {
                Cmp::Eq => cmp_loop!(conv, ==),
                Cmp::Ne => cmp_loop!(conv, !=),
                Cmp::Lt | Cmp::Lo => cmp_loop!(conv, <),
                Cmp::Le | Cmp::Ls => cmp_loop!(conv, <=),
                Cmp::Gt | Cmp::Hi => cmp_loop!(conv, >),
                Cmp::Ge | Cmp::Hs => cmp_loop!(conv, >=),
                _ => return None,
            }
        }
    }
    Some(bits)
}

/// A comparison's lanes `p` combined with the predicate `c` of `setp.and` and its kin.
fn combine(bop: BoolOp, p: u32, c: u32) -> u32 {
    match bop {
        BoolOp::None => p,
        BoolOp::And => p & c,
        BoolOp::Or => p | c,
        BoolOp::Xor => p ^ c,
    }
}

/// The comparison of `setp` and `set` as the lanes' bits, before any combining predicate: the
/// fast form where there is one, else lane by lane.
fn comparison(x: &Inst, a: &[u64; 32], b: &[u64; 32]) -> u32 {
    compare_fast(x.ty2, x.cmp, a, b).unwrap_or_else(|| {
        (0..32).fold(0, |bits, l| {
            bits | u32::from(compare(x.ty2, x.cmp, a[l], b[l])) << l
        })
    })
}

/// `setp`: the comparison as the lanes' bits, written to its predicates in one step each.
fn setp(x: &Inst, w: &mut Warp, c: &Ctx, m: u32) -> Faulty<Flow> {
    let (mut ta, mut tb): ([u64; 32], [u64; 32]);
    let ns = x.ns as usize;
    let a: &[u64; 32] = operand_row!(c, w, x.s[0], ns > 0, ta);
    let b: &[u64; 32] = operand_row!(c, w, x.s[1], ns > 1, tb);
    let res = comparison(x, a, b);
    let cv = if ns > 2 { c.mask_of(x.s[2], w) } else { 0 };
    put_bits(w, x.d[0], m, combine(x.bop, res, cv));
    if x.nd > 1 {
        put_bits(w, x.d[1], m, combine(x.bop, !res, cv));
    }
    Ok(Flow::Done)
}

/// `selp`: each lane's choice by its bit of the predicate.
fn selp(x: &Inst, w: &mut Warp, c: &Ctx, m: u32) -> Faulty<Flow> {
    let (mut ta, mut tb): ([u64; 32], [u64; 32]);
    let ns = x.ns as usize;
    let a: &[u64; 32] = operand_row!(c, w, x.s[0], ns > 0, ta);
    let b: &[u64; 32] = operand_row!(c, w, x.s[1], ns > 1, tb);
    let p = if ns > 2 { c.mask_of(x.s[2], w) } else { 0 };
    let mut r = [0u64; 32];
    map!(r, |l| if p >> l & 1 == 1 { a[l] } else { b[l] });
    put(w, x.d[0], m, &r, x.ty.mask());
    Ok(Flow::Done)
}

/// `mov`, `and`, `or`, `xor` and `not` of predicates, on their masks.
fn logic(x: &Inst, w: &mut Warp, c: &Ctx, m: u32) -> Faulty<Flow> {
    let ns = x.ns as usize;
    let a = if ns > 0 { c.mask_of(x.s[0], w) } else { 0 };
    let b = if ns > 1 { c.mask_of(x.s[1], w) } else { 0 };
    let r = match x.op {
        Op::And => a & b,
        Op::Or => a | b,
        Op::Xor => a ^ b,
        Op::Not => !a,
        _ => a,
    };
    put_bits(w, x.d[0], m, r);
    Ok(Flow::Done)
}

/// `vote`: the executing lanes' predicate bits, reduced or returned as a ballot.
fn vote(x: &Inst, w: &mut Warp, c: &Ctx, m: u32) -> Faulty<Flow> {
    let ballot = if x.ns > 0 {
        c.mask_of(x.s[0], w) & m
    } else {
        0
    };
    if x.sub == 3 {
        put_lanes(w, x.d[0], m, |_| u64::from(ballot));
        return Ok(Flow::Done);
    }
    let all = match x.sub {
        0 => ballot == m,
        1 => ballot != 0,
        _ => ballot == m || ballot == 0,
    };
    put_bits(w, x.d[0], m, if all { FULL } else { 0 });
    Ok(Flow::Done)
}

#[allow(clippy::needless_range_loop)]
pub(super) fn compute(x: &Inst, w: &mut Warp, c: &mut Ctx, m: u32) -> Faulty<Flow> {
    match x.op {
        Op::Ld | Op::St | Op::Atom | Op::Red => return memory(x, w, c, m),
        Op::Tex => return with_host_features(Fetch { x, w, c, m }),
        _ => {}
    }
    // The operations on predicates' masks picked by one test: as arms of the match above they
    // made it a table of indirect jumps, which the host mispredicted a third more often.
    if matches!(x.op, Op::Setp | Op::Selp | Op::Vote) || x.ty == Ty::Pred {
        match x.op {
            Op::Setp => return setp(x, w, c, m),
            Op::Selp => return selp(x, w, c, m),
            Op::Vote => return vote(x, w, c, m),
            Op::Mov | Op::And | Op::Or | Op::Xor | Op::Not => return logic(x, w, c, m),
            _ => {}
        }
    }
    // The result row is declared after the memory instructions' return, so that no path
    // that never writes it can pay to zero it, whatever the compiler chooses (one build
    // zeroed it on entry for every warp instruction: docs/PERFORMANCE.md).
    let mut r = [0u64; 32];
    let ty = x.ty;
    let tm = ty.mask();
    let bits = ty.bits();
    let fl = ty.is_float();
    // Sources as lane rows (`operand_row!`): registers borrowed in place.
    let (mut ta, mut tb, mut tc): ([u64; 32], [u64; 32], [u64; 32]);
    let ns = x.ns as usize;
    let a: &[u64; 32] = operand_row!(c, w, x.s[0], ns > 0, ta);
    let b: &[u64; 32] = operand_row!(c, w, x.s[1], ns > 1, tb);
    let cc: &[u64; 32] = operand_row!(c, w, x.s[2], ns > 2, tc);
    let plain_f32 = ty == Ty::F32 && !x.ftz && !x.sat && matches!(x.rnd, Rnd::None | Rnd::Rn);
    let ext = |v: u64| ty.extend(v);
    let mut division = None;
    match x.op {
        Op::Mov => {
            let a = *a;
            put(w, x.d[0], m, &a, tm);
            return Ok(Flow::Done);
        }
        Op::Pack => {
            let eb = x.ty2.bits();
            let em = x.ty2.mask();
            let mut parts = [[0u64; 32]; 4];
            for k in 0..x.ns as usize {
                c.fetch(x.s[k], w, &mut parts[k]);
            }
            map!(r, |l| {
                let mut v = 0u64;
                for k in 0..x.ns as usize {
                    v |= (parts[k][l] & em) << (k as u32 * eb);
                }
                v
            });
        }
        Op::Unpack => {
            let a = *a;
            let eb = x.ty2.bits();
            let em = x.ty2.mask();
            for k in 0..x.nd as usize {
                map!(r, |l| (a[l] >> (k as u32 * eb)) & em);
                put(w, x.d[k], m, &r, em);
            }
            return Ok(Flow::Done);
        }
        Op::Add if plain_f32 => map!(r, |l| b32(f32v(a[l]) + f32v(b[l]))),
        Op::Sub if plain_f32 => map!(r, |l| b32(f32v(a[l]) - f32v(b[l]))),
        Op::Mul if plain_f32 => map!(r, |l| b32(f32v(a[l]) * f32v(b[l]))),
        Op::Fma if plain_f32 && x.sub == 0 => {
            with_host_features(|| map!(r, |l| b32(f32v(a[l]).mul_add(f32v(b[l]), f32v(cc[l])))))
        }
        Op::Add
        | Op::Sub
        | Op::Mul
        | Op::Fma
        | Op::Div
        | Op::Min
        | Op::Max
        | Op::Abs
        | Op::Neg
        | Op::Rcp
        | Op::Sqrt
        | Op::Rsqrt
        | Op::Sin
        | Op::Cos
        | Op::Lg2
        | Op::Ex2
        | Op::Tanh
        | Op::Copysign
            if fl =>
        {
            map!(r, |l| float_op(x, a[l], b[l], cc[l]))
        }
        Op::Add => {
            if x.sat && ty == Ty::S32 {
                map!(
                    r,
                    |l| (a[l] as u32 as i32).saturating_add(b[l] as u32 as i32) as u32 as u64
                )
            } else {
                map!(r, |l| a[l].wrapping_add(b[l]))
            }
        }
        Op::Sub => {
            if x.sat && ty == Ty::S32 {
                map!(
                    r,
                    |l| (a[l] as u32 as i32).saturating_sub(b[l] as u32 as i32) as u32 as u64
                )
            } else {
                map!(r, |l| a[l].wrapping_sub(b[l]))
            }
        }
        carry_ops!() => {
            let mut carry = w.carry;
            let use_in = matches!(x.op, Op::AddC | Op::SubC | Op::MadCLo | Op::MadCHi);
            for l in 0..32 {
                let cin = if use_in {
                    ((w.carry >> l) & 1) as u128
                } else {
                    0
                };
                let (ua, ub, uc) = (
                    (a[l] & tm) as u128,
                    (b[l] & tm) as u128,
                    (cc[l] & tm) as u128,
                );
                let full: u128 = match x.op {
                    Op::AddCc | Op::AddC => ua + ub + cin,
                    Op::SubCc | Op::SubC => ua.wrapping_sub(ub).wrapping_sub(cin),
                    Op::MadLoCc | Op::MadCLo => ((ua * ub) & tm as u128) + uc + cin,
                    _ => {
                        let p = if ty.is_signed() {
                            ((ext(a[l]) as i64 as i128 * ext(b[l]) as i64 as i128) >> bits) as u128
                        } else {
                            (ua * ub) >> bits
                        };
                        (p & tm as u128) + uc + cin
                    }
                };
                r[l] = full as u64 & tm;
                let out = (full >> bits) & 1;
                carry = (carry & !(1 << l)) | ((out as u32) << l);
            }
            w.carry = (w.carry & !m) | (carry & m);
        }
        Op::MulLo => map!(r, |l| a[l].wrapping_mul(b[l])),
        Op::MadLo => map!(r, |l| a[l].wrapping_mul(b[l]).wrapping_add(cc[l])),
        Op::MulHi | Op::MadHi => {
            if ty.is_signed() {
                map!(
                    r,
                    |l| ((ext(a[l]) as i64 as i128 * ext(b[l]) as i64 as i128) >> bits) as u64
                )
            } else {
                map!(r, |l| (((a[l] & tm) as u128 * (b[l] & tm) as u128) >> bits)
                    as u64)
            }
            if x.op == Op::MadHi {
                map!(r, |l| r[l].wrapping_add(cc[l]));
            }
        }
        Op::MulWide | Op::MadWide => {
            if ty.is_signed() {
                map!(r, |l| (ext(a[l]) as i64).wrapping_mul(ext(b[l]) as i64)
                    as u64)
            } else {
                map!(r, |l| (a[l] & tm).wrapping_mul(b[l] & tm))
            }
            if x.op == Op::MadWide {
                map!(r, |l| r[l].wrapping_add(cc[l]));
            }
            let wm = if bits >= 32 {
                u64::MAX
            } else {
                (1u64 << (2 * bits)) - 1
            };
            put(w, x.d[0], m, &r, wm);
            return Ok(Flow::Done);
        }
        Op::Mul24Lo | Op::Mul24Hi | Op::Mad24Lo => {
            let e24 = |v: u64| {
                if ty.is_signed() {
                    (v << 40) as i64 >> 40
                } else {
                    (v & 0xFF_FFFF) as i64
                }
            };
            map!(r, |l| {
                let p = e24(a[l]).wrapping_mul(e24(b[l]));
                match x.op {
                    Op::Mul24Hi => (p >> 16) as u64,
                    Op::Mad24Lo => (p as u64).wrapping_add(cc[l]),
                    _ => p as u64,
                }
            });
        }
        Op::Sad => map!(r, |l| {
            let (p, q) = if ty.is_signed() {
                (ext(a[l]) as i64 as i128, ext(b[l]) as i64 as i128)
            } else {
                ((a[l] & tm) as i128, (b[l] & tm) as i128)
            };
            ((p - q).unsigned_abs() as u64).wrapping_add(cc[l])
        }),
        Op::Div | Op::Rem => {
            let signed = ty.is_signed();
            let rem = x.op == Op::Rem;
            // ptxas' 64-bit sequence tests the raw high words: a negative operand is wide.
            let wide = if bits == 64 {
                set_bits(m)
                    .filter(|&l| (a[l] | b[l]) > u64::from(u32::MAX))
                    .count() as u32
            } else {
                0
            };
            division = Some(Division {
                signed,
                bits64: bits == 64,
                wide: wide > 0,
                narrow: wide < m.count_ones(),
            });
            map!(r, |l| {
                if signed {
                    let (p, q) = (ext(a[l]) as i64, ext(b[l]) as i64);
                    if q == 0 {
                        u64::MAX
                    } else if rem {
                        p.wrapping_rem(q) as u64
                    } else {
                        p.wrapping_div(q) as u64
                    }
                } else {
                    let (p, q) = (a[l] & tm, b[l] & tm);
                    if q == 0 {
                        u64::MAX
                    } else if rem {
                        p % q
                    } else {
                        p / q
                    }
                }
            });
        }
        Op::Abs => map!(r, |l| (ext(a[l]) as i64).wrapping_abs() as u64),
        Op::Neg => map!(r, |l| (a[l] as i64).wrapping_neg() as u64),
        Op::Min | Op::Max => {
            let max = x.op == Op::Max;
            if ty.is_signed() {
                map!(r, |l| {
                    let (p, q) = (ext(a[l]) as i64, ext(b[l]) as i64);
                    (if max { p.max(q) } else { p.min(q) }) as u64
                })
            } else {
                map!(r, |l| {
                    let (p, q) = (a[l] & tm, b[l] & tm);
                    if max { p.max(q) } else { p.min(q) }
                })
            }
        }
        Op::And => map!(r, |l| a[l] & b[l]),
        Op::Or => map!(r, |l| a[l] | b[l]),
        Op::Xor => map!(r, |l| a[l] ^ b[l]),
        Op::Not => map!(r, |l| !a[l]),
        Op::Cnot => map!(r, |l| ((a[l] & tm) == 0) as u64),
        Op::Shl => map!(r, |l| {
            let s = b[l] as u32;
            if s >= bits { 0 } else { a[l] << s }
        }),
        Op::Shr => {
            if ty.is_signed() {
                map!(r, |l| ((ext(a[l]) as i64) >> (b[l] as u32).min(63)) as u64)
            } else {
                map!(r, |l| {
                    let s = b[l] as u32;
                    if s >= bits { 0 } else { (a[l] & tm) >> s }
                })
            }
        }
        Op::Popc => map!(r, |l| (a[l] & tm).count_ones() as u64),
        Op::Clz => map!(r, |l| ((a[l] & tm).leading_zeros() - (64 - bits)) as u64),
        Op::Brev => map!(r, |l| (a[l] & tm).reverse_bits() >> (64 - bits)),
        Op::Bfind | Op::BfindShift => map!(r, |l| {
            let v = if ty.is_signed() && (ext(a[l]) as i64) < 0 {
                !a[l] & tm
            } else {
                a[l] & tm
            };
            if v == 0 {
                0xFFFF_FFFF
            } else {
                let pos = 63 - v.leading_zeros() as u64;
                if x.op == Op::BfindShift {
                    (bits as u64 - 1) - pos
                } else {
                    pos
                }
            }
        }),
        Op::Bfe => map!(r, |l| {
            let pos = (b[l] & 0xFF) as u32;
            let len = (cc[l] & 0xFF) as u32;
            let v = a[l] & tm;
            if len == 0 {
                if ty.is_signed() && pos >= bits && (ext(a[l]) as i64) < 0 {
                    tm
                } else {
                    0
                }
            } else {
                let field = if pos >= 64 { 0 } else { v >> pos };
                let field = if len >= 64 {
                    field
                } else {
                    field & ((1u64 << len) - 1)
                };
                if ty.is_signed() {
                    let sbit = (pos + len - 1).min(bits - 1);
                    let neg = (v >> sbit) & 1 == 1;
                    if neg && len < 64 {
                        field | (!0u64 << len.min(63))
                    } else {
                        field
                    }
                } else {
                    field
                }
            }
        }),
        Op::Bfi => {
            let mut dd = [0u64; 32];
            c.fetch(x.s[3], w, &mut dd);
            // bfi d, f(a), b, pos(cc), len(dd)
            map!(r, |l| {
                let pos = (cc[l] & 0xFF) as u32;
                let len = (dd[l] & 0xFF) as u32;
                if len == 0 || pos >= bits {
                    b[l]
                } else {
                    let fm = if len >= 64 {
                        u64::MAX
                    } else {
                        (1u64 << len) - 1
                    };
                    let mask = (fm << pos) & tm;
                    (b[l] & !mask) | ((a[l] << pos) & mask)
                }
            });
        }
        Op::Prmt => map!(r, |l| numeric::prmt(x.sub, a[l], b[l], cc[l])),
        Op::Shf => map!(r, |l| {
            let n = if x.sub & 2 != 0 {
                (cc[l] as u32).min(32)
            } else {
                cc[l] as u32 & 31
            } as u64;
            let v = ((b[l] & 0xFFFF_FFFF) << 32) | (a[l] & 0xFFFF_FFFF);
            if x.sub & 1 != 0 {
                (v >> n) & 0xFFFF_FFFF
            } else {
                ((v << n) >> 32) & 0xFFFF_FFFF
            }
        }),
        Op::Testp => {
            map!(r, |l| numeric::testp(ty, x.sub, a[l]) as u64);
            put(w, x.d[0], m, &r, 1);
            return Ok(Flow::Done);
        }
        Op::Set => {
            // As `setp`'s lanes, then 1.0f or all ones where a lane's bit is set.
            let cv = if ns > 2 { c.mask_of(x.s[2], w) } else { 0 };
            let res = combine(x.bop, comparison(x, a, b), cv);
            let one = if ty == Ty::F32 { b32(1.0) } else { tm };
            map!(r, |l| if res >> l & 1 == 1 { one } else { 0 });
        }
        Op::Slct => {
            if x.ty2 == Ty::F32 {
                map!(r, |l| if f32v(cc[l]) >= 0.0 { a[l] } else { b[l] })
            } else {
                map!(r, |l| if (cc[l] as u32 as i32) >= 0 {
                    a[l]
                } else {
                    b[l]
                })
            }
        }
        Op::Cvt => {
            if !fl && !x.ty2.is_float() && !x.sat {
                let (src, dst) = (x.ty2, ty);
                map!(r, |l| dst.extend(src.extend(a[l])));
                put(w, x.d[0], m, &r, u64::MAX);
                return Ok(Flow::Done);
            }
            map!(r, |l| numeric::cvt(x, a[l]));
            put(w, x.d[0], m, &r, if fl { tm } else { u64::MAX });
            return Ok(Flow::Done);
        }
        Op::CvtPack => {
            let mut h = *x;
            h.ty = if ty == Ty::BF16x2 { Ty::BF16 } else { Ty::F16 };
            map!(r, |l| (numeric::cvt(&h, a[l]) << 16)
                | numeric::cvt(&h, b[l]));
        }
        Op::Cvta => map!(r, |l| match x.space {
            Sp::Shared => a[l].wrapping_add(SHARED_WINDOW),
            Sp::Local => a[l].wrapping_add(LOCAL_WINDOW),
            Sp::Param => a[l].wrapping_add(PARAM_WINDOW),
            _ => a[l],
        }),
        Op::CvtaTo => map!(r, |l| match x.space {
            Sp::Shared => a[l].wrapping_sub(SHARED_WINDOW),
            Sp::Local => a[l].wrapping_sub(LOCAL_WINDOW),
            Sp::Param => a[l].wrapping_sub(PARAM_WINDOW),
            _ => a[l],
        }),
        Op::Isspacep => {
            map!(r, |l| {
                let v = a[l];
                let sh = (SHARED_WINDOW..SHARED_WINDOW + WINDOW_BYTES).contains(&v);
                let lo = (LOCAL_WINDOW..LOCAL_WINDOW + WINDOW_BYTES).contains(&v);
                (match x.space {
                    Sp::Shared => sh,
                    Sp::Local => lo,
                    _ => !sh && !lo,
                }) as u64
            });
            put(w, x.d[0], m, &r, 1);
            return Ok(Flow::Done);
        }
        Op::Shfl => {
            let mut mm = [0u64; 32];
            c.fetch(x.s[3], w, &mut mm);
            // PTX leaves a value read from an exited lane undefined; on an H200 it reads 0
            // (docs/gpu/contention.cu), which is what makes cuda-samples' reduce7 sum right.
            let live = w.stack.iter().fold(0u32, |m, e| m | e.mask);
            let mut p = [0u64; 32];
            for l in 0..32usize {
                let bval = (b[l] & 31) as i32;
                let cval = (cc[l] & 31) as i32;
                let seg = ((cc[l] >> 8) & 31) as i32;
                let lane = l as i32;
                let max_lane = (lane & seg) | (cval & !seg);
                let min_lane = lane & seg;
                let (j, ok) = match x.sub {
                    0 => (lane - bval, lane - bval >= max_lane),
                    1 => (lane + bval, lane + bval <= max_lane),
                    2 => (lane ^ bval, (lane ^ bval) <= max_lane),
                    _ => {
                        let j = min_lane | (bval & !seg);
                        (j, j <= max_lane)
                    }
                };
                let j = if ok && (0..32).contains(&j) { j } else { lane };
                r[l] = if live >> j & 1 == 1 { a[j as usize] } else { 0 };
                p[l] = ok as u64;
            }
            put(w, x.d[0], m, &r, 0xFFFF_FFFF);
            if x.nd > 1 {
                put(w, x.d[1], m, &p, 1);
            }
            return Ok(Flow::Done);
        }
        Op::Activemask => r.fill(m as u64),
        Op::Redux => {
            // Member lanes that execute it; every one of them gets the same result.
            let members = (b[m.trailing_zeros() as usize] as u32) & m;
            let signed = ty.is_signed();
            let mut acc: Option<u64> = None;
            for j in set_bits(members) {
                let v = a[j] & tm;
                acc = Some(match acc {
                    None => v,
                    Some(t) => match x.atom {
                        AtomOp::Add => t.wrapping_add(v) & tm,
                        AtomOp::Min if signed => (ext(t) as i64).min(ext(v) as i64) as u64 & tm,
                        AtomOp::Max if signed => (ext(t) as i64).max(ext(v) as i64) as u64 & tm,
                        AtomOp::Min => t.min(v),
                        AtomOp::Max => t.max(v),
                        AtomOp::And => t & v,
                        AtomOp::Or => t | v,
                        _ => t ^ v,
                    },
                });
            }
            r.fill(acc.unwrap_or(0));
        }
        Op::Elect => {
            let members = (a[m.trailing_zeros() as usize] as u32) & m;
            let leader = members.trailing_zeros();
            r.fill(u64::from(leader));
            put(w, x.d[0], m, &r, 0xFFFF_FFFF);
            if x.nd > 1 {
                let mut p = [0u64; 32];
                for (l, v) in p.iter_mut().enumerate() {
                    *v = (l as u32 == leader) as u64;
                }
                put(w, x.d[1], m, &p, 1);
            }
            return Ok(Flow::Done);
        }
        Op::Lop3 => {
            let mut lut = [0u64; 32];
            c.fetch(x.s[3], w, &mut lut);
            // Bit i of the table is F(a, b, c) for a = i>>2 & 1, b = i>>1 & 1, c = i & 1.
            map!(r, |l| {
                let (p, q, s3) = (a[l], b[l], cc[l]);
                let mut v = 0u64;
                for i in 0..8 {
                    if lut[l] >> i & 1 == 1 {
                        let pa = if i & 4 != 0 { p } else { !p };
                        let pb = if i & 2 != 0 { q } else { !q };
                        let pc = if i & 1 != 0 { s3 } else { !s3 };
                        v |= pa & pb & pc;
                    }
                }
                v & tm
            });
        }
        Op::Dp => {
            let (sa, sb) = (x.ty.is_signed(), x.ty2.is_signed());
            map!(r, |l| {
                let byte = |v: u64, k: u32, s: bool| {
                    let b8 = (v >> (8 * k)) as u8;
                    if s { b8 as i8 as i64 } else { b8 as i64 }
                };
                let half = |v: u64, k: u32, s: bool| {
                    let h = (v >> (16 * k)) as u16;
                    if s { h as i16 as i64 } else { h as i64 }
                };
                let dot: i64 = if x.sub == 0 {
                    (0..4).map(|k| byte(a[l], k, sa) * byte(b[l], k, sb)).sum()
                } else {
                    let off = if x.sub == 2 { 2 } else { 0 };
                    (0..2)
                        .map(|k| half(a[l], k, sa) * byte(b[l], k + off, sb))
                        .sum()
                };
                (cc[l] as u32 as i64).wrapping_add(dot) as u64 & 0xFFFF_FFFF
            });
        }
        Op::Match => {
            // Lanes compared: the member mask (operand b) among those executing; PTX leaves
            // members that do not execute the instruction undefined, so they are not counted.
            let vm = |v: u64| if bits >= 64 { v } else { v & tm };
            let mut p = [0u64; 32];
            for l in set_bits(m) {
                let members = (b[l] as u32) & m;
                let mut same = 0u32;
                for j in set_bits(members) {
                    if vm(a[j]) == vm(a[l]) {
                        same |= 1 << j;
                    }
                }
                if x.sub == 0 {
                    r[l] = same as u64;
                } else {
                    let all = same == members;
                    r[l] = if all { members as u64 } else { 0 };
                    p[l] = all as u64;
                }
            }
            put(w, x.d[0], m, &r, 0xFFFF_FFFF);
            if x.nd > 1 {
                put(w, x.d[1], m, &p, 1);
            }
            return Ok(Flow::Done);
        }
        Op::Bar => {
            let expected = if x.ns > 1 && x.s[1] != Opnd::None {
                a_count(x, w, c)?
            } else {
                0
            };
            let id = (a[0] & 15) as u32;
            let (red, contrib) = if x.sub >= 2 {
                let mut ballot = 0u32;
                for l in set_bits(m) {
                    ballot |= ((cc[l] & 1) as u32) << l;
                }
                match x.sub {
                    2 => (1, ballot.count_ones()),
                    3 => (2, (ballot == m) as u32),
                    _ => (3, (ballot != 0) as u32),
                }
            } else {
                (0, 0)
            };
            let dst = match x.d[0] {
                d @ (Opnd::Reg(_) | Opnd::Pred(_)) if x.sub >= 2 => Some(d),
                _ => None,
            };
            if x.sub == 1 {
                return Ok(Flow::Done);
            }
            return Ok(Flow::Bar {
                id,
                expected,
                red,
                contrib,
                dst,
            });
        }
        Op::Membar | Op::Nop => return Ok(Flow::Done),
        Op::Trap => {
            return fault(m.trailing_zeros(), "trap instruction executed");
        }
        _ => {
            return fault(
                m.trailing_zeros(),
                format!("{:?}.{:?} is not implemented", x.op, x.ty),
            );
        }
    }
    put(w, x.d[0], m, &r, tm);
    Ok(division.map_or(Flow::Done, Flow::Division))
}

fn a_count(x: &Inst, w: &Warp, c: &Ctx) -> Faulty<u32> {
    let mut v = [0u64; 32];
    c.fetch(x.s[1], w, &mut v);
    Ok(v[0] as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_compare_agrees_with_the_reference() {
        let mut seed = 0x1234_5678_9abc_def0u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let specials = [
            0u64,
            1,
            u64::MAX,
            0x8000_0000,
            0x7FFF_FFFF,
            0x8000_0000_0000_0000,
            0x7FC0_0000,
            0x3F80_0000,
        ];
        let tys = [
            Ty::S32,
            Ty::U32,
            Ty::S64,
            Ty::U64,
            Ty::S16,
            Ty::U8,
            Ty::B32,
            Ty::F32,
            Ty::Pred,
        ];
        let cmps = [
            Cmp::Eq,
            Cmp::Ne,
            Cmp::Lt,
            Cmp::Le,
            Cmp::Gt,
            Cmp::Ge,
            Cmp::Lo,
            Cmp::Ls,
            Cmp::Hi,
            Cmp::Hs,
        ];
        for round in 0..20 {
            let mut a = [0u64; 32];
            let mut b = [0u64; 32];
            for l in 0..32 {
                a[l] = if l < specials.len() {
                    specials[(l + round) % specials.len()]
                } else {
                    next()
                };
                b[l] = if l % 3 == 0 { a[l] } else { next() >> (l % 40) };
            }
            for &ty in &tys {
                for &cmp in &cmps {
                    if let Some(bits) = compare_fast(ty, cmp, &a, &b) {
                        for l in 0..32 {
                            assert_eq!(
                                bits >> l & 1 == 1,
                                compare(ty, cmp, a[l], b[l]),
                                "{ty:?} {cmp:?} {:#x} {:#x}",
                                a[l],
                                b[l]
                            );
                        }
                    }
                }
            }
        }
    }
}
