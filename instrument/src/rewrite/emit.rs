//! The PTX the rewriter inserts: the same instruction sequences as `kernels/warpscope.cuh`
//! produces for `WS_KERNEL_BEGIN`, `WS_LOAD` and `WS_KERNEL_END` (see the header for why each is
//! shaped as it is), written with registers of their own (`%ws_*`) so nothing collides with the
//! kernel's. Offsets come from `kernels::layout` (the header's constants) and from the `ws::Log`
//! argument's layout in [`crate::probe::log_arg_offset`].

use crate::probe::log_arg_offset as arg;
use kernels::layout::*;
use std::fmt::Write as _;
use trace::ProbeMode;

/// The module-scope name of the probes' dynamic shared memory (all `.extern .shared` arrays of
/// a kernel start at the same address: the dynamic shared window).
pub const SHARED_SYMBOL: &str = "ws_probe_shared";

/// Declarations at the top of each instrumented entry. `%ws_st` is the one value kept across
/// the kernel (the warp's state address in shared memory; in a sampled build its top bits hold
/// the warp's access counter and step); the others are scratch.
pub const REGISTERS: &str = "\t.reg .b32 \t%ws_st;\n\t.reg .b32 \t%ws_r<16>;\n\t.reg .b64 \t%ws_rd<4>;\n\t.reg .pred \t%ws_p<8>;\n";

/// The label every exit of an instrumented entry branches to.
pub const EXIT_LABEL: &str = "$WS_EXIT";

macro_rules! line {
    ($out:expr, $($t:tt)*) => {{
        $out.push('\t');
        let _ = writeln!($out, $($t)*);
    }};
}

/// The warp's global index into `%ws_r2` and its index in the block into `%ws_r3`
/// (scratch: `%ws_r0..%ws_r8`). Same formulas as the header's `global_warp` / `warp_in_block`.
fn warp_indices(o: &mut String) {
    line!(o, "mov.u32 \t%ws_r0, %ntid.x;");
    line!(o, "mov.u32 \t%ws_r1, %ntid.y;");
    line!(o, "mov.u32 \t%ws_r2, %ntid.z;");
    line!(o, "mov.u32 \t%ws_r3, %tid.x;");
    line!(o, "mov.u32 \t%ws_r4, %tid.y;");
    line!(o, "mov.u32 \t%ws_r5, %tid.z;");
    line!(o, "mad.lo.s32 \t%ws_r4, %ws_r5, %ws_r1, %ws_r4;");
    line!(o, "mad.lo.s32 \t%ws_r3, %ws_r4, %ws_r0, %ws_r3;");
    line!(o, "shr.u32 \t%ws_r3, %ws_r3, 5;");
    line!(o, "mul.lo.s32 \t%ws_r6, %ws_r0, %ws_r1;");
    line!(o, "mad.lo.s32 \t%ws_r6, %ws_r6, %ws_r2, 31;");
    line!(o, "shr.u32 \t%ws_r6, %ws_r6, 5;");
    line!(o, "mov.u32 \t%ws_r0, %ctaid.x;");
    line!(o, "mov.u32 \t%ws_r1, %ctaid.y;");
    line!(o, "mov.u32 \t%ws_r2, %ctaid.z;");
    line!(o, "mov.u32 \t%ws_r7, %nctaid.x;");
    line!(o, "mov.u32 \t%ws_r8, %nctaid.y;");
    line!(o, "mad.lo.s32 \t%ws_r2, %ws_r2, %ws_r8, %ws_r1;");
    line!(o, "mad.lo.s32 \t%ws_r2, %ws_r2, %ws_r7, %ws_r0;");
    line!(o, "mad.lo.s32 \t%ws_r2, %ws_r2, %ws_r6, %ws_r3;");
}

/// The warp's area in bytes (`48 + sites*16`) into `%ws_r9`.
fn area(o: &mut String, log: &str) {
    line!(o, "ld.param.u32 \t%ws_r9, [{log}+{}];", arg::SITES);
    line!(o, "shl.b32 \t%ws_r9, %ws_r9, 4;");
    line!(o, "add.s32 \t%ws_r9, %ws_r9, {WS_WARP_HEADER_BYTES};");
}

