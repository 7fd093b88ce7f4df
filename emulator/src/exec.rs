//! Functional execution of one warp instruction: operands gathered into `[u64; 32]` lane arrays,
//! one tight loop per operation, results written back under the active mask; plus the SIMT
//! reconvergence stack.
//!
//! Why this shape: the register file is structure-of-arrays (`regs[reg * 32 + lane]`), so an
//! operand fetch is one 256-byte copy and the per-op loops have no per-lane dispatch, which is
//! what makes tens of millions of warp instructions per second possible. Memory instructions do
//! their loads/stores here (functionally, at issue) and return the lane addresses for the timing
//! model in `Ctx::lanes`.
//!
//! SIMT stack (GPGPU-Sim style): entries `(pc, rpc, mask)`. A divergent branch turns the top
//! entry into the reconvergence entry (`pc = rpc`) — or drops it when its own `rpc` equals the
//! branch's — and pushes the not-taken then the taken path; an entry pops when its `pc` reaches
//! its `rpc`. `exit` removes lanes from every entry; empty entries pop.
//!
//! Main items: [`Warp`], [`Ctx`], [`exec`], [`Flow`].

use crate::devmem::{DeviceMemory, LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW, WINDOW_BYTES};
use crate::engine_mem::{AccessKind, Space};
use crate::ir::*;
use crate::numeric::{self, b32, f32v, float_op, float_to_f64};
use crate::texture::{HANDLE_BASE, Texture};

pub(crate) const FULL: u32 = u32::MAX;

/// The lane values of an absent operand.
static ZERO_LANES: [u64; 32] = [0; 32];

/// One SIMT stack entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub pc: u32,
    pub rpc: u32,
    pub mask: u32,
}

/// Architectural state of one warp.
#[derive(Debug, Default)]
pub(crate) struct Warp {
    /// `regs[reg * 32 + lane]`.
    pub regs: Vec<u64>,
    pub stack: Vec<Entry>,
    /// Per-lane carry flags of `add.cc`/`addc`.
    pub carry: u32,
    /// Local memory, `local_bytes` per lane, lane-major.
    pub local: Vec<u8>,
    /// Warp index within its block.
    pub wib: u32,
    /// Hardware warp slot on the SM.
    pub slot: u32,
}

impl Warp {
    #[inline]
    fn advance(&mut self) {
        if let Some(t) = self.stack.last_mut() {
            t.pc += 1;
        }
        self.normalize();
    }
    #[inline]
    fn normalize(&mut self) {
        while let Some(t) = self.stack.last() {
            if t.mask == 0 || t.pc == t.rpc {
                self.stack.pop();
            } else {
                break;
            }
        }
    }
    /// The next pc to run, or `None` when the warp has finished.
    #[inline]
    pub(crate) fn pc(&self) -> Option<u32> {
        self.stack.last().map(|e| e.pc)
    }
    pub(crate) fn active(&self) -> u32 {
        self.stack.last().map_or(0, |e| e.mask)
    }
}

/// Everything an instruction may touch besides its warp.
pub(crate) struct Ctx<'a> {
    pub dev: &'a mut DeviceMemory,
    pub textures: &'a [Texture],
    pub params: &'a [u8],
    pub shared: &'a mut [u8],
    pub local_bytes: u32,
    pub block: [u32; 3],
    pub ntid: [u32; 3],
    pub nctaid: [u32; 3],
    pub smid: u32,
    pub nsm: u32,
    pub max_warps: u32,
    pub now: u64,
    pub clock_mhz: f64,
    pub dyn_smem: u32,
    /// Out: `(lane, address)` of each access, for the memory model.
    pub lanes: &'a mut Vec<(u8, u64)>,
    pub texaddrs: &'a mut Vec<u64>,
}

/// What the engine must do after an instruction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Flow {
    Done,
    /// A memory access whose lane addresses are in `Ctx::lanes`.
    Mem {
        space: Space,
        kind: AccessKind,
        bytes_per_lane: u32,
        readonly: bool,
    },
    /// Arrived at a barrier. `expected` threads (0 = the whole block); for `bar.red`, `red` is
    /// 1 popc, 2 and, 3 or, with this warp's contribution and the destination register.
    Bar {
        id: u32,
        expected: u32,
        red: u8,
        contrib: u32,
        dst: Option<u32>,
    },
    /// The warp has no live lanes left.
    Exited,
}

/// A guest fault: lane and description.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fault {
    pub lane: u32,
    pub what: String,
}

/// Faults are rare: boxing keeps every per-lane `Result` two words wide.
pub(crate) type Faulty<T> = Result<T, Box<Fault>>;

