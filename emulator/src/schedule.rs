//! Loads moved to where ptxas issues them (`pipeline.hoist_loads`).
//!
//! nvcc's PTX often puts each load right before its first use: `ld; xor; ld; xor; …`. A GPU
//! runs ptxas' SASS, which issues the loads of a basic block back to back and their uses
//! after, so a warp keeps them all in flight (`docs/gpu/l1-port.cu`'s `fill` kernel: sixteen
//! `LDG`s, then the `LOP3`s). Run in PTX order, a warp waits for each load at its use before it
//! issues the next one, and has one in flight.
//!
//! The pass moves each load and texture fetch up within its basic block past the arithmetic
//! before it that neither computes its operands (its guard included) nor reads or writes its
//! destinations. It stops at every other kind of instruction: a memory access (so memory
//! operations keep their order), a barrier, a fence, a branch, a shuffle or vote, and a
//! special-register read, so a probe's clock reads keep the loads they time between them. It
//! stops too at arithmetic that the SASS runs with a branch or a call, since ptxas does not move
//! a load across those.
//!
//! Only registers say what depends on what, so the moved program computes what the PTX does.

use crate::ir::{Class, Inst, Op, Opnd, Program};
use crate::{regalloc, slots};

/// Reorders `p`'s instructions as the module explains, and re-derives its value rows and
/// scoreboard slots from the new order. Block starts (branch targets, reconvergence points)
/// keep their indices, since instructions move only within a block.
pub(crate) fn hoist_loads(p: &mut Program) {
    let n = p.insts.len();
    let mut starts = vec![false; n + 1];
    for x in &p.insts {
        if x.op == Op::Bra {
            mark(&mut starts, x.target);
        }
        mark(&mut starts, x.reconv);
    }
    let mut moved = false;
    for i in 0..n {
        if !matches!(p.insts[i].op, Op::Ld | Op::Tex) {
            continue;
        }
        let mut j = i;
        while j > 0 && !starts[j] && passes(&p.insts[j], &p.insts[j - 1]) {
            p.insts.swap(j - 1, j);
            j -= 1;
            moved = true;
        }
    }
    if moved {
        let nregs = p.slot_of.len() as u32;
        let (row_of, rows) = regalloc::pack(&p.insts, nregs);
        (p.slot_of, p.slots) = slots::pack(&p.insts, nregs);
        p.exec = regalloc::rename(&p.insts, &row_of);
        p.rows = rows;
    }
}

fn mark(starts: &mut [bool], pc: u32) {
    if let Some(s) = starts.get_mut(pc as usize) {
        *s = true;
    }
}

/// Whether `load` may issue before `prev`: `prev` is plain arithmetic, and neither writes what
/// the other reads nor writes what the other writes.
fn passes(load: &Inst, prev: &Inst) -> bool {
    let arithmetic = matches!(
        prev.class,
        Class::Int | Class::Fp32 | Class::Fp64 | Class::Sfu
    ) && !matches!(prev.op, Op::Invalid | Op::Trap)
        && !prev.s.iter().any(|o| matches!(o, Opnd::Sreg(_)))
        && !branches_in_sass(prev);
    arithmetic
        && !prev.writes().any(|w| load.reads().any(|r| r == w))
        && !load.writes().any(|w| prev.reads().any(|r| r == w))
        && !load.writes().any(|w| prev.writes().any(|v| v == w))
}

