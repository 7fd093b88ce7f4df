//! Value rows for a kernel's virtual registers: PTX declares every virtual register it ever
//! uses (hundreds in an unrolled kernel, 544 in the volume renderer), while only a few dozen
//! hold a live value at any point. Each register's 32 lane values take a 256-byte row, so one
//! row per virtual register gave the volume renderer's warps 139 KB of registers each, and an
//! SM's warps several megabytes that thrash the host's caches on every operand. Here registers
//! whose values are never live at the same time share a row, as a register allocator would
//! pack them onto physical registers.
//!
//! Predicates take masks, not rows (a warp keeps a predicate as one 32-bit word of its lanes'
//! bits), numbered apart from the rows by the same rule: two predicates share a mask when never
//! live together, each lane keeping its own bit.
//!
//! Only the values move: the timing model's scoreboard has slots of its own, shared by a
//! warp-level rule (slots.rs), so rows do not change cycles (a scoreboard keyed by row would add
//! write-after-write stalls no virtual register has). The executed instructions are a copy with
//! registers renamed to rows.
//!
//! Why sharing is exact per lane: a warp writes a register only in its active lanes, so a
//! lane's row entries change only at instructions that lane executes, along its own path
//! through the control-flow graph. Per-thread liveness on that graph is therefore what decides
//! which lane values a row must keep. Three rules make it safe beyond that:
//! - a guarded write may leave lanes unwritten, so it does not end the old value's life;
//! - an instruction's destinations never share a row with each other or with its own sources,
//!   so no operation depends on the order it reads and writes them in;
//! - a destination written outside the instruction's own issue (a global atomic's old value,
//!   applied between rounds; a barrier reduction, written to every lane at release) gets a
//!   row of its own.

use crate::bits::set_bits;
use crate::ir::{Inst, Op, Opnd};

/// Fixed-size bit sets over registers, one per instruction, in one allocation.
pub(crate) struct Sets {
    pub(crate) words: usize,
    bits: Vec<u64>,
}

impl Sets {
    pub(crate) fn new(count: usize, regs: usize) -> Sets {
        let words = regs.div_ceil(64);
        Sets {
            words,
            bits: vec![0; count * words],
        }
    }

    pub(crate) fn row(&self, k: usize) -> &[u64] {
        &self.bits[k * self.words..(k + 1) * self.words]
    }

    pub(crate) fn row_mut(&mut self, k: usize) -> &mut [u64] {
        &mut self.bits[k * self.words..(k + 1) * self.words]
    }

    pub(crate) fn set(&mut self, k: usize, r: u32) {
        self.row_mut(k)[r as usize / 64] |= 1 << (r % 64);
    }
}

pub(crate) fn members(set: &[u64]) -> impl Iterator<Item = u32> + '_ {
    set.iter()
        .enumerate()
        .flat_map(|(i, &w)| set_bits(w).map(move |b| (i * 64 + b) as u32))
}

/// Registers whose writes happen outside their instruction's issue (see the module docs).
fn written_late(x: &Inst) -> Option<u32> {
    match (x.op, x.d[0]) {
        (Op::Atom, Opnd::Reg(r)) => Some(r),
        (Op::Bar, Opnd::Reg(r) | Opnd::Pred(r)) if x.sub >= 2 => Some(r),
        _ => None,
    }
}

/// Past this many bits in the liveness or interference sets the analysis is skipped and each
/// named register keeps a row of its own: 8 MB each, far beyond what nvcc emits (the volume
/// renderer's 544 registers × ~450 instructions are 0.25 M bits) but reachable by generated
/// PTX.
pub(crate) const MAX_SET_BITS: usize = 1 << 26;

/// Whether `n` instructions naming `regs` registers are past what the analyses' bit sets (one
/// per instruction and one per register) may hold.
pub(crate) fn too_large(n: usize, regs: usize) -> bool {
    n.saturating_mul(regs) > MAX_SET_BITS || regs.saturating_mul(regs) > MAX_SET_BITS
}