#[cold]
fn fault<T>(lane: u32, what: impl Into<String>) -> Faulty<T> {
    Err(Box::new(Fault {
        lane,
        what: what.into(),
    }))
}

macro_rules! each_lane {
    ($mask:expr, $l:ident, $body:block) => {{
        let mut m__ = $mask;
        while m__ != 0 {
            let $l = m__.trailing_zeros() as usize;
            m__ &= m__ - 1;
            $body
        }
    }};
}

macro_rules! map {
    ($r:ident, |$l:ident| $e:expr) => {
        for $l in 0..32 {
            $r[$l] = $e;
        }
    };
}

#[inline]
fn predmask(regs: &[u64], r: u32) -> u32 {
    let row = &regs[r as usize * 32..r as usize * 32 + 32];
    let mut m = 0u32;
    for (l, v) in row.iter().enumerate() {
        m |= ((*v & 1) as u32) << l;
    }
    m
}

impl Ctx<'_> {
    fn sreg(&self, s: Sreg, w: &Warp, lane: usize) -> u64 {
        let t = w.wib * 32 + lane as u32;
        let [nx, ny, _] = self.ntid;
        match s {
            Sreg::Tid(0) => (t % nx) as u64,
            Sreg::Tid(1) => ((t / nx) % ny) as u64,
            Sreg::Tid(_) => (t / (nx * ny)) as u64,
            Sreg::Ntid(d) => self.ntid[d as usize] as u64,
            Sreg::Ctaid(d) => self.block[d as usize] as u64,
            Sreg::Nctaid(d) => self.nctaid[d as usize] as u64,
            Sreg::Laneid => lane as u64,
            Sreg::Warpid => w.slot as u64,
            Sreg::Nwarpid => self.max_warps as u64,
            Sreg::Smid => self.smid as u64,
            Sreg::Nsmid => self.nsm as u64,
            Sreg::Clock => self.now & 0xFFFF_FFFF,
            Sreg::ClockHi => self.now >> 32,
            Sreg::Clock64 => self.now,
            Sreg::Globaltimer | Sreg::GlobaltimerLo | Sreg::GlobaltimerHi => {
                let ns = (self.now as f64 * 1000.0 / self.clock_mhz.max(1e-9)) as u64;
                match s {
                    Sreg::GlobaltimerLo => ns & 0xFFFF_FFFF,
                    Sreg::GlobaltimerHi => ns >> 32,
                    _ => ns,
                }
            }
            Sreg::LanemaskEq => 1u64 << lane,
            Sreg::LanemaskLt => (1u64 << lane) - 1,
            Sreg::LanemaskLe => (2u64 << lane) - 1,
            Sreg::LanemaskGt => !((2u64 << lane) - 1) & 0xFFFF_FFFF,
            Sreg::LanemaskGe => !((1u64 << lane) - 1) & 0xFFFF_FFFF,
            Sreg::Gridid => 0,
            Sreg::DynSmem => self.dyn_smem as u64,
            Sreg::TotalSmem => self.shared.len() as u64,
        }
    }

    /// A register operand's row, borrowed in place.
    #[inline]
    fn reg_row<'a>(&self, o: Opnd, w: &'a Warp) -> Option<&'a [u64; 32]> {
        if let Opnd::Reg(r) = o {
            let r = r as usize * 32;
            return w.regs.get(r..r + 32).and_then(|s| s.first_chunk::<32>());
        }
        None
    }

    #[inline]
    fn fetch(&self, o: Opnd, w: &Warp, out: &mut [u64; 32]) {
        match o {
            Opnd::Reg(r) => out.copy_from_slice(&w.regs[r as usize * 32..r as usize * 32 + 32]),
            Opnd::NotReg(r) => {
                let row = &w.regs[r as usize * 32..r as usize * 32 + 32];
                for l in 0..32 {
                    out[l] = (row[l] & 1) ^ 1;
                }
            }
            Opnd::Imm(v) => out.fill(v),
            Opnd::Sreg(s) => {
                for (l, o) in out.iter_mut().enumerate() {
                    *o = self.sreg(s, w, l);
                }
            }
            Opnd::None | Opnd::Sym(_) => out.fill(0),
        }
    }
}

