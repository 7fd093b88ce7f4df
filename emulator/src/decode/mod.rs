//! Lowers the PTX syntax tree into [`Program`]s: one per `.entry`, with `.func` calls inlined,
//! registers numbered densely, symbols resolved, labels turned into instruction indices and the
//! reconvergence point of every conditional branch precomputed.
//!
//! Reconvergence uses immediate post-dominators (as GPGPU-Sim's SIMT stack does): a divergent
//! branch pushes both paths and both resume together at the first instruction of the branch
//! block's immediate post-dominator. Post-dominators are computed on the basic-block graph with a
//! virtual exit node that every `ret`/`exit` reaches (Cooper-Harvey-Kennedy iteration on the
//! reversed graph; `reconverge.rs`). A branch whose paths only meet at exit gets `u32::MAX`: its
//! lanes stay split until they exit, which is what hardware does for early `ret`/`exit` of some
//! lanes. The registers, opcodes and modifiers it knows are in `vocab.rs`.
//!
//! Example (module-internal):
//! ```ignore
//! let ast = ptx::parse(src)?;
//! let dm = decode::decode_module(&ast)?;
//! let prog = &dm.kernels[0];
//! ```

use std::collections::HashMap;

use crate::error::EmuError;
use crate::ir::*;
use crate::ptx::{self, Function, Init, Operand, StateSpace, Stmt, VarDecl};
use crate::reconverge::compute_reconvergence;
use crate::vocab::{OPCODES, SREGS, known_modifier, parse_mods};
use crate::{regalloc, slots};

mod instr;

type R<T> = Result<T, EmuError>;

/// A module-level `.global`/`.const` variable, allocated in device memory at load.
#[derive(Debug, Clone)]
pub(crate) struct GlobalVar {
    pub name: String,
    pub size: u64,
    /// In constant space (`.const`), not global.
    pub constant: bool,
    /// Initial bytes (zero-filled to `size`).
    pub init: Vec<u8>,
    /// `(byte offset, index of the variable whose address goes there)` for address initializers.
    pub relocs: Vec<(u64, u32)>,
}

/// A decoded module.
#[derive(Debug, Clone)]
pub(crate) struct DecodedModule {
    pub globals: Vec<GlobalVar>,
    pub kernels: Vec<Program>,
}

fn unsupported<T>(line: u32, what: impl Into<String>) -> R<T> {
    Err(EmuError::Unsupported {
        line,
        what: what.into(),
    })
}

fn perr<T>(line: u32, col: u32, msg: impl Into<String>) -> R<T> {
    Err(EmuError::Parse {
        line,
        col,
        msg: msg.into(),
    })
}

fn decl_size(d: &VarDecl) -> u64 {
    let elem = Ty::parse(d.ty).map_or(8, |t| t.bytes() as u64).max(1) * d.vector.max(1) as u64;
    elem.saturating_mul(d.array.unwrap_or(1))
}

fn decl_align(d: &VarDecl) -> u32 {
    if d.align > 0 {
        d.align
    } else {
        Ty::parse(d.ty).map_or(8, |t| t.bytes()).max(1) * d.vector
    }
}

fn align_up(x: u64, a: u64) -> u64 {
    if a <= 1 { x } else { x.div_ceil(a) * a }
}

/// Decodes every kernel of a parsed module.
pub(crate) fn decode_module(m: &ptx::Module) -> R<DecodedModule> {
    let mut globals = Vec::new();
    let mut gindex: HashMap<&str, u32> = HashMap::new();
    for v in &m.vars {
        if matches!(v.space, StateSpace::Global | StateSpace::Const) {
            gindex.insert(v.name, globals.len() as u32);
            globals.push(GlobalVar {
                name: v.name.to_string(),
                size: decl_size(v),
                constant: v.space == StateSpace::Const,
                init: Vec::new(),
                relocs: Vec::new(),
            });
        }
    }
    for v in &m.vars {
        if let Some(&gi) = gindex.get(v.name) {
            let (bytes, relocs) = init_bytes(v, &gindex)?;
            let g = &mut globals[gi as usize];
            g.init = bytes;
            g.relocs = relocs;
            if g.size < g.init.len() as u64 {
                g.size = g.init.len() as u64;
            }
        } else if v.space == StateSpace::Tex {
            return unsupported(
                v.line,
                "texture references (.tex/.texref); use texture objects",
            );
        }
    }
    let funcs: HashMap<&str, &Function> = m.functions.iter().map(|f| (f.name, f)).collect();
    let mut kernels = Vec::new();
    for f in m.functions.iter().filter(|f| f.is_entry) {
        // A kernel that does not decode is kept, unusable, so the module's other kernels load.
        let k = decode_kernel(m, f, &gindex, &funcs).unwrap_or_else(|e| unusable_kernel(f, e));
        kernels.push(k);
    }
    Ok(DecodedModule { globals, kernels })
}

