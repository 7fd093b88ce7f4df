//! The decoder's vocabulary: the special registers, opcodes and modifier words it knows, and
//! the splitting of an opcode's modifiers. Kept apart from the lowering in `decode` so the
//! lists — which the coverage table and the modifier check read — can be seen whole.

use crate::ir::*;

/// Special registers by name.
pub(crate) const SREGS: &[(&str, Sreg)] = &[
    ("%tid.x", Sreg::Tid(0)),
    ("%tid.y", Sreg::Tid(1)),
    ("%tid.z", Sreg::Tid(2)),
    ("%ntid.x", Sreg::Ntid(0)),
    ("%ntid.y", Sreg::Ntid(1)),
    ("%ntid.z", Sreg::Ntid(2)),
    ("%ctaid.x", Sreg::Ctaid(0)),
    ("%ctaid.y", Sreg::Ctaid(1)),
    ("%ctaid.z", Sreg::Ctaid(2)),
    ("%nctaid.x", Sreg::Nctaid(0)),
    ("%nctaid.y", Sreg::Nctaid(1)),
    ("%nctaid.z", Sreg::Nctaid(2)),
    ("%laneid", Sreg::Laneid),
    ("%warpid", Sreg::Warpid),
    ("%nwarpid", Sreg::Nwarpid),
    ("%smid", Sreg::Smid),
    ("%nsmid", Sreg::Nsmid),
    ("%clock", Sreg::Clock),
    ("%clock_hi", Sreg::ClockHi),
    ("%clock64", Sreg::Clock64),
    ("%globaltimer", Sreg::Globaltimer),
    ("%globaltimer_lo", Sreg::GlobaltimerLo),
    ("%globaltimer_hi", Sreg::GlobaltimerHi),
    ("%lanemask_eq", Sreg::LanemaskEq),
    ("%lanemask_lt", Sreg::LanemaskLt),
    ("%lanemask_le", Sreg::LanemaskLe),
    ("%lanemask_gt", Sreg::LanemaskGt),
    ("%lanemask_ge", Sreg::LanemaskGe),
    ("%gridid", Sreg::Gridid),
    // Each CTA is a cluster of one (launches here have no cluster dimensions).
    ("%clusterid.x", Sreg::Ctaid(0)),
    ("%clusterid.y", Sreg::Ctaid(1)),
    ("%clusterid.z", Sreg::Ctaid(2)),
    ("%nclusterid.x", Sreg::Nctaid(0)),
    ("%nclusterid.y", Sreg::Nctaid(1)),
    ("%nclusterid.z", Sreg::Nctaid(2)),
    ("%aggr_smem_size", Sreg::TotalSmem),
    ("%dynamic_smem_size", Sreg::DynSmem),
    ("%total_smem_size", Sreg::TotalSmem),
];

/// Parsed opcode modifiers.
#[derive(Default)]
pub(crate) struct Mods<'m> {
    pub(crate) types: Vec<Ty>,
    pub(crate) rnd: Option<Rnd>,
    pub(crate) ftz: bool,
    pub(crate) sat: bool,
    pub(crate) approx: bool,
    pub(crate) space: Option<Sp>,
    pub(crate) vec: u8,
    pub(crate) cmp: Option<Cmp>,
    pub(crate) bop: Option<BoolOp>,
    pub(crate) words: Vec<&'m str>,
}

impl Mods<'_> {
    pub(crate) fn has(&self, w: &str) -> bool {
        self.words.contains(&w)
    }
}

