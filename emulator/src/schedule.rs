//! Instructions moved to where ptxas issues them: loads (`pipeline.hoist_loads`) and runs of
//! arithmetic, those around 32-bit integer divisions or all (`pipeline.list_arithmetic`).
//!
//! nvcc's PTX often puts each load right before its first use: `ld; xor; ld; xor; …`. A GPU
//! runs ptxas' SASS, which issues the loads of a basic block back to back and their uses
//! after, so a warp keeps them all in flight (`docs/gpu/l1-port.cu`'s `fill` kernel: sixteen
//! `LDG`s, then the `LOP3`s). Run in PTX order, a warp waits for each load at its use before it
//! issues the next one, and has one in flight.
//!
//! The load pass moves each load and texture fetch up within its basic block past the
//! arithmetic before it that neither computes its operands (its guard included) nor reads or
//! writes its destinations. It stops at every other kind of instruction: a memory access (so
//! memory operations keep their order), a barrier, a fence, a branch, a shuffle or vote, and a
//! special-register read, so a probe's clock reads keep the loads they time between them. It
//! stops too at arithmetic that the SASS runs with a branch or a call, since ptxas does not move
//! a load across those.
//!
//! A 32-bit integer division is a sequence of about twenty SASS instructions, which ptxas
//! interleaves with whatever else its block computes; the model times it as one instruction
//! whose result comes a sequence's latency later. nvcc's PTX puts each quotient's use before the
//! next division's operands, so in PTX order a warp waits for each division in turn even where
//! two are independent (`docs/gpu/int-division.cu`'s two chains). The arithmetic pass takes each
//! run of plain arithmetic within a block that holds such a division (`divisions`), or every
//! run (`all`), and lists it again as a scheduler does: of the instructions whose inputs are
//! computed, the one with the longest chain of latencies after it first, ties in PTX order.
//! The divisions and what computes their operands so come first, and independent divisions
//! issue together; in `all`, independent chains of any operations interleave. A run of more
//! than 256 instructions is listed in windows of 256.
//!
//! Only registers say what depends on what, so the moved program computes what the PTX does;
//! instructions that read or write the carry flag, which no register names, end a run.

use crate::config::{ListArithmetic, PipelineConfig};
use crate::ir::{Class, Inst, Op, Opnd, Program};
use crate::{regalloc, slots};

/// Reorders `p`'s instructions as the pipeline's options ask (the module explains), and
/// re-derives its value rows and scoreboard slots from the new order. Block starts (branch
/// targets, reconvergence points) keep their indices, since instructions move only within a
/// block.
pub(crate) fn reorder(p: &mut Program, pipe: &PipelineConfig) {
    let n = p.insts.len();
    let mut starts = vec![false; n + 1];
    for x in &p.insts {
        if x.op == Op::Bra {
            mark(&mut starts, x.target);
        }
        mark(&mut starts, x.reconv);
    }
    let mut moved = false;
    if pipe.hoist_loads {
        moved |= hoist_loads(&mut p.insts, &starts);
    }
    if let Some(which) = pipe.list_arithmetic {
        moved |= list_runs(&mut p.insts, &starts, which, |x| latency(x, pipe));
    }
    if moved {
        let nregs = p.slot_of.len() as u32;
        let (row_of, rows, pred_rows) = regalloc::pack(&p.insts, nregs);
        (p.slot_of, p.slots) = slots::pack(&p.insts, nregs);
        p.exec = regalloc::rename(&p.insts, &row_of);
        p.rows = rows;
        p.pred_rows = pred_rows;
    }
}

/// Moves each load and texture fetch up its block (the module explains how). Returns whether
/// any instruction moved.
fn hoist_loads(insts: &mut [Inst], starts: &[bool]) -> bool {
    let mut moved = false;
    for i in 0..insts.len() {
        if !matches!(insts[i].op, Op::Ld | Op::Tex) {
            continue;
        }
        let mut j = i;
        while j > 0 && !starts[j] && passes(&insts[j], &insts[j - 1]) {
            insts.swap(j - 1, j);
            j -= 1;
            moved = true;
        }
    }
    moved
}

fn mark(starts: &mut [bool], pc: u32) {
    if let Some(s) = starts.get_mut(pc as usize) {
        *s = true;
    }
}

/// Whether `load` may issue before `prev`: `prev` is plain arithmetic, and neither writes what
/// the other reads nor writes what the other writes.
fn passes(load: &Inst, prev: &Inst) -> bool {
    plain_arithmetic(prev) && !ordered(prev, load)
}

/// Whether `b`, after `a` in the PTX, must stay after it: `b` reads what `a` writes, or writes
/// what `a` reads or writes.
fn ordered(a: &Inst, b: &Inst) -> bool {
    feeds(a, b) || overwrites(a, b)
}

/// Whether `b` writes a register `a` reads or writes.
fn overwrites(a: &Inst, b: &Inst) -> bool {
    b.writes()
        .any(|w| a.reads().any(|r| r == w) || a.writes().any(|v| v == w))
}