/// Initial bytes and address relocations `(offset, variable)`.
type InitImage = (Vec<u8>, Vec<(u64, u32)>);

fn init_bytes(v: &VarDecl, gindex: &HashMap<&str, u32>) -> R<InitImage> {
    let ty = Ty::parse(v.ty).unwrap_or(Ty::B8);
    let eb = ty.bytes().max(1) as usize;
    let mut out = Vec::with_capacity(v.init.len() * eb);
    let mut relocs = Vec::new();
    for e in &v.init {
        let raw: u64 = match *e {
            Init::Int(i) => i as u64,
            Init::F32(b) => {
                if ty == Ty::F64 {
                    (f32::from_bits(b) as f64).to_bits()
                } else {
                    b as u64
                }
            }
            Init::F64(b) => {
                if ty == Ty::F32 {
                    (f64::from_bits(b) as f32).to_bits() as u64
                } else {
                    b
                }
            }
            Init::Sym(n) => match gindex.get(n) {
                Some(&gi) => {
                    relocs.push((out.len() as u64, gi));
                    0
                }
                None => return unsupported(v.line, format!("initializer refers to unknown '{n}'")),
            },
        };
        out.extend_from_slice(&raw.to_le_bytes()[..eb.min(8)]);
    }
    Ok((out, relocs))
}

#[derive(Clone, Copy, Debug)]
enum SymRes {
    Local(u32),
    KParam(u32),
}

struct KDec<'a, 'm> {
    funcs: &'a HashMap<&'m str, &'m Function<'m>>,
    gindex: &'a HashMap<&'m str, u32>,
    insts: Vec<Inst>,
    nregs: u32,
    /// Whether each register is a predicate (`.reg .pred`), which operands name as `Opnd::Pred`.
    is_pred: Vec<bool>,
    local_bytes: u64,
    shared_bytes: u64,
    shared_syms: HashMap<&'m str, u32>,
    dyn_shared: Vec<&'m str>,
    /// (instruction index, instance, label)
    fixups: Vec<(usize, u32, &'m str, u32)>,
    labels: HashMap<(u32, &'m str), u32>,
    instances: u32,
    depth: u32,
    messages: Vec<String>,
}

/// What to restore when a `{ }` scope closes: a register name and its previous binding, or a
/// symbol and its previous binding.
type Undo<'m> = (String, Option<u32>, Option<(&'m str, Option<SymRes>)>);

/// Per-function-instance scope: register and symbol names.
struct Env<'m> {
    regs: HashMap<String, u32>,
    syms: HashMap<&'m str, SymRes>,
    undo: Vec<Vec<Undo<'m>>>,
    instance: u32,
    is_kernel: bool,
    /// For inlined functions: label index of the instance end (where `ret` jumps).
    func_name: &'m str,
}

