//! Scoreboard slots for a kernel's virtual registers: the timing model's counterpart of the
//! value rows (regalloc.rs). A warp's scoreboard holds, per slot, the cycle its last write is
//! ready and whether that write came from memory; an instruction waits for every slot it names.
//! One slot per virtual register gave the volume renderer 544 entries per warp, whose reads
//! missed the host's caches; registers share a slot here wherever sharing cannot change a cycle.
//!
//! Why value rows cannot serve: rows are shared by per-lane liveness, while the scoreboard is
//! the warp's. A register read on one path of a divergent branch may share a row with one
//! written on the other path, and whichever path the warp runs first would then change the
//! other's ready cycle; and a write nothing reads (the unused components of a `tex.v4`) still
//! holds its register until its data arrives, which a later write of a row-mate would wait for.
//!
//! The rule, exact by construction. Call a write *pending* from its issue until the warp next
//! issues an instruction that names the register (any instruction naming a register waits for
//! its last write, so from then on that write's cycle lies before the warp's next issue and
//! decides nothing). Two registers may share a slot when no instruction names one of them
//! while a write of the other is pending, and no instruction names both. Then at every
//! instruction, each slot it names holds either its register's own last write or a write that
//! is no longer pending, and where the two differ both lie before the warp can issue: the
//! issue cycle, the stall reason and every counter come out as with a slot per register.
//!
//! Pending is a forward property along the order in which the warp runs its instructions: the
//! control-flow graph, and where a branch diverges, from the end of either path (where it
//! reaches the reconvergence point, or exits) to the start of the other, since the warp runs
//! the paths one after the other (`exec::simt`).

use crate::ir::{Inst, Op, Opnd};
use crate::regalloc::{MAX_SET_BITS, Sets, colour, members, named_densely, one_each, too_large};

/// Each of the `nregs` virtual registers' slot, and the number of slots.
pub(crate) fn pack(insts: &[Inst], nregs: u32) -> (Vec<u32>, u32) {
    let n = insts.len();
    let (dense, named) = named_densely(insts, nregs);
    let regs = named.len();
    // No register alone, and one class: slots keep the timing model's dependences, of
    // predicates and values alike.
    let none = vec![false; regs];
    let each = || {
        let (place, slots, _) = one_each(&named, &none, nregs);
        (place, slots)
    };
    if too_large(n, regs) {
        return each();
    }
    let mut pending_in = Sets::new(n, regs);
    let words = pending_in.words;
    // Each path step adds at most three edges, and each edge costs a pass over a set's words.
    let Some(preds) = warp_order_predecessors(insts, (MAX_SET_BITS / words.max(1)).min(MAX_STEPS))
    else {
        return each();
    };
    let at = |r: u32| dense[r as usize];
    // Forward to a fixed point: pending_out = (pending_in − named) ∪ written.
    let mut out = vec![0u64; words];
    let mut inn = vec![0u64; words];
    let mut outs = Sets::new(n, regs);
    let mut changed = true;
    while changed {
        changed = false;
        for k in 0..n {
            inn.fill(0);
            for &p in &preds[k] {
                for (i, o) in inn.iter_mut().zip(outs.row(p as usize)) {
                    *i |= o;
                }
            }
            pending_in.row_mut(k).copy_from_slice(&inn);
            out.copy_from_slice(&inn);
            let x = &insts[k];
            for r in x.reads().chain(x.writes()).map(at) {
                out[r as usize / 64] &= !(1 << (r % 64));
            }
            for r in x.writes().map(at) {
                out[r as usize / 64] |= 1 << (r % 64);
            }
            if outs.row(k) != out.as_slice() {
                outs.row_mut(k).copy_from_slice(&out);
                changed = true;
            }
        }
    }
    // Clashes: what an instruction names against every other write pending at it, and the
    // registers it names against each other.
    let mut clash = Sets::new(regs, regs);
    let mut here = Vec::new();
    for (k, x) in insts.iter().enumerate() {
        here.clear();
        here.extend(x.reads().chain(x.writes()).map(at));
        for &a in &here {
            for b in members(pending_in.row(k)).chain(here.iter().copied()) {
                if b != a {
                    clash.set(a as usize, b);
                    clash.set(b as usize, a);
                }
            }
        }
    }
    let (place, slots, _) = colour(&clash, &none, &none, &named, nregs);
    (place, slots)
}