/// Whether `b` reads a register `a` writes.
fn feeds(a: &Inst, b: &Inst) -> bool {
    a.writes().any(|w| b.reads().any(|r| r == w))
}

/// Arithmetic on registers alone, which ptxas schedules freely within a block.
fn plain_arithmetic(x: &Inst) -> bool {
    matches!(x.class, Class::Int | Class::Fp32 | Class::Fp64 | Class::Sfu)
        && !matches!(x.op, Op::Invalid | Op::Trap)
        && !x.s.iter().any(|o| matches!(o, Opnd::Sreg(_)))
        && !branches_in_sass(x)
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

/// An integer division or remainder that ptxas compiles inline: 32 bits or fewer.
fn inline_division(x: &Inst) -> bool {
    matches!(x.op, Op::Div | Op::Rem) && !x.ty.is_float() && x.ty.bits() <= 32
}

/// Cycles from `x`'s issue until its result can be read: a 32-bit division's sequence's
/// latency where the preset times divisions so, else its class's.
fn latency(x: &Inst, pipe: &PipelineConfig) -> u64 {
    match pipe.int_division {
        Some(t) if inline_division(x) => {
            let seq = if x.ty.is_signed() { t.s32 } else { t.u32 };
            u64::from(seq.latency_cycles)
        }
        _ => x.class.latency(pipe),
    }
}

/// The most instructions listed together: a longer run is listed in windows of this many,
/// since the listing compares every pair of a window's instructions (a generated kernel can
/// hold tens of thousands of arithmetic instructions in one block).
const WINDOW: usize = 256;

/// Lists again each run of plain arithmetic within a block, or with `Divisions` each run that
/// holds an inline division (the module explains how). Returns whether any instruction moved.
fn list_runs(
    insts: &mut [Inst],
    starts: &[bool],
    which: ListArithmetic,
    latency: impl Fn(&Inst) -> u64,
) -> bool {
    let movable = |x: &Inst| plain_arithmetic(x) && !x.op.uses_carry();
    let mut moved = false;
    let mut i = 0;
    while i < insts.len() {
        if !movable(&insts[i]) {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < insts.len() && !starts[j] && movable(&insts[j]) {
            j += 1;
        }
        for window in insts[i..j].chunks_mut(WINDOW) {
            if which == ListArithmetic::All || window.iter().any(inline_division) {
                moved |= list_schedule(window, &latency);
            }
        }
        i = j;
    }
    moved
}

/// Orders `run` by list scheduling: each step takes, of the instructions whose predecessors
/// have all been taken, the one with the longest chain of latencies to the run's end, the
/// earliest in `run` on a tie. Returns whether the order changed.
fn list_schedule(run: &mut [Inst], latency: impl Fn(&Inst) -> u64) -> bool {
    let m = run.len();
    let mut height = vec![0u64; m];
    let mut preds = vec![0u32; m];
    // Each instruction's successors, found once: the listing below releases them.
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); m];
    for a in (0..m).rev() {
        let own = latency(&run[a]);
        let mut h = own;
        for b in a + 1..m {
            if feeds(&run[a], &run[b]) {
                h = h.max(own + height[b]);
            } else if overwrites(&run[a], &run[b]) {
                h = h.max(height[b]);
            } else {
                continue;
            }
            preds[b] += 1;
            succs[a].push(b);
        }
        height[a] = h;
    }
    let mut taken = vec![false; m];
    let mut order = Vec::with_capacity(m);
    // Dependences go forward in `run`, so some instruction is always ready.
    while let Some(next) = (0..m)
        .filter(|&k| !taken[k] && preds[k] == 0)
        .max_by_key(|&k| (height[k], std::cmp::Reverse(k)))
    {
        taken[next] = true;
        order.push(next);
        for &b in &succs[next] {
            preds[b] -= 1;
        }
    }
    if order.len() < m || order.iter().enumerate().all(|(k, &o)| k == o) {
        return false;
    }
    let listed: Vec<Inst> = order.iter().map(|&k| run[k]).collect();
    run.copy_from_slice(&listed);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GpuConfig;
    use crate::decode::decode_module;
    use crate::ptx;

    /// The kernel `k` of `body`, decoded, before and after `reorder` with `pipe`: each
    /// instruction's PTX line in order.
    fn lines_with(body: &str, pipe: &PipelineConfig) -> (Vec<u32>, Vec<u32>) {
        let text = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 a)\n{{\n\
             .reg .pred %p<4>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<8>;\n{body}\n}}\n"
        );
        let ast = ptx::parse(&text).unwrap();
        let mut p = decode_module(&ast).unwrap().kernels.remove(0);
        let before = p.insts.iter().map(|x| x.line).collect();
        reorder(&mut p, pipe);
        assert_eq!(p.exec.len(), p.insts.len());
        (before, p.insts.iter().map(|x| x.line).collect())
    }

    /// The h100 preset's pipeline with the load pass or not, and `list` for the arithmetic.
    fn pipeline(loads: bool, list: Option<ListArithmetic>) -> PipelineConfig {
        let mut p = GpuConfig::preset("h100").unwrap().pipeline;
        p.hoist_loads = loads;
        p.list_arithmetic = list;
        p
    }

    /// The load pass alone.
    fn lines(body: &str) -> (Vec<u32>, Vec<u32>) {
        lines_with(body, &pipeline(true, None))
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

    /// Two chains of 32-bit divisions as nvcc writes `int-division.cu`'s `latency2`: each
    /// quotient's xor before the other chain's operands.
    const TWO_CHAINS: &str = "ld.param.u64 %rd1, [a];\n\
         ld.global.u32 %r1, [%rd1];\nld.global.u32 %r2, [%rd1+4];\n\
         and.b32 %r3, %r1, 1;\nor.b32 %r4, %r3, 3;\ndiv.u32 %r5, %r1, %r4;\nxor.b32 %r6, %r5, 7;\n\
         and.b32 %r7, %r2, 1;\nor.b32 %r8, %r7, 3;\ndiv.u32 %r9, %r2, %r8;\nxor.b32 %r10, %r9, 7;\n\
         add.u32 %r11, %r6, %r10;\nst.global.u32 [%rd1], %r11;";

    #[test]
    fn independent_divisions_issue_together_after_what_computes_their_operands() {
        let (before, after) =
            lines_with(TWO_CHAINS, &pipeline(true, Some(ListArithmetic::Divisions)));
        // Lines 9-21: the param and two global loads, chain one (12-15), chain two (16-19),
        // the add, the store and the closing exit.
        assert_eq!(
            before,
            [9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 21]
        );
        // Each step takes the ready instruction with the longest chain of latencies after it,
        // which alternates the two chains: their operands, then the two divisions back to
        // back, then each xor after both.
        assert_eq!(
            after,
            [9, 10, 11, 12, 16, 13, 17, 14, 18, 15, 19, 20, 21, 21]
        );
        // Without the option nothing moves.
        let (_, kept) = lines_with(TWO_CHAINS, &pipeline(true, None));
        assert_eq!(kept, before);
    }

    #[test]
    fn a_run_without_a_division_is_listed_only_with_all_and_carries_end_a_run() {
        // Lines 11-13: arithmetic a list scheduler reorders (the and's chain is longer) but
        // with no division. Lines 16-21: an add with carry and its addc, then a run whose
        // division's operand (line 19) the list puts first.
        let body = "ld.param.u64 %rd1, [a];\nld.global.u32 %r1, [%rd1];\n\
             xor.b32 %r5, %r1, 3;\nand.b32 %r4, %r1, 1;\nxor.b32 %r6, %r4, 3;\n\
             st.global.u32 [%rd1+4], %r5;\nst.global.u32 [%rd1+8], %r6;\n\
             add.cc.u32 %r7, %r1, 1;\naddc.u32 %r8, %r1, 0;\nadd.u32 %r11, %r7, %r8;\n\
             add.u32 %r9, %r1, 5;\ndiv.u32 %r10, %r1, %r9;\nxor.b32 %r12, %r10, %r11;\n\
             st.global.u32 [%rd1+12], %r12;";
        let (before, divisions) =
            lines_with(body, &pipeline(true, Some(ListArithmetic::Divisions)));
        assert_eq!(
            before,
            [9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 22]
        );
        // Were the carries in the run, the division's operand would move above them too.
        assert_eq!(
            divisions,
            [9, 10, 11, 12, 13, 14, 15, 16, 17, 19, 20, 18, 21, 22, 22]
        );
        let (_, all) = lines_with(body, &pipeline(true, Some(ListArithmetic::All)));
        assert_eq!(
            all,
            [9, 10, 12, 11, 13, 14, 15, 16, 17, 19, 20, 18, 21, 22, 22]
        );
    }

    #[test]
    fn a_long_run_is_listed_in_windows() {
        // A run of 255 adds to one register, the division's operand and the division: the
        // operand is the window's last instruction and the division the next window's first,
        // so the operand, which would go first with the division in its window, stays.
        let adds = "add.u32 %r2, %r1, 1;\n".repeat(WINDOW - 1);
        let body = format!(
            "ld.param.u64 %rd1, [a];\nld.global.u32 %r1, [%rd1];\n{adds}\
             add.u32 %r3, %r1, 5;\ndiv.u32 %r4, %r1, %r3;\nxor.b32 %r5, %r4, %r2;\n\
             st.global.u32 [%rd1], %r5;"
        );
        let (before, after) = lines_with(&body, &pipeline(true, Some(ListArithmetic::Divisions)));
        assert_eq!(before, after);
        // In one window with the division, the operand goes before the adds.
        let short = body.replacen("add.u32 %r2, %r1, 1;\n", "", 1);
        let (before, after) = lines_with(&short, &pipeline(true, Some(ListArithmetic::Divisions)));
        assert_eq!(after[2], before[WINDOW]);
    }
}