#[inline]
fn put(regs: &mut [u64], d: Opnd, mask: u32, vals: &[u64; 32], m: u64) {
    if let Opnd::Reg(r) = d {
        let row = &mut regs[r as usize * 32..r as usize * 32 + 32];
        if mask == FULL {
            for l in 0..32 {
                row[l] = vals[l] & m;
            }
        } else {
            each_lane!(mask, l, {
                row[l] = vals[l] & m;
            });
        }
    }
}

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
/// instruction; returns false for the cases left to [`compare`].
fn compare_fast(ty: Ty, cmp: Cmp, a: &[u64; 32], b: &[u64; 32], r: &mut [u64; 32]) -> bool {
    macro_rules! cmp_loop {
        ($conv:expr, $op:tt) => {{
            let conv = $conv;
            for l in 0..32 {
                r[l] = (conv(a[l]) $op conv(b[l])) as u64;
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
            _ => return false,
        },
        (t, _) if t.is_float() => return false,
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
                _ => return false,
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
                _ => return false,
            }
        }
    }
    true
}

fn combine(bop: BoolOp, p: bool, c: bool) -> bool {
    match bop {
        BoolOp::None => p,
        BoolOp::And => p && c,
        BoolOp::Or => p || c,
        BoolOp::Xor => p ^ c,
    }
}

/// Where one lane's access lands.
enum Target {
    Global(u64),
    Shared(usize),
    Local(usize),
    Param(usize),
}

impl Target {
    /// The same space, `bytes` further on (element `k` of a vector access).
    fn offset(&self, bytes: usize) -> Target {
        match *self {
            Target::Global(a) => Target::Global(a + bytes as u64),
            Target::Shared(o) => Target::Shared(o + bytes),
            Target::Local(o) => Target::Local(o + bytes),
            Target::Param(o) => Target::Param(o + bytes),
        }
    }
}

fn space_of(t: &Target) -> Space {
    match t {
        Target::Global(_) => Space::Global,
        Target::Shared(_) => Space::Shared,
        Target::Local(_) => Space::Local,
        Target::Param(_) => Space::Param,
    }
}

/// A state-space address (`ld.shared`, `ld.local`, `ld.param`) outside the generic window is an
/// offset in a 32-bit space: nvcc forms it in 32-bit registers (`add.s32 %r3, %r1, -64` then
/// `[%r3+68]`), where the arithmetic wraps mod 2^32, so the sum does too.
fn window_offset(addr: u64) -> u64 {
    addr & 0xFFFF_FFFF
}

impl Ctx<'_> {
    fn resolve(&self, sp: Sp, addr: u64, lane: usize, len: usize) -> Faulty<Target> {
        let l = lane as u32;
        let check = |off: u64, size: usize, what: &str| -> Faulty<usize> {
            if off
                .checked_add(len as u64)
                .is_some_and(|e| e <= size as u64)
            {
                Ok(off as usize)
            } else {
                fault(
                    l,
                    format!(
                        "{what} access of {len} bytes at offset {off:#x} is out of bounds ({size} bytes)"
                    ),
                )
            }
        };
        match sp {
            Sp::Global | Sp::Const => Ok(Target::Global(addr)),
            Sp::Shared => {
                let off = if (SHARED_WINDOW..SHARED_WINDOW + WINDOW_BYTES).contains(&addr) {
                    addr - SHARED_WINDOW
                } else {
                    window_offset(addr)
                };
                Ok(Target::Shared(check(off, self.shared.len(), "shared")?))
            }
            Sp::Local => {
                let off = if (LOCAL_WINDOW..LOCAL_WINDOW + WINDOW_BYTES).contains(&addr) {
                    addr - LOCAL_WINDOW
                } else {
                    window_offset(addr)
                };
                let o = check(off, self.local_bytes as usize, "local")?;
                Ok(Target::Local(lane * self.local_bytes as usize + o))
            }
            Sp::Param => {
                let off = if (PARAM_WINDOW..PARAM_WINDOW + WINDOW_BYTES).contains(&addr) {
                    addr - PARAM_WINDOW
                } else {
                    window_offset(addr)
                };
                Ok(Target::Param(check(off, self.params.len(), "param")?))
            }
            Sp::Generic => {
                if (SHARED_WINDOW..SHARED_WINDOW + WINDOW_BYTES).contains(&addr) {
                    self.resolve(Sp::Shared, addr, lane, len)
                } else if (LOCAL_WINDOW..LOCAL_WINDOW + WINDOW_BYTES).contains(&addr) {
                    self.resolve(Sp::Local, addr, lane, len)
                } else if (PARAM_WINDOW..PARAM_WINDOW + WINDOW_BYTES).contains(&addr) {
                    self.resolve(Sp::Param, addr, lane, len)
                } else {
                    Ok(Target::Global(addr))
                }
            }
        }
    }

    /// The address the memory model sees for this access.
    fn timing_addr(&self, t: &Target, w: &Warp, lane: usize) -> u64 {
        match *t {
            Target::Global(a) => a,
            Target::Shared(o) => o as u64,
            Target::Param(o) => o as u64,
            Target::Local(i) => {
                // local memory is interleaved per 4-byte word across the warp's lanes, as on GPUs
                let lb = self.local_bytes.max(1) as u64;
                let off = i as u64 - lane as u64 * lb;
                let warp_base =
                    (self.smid as u64 * self.max_warps as u64 + w.slot as u64) * lb * 32;
                LOCAL_WINDOW + warp_base + (off / 4) * 128 + lane as u64 * 4 + off % 4
            }
        }
    }

    fn read(&self, w: &Warp, t: &Target, len: usize, lane: usize) -> Faulty<u64> {
        let src: &[u8] = match *t {
            Target::Global(a) => match self.dev.slice(a, len) {
                Some(s) => s,
                None => {
                    return fault(
                        lane as u32,
                        format!("load of {len} bytes at {a:#x} outside any allocation"),
                    );
                }
            },
            Target::Shared(o) => &self.shared[o..o + len],
            Target::Local(o) => &w.local[o..o + len],
            Target::Param(o) => &self.params[o..o + len],
        };
        Ok(le_bytes(src))
    }

    fn write(&mut self, w: &mut Warp, t: &Target, len: usize, lane: usize, v: u64) -> Faulty<()> {
        let dst: &mut [u8] = match *t {
            Target::Global(a) => match self.dev.slice_mut(a, len) {
                Some(s) => s,
                None => {
                    return fault(
                        lane as u32,
                        format!("store of {len} bytes at {a:#x} outside any allocation"),
                    );
                }
            },
            Target::Shared(o) => &mut self.shared[o..o + len],
            Target::Local(o) => &mut w.local[o..o + len],
            Target::Param(_) => return fault(lane as u32, "store to kernel parameter space"),
        };
        put_le_bytes(dst, v);
        Ok(())
    }
}

