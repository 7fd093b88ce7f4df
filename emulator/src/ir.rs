//! The interpreter's compact instruction form: what `decode` produces and `exec` runs.
//!
//! Why a separate form: the syntax tree keeps strings; the hot loop wants small enums, registers
//! numbered densely per kernel (`Opnd::Reg(n)` indexes the warp's `[reg][lane]` file directly,
//! `Opnd::Pred(n)` its predicate masks),
//! branch targets and reconvergence points as instruction indices, and symbols resolved to
//! addresses or offsets.

use crate::config::PipelineConfig;
use crate::error::EmuError;

/// Value types of PTX instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    Pred,
    B8,
    B16,
    B32,
    B64,
    B128,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    F16x2,
    BF16,
    BF16x2,
    F32,
    F64,
}

impl Ty {
    pub(crate) fn parse(s: &str) -> Option<Ty> {
        Some(match s {
            "pred" => Ty::Pred,
            "b8" => Ty::B8,
            "b16" => Ty::B16,
            "b32" => Ty::B32,
            "b64" => Ty::B64,
            "b128" => Ty::B128,
            "u8" => Ty::U8,
            "u16" => Ty::U16,
            "u32" => Ty::U32,
            "u64" => Ty::U64,
            "s8" => Ty::S8,
            "s16" => Ty::S16,
            "s32" => Ty::S32,
            "s64" => Ty::S64,
            "f16" => Ty::F16,
            "f16x2" => Ty::F16x2,
            "bf16" => Ty::BF16,
            "bf16x2" => Ty::BF16x2,
            "f32" => Ty::F32,
            "f64" => Ty::F64,
            _ => return None,
        })
    }
    pub(crate) fn bits(self) -> u32 {
        match self {
            Ty::Pred => 1,
            Ty::B8 | Ty::U8 | Ty::S8 => 8,
            Ty::B16 | Ty::U16 | Ty::S16 | Ty::F16 | Ty::BF16 => 16,
            Ty::B32 | Ty::U32 | Ty::S32 | Ty::F32 | Ty::F16x2 | Ty::BF16x2 => 32,
            Ty::B64 | Ty::U64 | Ty::S64 | Ty::F64 => 64,
            Ty::B128 => 128,
        }
    }
    pub(crate) fn bytes(self) -> u32 {
        self.bits().div_ceil(8)
    }
    pub(crate) fn is_signed(self) -> bool {
        matches!(self, Ty::S8 | Ty::S16 | Ty::S32 | Ty::S64)
    }
    pub(crate) fn is_float(self) -> bool {
        matches!(
            self,
            Ty::F16 | Ty::F16x2 | Ty::BF16 | Ty::BF16x2 | Ty::F32 | Ty::F64
        )
    }
    /// Mask of the value bits of this type in a 64-bit register word.
    pub(crate) fn mask(self) -> u64 {
        match self.bits() {
            64 | 128 => u64::MAX,
            b => (1u64 << b) - 1,
        }
    }
    /// Sign- or zero-extends the low `bits()` of `v` to 64 bits.
    pub(crate) fn extend(self, v: u64) -> u64 {
        self.extender().apply(v)
    }

    /// [`Ty::extend`] decided once, for a loop over lanes.
    pub(crate) fn extender(self) -> Extender {
        Extender {
            shift: 64 - self.bits().min(64),
            signed: self.is_signed(),
        }
    }
}

/// Sign- or zero-extension of a type's low bits to 64, with the type's width and signedness
/// looked up once rather than per lane.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Extender {
    shift: u32,
    signed: bool,
}

impl Extender {
    /// Whether it extends the sign; zero extension of a value read into zeroed bytes changes
    /// nothing.
    pub(crate) fn signed(self) -> bool {
        self.signed
    }

    /// Both extensions computed and one selected, so that a loop over lanes has no branch.
    #[inline]
    pub(crate) fn apply(self, v: u64) -> u64 {
        let high = v << self.shift;
        let signed = ((high as i64) >> self.shift) as u64;
        let unsigned = high >> self.shift;
        if self.signed { signed } else { unsigned }
    }
}

/// Rounding modifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rnd {
    None,
    Rn,
    Rz,
    Rm,
    Rp,
    Rni,
    Rzi,
    Rmi,
    Rpi,
}

/// Comparison operators of `setp`/`set`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Lo,
    Ls,
    Hi,
    Hs,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

/// Boolean combiner of `setp`/`set`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BoolOp {
    None,
    And,
    Or,
    Xor,
}