/// Each of the `nregs` virtual registers' row (a predicate's mask), the number of rows and the
/// number of masks. Registers no instruction names get none (their entry is 0 and never read).
pub(crate) fn pack(insts: &[Inst], nregs: u32) -> (Vec<u32>, u32, u32) {
    let n = insts.len();
    let (dense, named) = named_densely(insts, nregs);
    let regs = named.len();
    let mut pred = vec![false; regs];
    for x in insts {
        for o in x.d.iter().chain(&x.s).chain([&x.a, &x.guard]) {
            if let Opnd::Pred(r) | Opnd::NotPred(r) = *o
                && let Some(&d) = dense.get(r as usize)
            {
                pred[d as usize] = true;
            }
        }
    }
    if too_large(n, regs) {
        return one_each(&named, &pred, nregs);
    }
    let at = |r: u32| dense[r as usize];
    // Backward liveness to a fixed point: live_in = uses ∪ (live_out − unguarded writes).
    let mut live_out = Sets::new(n, regs);
    let mut live_in = Sets::new(n, regs);
    let words = live_in.words;
    let mut out = vec![0u64; words];
    let mut inn = vec![0u64; words];
    let mut changed = true;
    while changed {
        changed = false;
        for k in (0..n).rev() {
            out.fill(0);
            // Nothing is live at the kernel's end.
            for s in insts[k].successors(k).filter(|&s| s < n) {
                for (o, i) in out.iter_mut().zip(live_in.row(s)) {
                    *o |= i;
                }
            }
            let x = &insts[k];
            inn.copy_from_slice(&out);
            if x.guard == Opnd::None {
                for d in x.writes().map(at) {
                    inn[d as usize / 64] &= !(1 << (d % 64));
                }
            }
            for r in x.reads().map(at) {
                inn[r as usize / 64] |= 1 << (r % 64);
            }
            if live_in.row(k) != inn.as_slice() {
                live_in.row_mut(k).copy_from_slice(&inn);
                changed = true;
            }
            live_out.row_mut(k).copy_from_slice(&out);
        }
    }
    // Interference: a write against everything live after it, the instruction's other
    // destinations and its own sources.
    let mut clash = Sets::new(regs, regs);
    let mut alone = vec![false; regs];
    let mut others = Vec::new();
    for (k, x) in insts.iter().enumerate() {
        if let Some(r) = written_late(x) {
            alone[at(r) as usize] = true;
        }
        for d in x.writes().map(at) {
            others.clear();
            others.extend(
                members(live_out.row(k))
                    .chain(x.writes().map(at))
                    .chain(x.reads().map(at))
                    .filter(|&v| v != d),
            );
            for &v in &others {
                clash.set(d as usize, v);
                clash.set(v as usize, d);
            }
        }
    }
    colour(&clash, &alone, &pred, &named, nregs)
}

/// The registers `insts` name, numbered densely in order of first appearance (a kernel may
/// declare far more than it uses): each of the `nregs` registers' number (`u32::MAX` for those
/// not named), and the named ones in that order.
pub(crate) fn named_densely(insts: &[Inst], nregs: u32) -> (Vec<u32>, Vec<u32>) {
    let mut dense = vec![u32::MAX; nregs as usize];
    let mut named = Vec::new();
    for x in insts {
        for r in x.reads().chain(x.writes()) {
            if let Some(d) = dense.get_mut(r as usize)
                && *d == u32::MAX
            {
                *d = named.len() as u32;
                named.push(r);
            }
        }
    }
    (dense, named)
}

/// Each named register a place of its own, numbered apart for the registers marked `pred`:
/// what a program too large to analyse gets.
pub(crate) fn one_each(named: &[u32], pred: &[bool], nregs: u32) -> (Vec<u32>, u32, u32) {
    let mut place = vec![0u32; nregs as usize];
    let mut count = [0u32; 2];
    for (i, &r) in named.iter().enumerate() {
        let class = &mut count[usize::from(pred[i])];
        place[r as usize] = *class;
        *class += 1;
    }
    (place, count[0], count[1])
}