/// Little-endian value of 1, 2, 4 or 8 bytes; fixed-size copies so no `memcpy` call per lane.
#[inline]
fn le_bytes(src: &[u8]) -> u64 {
    match *src {
        [a] => a as u64,
        [a, b] => u16::from_le_bytes([a, b]) as u64,
        [a, b, c, d] => u32::from_le_bytes([a, b, c, d]) as u64,
        [a, b, c, d, e, f, g, h] => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
        _ => {
            let mut buf = [0u8; 8];
            let n = src.len().min(8);
            buf[..n].copy_from_slice(&src[..n]);
            u64::from_le_bytes(buf)
        }
    }
}

#[inline]
fn put_le_bytes(dst: &mut [u8], v: u64) {
    match dst.len() {
        1 => dst[0] = v as u8,
        2 => dst.copy_from_slice(&(v as u16).to_le_bytes()),
        4 => dst.copy_from_slice(&(v as u32).to_le_bytes()),
        8 => dst.copy_from_slice(&v.to_le_bytes()),
        n => {
            let n = n.min(8);
            dst[..n].copy_from_slice(&v.to_le_bytes()[..n]);
        }
    }
}

/// Executes the instruction at the warp's pc. `x` must be `prog.insts[w.pc()]`.
pub(crate) fn exec(x: &Inst, w: &mut Warp, c: &mut Ctx) -> Faulty<Flow> {
    let active = w.active();
    let emask = match x.guard {
        Opnd::Reg(r) => active & predmask(&w.regs, r),
        Opnd::NotReg(r) => active & !predmask(&w.regs, r),
        _ => active,
    };
    match x.op {
        Op::Bra => {
            branch(w, x, emask, active);
            return Ok(Flow::Done);
        }
        Op::Exit => {
            for e in w.stack.iter_mut() {
                e.mask &= !emask;
            }
            if emask != active {
                w.advance();
            } else {
                w.normalize();
            }
            return Ok(if w.stack.is_empty() {
                Flow::Exited
            } else {
                Flow::Done
            });
        }
        _ => {}
    }
    if emask == 0 {
        w.advance();
        return Ok(Flow::Done);
    }
    let flow = compute(x, w, c, emask)?;
    w.advance();
    Ok(flow)
}

fn branch(w: &mut Warp, x: &Inst, taken: u32, active: u32) {
    let nt = active & !taken;
    let Some(top) = w.stack.last_mut() else {
        return;
    };
    if taken == 0 {
        w.advance();
        return;
    }
    if nt == 0 {
        top.pc = x.target;
        w.normalize();
        return;
    }
    let pc = top.pc;
    let rpc = x.reconv;
    if top.rpc == rpc {
        w.stack.pop();
    } else {
        top.pc = rpc;
    }
    if pc + 1 != rpc {
        w.stack.push(Entry {
            pc: pc + 1,
            rpc,
            mask: nt,
        });
    }
    if x.target != rpc {
        w.stack.push(Entry {
            pc: x.target,
            rpc,
            mask: taken,
        });
    }
    w.normalize();
}