/// `WS_KERNEL_BEGIN`: the warp's state in shared memory initialised by its leader, the
/// host-written trace index copied in and the begin clock read last; `sampled`: the untimed flag
/// copied in too (marked as a sampled build's), and the warp's access counter, at its phase, and
/// its step put into `%ws_st`'s top bits (an untimed warp's counter 1 and step 0).
pub fn begin(o: &mut String, log: &str, sampled: bool) {
    let nt = WS_NOT_TRACED;
    line!(o, "// warpscope: WS_KERNEL_BEGIN");
    warp_indices(o);
    area(o, log);
    line!(o, "ld.param.u32 \t%ws_r10, [{log}+{}];", arg::SHARED_OFFSET);
    line!(o, "mov.u32 \t%ws_st, {SHARED_SYMBOL};");
    line!(o, "add.s32 \t%ws_st, %ws_st, %ws_r10;");
    line!(o, "mad.lo.s32 \t%ws_st, %ws_r3, %ws_r9, %ws_st;");
    line!(o, "ld.param.u64 \t%ws_rd0, [{log}+{}];", arg::BUF);
    line!(o, "cvta.to.global.u64 \t%ws_rd0, %ws_rd0;");
    line!(o, "mul.wide.u32 \t%ws_rd1, %ws_r2, %ws_r9;");
    line!(o, "add.s64 \t%ws_rd1, %ws_rd0, %ws_rd1;");
    line!(
        o,
        "ld.volatile.global.u32 \t%ws_r11, [%ws_rd1+{}];",
        WS_LOG_HEADER_BYTES + WS_WH_TRACE_OFFSET
    );
    if sampled {
        line!(
            o,
            "ld.volatile.global.u32 \t%ws_r4, [%ws_rd1+{}];",
            WS_LOG_HEADER_BYTES + WS_WH_UNTIMED_OFFSET
        );
        line!(o, "or.b32 \t%ws_r4, %ws_r4, {WS_WARP_SAMPLED_BUILD};");
    }
    line!(o, "activemask.b32 \t%ws_r12;");
    line!(o, "mov.u32 \t%ws_r13, %lanemask_lt;");
    line!(o, "and.b32 \t%ws_r13, %ws_r13, %ws_r12;");
    line!(o, "setp.ne.s32 \t%ws_p0, %ws_r13, 0;");
    line!(o, "@%ws_p0 bra \t$WS_BEGIN_DONE;");
    line!(o, "mov.u32 \t%ws_r14, 0;");
    for off in [
        WS_WH_COUNT_OFFSET,
        WS_WH_FLAGS_OFFSET,
        WS_WH_DROPPED_SITES_OFFSET,
    ] {
        line!(o, "st.shared.u32 \t[%ws_st+{off}], %ws_r14;");
    }
    line!(o, "st.shared.u32 \t[%ws_st+{WS_WH_TRACE_OFFSET}], %ws_r11;");
    if sampled {
        line!(
            o,
            "st.shared.u32 \t[%ws_st+{WS_WH_UNTIMED_OFFSET}], %ws_r4;"
        );
    }
    line!(o, "setp.eq.u32 \t%ws_p1, %ws_r11, {nt};");
    line!(o, "@%ws_p1 bra \t$WS_BEGIN_SITES;");
    // Until END, `end` holds a traced warp's record base and `smid` its slot count.
    line!(o, "ld.param.u32 \t%ws_r15, [{log}+{}];", arg::N_WARPS);
    line!(o, "mul.wide.u32 \t%ws_rd2, %ws_r15, %ws_r9;");
    line!(o, "add.s64 \t%ws_rd2, %ws_rd0, %ws_rd2;");
    line!(o, "ld.param.u32 \t%ws_r15, [{log}+{}];", arg::SLOTS);
    line!(o, "mul.wide.u32 \t%ws_rd3, %ws_r11, %ws_r15;");
    line!(o, "shl.b64 \t%ws_rd3, %ws_rd3, 4;");
    line!(o, "add.s64 \t%ws_rd2, %ws_rd2, %ws_rd3;");
    line!(o, "add.s64 \t%ws_rd2, %ws_rd2, {WS_LOG_HEADER_BYTES};");
    line!(o, "st.shared.u64 \t[%ws_st+{WS_WH_END_OFFSET}], %ws_rd2;");
    line!(o, "st.shared.u32 \t[%ws_st+{WS_WH_SMID_OFFSET}], %ws_r15;");
    o.push_str("$WS_BEGIN_SITES:\n");
    line!(o, "ld.param.u32 \t%ws_r15, [{log}+{}];", arg::SITES);
    line!(o, "add.s32 \t%ws_r10, %ws_st, {WS_WARP_HEADER_BYTES};");
    line!(o, "mov.u32 \t%ws_r11, -1;");
    o.push_str("$WS_BEGIN_LOOP:\n");
    line!(o, "setp.eq.u32 \t%ws_p1, %ws_r15, 0;");
    line!(o, "@%ws_p1 bra \t$WS_BEGIN_DONE;");
    line!(
        o,
        "st.shared.u32 \t[%ws_r10+{WS_SUM_COUNT_OFFSET}], %ws_r14;"
    );
    line!(o, "st.shared.u32 \t[%ws_r10+{WS_SUM_MIN_OFFSET}], %ws_r11;");
    line!(o, "st.shared.u32 \t[%ws_r10+{WS_SUM_MAX_OFFSET}], %ws_r14;");
    line!(o, "st.shared.u32 \t[%ws_r10+{WS_SUM_SUM_OFFSET}], %ws_r14;");
    line!(o, "add.s32 \t%ws_r10, %ws_r10, {WS_SUMMARY_SITE_BYTES};");
    line!(o, "add.s32 \t%ws_r15, %ws_r15, -1;");
    line!(o, "bra \t$WS_BEGIN_LOOP;");
    o.push_str("$WS_BEGIN_DONE:\n");
    line!(o, "bar.warp.sync \t%ws_r12;");
    // Read last, after the set-up's loads, so that no load lies between it and the first probe.
    line!(o, "mov.u64 \t%ws_rd0, %clock64;");
    line!(
        o,
        "@!%ws_p0 st.shared.u64 \t[%ws_st+{WS_WH_BEGIN_OFFSET}], %ws_rd0;"
    );
    if sampled {
        // The counter's step from the flags and its phase, the warp's index times the step; an
        // untimed warp's step is 0 and its counter 1, so it never times.
        line!(o, "and.b32 \t%ws_r4, %ws_r4, {WS_WARP_UNTIMED};");
        line!(o, "setp.ne.u32 \t%ws_p2, %ws_r4, 0;");
        line!(o, "ld.param.u32 \t%ws_r5, [{log}+{}];", arg::FLAGS);
        line!(o, "shr.u32 \t%ws_r5, %ws_r5, {WS_LOG_FLAG_STEP_SHIFT};");
        line!(o, "and.b32 \t%ws_r5, %ws_r5, {};", WS_MAX_ACCESS_PERIOD - 1);
        line!(o, "@%ws_p2 mov.u32 \t%ws_r5, 0;");
        line!(o, "mul.lo.s32 \t%ws_r6, %ws_r5, %ws_r2;");
        line!(o, "shl.b32 \t%ws_r6, %ws_r6, {WS_STATE_COUNTER_SHIFT};");
        line!(o, "shl.b32 \t%ws_r5, %ws_r5, {WS_STATE_STEP_SHIFT};");
        line!(o, "or.b32 \t%ws_st, %ws_st, %ws_r5;");
        line!(o, "or.b32 \t%ws_st, %ws_st, %ws_r6;");
        line!(
            o,
            "@%ws_p2 or.b32 \t%ws_st, %ws_st, {WS_STATE_COUNTER_ONE:#x};"
        );
    }
}