/// Greedy colouring of the named registers (dense numbers, `clash` between them) in order of
/// first appearance: each takes the lowest place no clashing register of its class holds, and
/// those marked `alone` a place each after the shared ones. The registers marked `pred` are a
/// class of their own, numbered apart. Returns each of the `nregs` registers' place and the
/// number of places of each class.
pub(crate) fn colour(
    clash: &Sets,
    alone: &[bool],
    pred: &[bool],
    named: &[u32],
    nregs: u32,
) -> (Vec<u32>, u32, u32) {
    let regs = named.len();
    let mut row = vec![0u32; regs];
    let mut taken = Vec::new();
    let mut rows = [0u32; 2];
    for r in 0..regs {
        if alone[r] {
            continue;
        }
        let class = usize::from(pred[r]);
        taken.clear();
        taken.resize(rows[class] as usize + 1, false);
        for v in members(clash.row(r)) {
            let v = v as usize;
            if v < r && !alone[v] && pred[v] == pred[r] {
                taken[row[v] as usize] = true;
            }
        }
        row[r] = taken
            .iter()
            .position(|&t| !t)
            .unwrap_or(rows[class] as usize) as u32;
        rows[class] = rows[class].max(row[r] + 1);
    }
    for r in 0..regs {
        if alone[r] {
            let class = &mut rows[usize::from(pred[r])];
            row[r] = *class;
            *class += 1;
        }
    }
    let mut place = vec![0u32; nregs as usize];
    for (i, &r) in named.iter().enumerate() {
        place[r as usize] = row[i];
    }
    (place, rows[0], rows[1])
}