/// The most steps along divergent paths the analysis follows (a few for each branch of a real
/// kernel; deeply nested branches of generated PTX can reach millions, each adding edges).
const MAX_STEPS: usize = 1 << 22;

/// Each instruction's predecessors in the order a warp may run them (see the module docs), or
/// `None` when the divergent paths take more than `budget` steps to follow.
fn warp_order_predecessors(insts: &[Inst], budget: usize) -> Option<Vec<Vec<u32>>> {
    let n = insts.len();
    let mut succ: Vec<Vec<u32>> = (0..n)
        .map(|k| {
            insts[k]
                .successors(k)
                .filter(|&s| s < n)
                .map(|s| s as u32)
                .collect()
        })
        .collect();
    let mut work = 0usize;
    let mut seen = vec![u32::MAX; n];
    let mut stack = Vec::new();
    for (b, x) in insts.iter().enumerate() {
        if x.op != Op::Bra || x.guard == Opnd::None {
            continue;
        }
        let r = x.reconv as usize;
        let starts: Vec<u32> = x
            .successors(b)
            .filter(|&s| s < n && s != r)
            .map(|s| s as u32)
            .collect();
        // The paths: everything reached from either start before the reconvergence point.
        stack.clear();
        for &s in &starts {
            if seen[s as usize] != b as u32 {
                seen[s as usize] = b as u32;
                stack.push(s as usize);
            }
        }
        let mut ends = Vec::new();
        while let Some(p) = stack.pop() {
            work += 1;
            if work > budget {
                return None;
            }
            let leaves = matches!(insts[p].op, Op::Exit | Op::Trap);
            let mut reaches = leaves;
            for s in insts[p].successors(p) {
                if s == r || s >= n {
                    reaches = true;
                } else if seen[s] != b as u32 {
                    seen[s] = b as u32;
                    stack.push(s);
                }
            }
            if reaches {
                ends.push((p, leaves));
            }
        }
        // A path's end runs before the other path's start, and where it exits, before the
        // reconvergence point (its lanes gone, the warp goes on with the others there).
        for (p, leaves) in ends {
            succ[p].extend(&starts);
            if leaves && r < n {
                succ[p].push(r as u32);
            }
        }
    }
    let mut preds = vec![Vec::new(); n];
    for (p, ss) in succ.iter_mut().enumerate() {
        ss.sort_unstable();
        ss.dedup();
        for &s in ss.iter() {
            preds[s as usize].push(p as u32);
        }
    }
    Some(preds)
}

#[cfg(test)]
mod tests {
    use crate::decode::{R, RD, test_kernel_with_regs as kernel};
    use crate::ir::Program;

    fn slot(p: &Program, reg: u32) -> u32 {
        let (slot_of, _) = super::pack(&p.insts, p.slot_of.len() as u32);
        slot_of[reg as usize]
    }

    #[test]
    fn a_write_read_before_the_next_one_shares_its_slot() {
        // %r2 is read before %r3 is written, %r3 before %r4: one slot for the three.
        let p = kernel(
            "  ld.param.u64 %rd1, [k_p0];\n  ld.param.u32 %r2, [k_p1];\n  st.global.u32 [%rd1], %r2;\n  ld.param.u32 %r3, [k_p1];\n  st.global.u32 [%rd1+4], %r3;\n  ld.param.u32 %r4, [k_p1];\n  st.global.u32 [%rd1+8], %r4;\n  ret;",
        );
        assert_eq!(slot(&p, R + 2), slot(&p, R + 3));
        assert_eq!(slot(&p, R + 3), slot(&p, R + 4));
        // The address is named with each of them.
        assert_ne!(slot(&p, RD + 1), slot(&p, R + 2));
    }

