//! Decoding one PTX instruction into the IR (`KDec::instr`, the opcode families and their
//! operands) and inlining a `.func` call (`KDec::call`). The module's other half, `mod.rs`,
//! declares registers and symbols, walks bodies and resolves operands.

use super::*;

impl<'m> KDec<'_, 'm> {
    /// The destination of an instruction that may also write a predicate: `d` (of type `tys.0`)
    /// or `d|p` (`tys.1` for `p`).
    fn dest_pair(
        &self,
        x: &mut Inst,
        o: &Operand<'m>,
        tys: (Ty, Ty),
        env: &Env<'m>,
        (line, col): (u32, u32),
    ) -> R<()> {
        match o {
            Operand::Pipe(d, p) => {
                x.nd = 2;
                x.d[0] = self.opnd(d, tys.0, env, line, col)?;
                x.d[1] = self.opnd(p, tys.1, env, line, col)?;
            }
            o => {
                x.nd = 1;
                x.d[0] = self.opnd(o, tys.0, env, line, col)?;
            }
        }
        Ok(())
    }

    pub(super) fn instr(&mut self, i: &'m ptx::Instr<'m>, env: &mut Env<'m>) -> R<()> {
        let (line, col) = (i.line, i.col);
        let parts: Vec<&str> = i.opcode.split('.').collect();
        let base = parts[0];
        let m = parse_mods(&parts[1..]);
        let ops = &i.operands;
        let guard = match i.guard {
            None => Opnd::None,
            Some((p, neg)) => match self.name_opnd(p, env, line, col)? {
                Opnd::Pred(r) if neg => Opnd::NotPred(r),
                Opnd::Pred(r) => Opnd::Pred(r),
                _ => {
                    return perr(
                        line,
                        col,
                        format!("guard '{p}' is not a predicate register"),
                    );
                }
            },
        };
        if base == "call" {
            return self.call(i, env, guard);
        }
        if OPCODES.contains(&base)
            && let Some(w) = m.words.iter().find(|w| !known_modifier(w))
        {
            return unsupported(line, format!("unknown modifier '.{w}' in '{}'", i.opcode));
        }
        let t0 = m.types.first().copied().unwrap_or(Ty::B32);
        let t1 = m.types.get(1).copied().unwrap_or(t0);
        let mut x = Inst::new(Op::Nop, line);
        x.guard = guard;
        x.ty = t0;
        x.ty2 = t1;
        x.rnd = m.rnd.unwrap_or(Rnd::None);
        x.ftz = m.ftz;
        x.sat = m.sat;
        x.approx = m.approx;
        x.vec = m.vec;
        let need = |n: usize| -> R<()> {
            if ops.len() < n {
                perr(
                    line,
                    col,
                    format!("'{}' needs {n} operands, has {}", i.opcode, ops.len()),
                )
            } else {
                Ok(())
            }
        };
        let fl = t0.is_float();
        let arith_class = |t: Ty| match t {
            Ty::F64 => Class::Fp64,
            t if t.is_float() => Class::Fp32,
            _ => Class::Int,
        };
        x.class = arith_class(t0);
        // Simple "d, a[, b[, c]]" shapes.
        let simple = |x: &mut Inst, this: &Self, nsrc: usize, sty: Ty| -> R<()> {
            need(1 + nsrc)?;
            x.nd = 1;
            x.d[0] = this.opnd(&ops[0], x.ty, env, line, col)?;
            x.ns = nsrc as u8;
            for k in 0..nsrc {
                x.s[k] = this.opnd(&ops[1 + k], sty, env, line, col)?;
            }
            Ok(())
        };
        match base {
            "mov" => {
                need(2)?;
                match (&ops[0], &ops[1]) {
                    (Operand::Vector(ds), _) => {
                        x.op = Op::Unpack;
                        x.nd = ds.len().min(4) as u8;
                        x.ty2 = bits_ty(t0.bits() / ds.len().max(1) as u32);
                        for (k, d) in ds.iter().take(4).enumerate() {
                            x.d[k] = self.opnd(d, x.ty2, env, line, col)?;
                        }
                        x.ns = 1;
                        x.s[0] = self.opnd(&ops[1], t0, env, line, col)?;
                    }
                    (_, Operand::Vector(ss)) => {
                        x.op = Op::Pack;
                        x.ns = ss.len().min(4) as u8;
                        x.ty2 = bits_ty(t0.bits() / ss.len().max(1) as u32);
                        for (k, s) in ss.iter().take(4).enumerate() {
                            x.s[k] = self.opnd(s, x.ty2, env, line, col)?;
                        }
                        x.nd = 1;
                        x.d[0] = self.opnd(&ops[0], t0, env, line, col)?;
                    }
                    _ => {
                        x.op = Op::Mov;
                        simple(&mut x, self, 1, t0)?;
                        x.class = if matches!(x.s[0], Opnd::Sreg(_)) {
                            Class::Special
                        } else {
                            Class::Int
                        };
                    }
                }
            }
            "add" | "sub" | "addc" | "subc" => {
                let cc = m.has("cc");
                x.op = match (base, cc) {
                    ("add", false) => Op::Add,
                    ("sub", false) => Op::Sub,
                    ("add", true) => Op::AddCc,
                    ("sub", true) => Op::SubCc,
                    ("addc", _) => Op::AddC,
                    _ => Op::SubC,
                };
                simple(&mut x, self, 2, t0)?;
                if cc || base.ends_with('c') {
                    // The carry flag is per-warp state written in program order; keep it in
                    // issue order by treating it as a zero-latency integer op.
                }
            }
            "mul" | "mad" | "mul24" | "mad24" | "madc" => {
                let mode = if m.has("hi") {
                    1
                } else if m.has("wide") {
                    2
                } else {
                    0
                };
                let mad = base.starts_with("mad");
                x.op = if fl {
                    if mad { Op::Fma } else { Op::Mul }
                } else {
                    let cc = m.has("cc");
                    match (base, mode, cc) {
                        ("mul", 0, _) => Op::MulLo,
                        ("mul", 1, _) => Op::MulHi,
                        ("mul", _, _) => Op::MulWide,
                        ("mad", 0, false) => Op::MadLo,
                        ("mad", 1, false) => Op::MadHi,
                        ("mad", 0, true) => Op::MadLoCc,
                        ("mad", 1, true) => Op::MadHiCc,
                        ("mad", _, _) => Op::MadWide,
                        ("mul24", 0, _) => Op::Mul24Lo,
                        ("mul24", _, _) => Op::Mul24Hi,
                        ("mad24", _, _) => Op::Mad24Lo,
                        ("madc", 1, _) => Op::MadCHi,
                        _ => Op::MadCLo,
                    }
                };
                if mad && fl && x.rnd == Rnd::None && t0 == Ty::F32 {
                    // mad.f32 without rounding is the legacy non-fused multiply-add.
                    x.op = Op::Fma;
                    x.sub = 1;
                }
                simple(&mut x, self, if mad { 3 } else { 2 }, t0)?;
            }
            "shf" => {
                x.op = Op::Shf;
                x.sub = (m.has("r") as u8) | ((m.has("clamp") as u8) << 1);
                simple(&mut x, self, 3, Ty::B32)?;
            }
            "sad" => {
                x.op = Op::Sad;
                simple(&mut x, self, 3, t0)?;
            }
            "div" | "rem" | "abs" | "neg" | "min" | "max" | "and" | "or" | "xor" | "not"
            | "cnot" | "shl" | "shr" | "popc" | "clz" | "brev" | "bfe" | "bfi" | "bfind"
            | "prmt" | "fma" | "rcp" | "sqrt" | "rsqrt" | "sin" | "cos" | "lg2" | "ex2"
            | "tanh" | "copysign" | "selp" | "slct" | "testp" => {
                let (op, n) = match base {
                    "div" => (Op::Div, 2),
                    "rem" => (Op::Rem, 2),
                    "abs" => (Op::Abs, 1),
                    "neg" => (Op::Neg, 1),
                    "min" => (Op::Min, 2),
                    "max" => (Op::Max, 2),
                    "and" => (Op::And, 2),
                    "or" => (Op::Or, 2),
                    "xor" => (Op::Xor, 2),
                    "not" => (Op::Not, 1),
                    "cnot" => (Op::Cnot, 1),
                    "shl" => (Op::Shl, 2),
                    "shr" => (Op::Shr, 2),
                    "popc" => (Op::Popc, 1),
                    "clz" => (Op::Clz, 1),
                    "brev" => (Op::Brev, 1),
                    "bfe" => (Op::Bfe, 3),
                    "bfi" => (Op::Bfi, 4),
                    "bfind" => (
                        if m.has("shiftamt") {
                            Op::BfindShift
                        } else {
                            Op::Bfind
                        },
                        1,
                    ),
                    "prmt" => (Op::Prmt, 3),
                    "fma" => (Op::Fma, 3),
                    "rcp" => (Op::Rcp, 1),
                    "sqrt" => (Op::Sqrt, 1),
                    "rsqrt" => (Op::Rsqrt, 1),
                    "sin" => (Op::Sin, 1),
                    "cos" => (Op::Cos, 1),
                    "lg2" => (Op::Lg2, 1),
                    "ex2" => (Op::Ex2, 1),
                    "tanh" => (Op::Tanh, 1),
                    "copysign" => (Op::Copysign, 2),
                    "selp" => (Op::Selp, 3),
                    "slct" => (Op::Slct, 3),
                    _ => (Op::Testp, 1),
                };
                x.op = op;
                let sty = if matches!(op, Op::Shl | Op::Shr) {
                    Ty::U32
                } else {
                    t0
                };
                simple(&mut x, self, n, sty)?;
                match op {
                    Op::Prmt => {
                        x.sub = ["f4e", "b4e", "rc8", "ecl", "ecr", "rc16"]
                            .iter()
                            .position(|w| m.has(w))
                            .map_or(0, |p| p as u8 + 1);
                    }
                    Op::Selp => {
                        x.s[2] = self.opnd(&ops[3], Ty::Pred, env, line, col)?;
                    }
                    Op::Slct => {
                        x.s[2] = self.opnd(&ops[3], t1, env, line, col)?;
                    }
                    Op::Testp => {
                        x.sub = [
                            "finite",
                            "infinite",
                            "number",
                            "notanumber",
                            "normal",
                            "subnormal",
                        ]
                        .iter()
                        .position(|w| m.has(w))
                        .map_or(0, |p| p as u8);
                        x.class = Class::Fp32;
                    }
                    Op::Popc | Op::Clz | Op::Bfind | Op::BfindShift => x.class = Class::Int,
                    Op::Rcp
                    | Op::Sqrt
                    | Op::Rsqrt
                    | Op::Sin
                    | Op::Cos
                    | Op::Lg2
                    | Op::Ex2
                    | Op::Tanh
                        if t0 != Ty::F64 =>
                    {
                        x.class = Class::Sfu
                    }
                    Op::Div if t0 == Ty::F32 => x.class = Class::Sfu,
                    _ => {}
                }
            }
            "setp" => {
                need(3)?;
                x.op = Op::Setp;
                x.ty2 = t0;
                x.cmp = m.cmp.unwrap_or(Cmp::Eq);
                x.bop = m.bop.unwrap_or(BoolOp::None);
                x.class = arith_class(t0);
                self.dest_pair(&mut x, &ops[0], (Ty::Pred, Ty::Pred), env, (line, col))?;
                x.ns = 2;
                x.s[0] = self.opnd(&ops[1], t0, env, line, col)?;
                x.s[1] = self.opnd(&ops[2], t0, env, line, col)?;
                if x.bop != BoolOp::None {
                    need(4)?;
                    x.ns = 3;
                    x.s[2] = self.opnd(&ops[3], Ty::Pred, env, line, col)?;
                }
            }
            "set" => {
                need(3)?;
                x.op = Op::Set;
                x.cmp = m.cmp.unwrap_or(Cmp::Eq);
                x.bop = m.bop.unwrap_or(BoolOp::None);
                x.class = arith_class(t1);
                x.nd = 1;
                x.d[0] = self.opnd(&ops[0], t0, env, line, col)?;
                x.ns = 2;
                x.s[0] = self.opnd(&ops[1], t1, env, line, col)?;
                x.s[1] = self.opnd(&ops[2], t1, env, line, col)?;
                if x.bop != BoolOp::None {
                    need(4)?;
                    x.ns = 3;
                    x.s[2] = self.opnd(&ops[3], Ty::Pred, env, line, col)?;
                }
            }
            "cvt" => {
                if ops.len() == 3 {
                    x.op = Op::CvtPack;
                    simple(&mut x, self, 2, t1)?;
                } else {
                    x.op = Op::Cvt;
                    simple(&mut x, self, 1, t1)?;
                }
                x.class = if t0 == Ty::F64 || t1 == Ty::F64 {
                    Class::Fp64
                } else if t0.is_float() || t1.is_float() {
                    Class::Fp32
                } else {
                    Class::Int
                };
            }
            "cvta" | "isspacep" => {
                x.op = if base == "isspacep" {
                    Op::Isspacep
                } else if m.has("to") {
                    Op::CvtaTo
                } else {
                    Op::Cvta
                };
                x.space = m.space.unwrap_or(Sp::Global);
                simple(&mut x, self, 1, t0)?;
            }
            "ld" | "ldu" | "st" => {
                need(2)?;
                let is_ld = base != "st";
                x.op = if is_ld { Op::Ld } else { Op::St };
                x.class = Class::Mem;
                x.nc = m.has("nc") || base == "ldu";
                // What sm_90 compiles to a strong or last-use LDG, which skips the L1.
                x.l2_only = base == "ld"
                    && (m.has("cg")
                        || m.has("cv")
                        || m.has("lu")
                        || m.has("volatile")
                        || ((m.has("relaxed") || m.has("acquire")) && !m.has("cta")));
                let (vals, adr) = if is_ld {
                    (&ops[0], &ops[1])
                } else {
                    (&ops[1], &ops[0])
                };
                let (a, off, kparam) = self.addr(adr, env, line, col)?;
                x.space = m.space.unwrap_or(Sp::Generic);
                if x.space == Sp::Param && !kparam {
                    // .param variables of calls live in the thread's local frame.
                    x.space = if env.is_kernel && matches!(a, Opnd::Reg(_)) {
                        Sp::Param
                    } else {
                        Sp::Local
                    };
                }
                x.a = a;
                x.off = off;
                let list: Vec<&Operand> = match vals {
                    Operand::Vector(v) => v.iter().collect(),
                    o => vec![o],
                };
                x.vec = list.len().min(4) as u8;
                let mut ops4 = [Opnd::None; 4];
                for (k, o) in list.iter().take(4).enumerate() {
                    ops4[k] = self.opnd(o, t0, env, line, col)?;
                }
                if is_ld {
                    x.nd = x.vec;
                    x.d = ops4;
                } else {
                    x.ns = x.vec;
                    x.s = ops4;
                }
            }
            "atom" | "red" => {
                let is_atom = base == "atom";
                x.op = if is_atom { Op::Atom } else { Op::Red };
                x.class = Class::Mem;
                x.space = m.space.unwrap_or(Sp::Generic);
                x.atom = match () {
                    _ if m.has("add") => AtomOp::Add,
                    _ if m.has("min") => AtomOp::Min,
                    _ if m.has("max") => AtomOp::Max,
                    _ if m.has("inc") => AtomOp::Inc,
                    _ if m.has("dec") => AtomOp::Dec,
                    _ if m.has("cas") => AtomOp::Cas,
                    _ if m.has("exch") => AtomOp::Exch,
                    _ if m.bop == Some(BoolOp::And) => AtomOp::And,
                    _ if m.bop == Some(BoolOp::Or) => AtomOp::Or,
                    _ if m.bop == Some(BoolOp::Xor) => AtomOp::Xor,
                    _ => return unsupported(line, format!("atomic operation '{}'", i.opcode)),
                };
                if x.vec != 1 {
                    return unsupported(line, "vector atomics");
                }
                let k = if is_atom { 1 } else { 0 };
                need(k + 2)?;
                if is_atom {
                    x.nd = 1;
                    x.d[0] = self.opnd(&ops[0], t0, env, line, col)?;
                }
                let (a, off, _) = self.addr(&ops[k], env, line, col)?;
                x.a = a;
                x.off = off;
                x.ns = (ops.len() - k - 1).min(2) as u8;
                for j in 0..x.ns as usize {
                    x.s[j] = self.opnd(&ops[k + 1 + j], t0, env, line, col)?;
                }
            }
            "tex" => {
                need(2)?;
                x.op = Op::Tex;
                x.class = Class::Tex;
                x.sub = if m.has("1d") {
                    1
                } else if m.has("2d") {
                    2
                } else if m.has("3d") {
                    3
                } else {
                    return unsupported(line, format!("texture geometry in '{}'", i.opcode));
                };
                let dsts = match &ops[0] {
                    Operand::Vector(v) => v.clone(),
                    Operand::Pipe(..) => return unsupported(line, "tex with predicate output"),
                    o => vec![o.clone()],
                };
                x.nd = dsts.len().min(4) as u8;
                for (k, o) in dsts.iter().take(4).enumerate() {
                    x.d[k] = self.opnd(o, t0, env, line, col)?;
                }
                match &ops[1] {
                    Operand::Addr {
                        base: Some(h),
                        extra: Some(c),
                        ..
                    } => {
                        x.a = self.name_opnd(h, env, line, col)?;
                        let coords = match c.as_ref() {
                            Operand::Vector(v) => v.clone(),
                            o => vec![o.clone()],
                        };
                        x.ns = coords.len().min(4) as u8;
                        for (k, o) in coords.iter().take(4).enumerate() {
                            x.s[k] = self.opnd(o, t1, env, line, col)?;
                        }
                    }
                    _ => return unsupported(line, "tex without a texture-object handle"),
                }
            }
            "bra" | "brx" => {
                if base == "brx" {
                    return unsupported(line, "brx.idx (indirect branch)");
                }
                need(1)?;
                x.op = Op::Bra;
                x.class = Class::Branch;
                match &ops[0] {
                    Operand::Name(l) => self.fixups.push((self.insts.len(), env.instance, l, line)),
                    _ => return perr(line, col, "branch target must be a label"),
                }
            }
            "ret" => {
                if env.is_kernel {
                    x.op = Op::Exit;
                } else {
                    x.op = Op::Bra;
                    self.fixups
                        .push((self.insts.len(), env.instance, RET_LABEL, line));
                }
                x.class = Class::Branch;
            }
            "exit" => {
                x.op = Op::Exit;
                x.class = Class::Branch;
            }
            "trap" => {
                x.op = Op::Trap;
                x.class = Class::Branch;
            }
            "bar" | "barrier" => {
                x.class = Class::Barrier;
                if m.has("warp") {
                    x.op = Op::Nop;
                } else {
                    x.op = Op::Bar;
                    // sub: 0 sync, 1 arrive, 2 red.popc, 3 red.and, 4 red.or
                    x.sub = if m.has("arrive") {
                        1
                    } else if m.has("red") {
                        if m.has("popc") {
                            2
                        } else if m.bop == Some(BoolOp::And) {
                            3
                        } else {
                            4
                        }
                    } else {
                        0
                    };
                    let mut k = 0;
                    if x.sub >= 2 {
                        need(3)?;
                        x.nd = 1;
                        x.d[0] = self.opnd(&ops[0], t0, env, line, col)?;
                        k = 1;
                    }
                    let rest = &ops[k..];
                    let srcs: Vec<Opnd> = rest
                        .iter()
                        .map(|o| self.opnd(o, Ty::U32, env, line, col))
                        .collect::<R<_>>()?;
                    // srcs: id [, count] [, pred]
                    x.s[0] = srcs.first().copied().unwrap_or(Opnd::Imm(0));
                    if x.sub >= 2 {
                        x.s[2] = *srcs.last().unwrap_or(&Opnd::Imm(0));
                        if srcs.len() == 3 {
                            x.s[1] = srcs[1];
                        }
                        x.ns = 3;
                    } else {
                        if srcs.len() >= 2 {
                            x.s[1] = srcs[1];
                        }
                        x.ns = srcs.len().min(2) as u8;
                    }
                }
            }
            "membar" | "fence" => {
                x.op = Op::Membar;
                x.class = Class::Barrier;
                // membar.cta is fence.sc.cta; a fence without .sc is acq_rel (MEMBAR.ALL).
                // membar.gl is the GPU scope. A cluster-scope fence is timed as a CTA one:
                // nothing has measured it.
                if (base == "membar" || m.has("sc")) && m.has("cta") {
                    x.sub = FENCE_SC_CTA;
                } else if m.has("gl") || m.has("gpu") {
                    x.sub = FENCE_GPU;
                } else if m.has("sys") {
                    x.sub = FENCE_SYS;
                }
            }
            "shfl" => {
                need(5)?;
                x.op = Op::Shfl;
                x.class = Class::Shuffle;
                x.sub = ["up", "down", "bfly", "idx"]
                    .iter()
                    .position(|w| m.has(w))
                    .map_or(3, |p| p as u8);
                self.dest_pair(&mut x, &ops[0], (t0, Ty::Pred), env, (line, col))?;
                x.ns = 4;
                for k in 0..4 {
                    x.s[k] = self.opnd(&ops[1 + k], Ty::B32, env, line, col)?;
                }
            }
            "vote" => {
                need(2)?;
                x.op = Op::Vote;
                x.class = Class::Shuffle;
                x.sub = ["all", "any", "uni", "ballot"]
                    .iter()
                    .position(|w| m.has(w))
                    .map_or(0, |p| p as u8);
                x.nd = 1;
                x.d[0] = self.opnd(&ops[0], t0, env, line, col)?;
                x.ns = (ops.len() - 1).min(2) as u8;
                for k in 0..x.ns as usize {
                    x.s[k] = self.opnd(&ops[1 + k], Ty::Pred, env, line, col)?;
                }
            }
            "match" => {
                // match.any.sync.b32 d, a, membermask; match.all.sync.b32 d[|p], a, membermask
                need(3)?;
                x.op = Op::Match;
                x.class = Class::Shuffle;
                x.sub = if m.has("all") {
                    1
                } else if m.has("any") {
                    0
                } else {
                    return perr(line, col, format!("'{}' needs .any or .all", i.opcode));
                };
                self.dest_pair(&mut x, &ops[0], (Ty::B32, Ty::Pred), env, (line, col))?;
                x.ns = 2;
                x.s[0] = self.opnd(&ops[1], t0, env, line, col)?;
                x.s[1] = self.opnd(&ops[2], Ty::B32, env, line, col)?;
            }
            "redux" => {
                // redux.sync.op.type d, a, membermask
                need(3)?;
                x.op = Op::Redux;
                x.class = Class::Shuffle;
                x.atom = match () {
                    _ if m.has("add") => AtomOp::Add,
                    _ if m.has("min") => AtomOp::Min,
                    _ if m.has("max") => AtomOp::Max,
                    _ if m.bop == Some(BoolOp::And) => AtomOp::And,
                    _ if m.bop == Some(BoolOp::Or) => AtomOp::Or,
                    _ if m.bop == Some(BoolOp::Xor) => AtomOp::Xor,
                    _ => return unsupported(line, format!("reduction '{}'", i.opcode)),
                };
                if t0.is_float() {
                    return unsupported(line, format!("floating-point '{}'", i.opcode));
                }
                simple(&mut x, self, 2, t0)?;
                x.s[1] = self.opnd(&ops[2], Ty::B32, env, line, col)?;
            }
            "elect" => {
                // elect.sync d|p, membermask (either destination may be `_`)
                need(2)?;
                x.op = Op::Elect;
                x.class = Class::Shuffle;
                self.dest_pair(&mut x, &ops[0], (Ty::B32, Ty::Pred), env, (line, col))?;
                x.ns = 1;
                x.s[0] = self.opnd(&ops[1], Ty::B32, env, line, col)?;
            }
            "lop3" => {
                if ops.len() != 5 {
                    return unsupported(line, format!("'{}' with a predicate", i.opcode));
                }
                x.op = Op::Lop3;
                simple(&mut x, self, 4, t0)?;
            }
            "dp4a" | "dp2a" => {
                x.op = Op::Dp;
                x.sub = if base == "dp4a" {
                    0
                } else if m.has("hi") {
                    2
                } else {
                    1
                };
                simple(&mut x, self, 3, Ty::B32)?;
            }
            "activemask" => {
                x.op = Op::Activemask;
                simple(&mut x, self, 0, t0)?;
            }
            "prefetch" | "prefetchu" | "pmevent" | "nanosleep" | "griddepcontrol" | "brkpt"
            | "discard" | "applypriority" | "createpolicy" => {
                x.op = Op::Nop;
                x.class = Class::Nop;
                if base == "createpolicy" {
                    // writes a cache-policy register the program only passes back to hints
                    x.op = Op::Mov;
                    x.class = Class::Int;
                    x.nd = 1;
                    x.d[0] = self.opnd(&ops[0], Ty::B64, env, line, col)?;
                    x.ns = 1;
                    x.s[0] = Opnd::Imm(0);
                }
            }
            _ => return unsupported(line, format!("instruction '{}'", i.opcode)),
        }
        // Loads, atomics and texture fetches write value rows lane by lane, an atomic's old
        // value after the issue; PTX gives none of them a predicate destination.
        if matches!(x.op, Op::Ld | Op::Atom | Op::Red | Op::Tex)
            && x.d.iter().any(|d| matches!(d, Opnd::Pred(_)))
        {
            return perr(
                line,
                col,
                format!("'{}' cannot write a predicate register", i.opcode),
            );
        }
        self.insts.push(x);
        Ok(())
    }

    /// Inlines `call[.uni] (ret), func, (args);`. Arguments and results are `.param` variables
    /// of the caller, which live in its local frame; the callee's parameters alias them, so no
    /// copies are needed.
    fn call(&mut self, i: &'m ptx::Instr<'m>, env: &mut Env<'m>, guard: Opnd) -> R<()> {
        let line = i.line;
        if guard != Opnd::None {
            return unsupported(line, "predicated call");
        }
        let mut it = i.operands.iter();
        let mut rets: Vec<&'m str> = Vec::new();
        let mut first = it.next();
        if let Some(Operand::List(l)) = first {
            for o in l {
                if let Operand::Name(n) = o {
                    rets.push(n);
                }
            }
            first = it.next();
        }
        let fname = match first {
            Some(Operand::Name(n)) => *n,
            _ => return unsupported(line, "indirect call"),
        };
        let mut args: Vec<&'m str> = Vec::new();
        if let Some(Operand::List(l)) = it.next() {
            for o in l {
                match o {
                    Operand::Name(n) => args.push(n),
                    _ => return unsupported(line, "call argument that is not a .param variable"),
                }
            }
        }
        // Host-side services of the CUDA runtime: printf is accepted and prints nothing (the
        // emulator has no host console), a failed device assert traps.
        if fname == "vprintf" {
            return Ok(());
        }
        if fname == "__assertfail" || fname == "__assert_fail" {
            let mut t = Inst::new(Op::Trap, line);
            t.class = Class::Branch;
            self.insts.push(t);
            return Ok(());
        }
        let f = match self.funcs.get(fname) {
            Some(f) => *f,
            None => return perr(line, i.col, format!("call to unknown function '{fname}'")),
        };
        let body = match &f.body {
            Some(b) => b,
            None => return unsupported(line, format!("call to external function '{fname}'")),
        };
        if self.depth >= 16 || f.name == env.func_name {
            return unsupported(line, format!("recursive call to '{fname}'"));
        }
        self.instances += 1;
        let mut callee = Env {
            regs: HashMap::new(),
            syms: HashMap::new(),
            undo: vec![Vec::new()],
            instance: self.instances,
            is_kernel: false,
            func_name: f.name,
        };
        let lookup = |n: &str| -> R<SymRes> {
            match env.syms.get(n) {
                Some(s @ SymRes::Local(_)) => Ok(*s),
                _ => unsupported(line, format!("call argument '{n}' is not a local .param")),
            }
        };
        for (p, a) in f.params.iter().zip(&args) {
            callee.syms.insert(p.name, lookup(a)?);
        }
        for (p, r) in f.rets.iter().zip(&rets) {
            callee.syms.insert(p.name, lookup(r)?);
        }
        if args.len() != f.params.len() || rets.len() != f.rets.len() {
            return unsupported(
                line,
                format!("call to '{fname}' with mismatched parameters"),
            );
        }
        self.depth += 1;
        self.body(body, &mut callee)?;
        self.depth -= 1;
        self.labels
            .insert((callee.instance, RET_LABEL), self.insts.len() as u32);
        Ok(())
    }
}

fn bits_ty(bits: u32) -> Ty {
    match bits {
        8 => Ty::B8,
        16 => Ty::B16,
        32 => Ty::B32,
        _ => Ty::B64,
    }
}