pub(crate) fn parse_mods<'m>(parts: &[&'m str]) -> Mods<'m> {
    let mut m = Mods {
        vec: 1,
        ..Default::default()
    };
    for &p in parts {
        if let Some(t) = Ty::parse(p) {
            m.types.push(t);
            continue;
        }
        match p {
            "rn" => m.rnd = Some(Rnd::Rn),
            "rz" => m.rnd = Some(Rnd::Rz),
            "rm" => m.rnd = Some(Rnd::Rm),
            "rp" => m.rnd = Some(Rnd::Rp),
            "rni" => m.rnd = Some(Rnd::Rni),
            "rzi" => m.rnd = Some(Rnd::Rzi),
            "rmi" => m.rnd = Some(Rnd::Rmi),
            "rpi" => m.rnd = Some(Rnd::Rpi),
            "ftz" => m.ftz = true,
            "sat" | "satfinite" => m.sat = true,
            "approx" => m.approx = true,
            "global" => m.space = Some(Sp::Global),
            // A cluster of one CTA: its distributed shared memory is the block's own.
            "shared" | "shared::cta" | "shared::cluster" => m.space = Some(Sp::Shared),
            "local" => m.space = Some(Sp::Local),
            "const" => m.space = Some(Sp::Const),
            "param" | "param::entry" | "param::func" => m.space = Some(Sp::Param),
            "v2" => m.vec = 2,
            "v4" => m.vec = 4,
            "eq" => m.cmp = Some(Cmp::Eq),
            "ne" => m.cmp = Some(Cmp::Ne),
            "lt" => m.cmp = Some(Cmp::Lt),
            "le" => m.cmp = Some(Cmp::Le),
            "gt" => m.cmp = Some(Cmp::Gt),
            "ge" => m.cmp = Some(Cmp::Ge),
            "lo" => {
                m.cmp = Some(Cmp::Lo);
                m.words.push(p)
            }
            "ls" => m.cmp = Some(Cmp::Ls),
            "hi" => {
                m.cmp = Some(Cmp::Hi);
                m.words.push(p)
            }
            "hs" => m.cmp = Some(Cmp::Hs),
            "equ" => m.cmp = Some(Cmp::Equ),
            "neu" => m.cmp = Some(Cmp::Neu),
            "ltu" => m.cmp = Some(Cmp::Ltu),
            "leu" => m.cmp = Some(Cmp::Leu),
            "gtu" => m.cmp = Some(Cmp::Gtu),
            "geu" => m.cmp = Some(Cmp::Geu),
            "num" => m.cmp = Some(Cmp::Num),
            "nan" => m.cmp = Some(Cmp::Nan),
            "and" => {
                m.bop = Some(BoolOp::And);
                m.words.push(p)
            }
            "or" => {
                m.bop = Some(BoolOp::Or);
                m.words.push(p)
            }
            "xor" => {
                m.bop = Some(BoolOp::Xor);
                m.words.push(p)
            }
            _ => m.words.push(p),
        }
    }
    m
}

/// Modifier words the decoder accepts besides types, rounding modes, comparisons, state
/// spaces and vector widths (which `parse_mods` takes apart). Anything else on a supported
/// opcode is refused, so a misspelling (`ld.globul`) is an error rather than a silently
/// ignored word. Words with `::` (cache hints, `L2::evict_last`) are hints and always accepted.
#[rustfmt::skip]
const KNOWN_MODIFIERS: &[&str] = &[
    "lo", "hi", "wide", "cc", "full", "relu", "NaN", "xorsign", "abs", "oob", "shiftamt", "l", "r",
    "wrap", "clamp", "f4e", "b4e", "rc8", "ecl", "ecr", "rc16", "finite", "infinite", "number",
    "notanumber", "normal", "subnormal", "to", "and", "or", "xor", "noftz", "rna", "ca", "cg",
    "cs", "lu", "cv", "wb", "wt", "nc", "volatile", "relaxed", "acquire", "release", "acq_rel",
    "sc", "weak", "mmio", "cta", "gpu", "sys", "cluster", "gl", "L1", "L2", "unified", "proxy",
    "alias", "async", "add", "min", "max", "inc", "dec", "cas", "exch", "sync", "aligned", "uni",
    "up", "down", "bfly", "idx", "all", "any", "ballot", "arrive", "red", "popc", "warp",
    "launch_dependents", "wait", "fractional", "mask", "mbarrier_init", "tensormap", "1d", "2d",
    "3d",
];

pub(crate) fn known_modifier(w: &str) -> bool {
    KNOWN_MODIFIERS.contains(&w) || w.contains("::")
}

/// Every opcode the decoder lowers (besides `call`, which it inlines). The coverage table in
/// the README is checked against what these decode to.
#[rustfmt::skip]
pub(crate) const OPCODES: &[&str] = &[
    "mov", "add", "sub", "addc", "subc", "mul", "mad", "mul24", "mad24", "madc", "shf", "sad",
    "div", "rem", "abs", "neg", "min", "max", "and", "or", "xor", "not", "cnot", "shl", "shr",
    "popc", "clz", "brev", "bfe", "bfi", "bfind", "prmt", "fma", "rcp", "sqrt", "rsqrt", "sin",
    "cos", "lg2", "ex2", "tanh", "copysign", "selp", "slct", "testp", "setp", "set", "cvt", "cvta",
    "isspacep", "ld", "ldu", "st", "atom", "red", "tex", "bra", "ret", "exit", "trap", "bar",
    "barrier", "membar", "fence", "shfl", "vote", "match", "redux", "elect", "lop3", "dp4a",
    "dp2a", "activemask", "prefetch", "prefetchu", "pmevent", "nanosleep", "griddepcontrol",
    "brkpt", "discard", "applypriority", "createpolicy",
];