fn decode_kernel<'m>(
    m: &'m ptx::Module<'m>,
    f: &'m Function<'m>,
    gindex: &HashMap<&'m str, u32>,
    funcs: &HashMap<&'m str, &'m Function<'m>>,
) -> R<Program> {
    let mut k = KDec {
        funcs,
        gindex,
        insts: Vec::new(),
        nregs: 0,
        is_pred: Vec::new(),
        local_bytes: 0,
        shared_bytes: 0,
        shared_syms: HashMap::new(),
        dyn_shared: Vec::new(),
        fixups: Vec::new(),
        labels: HashMap::new(),
        instances: 0,
        depth: 0,
        messages: Vec::new(),
    };
    // Module-level shared variables: every kernel gets its own copy at fixed offsets.
    for v in &m.vars {
        if v.space == StateSpace::Shared {
            k.add_shared(v);
        }
    }
    let mut env = Env {
        regs: HashMap::new(),
        syms: HashMap::new(),
        undo: vec![Vec::new()],
        instance: 0,
        is_kernel: true,
        func_name: f.name,
    };
    let (params, param_offsets, poff) = param_layout(f);
    for (p, &o) in f.params.iter().zip(&param_offsets) {
        env.syms.insert(p.name, SymRes::KParam(o));
    }
    let body = f.body.as_deref().unwrap_or(&[]);
    k.body(body, &mut env)?;
    // Falling off the end of a kernel ends the thread.
    let last_line = k.insts.last().map_or(f.line, |i| i.line);
    let mut ex = Inst::new(Op::Exit, last_line);
    ex.class = Class::Branch;
    k.insts.push(ex);
    for &(idx, inst, label, line) in &k.fixups {
        match k.labels.get(&(inst, label)) {
            Some(&t) => k.insts[idx].target = t,
            None => return perr(line, 1, format!("unknown label '{label}'")),
        }
    }
    exits_for_branches_to_exit(&mut k.insts);
    // Dynamic shared memory starts after the static variables, 16-byte aligned.
    let dyn_off = align_up(k.shared_bytes, 16) as u32;
    for name in std::mem::take(&mut k.dyn_shared) {
        k.shared_syms.insert(name, dyn_off);
    }
    compute_reconvergence(&mut k.insts);
    if k.local_bytes > MAX_LOCAL_BYTES {
        return unsupported(
            f.line,
            format!(
                "{} bytes of local memory per thread (limit {MAX_LOCAL_BYTES})",
                k.local_bytes
            ),
        );
    }
    if k.shared_bytes > u32::MAX as u64 / 2 {
        return unsupported(
            f.line,
            format!("{} bytes of static shared memory", k.shared_bytes),
        );
    }
    let (row_of, rows, pred_rows) = regalloc::pack(&k.insts, k.nregs);
    let (slot_of, slots) = slots::pack(&k.insts, k.nregs);
    Ok(Program {
        name: f.name.to_string(),
        unusable: None,
        exec: regalloc::rename(&k.insts, &row_of),
        rows,
        pred_rows,
        slot_of,
        slots,
        insts: k.insts,
        params,
        param_offsets,
        param_bytes: poff,
        shared_static_bytes: k.shared_bytes as u32,
        dyn_shared_offset: dyn_off,
        local_bytes: align_up(k.local_bytes, 8) as u32,
        messages: k.messages,
    })
}

/// Parameter declarations, their byte offsets and the parameter buffer's size.
fn param_layout(f: &Function) -> (Vec<ParamDecl>, Vec<u32>, u32) {
    let mut params = Vec::new();
    let mut offsets = Vec::new();
    let mut poff = 0u64;
    for p in &f.params {
        let size = decl_size(p) as u32;
        let align = decl_align(p);
        poff = align_up(poff, align as u64);
        params.push(ParamDecl {
            name: p.name.to_string(),
            size_bytes: size,
            align,
        });
        offsets.push(poff as u32);
        poff += size as u64;
    }
    (params, offsets, poff.min(u32::MAX as u64) as u32)
}

/// A kernel that keeps its signature (so callers can still check arguments against it) and the
/// reason it cannot run. The offending line's text is filled in by `Module::parse`, which has
/// the source.
fn unusable_kernel(f: &Function, e: EmuError) -> Program {
    let (line, col, what) = match e {
        EmuError::Parse { line, col, msg } => (line, col, msg),
        EmuError::Unsupported { line, what } => (line, 1, what),
        other => (f.line, 1, other.to_string()),
    };
    let (params, param_offsets, param_bytes) = param_layout(f);
    Program {
        name: f.name.to_string(),
        unusable: Some(EmuError::Unusable {
            kernel: f.name.to_string(),
            line,
            col,
            text: String::new(),
            what,
        }),
        insts: Vec::new(),
        slot_of: Vec::new(),
        slots: 0,
        exec: Vec::new(),
        rows: 0,
        pred_rows: 0,
        params,
        param_offsets,
        param_bytes,
        shared_static_bytes: 0,
        dyn_shared_offset: 0,
        local_bytes: 0,
        messages: Vec::new(),
    }
}

