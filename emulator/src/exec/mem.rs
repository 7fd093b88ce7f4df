//! Loads, stores, atomics and reductions: each lane's address resolved to its state space,
//! done functionally at issue, with the lane addresses left in `Ctx::lanes` for the timing model.

use super::{Ctx, FULL, Faulty, Flow, Warp, fault, put};
use crate::bits::set_bits;
use crate::devmem::{LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW, WINDOW_BYTES, WriteKind, le_bytes};
use crate::ir::*;
use crate::memory::{AccessKind, LoadPath, QUAD, Space};
use crate::numeric::{float_op, float_to_f64};

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

/// The offset in a state space of `addr`, a generic address inside the space's generic window
/// (which starts at `window`) or else a state-space address. Written without a branch on the
/// window, so that a loop over a warp's lanes stays one vector loop.
#[inline(always)]
fn space_offset(addr: u64, window: u64) -> u64 {
    if addr.wrapping_sub(window) < WINDOW_BYTES {
        addr - window
    } else {
        window_offset(addr)
    }
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
                let off = space_offset(addr, SHARED_WINDOW);
                Ok(Target::Shared(check(off, self.shared.len(), "shared")?))
            }
            Sp::Local => {
                let off = space_offset(addr, LOCAL_WINDOW);
                let o = check(off, self.fixed.local_bytes as usize, "local")?;
                Ok(Target::Local(lane * self.fixed.local_bytes as usize + o))
            }
            Sp::Param => {
                let off = space_offset(addr, PARAM_WINDOW);
                Ok(Target::Param(check(off, self.fixed.params.len(), "param")?))
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

    /// Lane `l`'s access of `len` bytes for `x` (`what`: load, store or atomic): its address
    /// `base + x.off`, checked to be aligned to `align` bytes, resolved to its state space, the
    /// space noted in `space` (the first lane's) and the timing address pushed to `lanes`.
    #[allow(clippy::too_many_arguments)] // one lane of one instruction: all of it is needed
    #[inline(always)]
    fn lane_target(
        &mut self,
        x: &Inst,
        w: &Warp,
        base: u64,
        l: usize,
        align: usize,
        len: usize,
        what: &str,
        space: &mut Option<Space>,
    ) -> Faulty<Target> {
        let addr = base.wrapping_add(x.off as u64);
        if addr & (align as u64 - 1) != 0 {
            return fault(
                l as u32,
                format!("misaligned {len}-byte {what} at {addr:#x}"),
            );
        }
        let t = self.resolve(x.space, addr, l, len)?;
        space.get_or_insert(space_of(&t));
        self.lanes.push((l as u8, self.timing_addr(&t, w, l)));
        Ok(t)
    }

    /// The address the memory model sees for this access.
    fn timing_addr(&self, t: &Target, w: &Warp, lane: usize) -> u64 {
        match *t {
            Target::Global(a) => a,
            Target::Shared(o) => o as u64,
            Target::Param(o) => o as u64,
            Target::Local(i) => {
                // local memory is interleaved per 4-byte word across the warp's lanes, as on GPUs
                let lb = self.fixed.local_bytes.max(1) as u64;
                let off = i as u64 - lane as u64 * lb;
                let warp_base =
                    (self.smid as u64 * self.fixed.max_warps as u64 + w.slot as u64) * lb * 32;
                LOCAL_WINDOW + warp_base + (off / 4) * 128 + lane as u64 * 4 + off % 4
            }
        }
    }

    fn read(&self, w: &Warp, t: &Target, len: usize, lane: usize) -> Faulty<u64> {
        let src: &[u8] = match *t {
            Target::Global(a) => {
                return match self.writes.read(self.fixed.dev, a, len) {
                    Some(v) => Ok(v),
                    None => fault(
                        lane as u32,
                        format!("load of {len} bytes at {a:#x} outside any allocation"),
                    ),
                };
            }
            Target::Shared(o) => &self.shared[o..o + len],
            Target::Local(o) => &w.local[o..o + len],
            Target::Param(o) => &self.fixed.params[o..o + len],
        };
        Ok(le_bytes(src))
    }

    fn write(&mut self, w: &mut Warp, t: &Target, len: usize, lane: usize, v: u64) -> Faulty<()> {
        let dst: &mut [u8] = match *t {
            Target::Global(a) => {
                if self.fixed.dev.slice(a, len).is_none() {
                    return fault(
                        lane as u32,
                        format!("store of {len} bytes at {a:#x} outside any allocation"),
                    );
                }
                self.writes.store(self.now, self.seq, a, len, v);
                return Ok(());
            }
            Target::Shared(o) => &mut self.shared[o..o + len],
            Target::Local(o) => &mut w.local[o..o + len],
            Target::Param(_) => return fault(lane as u32, "store to kernel parameter space"),
        };
        put_le_bytes(dst, v);
        Ok(())
    }
}