/// Arithmetic that ptxas compiles with a branch or a call, which ends a basic block of the SASS
/// where the PTX has none: a float division, reciprocal or square root rounded to nearest (its
/// slow path for operands the fast one cannot take; the volume renderer's SASS reads its view
/// matrix after its two divisions' branches), and a 64-bit integer division or remainder (a
/// call, `pipeline.int_division`).
fn branches_in_sass(x: &Inst) -> bool {
    x.is_division_call()
        || matches!(x.op, Op::Div | Op::Rcp | Op::Sqrt) && x.ty.is_float() && !x.approx
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::decode_module;
    use crate::ptx;

    /// The kernel `k` of `body`, decoded, before and after the pass: each instruction's PTX
    /// line in order.
    fn lines(body: &str) -> (Vec<u32>, Vec<u32>) {
        let text = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 a)\n{{\n\
             .reg .pred %p<4>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<8>;\n{body}\n}}\n"
        );
        let ast = ptx::parse(&text).unwrap();
        let mut p = decode_module(&ast).unwrap().kernels.remove(0);
        let before = p.insts.iter().map(|x| x.line).collect();
        hoist_loads(&mut p);
        assert_eq!(p.exec.len(), p.insts.len());
        (before, p.insts.iter().map(|x| x.line).collect())
    }

    #[test]
    fn loads_interleaved_with_their_uses_issue_back_to_back() {
        // The body starts at line 9; lines 11-16: ld, xor, ld, xor, ld, xor.
        let (before, after) = lines(
            "ld.param.u64 %rd1, [a];\nmov.u32 %r1, 0;\n\
             ld.global.u32 %r2, [%rd1];\nxor.b32 %r3, %r2, %r1;\n\
             ld.global.u32 %r4, [%rd1+4];\nxor.b32 %r5, %r4, %r3;\n\
             ld.global.u32 %r6, [%rd1+8];\nxor.b32 %r7, %r6, %r5;\n\
             st.global.u32 [%rd1], %r7;",
        );
        // The kernel's closing exit takes the last line's number.
        assert_eq!(before, [9, 10, 11, 12, 13, 14, 15, 16, 17, 17]);
        // Each load passes the arithmetic that does not feed it, the mov included, and stops
        // at the load before it (the first at the param load that gives its address).
        assert_eq!(after, [9, 11, 13, 15, 10, 12, 14, 16, 17, 17]);
    }

    #[test]
    fn a_load_stays_behind_what_it_depends_on_and_what_reads_or_writes_its_register() {
        // In turn: the address computed before the load, the guard set before it, an add that
        // writes the load's destination, and one that reads it.
        let (before, after) = lines(
            "ld.param.u64 %rd1, [a];\n\
             add.s64 %rd2, %rd1, 8;\nld.global.u32 %r1, [%rd2];\n\
             setp.ne.u32 %p1, %r1, 0;\n@%p1 ld.global.u32 %r2, [%rd1];\n\
             add.u32 %r3, %r2, 1;\nld.global.u32 %r3, [%rd1+4];\n\
             add.u32 %r6, %r1, 1;\nld.global.u32 %r1, [%rd1+8];\n\
             add.u32 %r5, %r3, %r6;\nadd.u32 %r5, %r5, %r1;\nst.global.u32 [%rd1], %r5;",
        );
        assert_eq!(before, after);
    }

    #[test]
    fn a_load_does_not_pass_a_division_that_the_sass_branches_for_and_passes_one_it_does_not() {
        let (_, after) = lines(
            ".reg .f32 %f<4>;\nld.param.u64 %rd1, [a];\nmov.f32 %f1, 0f40000000;\n\
             div.rn.f32 %f2, %f1, %f1;\nld.global.u32 %r1, [%rd1];\n\
             div.u64 %rd2, %rd1, 3;\nld.global.u32 %r2, [%rd1+4];\n\
             div.approx.f32 %f3, %f1, %f1;\ndiv.u32 %r3, %r1, 3;\nld.global.u32 %r4, [%rd1+8];\n\
             add.u32 %r5, %r3, %r4;\nst.global.u32 [%rd1], %r5;",
        );
        // Lines 10-20 (9 declares): the loads after a division to nearest and a 64-bit one
        // stay; the third passes the approximate and the 32-bit divisions and stops at the
        // second load.
        assert_eq!(after, [10, 11, 12, 13, 14, 15, 18, 16, 17, 19, 20, 20]);
    }

    #[test]
    fn a_load_does_not_pass_a_clock_read_a_barrier_a_store_or_a_block_start() {
        let (before, after) = lines(
            "ld.param.u64 %rd1, [a];\nmov.u32 %r1, 0;\n\
             mov.u32 %r2, %clock;\nld.global.u32 %r3, [%rd1];\n\
             add.u32 %r1, %r1, 1;\nbar.sync 0;\nld.global.u32 %r4, [%rd1+4];\n\
             add.u32 %r1, %r1, 1;\nst.global.u32 [%rd1+8], %r1;\nld.global.u32 %r5, [%rd1+12];\n\
             add.u32 %r1, %r1, 1;\n$L1:\nld.global.u32 %r6, [%rd1+16];\n\
             add.u32 %r7, %r3, %r4;\nadd.u32 %r7, %r7, %r5;\nadd.u32 %r7, %r7, %r6;\n\
             add.u32 %r7, %r7, %r2;\nsetp.ne.u32 %p1, %r7, 0;\n@%p1 bra $L1;\n\
             st.global.u32 [%rd1], %r1;",
        );
        assert_eq!(before, after);
    }
}