/// Memory state spaces of instructions (`Generic` resolves per lane at run time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sp {
    Generic,
    Global,
    Shared,
    Local,
    Const,
    Param,
}

/// Read-modify-write operations of `atom`/`red`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtomOp {
    Add,
    Min,
    Max,
    Inc,
    Dec,
    Cas,
    Exch,
    And,
    Or,
    Xor,
}

/// Special registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sreg {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    Laneid,
    Warpid,
    Nwarpid,
    Smid,
    Nsmid,
    Clock,
    ClockHi,
    Clock64,
    Globaltimer,
    GlobaltimerLo,
    GlobaltimerHi,
    LanemaskEq,
    LanemaskLt,
    LanemaskLe,
    LanemaskGt,
    LanemaskGe,
    Gridid,
    DynSmem,
    TotalSmem,
}

/// An operand after decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opnd {
    None,
    Reg(u32),
    /// A predicate register, which a warp keeps as one mask of its 32 lanes' bits: a guard or a
    /// `setp` then reads or writes one word where a row of 32 values took 32.
    Pred(u32),
    /// `!%p` (a negated predicate source).
    NotPred(u32),
    Imm(u64),
    Sreg(Sreg),
    /// Address of module-level global/const variable `n`, patched to `Imm` when loaded.
    Sym(u32),
}

/// Timing class: which pipeline (latency, issue interval) an instruction uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Class {
    Int,
    Fp32,
    Fp64,
    Sfu,
    Mem,
    Tex,
    Branch,
    Special,
    Shuffle,
    Barrier,
    Nop,
}

impl Class {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Class::Int => "int",
            Class::Fp32 => "fp32",
            Class::Fp64 => "fp64",
            Class::Sfu => "sfu",
            Class::Mem => "mem",
            Class::Tex => "tex",
            Class::Branch => "branch",
            Class::Special => "special",
            Class::Shuffle => "shuffle",
            Class::Barrier => "barrier",
            Class::Nop => "nop",
        }
    }

    /// Cycles from issue until a result of this class can be read, in the preset's pipeline.
    pub(crate) fn latency(self, p: &PipelineConfig) -> u64 {
        u64::from(match self {
            Class::Int => p.int_latency_cycles,
            Class::Fp32 => p.fp32_latency_cycles,
            Class::Fp64 => p.fp64_latency_cycles,
            Class::Sfu => p.sfu_latency_cycles,
            Class::Branch => p.branch_latency_cycles,
            Class::Special => p.special_reg_latency_cycles,
            Class::Shuffle => p.shuffle_latency_cycles,
            _ => 1,
        })
    }
    pub(crate) const ALL: [Class; 11] = [
        Class::Int,
        Class::Fp32,
        Class::Fp64,
        Class::Sfu,
        Class::Mem,
        Class::Tex,
        Class::Branch,
        Class::Special,
        Class::Shuffle,
        Class::Barrier,
        Class::Nop,
    ];
}

/// `Inst::sub` of a `membar.cta` / `fence.sc.cta` (SASS MEMBAR.SC.CTA): the fence whose wait for
/// loads is the preset's `sm.cta_sc_fence_waits_for_loads`.
pub(crate) const FENCE_SC_CTA: u8 = 1;
/// `Inst::sub` of a GPU-scope fence (`membar.gl`, `fence.*.gpu`): the fence that takes at least
/// the preset's `sm.gpu_fence_cycles`.
pub(crate) const FENCE_GPU: u8 = 2;
/// `Inst::sub` of a system-scope fence (`membar.sys`, `fence.*.sys`): at least
/// `sm.sys_fence_cycles`.
pub(crate) const FENCE_SYS: u8 = 3;