    #[test]
    fn a_write_nothing_reads_keeps_its_slot_from_everything_after_it() {
        // %r1's load is never read: its data may still be on its way when %r2 is written, and
        // %r2's write must not wait for it, as it would not with slots of their own.
        let p = kernel(
            "  ld.param.u64 %rd1, [k_p0];\n  ld.global.u32 %r1, [%rd1];\n  ld.param.u32 %r2, [k_p1];\n  st.global.u32 [%rd1+4], %r2;\n  ld.param.u32 %r3, [k_p1];\n  st.global.u32 [%rd1+8], %r3;\n  ret;",
        );
        assert_ne!(slot(&p, R + 1), slot(&p, R + 2));
        assert_ne!(slot(&p, R + 1), slot(&p, R + 3));
        assert_eq!(slot(&p, R + 2), slot(&p, R + 3));
    }

    #[test]
    fn a_write_on_one_path_keeps_its_slot_from_one_on_the_other() {
        // %r1 is written where %p1 holds and read after the paths rejoin; %r2 is written and
        // read where it does not. Per lane, and along the control-flow graph, they never meet;
        // but the warp runs both paths one after the other, so %r1's load may still be on its
        // way while the other path writes %r2, whose write must not wait for it.
        let p = kernel(
            "  ld.param.u64 %rd1, [k_p0];\n  ld.param.u32 %r3, [k_p1];\n  setp.eq.s32 %p1, %r3, 0;\n  @%p1 bra $A;\n  ld.param.u32 %r2, [k_p1];\n  st.global.u32 [%rd1+4], %r2;\n  bra.uni $J;\n$A:\n  ld.global.u32 %r1, [%rd1];\n$J:\n  st.global.u32 [%rd1+8], %r1;\n  ret;",
        );
        assert_ne!(slot(&p, R + 1), slot(&p, R + 2));
    }

    #[test]
    fn paths_too_many_to_follow_leave_each_register_a_slot_of_its_own() {
        // 2,100 branches to the end (a last instruction before `ret`, so that they stay
        // branches), each path spanning all the code after it: about 4.4 million steps of path,
        // past the budget for these 2,101 registers (about 2 million).
        let n = 2100;
        let mut body = format!("  .reg .pred %p<{n}>;\n  .reg .b32 %r<2>;\n");
        body += "  ld.param.u32 %r1, [k_p1];\n";
        for k in 0..n {
            body += &format!("  setp.eq.s32 %p{k}, %r1, {k};\n  @%p{k} bra $END;\n");
        }
        body += "$END:\n  add.s32 %r1, %r1, 1;\n  ret;";
        let p = crate::decode::test_kernel(&body);
        let (_, slots) = super::pack(&p.insts, p.slot_of.len() as u32);
        assert_eq!(slots, n + 1);
    }

    #[test]
    fn slots_are_fewer_than_registers_in_a_loop() {
        let p = kernel(
            "  ld.param.u64 %rd1, [k_p0];\n  mov.u32 %r1, 0;\n$L:\n  add.s32 %r3, %r1, 5;\n  st.global.u32 [%rd1], %r3;\n  add.s32 %r1, %r3, 1;\n  ld.param.u32 %r4, [k_p1];\n  setp.lt.s32 %p1, %r4, 10;\n  @%p1 bra $L;\n  ret;",
        );
        let (_, slots) = super::pack(&p.insts, p.slot_of.len() as u32);
        let named = [RD + 1, R + 1, R + 3, R + 4, 1];
        assert!(slots < named.len() as u32, "{slots} slots");
        // %r1 and %r3 are named together.
        assert_ne!(slot(&p, R + 1), slot(&p, R + 3));
    }
}