impl<'a, 'm> KDec<'a, 'm> {
    fn add_shared(&mut self, v: &'m VarDecl<'m>) {
        if v.is_extern || v.array == Some(0) {
            self.dyn_shared.push(v.name);
            return;
        }
        let off = align_up(self.shared_bytes, decl_align(v) as u64);
        self.shared_syms.insert(v.name, off as u32);
        self.shared_bytes = off + decl_size(v);
    }

    fn new_reg(&mut self, pred: bool) -> u32 {
        self.is_pred.push(pred);
        self.nregs += 1;
        self.nregs - 1
    }

    fn declare(&mut self, d: &'m VarDecl<'m>, env: &mut Env<'m>) -> R<()> {
        match d.space {
            StateSpace::Reg => {
                if self.nregs as u64 + d.range.unwrap_or(1) as u64 > MAX_REGS {
                    return unsupported(
                        d.line,
                        format!("more than {MAX_REGS} registers in one kernel"),
                    );
                }
                let names: Vec<String> = match d.range {
                    Some(n) => (0..n).map(|i| format!("{}{}", d.name, i)).collect(),
                    None => vec![d.name.to_string()],
                };
                for n in names {
                    let r = self.new_reg(d.ty == "pred");
                    let prev = env.regs.insert(n.clone(), r);
                    if let Some(u) = env.undo.last_mut() {
                        u.push((n, prev, None));
                    }
                }
            }
            StateSpace::Local | StateSpace::Param => {
                let off = align_up(self.local_bytes, decl_align(d) as u64);
                self.local_bytes = off + decl_size(d);
                let prev = env.syms.insert(d.name, SymRes::Local(off as u32));
                if let Some(u) = env.undo.last_mut() {
                    u.push((String::new(), None, Some((d.name, prev))));
                }
            }
            StateSpace::Shared => {
                self.add_shared(d);
            }
            StateSpace::Global | StateSpace::Const => {
                return unsupported(d.line, "function-scope .global/.const variables");
            }
            StateSpace::Tex => return unsupported(d.line, "texture references"),
        }
        Ok(())
    }

