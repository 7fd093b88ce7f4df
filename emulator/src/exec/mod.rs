//! Functional execution of one warp instruction: operands gathered into `[u64; 32]` lane arrays,
//! one tight loop per operation, results written back under the active mask; plus the SIMT
//! reconvergence stack. Predicates are masks, one bit a lane (`Warp::preds`): a guard reads one
//! word, a `setp` writes one, where a row of 32 values took 32 reads or writes.
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
//!
//! Files: `simt` (the warp and its reconvergence stack, branches), `alu` (every non-memory
//! operation), `mem` (loads, stores, atomics and their address resolution), `tex` (texture
//! fetches); this file holds what they share — the context, operand fetch and write-back.

macro_rules! map {
    ($r:ident, |$l:ident| $e:expr) => {
        for $l in 0..32 {
            $r[$l] = $e;
        }
    };
}

/// Operand `$o` of an instruction as a row of 32 lane values: a register's row borrowed in
/// place (no 256-byte copy), any other operand filled into `$tmp`, a declared but uninitialised
/// `[u64; 32]` of the caller's, so that no buffer is zeroed when the operand is a register.
/// With `$present` false, the shared row of zeros. Filled in place because returning a
/// 256-byte array by value costs a memcpy.
macro_rules! operand_row {
    ($c:expr, $w:expr, $o:expr, $present:expr, $tmp:ident) => {
        if !$present {
            &ZERO_LANES
        } else {
            match $c.reg_row($o, $w) {
                Some(row) => row,
                None => {
                    if let Opnd::Imm(v) = $o {
                        $tmp = [v; 32];
                    } else {
                        $tmp = [0u64; 32];
                        $c.fetch($o, $w, &mut $tmp);
                    }
                    &$tmp
                }
            }
        }
    };
}

mod alu;
mod mem;
mod simt;
mod tex;

use crate::bits::set_bits;
use crate::devmem::{DeviceMemory, WriteLog};
use crate::ir::*;
use crate::memory::{AccessKind, LoadPath, Space};
use crate::texture::{Texture, WarpSamples};

use alu::compute;
pub(crate) use mem::atomic_value;
use simt::branch;
pub(crate) use simt::{Entry, Warp};

pub(crate) const FULL: u32 = u32::MAX;

/// The lane values of an absent operand.
static ZERO_LANES: [u64; 32] = [0; 32];

/// What every instruction of a round reads and none changes, set once per round so that an
/// issue builds only the few fields of [`Ctx`] that vary.
pub(crate) struct Fixed<'a> {
    /// Read-only while SMs run: global writes go to `Ctx::writes` (devmem.rs).
    pub dev: &'a DeviceMemory,
    pub textures: &'a [Texture],
    pub params: &'a [u8],
    pub local_bytes: u32,
    pub ntid: [u32; 3],
    pub nctaid: [u32; 3],
    pub nsm: u32,
    pub max_warps: u32,
    pub clock_mhz: f64,
    pub dyn_smem: u32,
}

/// Everything an instruction may touch besides its warp.
pub(crate) struct Ctx<'a> {
    pub fixed: &'a Fixed<'a>,
    pub writes: &'a mut WriteLog,
    /// The SM's L2 request count: orders this instruction's writes among other SMs'.
    pub seq: u64,
    pub shared: &'a mut [u8],
    pub block: [u32; 3],
    pub smid: u32,
    pub now: u64,
    /// Out: `(lane, address)` of each access, for the memory model.
    pub lanes: &'a mut Vec<(u8, u64)>,
    /// Scratch for a volume fetch's lanes; every lane a fetch samples is written before it is
    /// read, so what an earlier fetch left never reaches a result.
    pub samples: &'a mut WarpSamples,
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
        path: LoadPath,
        /// Lanes whose texels one texture-cache lookup serves ([`MemRequest::lookup_lanes`]).
        lookup_lanes: u8,
    },
    /// Arrived at a barrier. `expected` threads (0 = the whole block); for `bar.red`, `red` is
    /// 1 popc, 2 and, 3 or, with this warp's contribution and the destination register.
    Bar {
        id: u32,
        expected: u32,
        red: u8,
        contrib: u32,
        /// The register or predicate the reduction's result goes to (`Warp::fill`).
        dst: Option<Opnd>,
    },
    /// The warp has no live lanes left.
    Exited,
    /// An integer `div` or `rem`, which the timing model may charge as the sequence a GPU runs
    /// for it (`pipeline.int_division`).
    Division(Division),
}

/// What decides an integer division's sequence on a GPU: its type, and for a 64-bit one which
/// of the two paths its lanes need (some lane's operands wider than 32 bits, some lane's not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Division {
    pub signed: bool,
    pub bits64: bool,
    pub wide: bool,
    pub narrow: bool,
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