#[allow(clippy::needless_range_loop)]
fn compute(x: &Inst, w: &mut Warp, c: &mut Ctx, m: u32) -> Faulty<Flow> {
    let mut r = [0u64; 32];
    let ty = x.ty;
    let tm = ty.mask();
    let bits = ty.bits();
    let fl = ty.is_float();
    match x.op {
        Op::Ld | Op::St | Op::Atom | Op::Red => return memory(x, w, c, m),
        Op::Tex => return texture(x, w, c, m),
        _ => {}
    }
    // Register operands are borrowed in place (no 256-byte copy); only other operands fill a
    // buffer, and a missing operand reads zeros from a shared array — so no buffer is zeroed
    // per instruction when every source is a register.
    let (mut ta, mut tb, mut tc): ([u64; 32], [u64; 32], [u64; 32]);
    macro_rules! operand {
        ($k:expr, $tmp:ident) => {
            if x.ns as usize > $k {
                match c.reg_row(x.s[$k], w) {
                    Some(row) => row,
                    None => {
                        // Filled in place: returning a 256-byte array by value costs a memcpy.
                        if let Opnd::Imm(v) = x.s[$k] {
                            $tmp = [v; 32];
                        } else {
                            $tmp = [0u64; 32];
                            c.fetch(x.s[$k], w, &mut $tmp);
                        }
                        &$tmp
                    }
                }
            } else {
                &ZERO_LANES
            }
        };
    }
    let a: &[u64; 32] = operand!(0, ta);
    let b: &[u64; 32] = operand!(1, tb);
    let cc: &[u64; 32] = operand!(2, tc);
    let plain_f32 = ty == Ty::F32 && !x.ftz && !x.sat && matches!(x.rnd, Rnd::None | Rnd::Rn);
    let ext = |v: u64| ty.extend(v);
    match x.op {
        Op::Mov => {
            let a = *a;
            put(
                &mut w.regs,
                x.d[0],
                m,
                &a,
                if ty == Ty::Pred { 1 } else { tm },
            );
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
                put(&mut w.regs, x.d[k], m, &r, em);
            }
            return Ok(Flow::Done);
        }
        Op::Add if plain_f32 => map!(r, |l| b32(f32v(a[l]) + f32v(b[l]))),
        Op::Sub if plain_f32 => map!(r, |l| b32(f32v(a[l]) - f32v(b[l]))),
        Op::Mul if plain_f32 => map!(r, |l| b32(f32v(a[l]) * f32v(b[l]))),
        Op::Fma if plain_f32 && x.sub == 0 => {
            map!(r, |l| b32(f32v(a[l]).mul_add(f32v(b[l]), f32v(cc[l]))))
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
        Op::AddCc
        | Op::AddC
        | Op::SubCc
        | Op::SubC
        | Op::MadLoCc
        | Op::MadCLo
        | Op::MadHiCc
        | Op::MadCHi => {
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
            put(&mut w.regs, x.d[0], m, &r, wm);
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
            put(&mut w.regs, x.d[0], m, &r, 1);
            return Ok(Flow::Done);
        }
        Op::Setp => {
            let mut q = [0u64; 32];
            if !compare_fast(x.ty2, x.cmp, a, b, &mut r) {
                for l in 0..32 {
                    r[l] = compare(x.ty2, x.cmp, a[l], b[l]) as u64;
                }
            }
            if x.bop == BoolOp::None && x.nd == 1 {
                put(&mut w.regs, x.d[0], m, &r, 1);
                return Ok(Flow::Done);
            }
            for l in 0..32 {
                let res = r[l] == 1;
                let cv = cc[l] & 1 == 1;
                r[l] = combine(x.bop, res, cv) as u64;
                q[l] = combine(x.bop, !res, cv) as u64;
            }
            put(&mut w.regs, x.d[0], m, &r, 1);
            if x.nd > 1 {
                put(&mut w.regs, x.d[1], m, &q, 1);
            }
            return Ok(Flow::Done);
        }
        Op::Set => {
            for l in 0..32 {
                let res = combine(x.bop, compare(x.ty2, x.cmp, a[l], b[l]), cc[l] & 1 == 1);
                r[l] = match ty {
                    Ty::F32 => b32(if res { 1.0 } else { 0.0 }),
                    _ => {
                        if res {
                            tm
                        } else {
                            0
                        }
                    }
                };
            }
        }
        Op::Selp => map!(r, |l| if cc[l] & 1 == 1 { a[l] } else { b[l] }),
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
                put(&mut w.regs, x.d[0], m, &r, u64::MAX);
                return Ok(Flow::Done);
            }
            map!(r, |l| numeric::cvt(x, a[l]));
            put(&mut w.regs, x.d[0], m, &r, if fl { tm } else { u64::MAX });
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
            put(&mut w.regs, x.d[0], m, &r, 1);
            return Ok(Flow::Done);
        }
        Op::Shfl => {
            let mut mm = [0u64; 32];
            c.fetch(x.s[3], w, &mut mm);
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
                r[l] = a[j as usize];
                p[l] = ok as u64;
            }
            put(&mut w.regs, x.d[0], m, &r, 0xFFFF_FFFF);
            if x.nd > 1 {
                put(&mut w.regs, x.d[1], m, &p, 1);
            }
            return Ok(Flow::Done);
        }
        Op::Vote => {
            let mut ballot = 0u32;
            each_lane!(m, l, {
                ballot |= ((a[l] & 1) as u32) << l;
            });
            let v = match x.sub {
                0 => (ballot == m) as u64,
                1 => (ballot != 0) as u64,
                2 => (ballot == m || ballot == 0) as u64,
                _ => ballot as u64,
            };
            r.fill(v);
            put(
                &mut w.regs,
                x.d[0],
                m,
                &r,
                if x.sub == 3 { 0xFFFF_FFFF } else { 1 },
            );
            return Ok(Flow::Done);
        }
        Op::Activemask => r.fill(m as u64),
        Op::Redux => {
            // Member lanes that execute it; every one of them gets the same result.
            let members = (b[m.trailing_zeros() as usize] as u32) & m;
            let signed = ty.is_signed();
            let mut acc: Option<u64> = None;
            each_lane!(members, j, {
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
            });
            r.fill(acc.unwrap_or(0));
        }
        Op::Elect => {
            let members = (a[m.trailing_zeros() as usize] as u32) & m;
            let leader = members.trailing_zeros();
            r.fill(u64::from(leader));
            put(&mut w.regs, x.d[0], m, &r, 0xFFFF_FFFF);
            if x.nd > 1 {
                let mut p = [0u64; 32];
                for (l, v) in p.iter_mut().enumerate() {
                    *v = (l as u32 == leader) as u64;
                }
                put(&mut w.regs, x.d[1], m, &p, 1);
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
            each_lane!(m, l, {
                let members = (b[l] as u32) & m;
                let mut same = 0u32;
                each_lane!(members, j, {
                    if vm(a[j]) == vm(a[l]) {
                        same |= 1 << j;
                    }
                });
                if x.sub == 0 {
                    r[l] = same as u64;
                } else {
                    let all = same == members;
                    r[l] = if all { members as u64 } else { 0 };
                    p[l] = all as u64;
                }
            });
            put(&mut w.regs, x.d[0], m, &r, 0xFFFF_FFFF);
            if x.nd > 1 {
                put(&mut w.regs, x.d[1], m, &p, 1);
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
                each_lane!(m, l, {
                    ballot |= ((cc[l] & 1) as u32) << l;
                });
                match x.sub {
                    2 => (1, ballot.count_ones()),
                    3 => (2, (ballot == m) as u32),
                    _ => (3, (ballot != 0) as u32),
                }
            } else {
                (0, 0)
            };
            let dst = match x.d[0] {
                Opnd::Reg(r) if x.sub >= 2 => Some(r),
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
    put(
        &mut w.regs,
        x.d[0],
        m,
        &r,
        if ty == Ty::Pred { 1 } else { tm },
    );
    Ok(Flow::Done)
}

fn a_count(x: &Inst, w: &Warp, c: &Ctx) -> Faulty<u32> {
    let mut v = [0u64; 32];
    c.fetch(x.s[1], w, &mut v);
    Ok(v[0] as u32)
}

/// The most frequent memory instruction (`ld.shared` of one element) without the general
/// path's per-lane space dispatch.
fn load_shared_scalar(
    x: &Inst,
    w: &mut Warp,
    c: &mut Ctx,
    m: u32,
    base: &[u64; 32],
    eb: usize,
) -> Faulty<Flow> {
    let mut vals = [0u64; 32];
    let len = c.shared.len() as u64;
    each_lane!(m, l, {
        let mut addr = base[l].wrapping_add(x.off as u64);
        if (SHARED_WINDOW..SHARED_WINDOW + WINDOW_BYTES).contains(&addr) {
            addr -= SHARED_WINDOW;
        } else {
            addr = window_offset(addr);
        }
        if addr & (eb as u64 - 1) != 0 {
            return fault(l as u32, format!("misaligned {eb}-byte load at {addr:#x}"));
        }
        if addr.saturating_add(eb as u64) > len {
            return fault(
                l as u32,
                format!(
                    "shared access of {eb} bytes at offset {addr:#x} is out of bounds ({len} bytes)"
                ),
            );
        }
        let o = addr as usize;
        vals[l] = x.ty.extend(le_bytes(&c.shared[o..o + eb]));
        c.lanes.push((l as u8, addr));
    });
    put(
        &mut w.regs,
        x.d[0],
        m,
        &vals,
        if x.ty == Ty::Pred { 1 } else { u64::MAX },
    );
    Ok(Flow::Mem {
        space: Space::Shared,
        kind: AccessKind::Load,
        bytes_per_lane: eb as u32,
        readonly: false,
    })
}

#[allow(clippy::needless_range_loop)] // lane and element indices address parallel arrays
fn memory(x: &Inst, w: &mut Warp, c: &mut Ctx, m: u32) -> Faulty<Flow> {
    let mut base = [0u64; 32];
    c.fetch(x.a, w, &mut base);
    let eb = x.ty.bytes().max(1) as usize;
    let vec = x.vec.max(1) as usize;
    let total = eb * vec;
    c.lanes.clear();
    let mut space = None;
    let ld_mask = if x.ty == Ty::Pred { 1 } else { u64::MAX };
    if x.op == Op::Ld && vec == 1 && x.space == Sp::Shared && eb <= 8 {
        return load_shared_scalar(x, w, c, m, &base, eb);
    }
    match x.op {
        Op::Ld => {
            let mut vals = [[0u64; 32]; 4];
            each_lane!(m, l, {
                let addr = base[l].wrapping_add(x.off as u64);
                if addr & (total.min(16) as u64 - 1) != 0 {
                    return fault(
                        l as u32,
                        format!("misaligned {total}-byte load at {addr:#x}"),
                    );
                }
                let t = c.resolve(x.space, addr, l, total)?;
                space.get_or_insert(space_of(&t));
                c.lanes.push((l as u8, c.timing_addr(&t, w, l)));
                for k in 0..vec {
                    vals[k][l] = x.ty.extend(c.read(w, &t.offset(k * eb), eb, l)?);
                }
            });
            for k in 0..vec {
                put(&mut w.regs, x.d[k], m, &vals[k], ld_mask);
            }
            let sp = space.unwrap_or(Space::Global);
            let readonly = x.nc || x.space == Sp::Const || sp == Space::Param;
            let sp = if x.space == Sp::Const {
                Space::Const
            } else {
                sp
            };
            Ok(Flow::Mem {
                space: sp,
                kind: AccessKind::Load,
                bytes_per_lane: total as u32,
                readonly,
            })
        }
        Op::St => {
            let mut vals = [[0u64; 32]; 4];
            for k in 0..vec {
                c.fetch(x.s[k], w, &mut vals[k]);
            }
            each_lane!(m, l, {
                let addr = base[l].wrapping_add(x.off as u64);
                if addr & (total.min(16) as u64 - 1) != 0 {
                    return fault(
                        l as u32,
                        format!("misaligned {total}-byte store at {addr:#x}"),
                    );
                }
                let t = c.resolve(x.space, addr, l, total)?;
                space.get_or_insert(space_of(&t));
                c.lanes.push((l as u8, c.timing_addr(&t, w, l)));
                for k in 0..vec {
                    c.write(w, &t.offset(k * eb), eb, l, vals[k][l])?;
                }
            });
            Ok(Flow::Mem {
                space: space.unwrap_or(Space::Global),
                kind: AccessKind::Store,
                bytes_per_lane: total as u32,
                readonly: false,
            })
        }
        _ => {
            let mut bv = [0u64; 32];
            let mut cv = [0u64; 32];
            c.fetch(x.s[0], w, &mut bv);
            if x.ns > 1 {
                c.fetch(x.s[1], w, &mut cv);
            }
            let mut old = [0u64; 32];
            let ty = x.ty;
            each_lane!(m, l, {
                let addr = base[l].wrapping_add(x.off as u64);
                if addr & (eb as u64 - 1) != 0 {
                    return fault(
                        l as u32,
                        format!("misaligned {eb}-byte atomic at {addr:#x}"),
                    );
                }
                let t = c.resolve(x.space, addr, l, eb)?;
                space.get_or_insert(space_of(&t));
                c.lanes.push((l as u8, c.timing_addr(&t, w, l)));
                let o = c.read(w, &t, eb, l)?;
                let (p, q) = (bv[l], cv[l]);
                let tm = ty.mask();
                let new = match x.atom {
                    AtomOp::Add => {
                        if ty.is_float() {
                            let mut h = Inst::new(Op::Add, x.line);
                            h.ty = ty;
                            float_op(&h, o, p, 0)
                        } else {
                            o.wrapping_add(p)
                        }
                    }
                    AtomOp::Min | AtomOp::Max => {
                        let lt = if ty.is_float() {
                            float_to_f64(ty, p) < float_to_f64(ty, o)
                        } else if ty.is_signed() {
                            (ty.extend(p) as i64) < (ty.extend(o) as i64)
                        } else {
                            (p & tm) < (o & tm)
                        };
                        let take = if x.atom == AtomOp::Min {
                            lt
                        } else {
                            !lt && p & tm != o & tm
                        };
                        if take { p } else { o }
                    }
                    AtomOp::Inc => {
                        if (o & tm) >= (p & tm) {
                            0
                        } else {
                            o + 1
                        }
                    }
                    AtomOp::Dec => {
                        if (o & tm) == 0 || (o & tm) > (p & tm) {
                            p
                        } else {
                            o - 1
                        }
                    }
                    AtomOp::Cas => {
                        if (o & tm) == (p & tm) {
                            q
                        } else {
                            o
                        }
                    }
                    AtomOp::Exch => p,
                    AtomOp::And => o & p,
                    AtomOp::Or => o | p,
                    AtomOp::Xor => o ^ p,
                };
                c.write(w, &t, eb, l, new & tm)?;
                old[l] = o;
            });
            if x.op == Op::Atom {
                put(&mut w.regs, x.d[0], m, &old, ty.mask());
            }
            Ok(Flow::Mem {
                space: space.unwrap_or(Space::Global),
                kind: AccessKind::Atomic,
                bytes_per_lane: eb as u32,
                readonly: false,
            })
        }
    }
}

#[allow(clippy::needless_range_loop)] // lane and element indices address parallel arrays
fn texture(x: &Inst, w: &mut Warp, c: &mut Ctx, m: u32) -> Faulty<Flow> {
    let mut h = [0u64; 32];
    c.fetch(x.a, w, &mut h);
    let mut co = [[0u64; 32]; 4];
    for k in 0..x.ns as usize {
        c.fetch(x.s[k], w, &mut co[k]);
    }
    let mut out = [[0u64; 32]; 4];
    c.lanes.clear();
    let mut texel_bytes = 4;
    each_lane!(m, l, {
        let idx = h[l].wrapping_sub(HANDLE_BASE);
        let Some(tex) = c.textures.get(idx as usize) else {
            return fault(
                l as u32,
                format!("{:#x} is not a texture object handle", h[l]),
            );
        };
        texel_bytes = tex.desc.texel_bytes() as u32;
        c.texaddrs.clear();
        let int_coords = !x.ty2.is_float();
        let v = if int_coords && x.sub == 1 {
            tex.fetch_int(c.dev, co[0][l] as u32 as i32 as i64, c.texaddrs)
        } else {
            let f = |k: usize| {
                if int_coords {
                    co[k][l] as u32 as i32 as f32
                } else {
                    f32v(co[k][l])
                }
            };
            let mut p = [0.0f32; 3];
            for (k, slot) in p.iter_mut().enumerate().take((x.sub as usize).min(3)) {
                *slot = f(k);
            }
            tex.sample(c.dev, p, c.texaddrs)
        };
        let v = v.map_err(|what| Fault {
            lane: l as u32,
            what,
        })?;
        for &a in c.texaddrs.iter() {
            c.lanes.push((l as u8, a));
        }
        for k in 0..4 {
            out[k][l] = if x.ty == Ty::F32 {
                b32(v[k])
            } else if x.ty.is_signed() {
                v[k] as i32 as u32 as u64
            } else {
                v[k] as u32 as u64
            };
        }
    });
    for k in 0..x.nd as usize {
        put(&mut w.regs, x.d[k], m, &out[k], 0xFFFF_FFFF);
    }
    Ok(Flow::Mem {
        space: Space::Texture,
        kind: AccessKind::Load,
        bytes_per_lane: texel_bytes,
        readonly: true,
    })
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
                    let mut r = [0u64; 32];
                    if compare_fast(ty, cmp, &a, &b, &mut r) {
                        for l in 0..32 {
                            assert_eq!(
                                r[l] == 1,
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