    fn body(&mut self, body: &'m [Stmt<'m>], env: &mut Env<'m>) -> R<()> {
        for s in body {
            match s {
                Stmt::Decl(d) => self.declare(d, env)?,
                Stmt::Label(l) => {
                    self.labels
                        .insert((env.instance, l), self.insts.len() as u32);
                }
                Stmt::Bad(e) => return Err(e.clone()),
                Stmt::ScopeOpen => env.undo.push(Vec::new()),
                Stmt::ScopeClose => {
                    if let Some(u) = env.undo.pop() {
                        for (name, prev, sym) in u.into_iter().rev() {
                            if let Some((sname, sprev)) = sym {
                                match sprev {
                                    Some(p) => env.syms.insert(sname, p),
                                    None => env.syms.remove(sname),
                                };
                            } else {
                                match prev {
                                    Some(p) => env.regs.insert(name, p),
                                    None => env.regs.remove(&name),
                                };
                            }
                        }
                    }
                }
                Stmt::Instr(i) => match self.instr(i, env) {
                    // Well-formed but unsupported: the module still loads and the instruction
                    // faults if a warp ever issues it, naming the kernel, pc and line.
                    Err(EmuError::Unsupported { line, what }) => {
                        let mut x = Inst::new(Op::Invalid, line);
                        x.class = Class::Nop;
                        x.target = self.messages.len() as u32;
                        self.messages.push(what);
                        self.insts.push(x);
                    }
                    other => other?,
                },
            }
        }
        Ok(())
    }

    fn name_opnd(&self, n: &str, env: &Env<'m>, line: u32, col: u32) -> R<Opnd> {
        if let Some(&r) = env.regs.get(n) {
            return Ok(if self.is_pred.get(r as usize) == Some(&true) {
                Opnd::Pred(r)
            } else {
                Opnd::Reg(r)
            });
        }
        if n == "WARP_SZ" {
            // What `warpSize` compiles to: a constant of the PTX ISA.
            return Ok(Opnd::Imm(32));
        }
        if n.starts_with('%') {
            if let Some((_, s)) = SREGS.iter().find(|(k, _)| *k == n) {
                return Ok(Opnd::Sreg(*s));
            }
            if n.starts_with("%envreg") {
                return Ok(Opnd::Imm(0));
            }
            // A cluster of one CTA: rank 0 of 1, at (0, 0, 0) of a 1×1×1 cluster.
            match n {
                "%cluster_ctarank"
                | "%is_explicit_cluster"
                | "%cluster_ctaid.x"
                | "%cluster_ctaid.y"
                | "%cluster_ctaid.z" => return Ok(Opnd::Imm(0)),
                "%cluster_nctarank" | "%cluster_nctaid.x" | "%cluster_nctaid.y"
                | "%cluster_nctaid.z" => return Ok(Opnd::Imm(1)),
                _ => {}
            }
            return perr(line, col, format!("undeclared register '{n}'"));
        }
        if let Some(s) = env.syms.get(n) {
            return Ok(match *s {
                SymRes::Local(o) | SymRes::KParam(o) => Opnd::Imm(o as u64),
            });
        }
        if let Some(&o) = self.shared_syms.get(n) {
            return Ok(Opnd::Imm(o as u64));
        }
        if self.dyn_shared.contains(&n) {
            // Patched after all static shared variables are known: use a marker symbol.
            return Ok(Opnd::Sym(DYN_SHARED_SYM));
        }
        if let Some(&g) = self.gindex.get(n) {
            return Ok(Opnd::Sym(g));
        }
        perr(line, col, format!("unknown symbol '{n}'"))
    }

    fn opnd(&self, o: &Operand<'m>, ty: Ty, env: &Env<'m>, line: u32, col: u32) -> R<Opnd> {
        Ok(match o {
            Operand::Name(n) => self.name_opnd(n, env, line, col)?,
            Operand::Int(i) => Opnd::Imm(*i as u64),
            Operand::F32(b) => Opnd::Imm(if ty == Ty::F64 {
                (f32::from_bits(*b) as f64).to_bits()
            } else {
                *b as u64
            }),
            Operand::F64(b) => Opnd::Imm(match ty {
                Ty::F32 => (f64::from_bits(*b) as f32).to_bits() as u64,
                Ty::F16 => half::f16::from_f64(f64::from_bits(*b)).to_bits() as u64,
                _ => *b,
            }),
            Operand::Not(inner) => match self.opnd(inner, ty, env, line, col)? {
                Opnd::Pred(r) => Opnd::NotPred(r),
                Opnd::Imm(v) => Opnd::Imm((v == 0) as u64),
                _ => return perr(line, col, "'!' applies to predicates only"),
            },
            Operand::Sink => Opnd::None,
            _ => return perr(line, col, format!("unexpected operand {o:?}")),
        })
    }

    fn addr(&self, o: &Operand<'m>, env: &Env<'m>, line: u32, col: u32) -> R<(Opnd, i64, bool)> {
        match o {
            Operand::Addr { base, offset, .. } => {
                let mut kparam = false;
                let b = match base {
                    Some(n) => {
                        kparam = matches!(env.syms.get(n), Some(SymRes::KParam(_)));
                        self.name_opnd(n, env, line, col)?
                    }
                    None => Opnd::Imm(0),
                };
                Ok((b, *offset, kparam))
            }
            _ => perr(line, col, "expected an address [..]"),
        }
    }
}

const RET_LABEL: &str = "%%ret";
/// Registers per kernel beyond which a module is rejected (nvcc emits hundreds, not millions).
const MAX_REGS: u64 = 1 << 20;
/// CUDA's limit of local memory per thread.
const MAX_LOCAL_BYTES: u64 = 512 * 1024;
/// Marker symbol index for extern dynamic shared memory (patched per kernel).
pub(crate) const DYN_SHARED_SYM: u32 = u32::MAX;