/// The value an atomic `op` of type `ty` leaves in memory that held `o`, with operands `p`
/// (and `q` for compare-and-swap), masked to the type's width.
pub(crate) fn atomic_value(op: AtomOp, ty: Ty, line: u32, o: u64, p: u64, q: u64) -> u64 {
    let tm = ty.mask();
    let new = match op {
        AtomOp::Add => {
            if ty.is_float() {
                let mut h = Inst::new(Op::Add, line);
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
            let take = if op == AtomOp::Min {
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
    new & tm
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

/// Lane `l`'s offset in shared memory for an `eb`-byte scalar access (`what`: load or store)
/// at state-space address `addr`, checked for alignment and bounds (`len` bytes).
#[inline(always)]
fn shared_scalar_offset(addr: u64, l: usize, eb: usize, len: u64, what: &str) -> Faulty<usize> {
    let addr = space_offset(addr, SHARED_WINDOW);
    if addr & (eb as u64 - 1) != 0 {
        return fault(
            l as u32,
            format!("misaligned {eb}-byte {what} at {addr:#x}"),
        );
    }
    if addr.saturating_add(eb as u64) > len {
        return fault(
            l as u32,
            format!(
                "shared access of {eb} bytes at offset {addr:#x} is out of bounds ({len} bytes)"
            ),
        );
    }
    Ok(addr as usize)
}

/// Every lane's offset in shared memory for an `N`-byte scalar access of all 32 lanes at
/// state-space addresses `addr(lane)`, as [`shared_scalar_offset`] gives it, or `None` when a
/// lane's access is misaligned or out of bounds (`len` bytes), which the lane loop then names.
/// Why a pass of its own: checked lane by lane, each access is a chain of branches; here the
/// lanes' checks are folded into one flag, and a full warp is the common shared access.
/// The offsets come as the memory model's `(lane, offset)` pairs, so that they reach it in one
/// copy.
#[inline(always)]
fn full_warp_shared_offsets<const N: usize>(
    addr: impl Fn(usize) -> u64,
    len: u64,
) -> Option<[(u8, u64); 32]> {
    let mut offsets: [(u8, u64); 32] = std::array::from_fn(|l| (l as u8, 0));
    // Addresses below 2^32 are their own offsets (`space_offset`), and are the rule: nvcc forms
    // them in 32-bit registers. Their bits and their largest decide alignment and bounds for
    // every lane at once; a lane of the generic window sends the warp to the full pass.
    let (mut bits, mut last) = (0u64, 0u64);
    for (l, (_, slot)) in offsets.iter_mut().enumerate() {
        let a = addr(l);
        bits |= a;
        last = last.max(a);
        *slot = a;
    }
    if bits >> 32 != 0 {
        (bits, last) = (0, 0);
        for (_, slot) in &mut offsets {
            let o = space_offset(*slot, SHARED_WINDOW);
            bits |= o;
            last = last.max(o);
            *slot = o;
        }
    }
    (bits & (N as u64 - 1) == 0 && last + N as u64 <= len).then_some(offsets)
}

/// `st.shared` of one element from registers, lane by lane like a load:
/// addresses in register row `a`, values in row `v` (indices into the register file).
fn store_shared_scalar(
    x: &Inst,
    w: &Warp,
    c: &mut Ctx,
    m: u32,
    eb: usize,
    rows: (usize, usize),
) -> Faulty<()> {
    // The element size chosen once: each lane's write is then a fixed-size copy.
    match eb {
        1 => store_shared::<1>(x, w, c, m, rows),
        2 => store_shared::<2>(x, w, c, m, rows),
        4 => store_shared::<4>(x, w, c, m, rows),
        _ => store_shared::<8>(x, w, c, m, rows),
    }
}

/// [`store_shared_scalar`] of `N`-byte elements (1, 2, 4 or 8). The copy is written out for
/// `N` rather than through `put_le_bytes` (and the load's through `le_bytes`): their match on
/// the slice length stays in the lane loop even here, 1.5 % of tiled matmul's host
/// instructions.
#[inline(always)]
fn store_shared<const N: usize>(
    x: &Inst,
    w: &Warp,
    c: &mut Ctx,
    m: u32,
    (a, v): (usize, usize),
) -> Faulty<()> {
    let len = c.shared.len() as u64;
    for l in set_bits(m) {
        let addr = w.regs[a + l].wrapping_add(x.off as u64);
        let o = shared_scalar_offset(addr, l, N, len, "store")?;
        c.shared[o..o + N].copy_from_slice(&w.regs[v + l].to_le_bytes()[..N]);
        c.lanes.push((l as u8, o as u64));
    }
    Ok(())
}

pub(super) fn memory(x: &Inst, w: &mut Warp, c: &mut Ctx, m: u32) -> Faulty<Flow> {
    c.lanes.clear();
    match x.op {
        Op::Ld => load(x, w, c, m),
        Op::St => store(x, w, c, m),
        _ => atomic(x, w, c, m),
    }
}

/// A load's lanes, read lane by lane straight into the destination registers: lane `l`'s
/// address is `base(regs, l)`, from the register file itself when the address is a register,
/// so no operand or result array is copied or zeroed. Right even when a destination is the
/// address register, since a lane reads only its own address, before its own writes; a fault
/// ends the launch, so lanes written before it do not matter.
fn load(x: &Inst, w: &mut Warp, c: &mut Ctx, m: u32) -> Faulty<Flow> {
    if let Opnd::Reg(r) = x.a {
        let r = r as usize * 32;
        load_lanes(x, w, c, m, |regs, l| regs[r + l])
    } else {
        let mut base = [0u64; 32];
        c.fetch(x.a, w, &mut base);
        load_lanes(x, w, c, m, |_, l| base[l])
    }
}

fn load_lanes(
    x: &Inst,
    w: &mut Warp,
    c: &mut Ctx,
    m: u32,
    base: impl Fn(&[u64], usize) -> u64,
) -> Faulty<Flow> {
    let eb = x.ty.bytes().max(1) as usize;
    let vec = x.vec.max(1) as usize;
    let total = eb * vec;
    let keep = if x.ty == Ty::Pred { 1 } else { u64::MAX };
    let dst = x.d.map(|d| match d {
        Opnd::Reg(r) => Some(r as usize * 32),
        _ => None,
    });
    let ext = x.ty.extender();
    if vec == 1 && x.space == Sp::Shared && eb <= 8 {
        // The element size chosen once: each lane's read is then a fixed-size copy.
        match eb {
            1 => load_shared::<1>(x, w, c, m, &base, dst[0], ext, keep)?,
            2 => load_shared::<2>(x, w, c, m, &base, dst[0], ext, keep)?,
            4 => load_shared::<4>(x, w, c, m, &base, dst[0], ext, keep)?,
            _ => load_shared::<8>(x, w, c, m, &base, dst[0], ext, keep)?,
        }
        return Ok(Flow::Mem {
            space: Space::Shared,
            kind: AccessKind::Load,
            bytes_per_lane: eb as u32,
            path: LoadPath::Cached,
            lookup_lanes: QUAD,
        });
    }
    let mut space = None;
    let mut lanes = m;
    if m == FULL && (1..32).all(|l| base(&w.regs, l) == base(&w.regs, 0)) {
        // One address for the whole warp (a kernel's parameter, a constant every thread
        // reads): lane 0's target and values are every lane's, unless the target is local
        // memory, whose place differs per lane; then the lane loop reads every lane, lane 0
        // again. Why: the volume renderer's 18 parameter and constant loads per warp cost
        // 10,000 host instructions each, resolving and reading the same bytes 32 times over,
        // 4 % of a quick frame.
        let t = c.lane_target(
            x,
            w,
            base(&w.regs, 0),
            0,
            total.min(16),
            total,
            "load",
            &mut space,
        )?;
        if matches!(t, Target::Local(_)) {
            c.lanes.pop();
        } else {
            let (_, at) = c.lanes[c.lanes.len() - 1];
            c.lanes.extend((1..32).map(|l| (l as u8, at)));
            for (k, &d) in dst.iter().enumerate().take(vec) {
                let v = ext.apply(c.read(w, &t.offset(k * eb), eb, 0)?) & keep;
                if let Some(d) = d {
                    w.regs[d..d + 32].fill(v);
                }
            }
            lanes = 0;
        }
    }
    if lanes == FULL
        && matches!(x.space, Sp::Global | Sp::Const)
        && eb <= 8
        && full_warp_global(x, w, c, &base, &dst, (eb, vec), ext, keep)
    {
        space = Some(Space::Global);
        lanes = 0;
    }
    for l in set_bits(lanes) {
        let addr = base(&w.regs, l);
        let t = c.lane_target(x, w, addr, l, total.min(16), total, "load", &mut space)?;
        for (k, d) in dst.iter().enumerate().take(vec) {
            let v = ext.apply(c.read(w, &t.offset(k * eb), eb, l)?);
            if let Some(d) = d {
                w.regs[d + l] = v & keep;
            }
        }
    }
    let sp = space.unwrap_or(Space::Global);
    let path = if x.nc || x.space == Sp::Const || sp == Space::Param {
        LoadPath::ReadOnly
    } else if x.l2_only {
        LoadPath::L2Only
    } else {
        LoadPath::Cached
    };
    let sp = if x.space == Sp::Const {
        Space::Const
    } else {
        sp
    };
    Ok(Flow::Mem {
        space: sp,
        kind: AccessKind::Load,
        bytes_per_lane: total as u32,
        path,
        lookup_lanes: QUAD,
    })
}

/// A full warp's global or constant load of `vec` elements of `eb` bytes a lane, read straight
/// from device memory when every lane's access is aligned, all lie in one allocation and none
/// touches a store of the SM's still pending: then each lane reads what [`Ctx::read`] gives it,
/// and one lookup of the allocation serves the warp. `false`, with nothing written, otherwise;
/// the lane loop then reads, or names the fault. Why: lane by lane, resolving the address and
/// finding its allocation cost about 150 host instructions a lane, 5 % of tiled matmul's.
#[allow(clippy::too_many_arguments)] // one load's lanes: all of it is needed
#[inline(always)]
fn full_warp_global(
    x: &Inst,
    w: &mut Warp,
    c: &mut Ctx,
    base: &impl Fn(&[u64], usize) -> u64,
    dst: &[Option<usize>; 4],
    (eb, vec): (usize, usize),
    ext: Extender,
    keep: u64,
) -> bool {
    let total = (eb * vec) as u64;
    let addr = |regs: &[u64], l: usize| base(regs, l).wrapping_add(x.off as u64);
    let (mut bits, mut lo, mut hi) = (0u64, u64::MAX, 0u64);
    for l in 0..32 {
        let a = addr(&w.regs, l);
        bits |= a;
        lo = lo.min(a);
        hi = hi.max(a);
    }
    // The lane loop's alignment test, `a & (align − 1) == 0` for every lane, on their bits.
    let Some(end) = hi.checked_add(total) else {
        return false;
    };
    if bits & (total.min(16) - 1) != 0 || !c.writes.clear_of_stores(lo, end) {
        return false;
    }
    let fixed = c.fixed;
    let Some(span) = fixed.dev.slice(lo, (end - lo) as usize) else {
        return false;
    };
    for l in 0..32 {
        let a = addr(&w.regs, l);
        let at = (a - lo) as usize;
        for (k, d) in dst.iter().enumerate().take(vec) {
            let v = ext.apply(le_bytes(&span[at + k * eb..at + (k + 1) * eb])) & keep;
            if let Some(d) = d {
                w.regs[d + l] = v;
            }
        }
        c.lanes.push((l as u8, a));
    }
    true
}

/// The lanes of a scalar `ld.shared` of `N`-byte elements (`N` is 1, 2, 4 or 8), each read
/// straight into destination row `dst` (an index into the register file), extended by `ext`
/// and masked by `keep`.
#[allow(clippy::too_many_arguments)] // one load's lanes: all of it is needed
#[inline(always)]
fn load_shared<const N: usize>(
    x: &Inst,
    w: &mut Warp,
    c: &mut Ctx,
    m: u32,
    base: &impl Fn(&[u64], usize) -> u64,
    dst: Option<usize>,
    ext: Extender,
    keep: u64,
) -> Faulty<()> {
    let len = c.shared.len() as u64;
    if m == FULL
        && let Some(offsets) =
            full_warp_shared_offsets::<N>(|l| base(&w.regs, l).wrapping_add(x.off as u64), len)
    {
        if let Some(d) = dst {
            let shared = &*c.shared;
            let read = |o: u64| {
                let o = o as usize;
                let mut b = [0u8; 8];
                b[..N].copy_from_slice(&shared[o..o + N]);
                u64::from_le_bytes(b)
            };
            let row = &mut w.regs[d..d + 32];
            // An unsigned element read into zeroed bytes is already extended.
            if ext.signed() {
                for (r, &(_, o)) in row.iter_mut().zip(&offsets) {
                    *r = ext.apply(read(o)) & keep;
                }
            } else {
                for (r, &(_, o)) in row.iter_mut().zip(&offsets) {
                    *r = read(o) & keep;
                }
            }
        }
        c.lanes.extend_from_slice(&offsets);
        return Ok(());
    }
    for l in set_bits(m) {
        let addr = base(&w.regs, l).wrapping_add(x.off as u64);
        let o = shared_scalar_offset(addr, l, N, len, "load")?;
        if let Some(d) = dst {
            let mut b = [0u8; 8];
            b[..N].copy_from_slice(&c.shared[o..o + N]);
            w.regs[d + l] = ext.apply(u64::from_le_bytes(b)) & keep;
        }
        c.lanes.push((l as u8, o as u64));
    }
    Ok(())
}

#[allow(clippy::needless_range_loop)] // lane and element indices address parallel arrays
fn store(x: &Inst, w: &mut Warp, c: &mut Ctx, m: u32) -> Faulty<Flow> {
    let eb = x.ty.bytes().max(1) as usize;
    let vec = x.vec.max(1) as usize;
    let total = eb * vec;
    if let (Sp::Shared, 1, Opnd::Reg(a), Opnd::Reg(v)) = (x.space, vec, x.a, x.s[0])
        && eb <= 8
    {
        store_shared_scalar(x, w, c, m, eb, (a as usize * 32, v as usize * 32))?;
        return Ok(Flow::Mem {
            space: Space::Shared,
            kind: AccessKind::Store,
            bytes_per_lane: total as u32,
            path: LoadPath::Cached,
            lookup_lanes: QUAD,
        });
    }
    // Copied, not borrowed: a store to local memory writes the warp.
    let mut base = [0u64; 32];
    c.fetch(x.a, w, &mut base);
    let mut space = None;
    let mut vals = [[0u64; 32]; 4];
    for k in 0..vec {
        c.fetch(x.s[k], w, &mut vals[k]);
    }
    for l in set_bits(m) {
        let t = c.lane_target(x, w, base[l], l, total.min(16), total, "store", &mut space)?;
        for k in 0..vec {
            c.write(w, &t.offset(k * eb), eb, l, vals[k][l])?;
        }
    }
    Ok(Flow::Mem {
        space: space.unwrap_or(Space::Global),
        kind: AccessKind::Store,
        bytes_per_lane: total as u32,
        path: LoadPath::Cached,
        lookup_lanes: QUAD,
    })
}

/// `atom` and `red`.
fn atomic(x: &Inst, w: &mut Warp, c: &mut Ctx, m: u32) -> Faulty<Flow> {
    let mut base = [0u64; 32];
    c.fetch(x.a, w, &mut base);
    let eb = x.ty.bytes().max(1) as usize;
    let mut space = None;
    let mut bv = [0u64; 32];
    let mut cv = [0u64; 32];
    c.fetch(x.s[0], w, &mut bv);
    if x.ns > 1 {
        c.fetch(x.s[1], w, &mut cv);
    }
    let mut old = [0u64; 32];
    let ty = x.ty;
    // Global lanes are applied between rounds, in global order (devmem.rs `Write`); their
    // old values reach the register then. Shared and local lanes belong to this SM.
    let mut now_lanes = 0u32;
    for l in set_bits(m) {
        let t = c.lane_target(x, w, base[l], l, eb, eb, "atomic", &mut space)?;
        let (p, q) = (bv[l], cv[l]);
        if let Target::Global(a) = t {
            if c.fixed.dev.slice(a, eb).is_none() {
                return fault(
                    l as u32,
                    format!("atomic of {eb} bytes at {a:#x} outside any allocation"),
                );
            }
            let ret = match (x.op, x.d[0]) {
                (Op::Atom, Opnd::Reg(r)) => Some((w.slot, r, l as u8)),
                _ => None,
            };
            let what = WriteKind::Atomic {
                op: x.atom,
                ty,
                line: x.line,
                p,
                q,
                ret,
            };
            c.writes.atomic(c.now, c.seq, a, what);
        } else {
            let o = c.read(w, &t, eb, l)?;
            c.write(w, &t, eb, l, atomic_value(x.atom, ty, x.line, o, p, q))?;
            old[l] = o;
            now_lanes |= 1 << l;
        }
    }
    if x.op == Op::Atom {
        put(w, x.d[0], now_lanes, &old, ty.mask());
    }
    Ok(Flow::Mem {
        space: space.unwrap_or(Space::Global),
        kind: AccessKind::Atomic,
        bytes_per_lane: eb as u32,
        path: LoadPath::Cached,
        lookup_lanes: QUAD,
    })
}