/// Decoded operations. Arithmetic ops are typed by `Inst::ty`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Mov,
    /// `mov.b64 %rd, {%r1, %r2}`: pack `ns` sources of `ty2` into one `ty` value.
    Pack,
    /// `mov.b64 {%r1, %r2}, %rd`: split into `nd` pieces of `ty2`.
    Unpack,
    Add,
    Sub,
    MulLo,
    MulHi,
    MulWide,
    MadLo,
    MadHi,
    MadWide,
    Mul24Lo,
    Mul24Hi,
    Mad24Lo,
    Sad,
    Div,
    Rem,
    Abs,
    Neg,
    Min,
    Max,
    AddCc,
    AddC,
    SubCc,
    SubC,
    MadLoCc,
    MadCLo,
    MadHiCc,
    MadCHi,
    And,
    Or,
    Xor,
    Not,
    Cnot,
    Shl,
    Shr,
    Popc,
    Clz,
    Brev,
    Bfe,
    Bfi,
    Bfind,
    BfindShift,
    Prmt,
    /// Funnel shift: `sub` bit 0 = right, bit 1 = clamp (else wrap).
    Shf,
    Mul,
    Fma,
    Rcp,
    Sqrt,
    Rsqrt,
    Sin,
    Cos,
    Lg2,
    Ex2,
    Tanh,
    Copysign,
    Testp,
    Setp,
    Set,
    Selp,
    Slct,
    Cvt,
    CvtPack,
    Cvta,
    CvtaTo,
    Isspacep,
    Ld,
    St,
    Atom,
    Red,
    Tex,
    Bra,
    Exit,
    Bar,
    /// `membar`/`fence`; `sub` is [`FENCE_SC_CTA`] for `membar.cta` / `fence.sc.cta`.
    Membar,
    Shfl,
    Vote,
    Activemask,
    /// `match.{any,all}.sync`: `sub` 0 any (lanes holding the same value), 1 all.
    Match,
    /// `redux.sync`: `atom` names the operation over the member lanes.
    Redux,
    /// `elect.sync d|p, membermask`: the lowest member lane executing it is elected.
    Elect,
    /// `lop3.b32 d, a, b, c, lut`: any three-input logic function.
    Lop3,
    /// `dp4a` (`sub` 0) and `dp2a.lo` / `.hi` (`sub` 1 / 2): byte and half-word dot products;
    /// `ty` is a's type, `ty2` b's.
    Dp,
    Nop,
    Trap,
    /// An unsupported instruction; `target` indexes `Program::messages`.
    Invalid,
}

/// The operations that read or write the carry flag, as a pattern, so that
/// [`Op::uses_carry`] and the ALU's arm for them name one list.
macro_rules! carry_ops {
    () => {
        Op::AddCc
            | Op::AddC
            | Op::SubCc
            | Op::SubC
            | Op::MadLoCc
            | Op::MadCLo
            | Op::MadHiCc
            | Op::MadCHi
    };
}
pub(crate) use carry_ops;

impl Op {
    /// Whether the operation reads or writes the carry flag, per-warp state that no register
    /// names.
    pub(crate) fn uses_carry(self) -> bool {
        matches!(self, carry_ops!())
    }
}

/// One decoded instruction. Unused fields keep their defaults.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Inst {
    pub op: Op,
    pub ty: Ty,
    /// Second type: source type of `cvt`/`set`/`slct`, element type of pack/unpack, coordinate
    /// type of `tex`, compare type of `setp`.
    pub ty2: Ty,
    pub rnd: Rnd,
    pub ftz: bool,
    pub sat: bool,
    pub approx: bool,
    pub cmp: Cmp,
    pub bop: BoolOp,
    pub space: Sp,
    /// Vector width of ld/st/tex (1, 2, 4), or the op-specific sub-mode (shfl/vote/prmt/testp/
    /// bar/atom kinds are stored in `sub`).
    pub vec: u8,
    pub sub: u8,
    pub atom: AtomOp,
    pub nc: bool,
    /// A load the L1 does not serve ([`crate::memory::LoadPath::L2Only`]).
    pub l2_only: bool,
    pub nd: u8,
    pub ns: u8,
    pub d: [Opnd; 4],
    pub s: [Opnd; 4],
    /// Address base (ld/st/atom), texture handle (tex) or extra source (bfi/setp/mad carry...).
    pub a: Opnd,
    pub off: i64,
    pub guard: Opnd,
    /// Branch target.
    pub target: u32,
    /// Reconvergence point of a conditional branch: the first instruction of the branch's
    /// immediate post-dominator, or `u32::MAX` (reconverge only at exit).
    pub reconv: u32,
    pub line: u32,
    pub class: Class,
}