/// `WS_KERNEL_END` at the exit label: end clock, identity, END flag, then the state copied to
/// the global log by all active lanes. Ends with `ret`.
pub fn end(o: &mut String, log: &str, sampled: bool) {
    o.push_str(&format!("{EXIT_LABEL}:\n"));
    line!(o, "// warpscope: WS_KERNEL_END");
    line!(o, "mov.u64 \t%ws_rd0, %clock64;");
    if sampled {
        line!(
            o,
            "and.b32 \t%ws_st, %ws_st, {:#x};",
            !(WS_STATE_COUNTER_MASK | WS_STATE_STEP_MASK)
        );
    }
    line!(o, "activemask.b32 \t%ws_r12;");
    line!(o, "bar.warp.sync \t%ws_r12;");
    line!(o, "mov.u32 \t%ws_r13, %lanemask_lt;");
    line!(o, "and.b32 \t%ws_r13, %ws_r13, %ws_r12;");
    line!(o, "setp.ne.s32 \t%ws_p0, %ws_r13, 0;");
    line!(o, "@%ws_p0 bra \t$WS_END_COPY;");
    line!(o, "st.shared.u64 \t[%ws_st+{WS_WH_END_OFFSET}], %ws_rd0;");
    line!(o, "mov.u32 \t%ws_r14, %smid;");
    line!(o, "st.shared.u32 \t[%ws_st+{WS_WH_SMID_OFFSET}], %ws_r14;");
    line!(o, "mov.u32 \t%ws_r14, %warpid;");
    line!(
        o,
        "st.shared.u32 \t[%ws_st+{WS_WH_WARPID_OFFSET}], %ws_r14;"
    );
    line!(o, "mov.u32 \t%ws_r14, {WS_WARP_FLAG_END};");
    line!(o, "st.shared.u32 \t[%ws_st+{WS_WH_FLAGS_OFFSET}], %ws_r14;");
    o.push_str("$WS_END_COPY:\n");
    line!(o, "bar.warp.sync \t%ws_r12;");
    warp_indices(o);
    area(o, log);
    line!(o, "ld.param.u64 \t%ws_rd0, [{log}+{}];", arg::BUF);
    line!(o, "cvta.to.global.u64 \t%ws_rd0, %ws_rd0;");
    line!(o, "mul.wide.u32 \t%ws_rd1, %ws_r2, %ws_r9;");
    line!(o, "add.s64 \t%ws_rd1, %ws_rd0, %ws_rd1;");
    line!(o, "add.s64 \t%ws_rd1, %ws_rd1, {WS_LOG_HEADER_BYTES};");
    // rank among the active lanes, lanes active, and 8-byte words to copy.
    line!(o, "popc.b32 \t%ws_r13, %ws_r13;");
    line!(o, "popc.b32 \t%ws_r14, %ws_r12;");
    line!(o, "shr.u32 \t%ws_r9, %ws_r9, 3;");
    o.push_str("$WS_END_LOOP:\n");
    line!(o, "setp.ge.u32 \t%ws_p0, %ws_r13, %ws_r9;");
    line!(o, "@%ws_p0 bra \t$WS_END_DONE;");
    line!(o, "shl.b32 \t%ws_r15, %ws_r13, 3;");
    line!(o, "add.s32 \t%ws_r10, %ws_st, %ws_r15;");
    line!(o, "ld.shared.u64 \t%ws_rd2, [%ws_r10];");
    line!(o, "mul.wide.u32 \t%ws_rd3, %ws_r15, 1;");
    line!(o, "add.s64 \t%ws_rd3, %ws_rd1, %ws_rd3;");
    line!(o, "st.global.u64 \t[%ws_rd3], %ws_rd2;");
    line!(o, "add.s32 \t%ws_r13, %ws_r13, %ws_r14;");
    line!(o, "bra \t$WS_END_LOOP;");
    o.push_str("$WS_END_DONE:\n");
    line!(o, "ret;");
}

