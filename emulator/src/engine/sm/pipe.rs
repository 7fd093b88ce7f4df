//! The units a scheduler issues to, and how long each is busy per warp instruction. Every
//! timing class has a unit; a preset that splits integer issue (`pipeline.int_split`) adds
//! three for the integer operations that issue at other rates than the rest. The class still
//! gives an instruction's latency and the counter it is counted under: only issue moves.

use crate::config::{GpuConfig, IntSplit, PipelineConfig};
use crate::ir::{Class, Inst, Op, Opnd};

use super::NCLASS;

/// Units per scheduler: one per class, then the split integer groups.
pub(in crate::engine) const NPIPE: usize = NCLASS + 3;

/// A unit, as an index into a scheduler's busy-until cycles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::engine) struct Pipe(u8);

impl Pipe {
    const LOGIC_ADD: Pipe = Pipe(NCLASS as u8);
    const BIT_COUNT: Pipe = Pipe(NCLASS as u8 + 1);
    const CONVERSION: Pipe = Pipe(NCLASS as u8 + 2);

    pub(in crate::engine) const fn of_class(c: Class) -> Pipe {
        Pipe(c as u8)
    }

    #[inline]
    pub(in crate::engine) fn index(self) -> usize {
        usize::from(self.0)
    }
}

/// Cycles each unit is busy per warp instruction, looked up once per launch. The split
/// groups' units read `int_issue_cycles` where the preset has no split; no instruction is
/// sent to them then.
pub(in crate::engine) fn intervals(cfg: &GpuConfig) -> [u64; NPIPE] {
    let p = &cfg.pipeline;
    let mut out = [1; NPIPE];
    for c in Class::ALL {
        out[Pipe::of_class(c).index()] = u64::from(match c {
            Class::Int => p.int_issue_cycles,
            Class::Fp32 => p.fp32_issue_cycles,
            Class::Fp64 => p.fp64_issue_cycles,
            Class::Sfu => p.sfu_issue_cycles,
            Class::Mem | Class::Tex => p.mem_issue_cycles,
            _ => 1,
        });
    }
    let split = p.int_split.unwrap_or(IntSplit {
        logic_add_issue_cycles: p.int_issue_cycles,
        bit_count_issue_cycles: p.int_issue_cycles,
        conversion_issue_cycles: p.int_issue_cycles,
    });
    out[Pipe::LOGIC_ADD.index()] = u64::from(split.logic_add_issue_cycles);
    out[Pipe::BIT_COUNT.index()] = u64::from(split.bit_count_issue_cycles);
    out[Pipe::CONVERSION.index()] = u64::from(split.conversion_issue_cycles);
    out.map(|v| v.max(1))
}

/// The unit `x` issues to and the issue slots it takes from its scheduler: 0 for a move the
/// preset's `free_register_moves` lets vanish, 2 for a 64-bit operation the split's
/// logic-and-add unit runs as two 32-bit halves, else 1.
pub(in crate::engine) fn of(x: &Inst, cfg: &PipelineConfig) -> (Pipe, u8) {
    let own = (Pipe::of_class(x.class), 1);
    if cfg.free_register_moves && vanishes(x) {
        return (own.0, 0);
    }
    if cfg.int_split.is_none() {
        return own;
    }
    match (x.class, x.op) {
        (Class::Fp32, Op::Cvt) if x.ty.is_float() != x.ty2.is_float() => (Pipe::CONVERSION, 1),
        (Class::Int, Op::Popc | Op::Clz | Op::Bfind | Op::BfindShift) => (Pipe::BIT_COUNT, 1),
        (Class::Int, Op::Mov | Op::Pack | Op::Unpack | Op::Cvt | Op::Cvta | Op::CvtaTo) => {
            (Pipe::LOGIC_ADD, 1)
        }
        (
            Class::Int,
            Op::Add
            | Op::Sub
            | Op::AddCc
            | Op::AddC
            | Op::SubCc
            | Op::SubC
            | Op::Neg
            | Op::And
            | Op::Or
            | Op::Xor
            | Op::Not
            | Op::Cnot
            | Op::Lop3
            | Op::Setp
            | Op::Set
            | Op::Selp
            | Op::Slct,
        ) => (Pipe::LOGIC_ADD, if wide(x) { 2 } else { 1 }),
        _ => own,
    }
}

/// Whether the operation's operands are 64-bit: a compare's are its second type, the rest's
/// their first.
fn wide(x: &Inst) -> bool {
    let t = if matches!(x.op, Op::Setp | Op::Set) {
        x.ty2
    } else {
        x.ty
    };
    t.bits() == 64
}

/// Whether ptxas' register allocation makes `x` vanish: an unguarded move from a register, or
/// a conversion that keeps an integer's low 32 or 64 bits (the low register of a pair).
fn vanishes(x: &Inst) -> bool {
    let unguarded = matches!(x.guard, Opnd::None);
    let from_reg = matches!(x.s[0], Opnd::Reg(_) | Opnd::Pred(_));
    unguarded
        && from_reg
        && match x.op {
            Op::Mov => x.class == Class::Int,
            Op::Cvt => {
                !x.ty.is_float()
                    && !x.ty2.is_float()
                    && (32..=x.ty2.bits()).contains(&x.ty.bits())
                    && !x.sat
            }
            _ => false,
        }
}