impl Inst {
    pub(crate) fn new(op: Op, line: u32) -> Inst {
        Inst {
            op,
            ty: Ty::B32,
            ty2: Ty::B32,
            rnd: Rnd::None,
            ftz: false,
            sat: false,
            approx: false,
            cmp: Cmp::Eq,
            bop: BoolOp::None,
            space: Sp::Generic,
            vec: 1,
            sub: 0,
            atom: AtomOp::Add,
            nc: false,
            l2_only: false,
            nd: 0,
            ns: 0,
            d: [Opnd::None; 4],
            s: [Opnd::None; 4],
            a: Opnd::None,
            off: 0,
            guard: Opnd::None,
            target: 0,
            reconv: u32::MAX,
            line,
            class: Class::Int,
        }
    }
    /// Registers this instruction reads (sources, address base, guard), for the scoreboard.
    pub(crate) fn reads(&self) -> impl Iterator<Item = u32> + '_ {
        let srcs = self.s[..self.ns as usize]
            .iter()
            .chain([&self.a, &self.guard]);
        srcs.filter_map(|o| match o {
            Opnd::Reg(r) | Opnd::Pred(r) | Opnd::NotPred(r) => Some(*r),
            _ => None,
        })
    }

    /// Where control can go after this instruction, at `pc`: a branch's target, then, unless
    /// the instruction always leaves (`bra`, `exit` or `trap` without a guard), the next one.
    /// A pc past the last instruction is the kernel's end.
    pub(crate) fn successors(&self, pc: usize) -> impl Iterator<Item = usize> + use<> {
        let jump = (self.op == Op::Bra).then_some(self.target as usize);
        let falls = !matches!(self.op, Op::Bra | Op::Exit | Op::Trap) || self.guard != Opnd::None;
        jump.into_iter().chain(falls.then_some(pc + 1))
    }

    /// A 64-bit integer division or remainder, which ptxas compiles as a call.
    pub(crate) fn is_division_call(&self) -> bool {
        matches!(self.op, Op::Div | Op::Rem) && self.ty.bits() == 64 && !self.ty.is_float()
    }

    /// Registers this instruction writes.
    pub(crate) fn writes(&self) -> impl Iterator<Item = u32> + '_ {
        self.d[..self.nd as usize].iter().filter_map(|o| match o {
            Opnd::Reg(r) | Opnd::Pred(r) => Some(*r),
            _ => None,
        })
    }
}

/// A kernel parameter as the host sees it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ParamDecl {
    pub name: String,
    pub size_bytes: u32,
    pub align: u32,
}

/// A kernel's name and parameters.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EntrySignature {
    pub name: String,
    pub params: Vec<ParamDecl>,
    /// Bytes of `.shared` variables (without dynamic shared memory), for occupancy.
    pub static_shared_bytes: u32,
}

/// A decoded kernel, ready to run once its `Sym` operands are patched.
#[derive(Debug, Clone)]
pub(crate) struct Program {
    pub name: String,
    /// Why this kernel cannot run (`EmuError::Unusable`), for a kernel whose body did not
    /// decode; its `insts` are then empty and a launch returns this error.
    pub unusable: Option<EmuError>,
    /// The instructions with PTX's virtual registers, as decoded.
    pub insts: Vec<Inst>,
    /// Each virtual register's scoreboard slot, which registers whose writes never wait on
    /// each other share (slots.rs), and the number of slots.
    pub slot_of: Vec<u32>,
    pub slots: u32,
    /// The same instructions as executed: registers renamed to value rows and predicates to
    /// predicate masks, which registers never live at once share (regalloc.rs).
    pub exec: Vec<Inst>,
    pub rows: u32,
    pub pred_rows: u32,
    pub params: Vec<ParamDecl>,
    /// Byte offset of each parameter in the parameter buffer.
    pub param_offsets: Vec<u32>,
    pub param_bytes: u32,
    pub shared_static_bytes: u32,
    /// Where `extern .shared` (dynamic) memory starts.
    pub dyn_shared_offset: u32,
    pub local_bytes: u32,
    /// Descriptions of `Op::Invalid` instructions.
    pub messages: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The extension as it is defined: the value bits kept, the sign bit of a signed type
    /// copied above them.
    fn extended(ty: Ty, v: u64) -> u64 {
        let b = ty.bits();
        if b >= 64 {
            v
        } else if ty.is_signed() {
            let m = ty.mask();
            if v >> (b - 1) & 1 == 1 { v | !m } else { v & m }
        } else {
            v & ty.mask()
        }
    }

    #[test]
    fn the_extender_extends_as_defined_for_every_type() {
        use Ty::*;
        let all = [
            Pred, B8, B16, B32, B64, B128, U8, U16, U32, U64, S8, S16, S32, S64, F16, F16x2, BF16,
            BF16x2, F32, F64,
        ];
        let values = [
            0,
            1,
            0x7F,
            0x80,
            0xFF,
            0x7FFF,
            0x8000,
            0xFFFF_FFFF,
            0x8000_0000,
            0x1234_5678_9ABC_DEF0,
            u64::MAX,
            1 << 63,
        ];
        for ty in all {
            for v in values {
                assert_eq!(ty.extender().apply(v), extended(ty, v), "{ty:?} {v:#x}");
            }
        }
    }
}