/// A branch whose target ends the thread (an unguarded `exit`, or `ret` in a kernel, possibly
/// through unguarded branches) becomes that exit, guarded as the branch was: ptxas emits such a
/// branch as `@p EXIT`, so on silicon its lanes have exited, where they would otherwise wait at the
/// reconvergence point. A shuffle that reads them sees the difference (an exited lane reads 0).
fn exits_for_branches_to_exit(insts: &mut [Inst]) {
    let ends = |insts: &[Inst], mut t: usize| {
        for _ in 0..insts.len() {
            match insts.get(t) {
                Some(x) if x.guard == Opnd::None && x.op == Op::Exit => return true,
                Some(x) if x.guard == Opnd::None && x.op == Op::Bra => t = x.target as usize,
                _ => return false,
            }
        }
        false
    };
    for k in 0..insts.len() {
        if insts[k].op == Op::Bra && ends(insts, insts[k].target as usize) {
            insts[k].op = Op::Exit;
        }
    }
}

/// Kernel `k(.param .u64 k_p0, .param .u32 k_p1)` with `body`, decoded: for tests.
#[cfg(test)]
pub(crate) fn test_kernel(body: &str) -> Program {
    let src = format!(
        ".version 9.0\n.target sm_75\n.address_size 64\n.visible .entry k(.param .u64 k_p0, .param .u32 k_p1)\n{{\n{body}\n}}\n"
    );
    let m = ptx::parse(&src).unwrap();
    decode_module(&m).unwrap().kernels.remove(0)
}

/// [`test_kernel`] with `%p<3>`, `%r<6>` and `%rd<2>` declared: `%pN` is register N, `%rN` is
/// [`R`] + N and `%rdN` is [`RD`] + N. For tests of register packing.
#[cfg(test)]
pub(crate) fn test_kernel_with_regs(body: &str) -> Program {
    test_kernel(&format!(
        "  .reg .pred %p<3>;\n  .reg .b32 %r<6>;\n  .reg .b64 %rd<2>;\n{body}"
    ))
}

/// `%r0`'s register in [`test_kernel_with_regs`].
#[cfg(test)]
pub(crate) const R: u32 = 3;
/// `%rd0`'s register in [`test_kernel_with_regs`].
#[cfg(test)]
pub(crate) const RD: u32 = 9;

#[cfg(test)]
mod tests {
    use super::*;

    use super::test_kernel as kernel;

    #[test]
    fn undeclared_register_is_a_parse_error_with_line() {
        let src = ".version 9.0\n.entry k()\n{\n  .reg .b32 %r<2>;\n  add.s32 %r1, %r1, %q;\n}\n";
        let m = ptx::parse(src).unwrap();
        let k = decode_module(&m).unwrap().kernels.remove(0);
        match k.unusable {
            Some(EmuError::Unusable { line, what, .. }) => {
                assert_eq!(line, 5);
                assert!(what.contains("%q"), "{what}");
            }
            other => panic!("expected an unusable kernel, got {other:?}"),
        }
    }

    #[test]
    fn predicates_are_named_as_such_and_only_predicates_guard_or_negate() {
        let unusable = |body: &str| {
            let src = format!(
                ".version 9.0\n.entry k()\n{{\n  .reg .pred %p<2>;\n  .reg .b32 %r<2>;\n{body}\n}}\n"
            );
            let m = ptx::parse(&src).unwrap();
            match decode_module(&m).unwrap().kernels.remove(0).unusable {
                Some(EmuError::Unusable { line, what, .. }) => (line, what),
                other => panic!("{body}: expected an unusable kernel, got {other:?}"),
            }
        };
        let (line, what) = unusable("  mov.u32 %r1, 1;\n  @%r1 mov.u32 %r0, 2;");
        assert_eq!(line, 7);
        assert!(what.contains("not a predicate register"), "{what}");
        let (_, what) = unusable("  and.pred %p1, %p0, !%r1;");
        assert!(what.contains("'!' applies to predicates only"), "{what}");
        let (_, what) = unusable("  ld.global.u32 %p1, [%r1];");
        assert!(what.contains("cannot write a predicate register"), "{what}");
        let p = kernel(
            "  .reg .pred %p<2>;\n  .reg .b32 %r<2>;\n  setp.eq.s32 %p1, %r1, 0;\n  @!%p1 not.pred %p0, %p1;\n  ret;",
        );
        assert_eq!(p.insts[0].d[0], Opnd::Pred(1));
        assert_eq!(p.insts[1].guard, Opnd::NotPred(1));
        assert_eq!(
            (p.insts[1].d[0], p.insts[1].s[0]),
            (Opnd::Pred(0), Opnd::Pred(1))
        );
        assert_eq!(p.insts[0].s[0], Opnd::Reg(3));
    }