/// How the closing clock read of a site waits for its load.
pub struct Site<'a> {
    pub id: u16,
    /// Naive, Fence or Dummy.
    pub method: ProbeMode,
    /// The load line without its guard.
    pub load: &'a str,
    /// The load's destination registers with their widths in bits (dummy mode reads them all).
    pub dests: &'a [(&'a str, u32)],
    /// A comment naming the site.
    pub what: &'a str,
}

/// `WS_LOAD`: the probe: prepare (leader, trace check) before the opening clock, the load, the
/// mode's closing construct, then the statistics update and, for a traced warp, its record.
/// `sampled`: first, before the window, whether this access is timed (its counter is 0; the
/// header's SAMPLED TIMING); an access that is not timed branches to a copy of the original load
/// and nothing else. The branch is before the window, so the window is the same straight-line
/// code whatever the sampling. After the load, on either path, the counter advances.
pub fn site(o: &mut String, log: &str, s: &Site<'_>, n: usize, sampled: bool) {
    let nt = WS_NOT_TRACED;
    line!(o, "// warpscope: site {} ({})", s.id, s.what);
    // The state's address: `%ws_st` itself, or in a sampled build with its counter and step
    // bits cleared.
    let st = if sampled { "%ws_r10" } else { "%ws_st" };
    if sampled {
        // Timed when the counter (the state's top bits) is 0: one compare decides.
        line!(
            o,
            "setp.lt.u32 \t%ws_p7, %ws_st, {WS_STATE_COUNTER_ONE:#x};"
        );
        line!(
            o,
            "and.b32 \t{st}, %ws_st, {:#x};",
            !(WS_STATE_COUNTER_MASK | WS_STATE_STEP_MASK)
        );
        line!(o, "@%ws_p7 bra \t$WS_TIMED_{n};");
        o.push_str(s.load);
        o.push('\n');
        line!(o, "bra.uni \t$WS_REC_{n};");
        o.push_str(&format!("$WS_TIMED_{n}:\n"));
    }
    // prepare(): computed before the window so its latency hides under the timed load's.
    line!(o, "mov.u32 \t%ws_r0, %lanemask_lt;");
    line!(o, "activemask.b32 \t%ws_r1;");
    line!(o, "and.b32 \t%ws_r2, %ws_r1, %ws_r0;");
    line!(o, "ld.param.u32 \t%ws_r3, [{log}+{}];", arg::FLAGS);
    line!(o, "and.b32 \t%ws_r3, %ws_r3, {WS_LOG_FLAG_TRACED};");
    line!(o, "setp.ne.u32 \t%ws_p1, %ws_r3, 0;");
    line!(o, "mov.u32 \t%ws_r4, {nt};");
    line!(
        o,
        "@%ws_p1 ld.shared.u32 \t%ws_r4, [{st}+{WS_WH_TRACE_OFFSET}];"
    );
    line!(o, "ld.param.u32 \t%ws_r5, [{log}+{}];", arg::SITES);
    if s.method == ProbeMode::Dummy {
        line!(o, "ld.param.u32 \t%ws_r6, [{log}+{}];", arg::DUMMY);
    }
    line!(o, "mov.u32 \t%ws_r7, %clock;");
    o.push_str(s.load);
    o.push('\n');
    match s.method {
        ProbeMode::Fence => {
            line!(o, "fence.acq_rel.cta;");
        }
        ProbeMode::Dummy => {
            // A never-executed volatile store of the load's destination registers themselves:
            // it waits for the load (scoreboard), the clock read stays after it, and no
            // operation stands between the data's arrival and the close. The warp's state is
            // 16-byte aligned, as a four-word store needs.
            line!(o, "setp.lt.s32 \t%ws_p2, %ws_r6, 0;");
            let regs: Vec<&str> = s.dests.iter().map(|(r, _)| *r).collect();
            let words = s.dests.iter().all(|&(_, bits)| bits == 32);
            match regs.len() {
                2 | 4 if words => line!(
                    o,
                    "@%ws_p2 st.volatile.shared.v{}.b32 \t[{st}], {{{}}};",
                    regs.len(),
                    regs.join(", ")
                ),
                _ => {
                    for (reg, bits) in s.dests {
                        line!(o, "@%ws_p2 st.volatile.shared.b{bits} \t[{st}], {reg};");
                    }
                }
            }
        }
        _ => {}
    }
    line!(o, "mov.u32 \t%ws_r8, %clock;");
    // record(): predicated shared reductions by the group's leader.
    let a = WS_WARP_HEADER_BYTES + u32::from(s.id) * WS_SUMMARY_SITE_BYTES;
    let id = s.id;
    line!(o, "setp.eq.u32 \t%ws_p3, %ws_r2, 0;");
    line!(o, "setp.gt.and.u32 \t%ws_p4, %ws_r5, {id}, %ws_p3;");
    line!(o, "setp.le.and.u32 \t%ws_p5, %ws_r5, {id}, %ws_p3;");
    line!(o, "sub.s32 \t%ws_r11, %ws_r8, %ws_r7;");
    line!(
        o,
        "@%ws_p4 red.shared.add.u32 \t[{st}+{}], 1;",
        a + WS_SUM_COUNT_OFFSET
    );
    line!(
        o,
        "@%ws_p4 red.shared.min.u32 \t[{st}+{}], %ws_r11;",
        a + WS_SUM_MIN_OFFSET
    );
    line!(
        o,
        "@%ws_p4 red.shared.max.u32 \t[{st}+{}], %ws_r11;",
        a + WS_SUM_MAX_OFFSET
    );
    line!(
        o,
        "@%ws_p4 red.shared.add.u32 \t[{st}+{}], %ws_r11;",
        a + WS_SUM_SUM_OFFSET
    );
    line!(
        o,
        "@%ws_p5 red.shared.add.u32 \t[{st}+{WS_WH_DROPPED_SITES_OFFSET}], 1;"
    );
    // trace_record(): one 16-byte global store, drained before the next window opens.
    line!(o, "setp.ne.and.u32 \t%ws_p6, %ws_r4, {nt}, %ws_p3;");
    line!(o, "@!%ws_p6 bra \t$WS_REC_{n};");
    line!(
        o,
        "atom.shared.add.u32 \t%ws_r12, [{st}+{WS_WH_COUNT_OFFSET}], 1;"
    );
    line!(o, "ld.shared.u64 \t%ws_rd1, [{st}+{WS_WH_END_OFFSET}];");
    line!(o, "ld.shared.u32 \t%ws_r13, [{st}+{WS_WH_SMID_OFFSET}];");
    line!(o, "setp.ge.u32 \t%ws_p6, %ws_r12, %ws_r13;");
    line!(o, "@%ws_p6 bra \t$WS_REC_{n};");
    line!(o, "mul.wide.u32 \t%ws_rd2, %ws_r12, {WS_RECORD_BYTES};");
    line!(o, "add.s64 \t%ws_rd1, %ws_rd1, %ws_rd2;");
    line!(o, "mov.u32 \t%ws_r14, {id};");
    line!(o, "mov.u32 \t%ws_r15, 0;");
    line!(
        o,
        "st.global.v4.u32 \t[%ws_rd1], {{%ws_r7, %ws_r11, %ws_r14, %ws_r15}};"
    );
    line!(o, "fence.acq_rel.cta;");
    o.push_str(&format!("$WS_REC_{n}:\n"));
    if sampled {
        // After the load on either path, the counter advances by its step (the add wraps it).
        line!(o, "shl.b32 \t%ws_r0, %ws_st, {WS_STATE_STEP_TO_COUNTER};");
        line!(o, "and.b32 \t%ws_r0, %ws_r0, {WS_STATE_COUNTER_MASK:#x};");
        line!(o, "add.s32 \t%ws_st, %ws_st, %ws_r0;");
    }
}