/// `insts` with every register operand renamed to its row, every predicate to its mask.
pub(crate) fn rename(insts: &[Inst], row_of: &[u32]) -> Vec<Inst> {
    let map = |o: &mut Opnd| match o {
        Opnd::Reg(r) | Opnd::Pred(r) | Opnd::NotPred(r) => {
            *r = row_of.get(*r as usize).copied().unwrap_or(*r)
        }
        _ => {}
    };
    insts
        .iter()
        .map(|x| {
            let mut y = *x;
            y.d.iter_mut().for_each(map);
            y.s.iter_mut().for_each(map);
            map(&mut y.a);
            map(&mut y.guard);
            y
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::decode::{R, RD, test_kernel, test_kernel_with_regs as kernel};
    use crate::ir::{Opnd, Program};

    fn row(p: &Program, reg: u32) -> u32 {
        let (row_of, _, _) = super::pack(&p.insts, p.slot_of.len() as u32);
        row_of[reg as usize]
    }

    #[test]
    fn registers_live_apart_share_a_row_and_registers_live_together_do_not() {
        let p = kernel(
            "  ld.param.u64 %rd1, [k_p0];\n  ld.param.u32 %r1, [k_p1];\n  add.s32 %r2, %r1, 1;\n  st.global.u32 [%rd1], %r2;\n  add.s32 %r3, %r1, 2;\n  st.global.u32 [%rd1+4], %r3;\n  ret;",
        );
        // %r2 is dead before %r3 is written; %r1 is live while %r2 is.
        assert_eq!(row(&p, R + 2), row(&p, R + 3));
        assert_ne!(row(&p, R + 1), row(&p, R + 2));
        assert_ne!(row(&p, RD + 1), row(&p, R + 1));
        assert_eq!(p.rows, 3, "four registers in three rows");
        // The executed copy names rows, the timing copy registers.
        assert_eq!(p.exec.len(), p.insts.len());
        assert!(p.insts.iter().flat_map(|x| x.writes()).any(|r| r == R + 3));
        assert!(p.exec.iter().flat_map(|x| x.writes()).all(|r| r < p.rows));
    }

    #[test]
    fn a_destination_never_shares_a_row_with_its_own_sources() {
        // %r1 dies where %r2 is written from it: free to share by liveness alone.
        let p = kernel(
            "  ld.param.u64 %rd1, [k_p0];\n  ld.param.u32 %r1, [k_p1];\n  mul.lo.s32 %r2, %r1, %r1;\n  st.global.u32 [%rd1], %r2;\n  ret;",
        );
        assert_ne!(row(&p, R + 1), row(&p, R + 2));
    }

    #[test]
    fn a_guarded_write_keeps_the_lanes_it_skips() {
        // Lanes where %p1 is false store %r2 as it was before (zero): its value lives from the
        // start, across %r1's whole life. Unguarded, %r2 would reuse a row.
        let body = |guard: &str| {
            format!(
                "  ld.param.u64 %rd1, [k_p0];\n  ld.param.u32 %r1, [k_p1];\n  setp.eq.s32 %p1, %r1, 0;\n  {guard}mov.u32 %r2, 7;\n  st.global.u32 [%rd1], %r2;\n  ret;"
            )
        };
        let guarded = kernel(&body("@%p1 "));
        assert_ne!(row(&guarded, R + 2), row(&guarded, R + 1));
        assert_ne!(row(&guarded, R + 2), row(&guarded, RD + 1));
        assert_eq!((guarded.rows, guarded.pred_rows), (3, 1));
        let plain = kernel(&body(""));
        assert_eq!((plain.rows, plain.pred_rows), (2, 1));
    }

    #[test]
    fn predicates_take_masks_numbered_apart_and_share_them_as_rows_are_shared() {
        // %p1 dies at its branch before %p2 is written: one mask for both. %p2 and %r2 are
        // live together but in different files, so each is first in its own.
        let p = kernel(
            "  ld.param.u64 %rd1, [k_p0];
  ld.param.u32 %r1, [k_p1];
  setp.eq.s32 %p1, %r1, 0;
  @%p1 bra $E;
  add.s32 %r2, %r1, 1;
  setp.lt.s32 %p2, %r2, 9;
  @!%p2 st.global.u32 [%rd1], %r2;
$E:
  ret;",
        );
        assert_eq!(p.pred_rows, 1);
        assert_eq!(row(&p, 1), row(&p, 2));
        let preds: Vec<Opnd> = p.exec.iter().map(|x| x.guard).collect();
        assert!(preds.contains(&Opnd::Pred(0)) && preds.contains(&Opnd::NotPred(0)));
        // A predicate named only as an address (a fault when run, not a panic) is a mask too.
        let p = kernel("  ld.global.u32 %r1, [%p1];\n  ret;");
        assert_eq!((p.rows, p.pred_rows), (1, 1));
        assert_eq!(p.exec[0].a, Opnd::Pred(0));
    }

    #[test]
    fn a_value_carried_around_a_loop_keeps_its_row_through_the_body() {
        // %r1 is written near the bottom of the loop and read only at its top: live through
        // the back edge alone, across the lives of %r4 and %p1 that start after it.
        let p = kernel(
            "  ld.param.u64 %rd1, [k_p0];\n  mov.u32 %r1, 0;\n$L:\n  add.s32 %r3, %r1, 5;\n  st.global.u32 [%rd1], %r3;\n  add.s32 %r1, %r3, 1;\n  ld.param.u32 %r4, [k_p1];\n  setp.lt.s32 %p1, %r4, 10;\n  @%p1 bra $L;\n  ret;",
        );
        assert_ne!(row(&p, R + 1), row(&p, 1));
        assert_ne!(row(&p, R + 1), row(&p, R + 4));
    }

    #[test]
    fn declared_registers_cost_nothing_and_huge_programs_keep_a_row_per_register() {
        // A million declared, two named: the sets are sized by the named ones.
        let p = test_kernel(
            "  .reg .b32 %r<1000000>;\n  .reg .b64 %rd<2>;\n  ld.param.u64 %rd1, [k_p0];\n  ld.param.u32 %r999999, [k_p1];\n  st.global.u32 [%rd1], %r999999;\n  ret;",
        );
        assert!(p.unusable.is_none());
        assert_eq!(p.rows, 2);
        // 9,000 registers over 18,000 instructions: past the analysis' budget, so each keeps a
        // row of its own, although each lives for one instruction.
        let n = 9000;
        let mut body = String::from(
            "  .reg .b32 %r<9001>;\n  .reg .b64 %rd<2>;\n  ld.param.u64 %rd1, [k_p0];\n",
        );
        for r in 1..=n {
            body += &format!("  ld.param.u32 %r{r}, [k_p1];\n  st.global.u32 [%rd1], %r{r};\n");
        }
        let p = test_kernel(&(body + "  ret;"));
        assert!(p.unusable.is_none());
        assert_eq!(p.rows, n + 1);
    }

    #[test]
    fn late_written_destinations_get_rows_of_their_own() {
        // The atomic's old value is written between rounds, after later instructions ran: no
        // other register may hold its row, even though nothing reads it.
        let p = kernel(
            "  ld.param.u64 %rd1, [k_p0];\n  atom.global.add.u32 %r1, [%rd1], 1;\n  ld.param.u32 %r2, [k_p1];\n  st.global.u32 [%rd1+4], %r2;\n  ret;",
        );
        let own = row(&p, R + 1);
        for r in [R + 2, RD + 1] {
            assert_ne!(row(&p, r), own, "register {r}");
        }
    }
}