impl Ctx<'_> {
    /// The special register `s` of all 32 lanes: the register is chosen once, and only the
    /// lane-dependent ones compute per lane.
    fn sreg_row(&self, s: Sreg, w: &Warp, out: &mut [u64; 32]) {
        let tid = |l: usize| w.wib * 32 + l as u32;
        let [nx, ny, _] = self.fixed.ntid;
        let (nx, ny) = (nx.max(1), ny.max(1));
        let uniform = match s {
            Sreg::Tid(0) => {
                map!(out, |l| (tid(l) % nx) as u64);
                return;
            }
            Sreg::Tid(1) => {
                map!(out, |l| ((tid(l) / nx) % ny) as u64);
                return;
            }
            Sreg::Tid(_) => {
                map!(out, |l| (tid(l) / (nx * ny)) as u64);
                return;
            }
            Sreg::Laneid => {
                map!(out, |l| l as u64);
                return;
            }
            Sreg::LanemaskEq => {
                map!(out, |l| 1u64 << l);
                return;
            }
            Sreg::LanemaskLt => {
                map!(out, |l| (1u64 << l) - 1);
                return;
            }
            Sreg::LanemaskLe => {
                map!(out, |l| (2u64 << l) - 1);
                return;
            }
            Sreg::LanemaskGt => {
                map!(out, |l| !((2u64 << l) - 1) & 0xFFFF_FFFF);
                return;
            }
            Sreg::LanemaskGe => {
                map!(out, |l| !((1u64 << l) - 1) & 0xFFFF_FFFF);
                return;
            }
            Sreg::Ntid(d) => self.fixed.ntid[d as usize] as u64,
            Sreg::Ctaid(d) => self.block[d as usize] as u64,
            Sreg::Nctaid(d) => self.fixed.nctaid[d as usize] as u64,
            Sreg::Warpid => w.slot as u64,
            Sreg::Nwarpid => self.fixed.max_warps as u64,
            Sreg::Smid => self.smid as u64,
            Sreg::Nsmid => self.fixed.nsm as u64,
            Sreg::Clock => self.now & 0xFFFF_FFFF,
            Sreg::ClockHi => self.now >> 32,
            Sreg::Clock64 => self.now,
            Sreg::Globaltimer | Sreg::GlobaltimerLo | Sreg::GlobaltimerHi => {
                let ns = (self.now as f64 * 1000.0 / self.fixed.clock_mhz.max(1e-9)) as u64;
                match s {
                    Sreg::GlobaltimerLo => ns & 0xFFFF_FFFF,
                    Sreg::GlobaltimerHi => ns >> 32,
                    _ => ns,
                }
            }
            Sreg::Gridid => 0,
            Sreg::DynSmem => self.fixed.dyn_smem as u64,
            Sreg::TotalSmem => self.shared.len() as u64,
        };
        out.fill(uniform);
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
            Opnd::Pred(p) => map!(out, |l| u64::from(w.preds[p as usize] >> l & 1)),
            Opnd::NotPred(p) => map!(out, |l| u64::from(!w.preds[p as usize] >> l & 1)),
            Opnd::Imm(v) => out.fill(v),
            Opnd::Sreg(s) => self.sreg_row(s, w, out),
            Opnd::None | Opnd::Sym(_) => out.fill(0),
        }
    }

    /// Operand `o` as a predicate: bit `lane` of the result is the lane's value's low bit.
    #[inline]
    fn mask_of(&self, o: Opnd, w: &Warp) -> u32 {
        match o {
            Opnd::Pred(p) => w.preds[p as usize],
            Opnd::NotPred(p) => !w.preds[p as usize],
            Opnd::Imm(v) => {
                if v & 1 == 1 {
                    FULL
                } else {
                    0
                }
            }
            o => {
                let mut row = [0u64; 32];
                self.fetch(o, w, &mut row);
                (0..32).fold(0, |bits, l| bits | if row[l] & 1 == 1 { 1 << l } else { 0 })
            }
        }
    }
}

#[inline]
fn put(w: &mut Warp, d: Opnd, mask: u32, vals: &[u64; 32], m: u64) {
    put_lanes(w, d, mask, |l| vals[l] & m);
}

/// Writes `value(lane)` into register operand `d` for the lanes of `mask`: every lane in one
/// fixed loop when the mask is full, else lane by lane. A predicate takes each value's low bit.
#[inline(always)]
fn put_lanes(w: &mut Warp, d: Opnd, mask: u32, value: impl Fn(usize) -> u64) {
    match d {
        Opnd::Reg(r) => {
            let row = &mut w.regs[r as usize * 32..r as usize * 32 + 32];
            if mask == FULL {
                for (l, slot) in row.iter_mut().enumerate() {
                    *slot = value(l);
                }
            } else {
                for l in set_bits(mask) {
                    row[l] = value(l);
                }
            }
        }
        Opnd::Pred(_) => {
            let bits = set_bits(mask).fold(0u32, |b, l| b | ((value(l) & 1) as u32) << l);
            put_bits(w, d, mask, bits);
        }
        _ => {}
    }
}

/// Writes the lanes' bits `bits` into operand `d` for the lanes of `mask`: a predicate's mask
/// in one step, a value register as 0 or 1 per lane.
#[inline]
fn put_bits(w: &mut Warp, d: Opnd, mask: u32, bits: u32) {
    match d {
        Opnd::Pred(p) => {
            let v = &mut w.preds[p as usize];
            *v = (*v & !mask) | (bits & mask);
        }
        Opnd::Reg(r) => {
            let row = &mut w.regs[r as usize * 32..r as usize * 32 + 32];
            for l in set_bits(mask) {
                row[l] = u64::from(bits >> l & 1);
            }
        }
        _ => {}
    }
}

impl Warp {
    /// Writes `v` into every lane of register operand `d`, a predicate taking its low bit: a
    /// barrier reduction's result, which the whole warp receives at the release.
    pub(crate) fn fill(&mut self, d: Opnd, v: u64) {
        match d {
            Opnd::Reg(r) => {
                if let Some(row) = self.regs.get_mut(r as usize * 32..r as usize * 32 + 32) {
                    row.fill(v);
                }
            }
            Opnd::Pred(_) => put_bits(self, d, FULL, if v & 1 == 1 { FULL } else { 0 }),
            _ => {}
        }
    }
}

/// Executes the instruction at the warp's pc. `x` must be `prog.exec[w.pc()]` (registers are
/// value rows).
pub(crate) fn exec(x: &Inst, w: &mut Warp, c: &mut Ctx) -> Faulty<Flow> {
    let active = w.active();
    let emask = match x.guard {
        Opnd::Pred(p) => active & w.preds[p as usize],
        Opnd::NotPred(p) => active & !w.preds[p as usize],
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