    #[test]
    fn diamond_and_loop_reconverge_at_post_dominator() {
        let p = kernel(
            "  .reg .pred %p<3>;\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<2>;\n  ld.param.u32 %r1, [k_p1];\n  setp.eq.s32 %p1, %r1, 0;\n  @%p1 bra $A;\n  add.s32 %r2, %r1, 1;\n  bra.uni $B;\n$A:\n  add.s32 %r2, %r1, 2;\n$B:\n  add.s32 %r3, %r3, 1;\n  setp.lt.s32 %p2, %r3, %r2;\n  @%p2 bra $B;\n  ld.param.u64 %rd1, [k_p0];\n  st.global.u32 [%rd1], %r2;\n  ret;",
        );
        let ins = &p.insts;
        // registers: %p0-2 = 0..3, %r0-3 = 3..7, so %r3 is register 6
        let b_label = ins
            .iter()
            .position(|x| x.op == Op::Add && x.d[0] == Opnd::Reg(6))
            .unwrap();
        let first_branch = ins
            .iter()
            .position(|x| x.op == Op::Bra && x.guard != Opnd::None)
            .unwrap();
        // The if/else joins at $B (index of "add %r3").
        assert_eq!(ins[first_branch].reconv as usize, b_label);
        let loop_branch = ins
            .iter()
            .rposition(|x| x.op == Op::Bra && x.guard != Opnd::None)
            .unwrap();
        assert_eq!(ins[loop_branch].target as usize, b_label);
        // The loop exits to the instruction after the back edge.
        assert_eq!(ins[loop_branch].reconv as usize, loop_branch + 1);
        assert_eq!(p.param_offsets, vec![0, 8]);
        assert_eq!(p.param_bytes, 12);
    }

    #[test]
    fn inlines_func_calls_with_param_aliasing() {
        let src = ".version 9.0\n.target sm_75\n.address_size 64\n.func (.param .b32 r) f(.param .b32 a)\n{\n .reg .b32 %r<3>;\n ld.param.b32 %r1, [a];\n add.s32 %r2, %r1, 1;\n st.param.b32 [r], %r2;\n ret;\n}\n.entry k()\n{\n .reg .b32 %r<3>;\n { .param .b32 p0; st.param.b32 [p0], %r1; .param .b32 rv; call.uni (rv), f, (p0); ld.param.b32 %r2, [rv]; }\n ret;\n}\n";
        let m = ptx::parse(src).unwrap();
        let p = decode_module(&m).unwrap().kernels.remove(0);
        let st = p.insts.iter().position(|x| x.op == Op::St).unwrap();
        let ld = p.insts.iter().position(|x| x.op == Op::Ld).unwrap();
        assert_eq!(p.insts[st].space, Sp::Local);
        // caller's p0 and callee's a are the same local slot
        assert_eq!(p.insts[st].a, p.insts[ld].a);
        // callee's ret became a branch to the instruction after the inlined body
        let ret = p.insts.iter().position(|x| x.op == Op::Bra).unwrap();
        assert_eq!(p.insts[ret].target as usize, ret + 1);
        assert_eq!(p.local_bytes, 8);
    }

    #[test]
    fn strong_and_l2_cached_loads_skip_the_l1_and_weak_or_cta_ones_do_not() {
        let forms = [
            ("ld.global.u32", false),
            ("ld.global.ca.u32", false),
            ("ld.global.cs.u32", false),
            ("ld.relaxed.cta.global.u32", false),
            ("ld.global.cg.u32", true),
            ("ld.global.cv.u32", true),
            ("ld.global.lu.u32", true),
            ("ld.volatile.global.u32", true),
            ("ld.relaxed.gpu.global.u32", true),
            ("ld.acquire.sys.global.u32", true),
        ];
        for (form, skips) in forms {
            let p = test_kernel_with_regs(&format!(
                "  ld.param.u64 %rd1, [k_p0];\n  {form} %r1, [%rd1];\n  ret;"
            ));
            let ld = p
                .insts
                .iter()
                .find(|x| x.op == Op::Ld && x.space == Sp::Global)
                .unwrap();
            assert_eq!(ld.l2_only, skips, "{form}");
        }
    }
}
