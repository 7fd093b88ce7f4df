//! Integer division timed as the sequence a GPU runs for it (`pipeline.int_division`): each
//! division in a dependent chain adds its sequence's latency; independent 32-bit ones overlap
//! until their instructions fill the scheduler's issue slots, and then each adds its
//! instructions; a 64-bit one takes the path its lanes' operands need, and is a call that waits
//! for every register write its warp has pending.

use crate::common::*;
use emulator::{GpuConfig, InstructionSequence};

/// One warp: lanes below `wide_lanes` add 2^40 to `a`; between two `%clock64` reads, `n` (at
/// least 1) divisions `q = q / b` one after another (`dependent`) or `n` of `a / b` side by
/// side, then a use of the last; lane 0's window.
fn window(cfg: &GpuConfig, ty: &str, n: usize, dependent: bool, a: i64, wide_lanes: u32) -> u64 {
    // 32-bit types divide 32-bit copies of the operands (%q1, %q2).
    let r = if ty.ends_with("32") { "%q" } else { "%rd" };
    let mut body = String::from(" cvt.u32.u64 %q1, %rd1;\n cvt.u32.u64 %q2, %rd2;\n");
    for k in 0..n {
        let src = if dependent && k > 0 { 20 + k - 1 } else { 1 };
        body += &format!(" div.{ty} {r}{}, {r}{src}, {r}2;\n", 20 + k);
    }
    let last = 20 + n - 1;
    body += &if r == "%q" {
        format!(" cvt.u64.u32 %rd9, %q{last};\n")
    } else {
        format!(" add.s64 %rd9, %rd{last}, 1;\n")
    };
    let ptx = format!(
        r#".version 8.0
.target sm_75
.address_size 64
.visible .entry divs(.param .u64 out, .param .u64 a, .param .u64 b, .param .u32 wide)
{{
 .reg .b64 %rd<80>;
 .reg .b32 %r<4>;
 .reg .b32 %q<80>;
 .reg .pred %p<2>;
 ld.param.u64 %rd3, [out];
 ld.param.u64 %rd1, [a];
 ld.param.u64 %rd2, [b];
 ld.param.u32 %r2, [wide];
 mov.u32 %r1, %tid.x;
 setp.lt.u32 %p1, %r1, %r2;
 selp.b64 %rd4, 1099511627776, 0, %p1;
 add.s64 %rd1, %rd1, %rd4;
 mov.u64 %rd5, %clock64;
{body} mov.u64 %rd6, %clock64;
 sub.s64 %rd7, %rd6, %rd5;
 mul.wide.u32 %rd8, %r1, 8;
 add.s64 %rd8, %rd3, %rd8;
 st.global.u64 [%rd8], %rd7;
 st.global.u64 [%rd8+256], %rd9;
 ret;
}}"#
    );
    let mut r = Rig::with_config(&ptx, cfg.clone());
    let out = r.zeros(512);
    r.launch(
        "divs",
        [1, 1, 1],
        [32, 1, 1],
        vec![
            a64(out),
            (a as u64).to_le_bytes().to_vec(),
            a64(3),
            a32(wide_lanes as i32),
        ],
    );
    r.get_u64(out)
}

/// What one more division adds to the window.
fn step(cfg: &GpuConfig, ty: &str, dependent: bool, a: i64, wide_lanes: u32) -> u64 {
    window(cfg, ty, 3, dependent, a, wide_lanes) - window(cfg, ty, 2, dependent, a, wide_lanes)
}

fn h100() -> (GpuConfig, emulator::IntDivision) {
    let cfg = GpuConfig::preset("h100").unwrap();
    let table = cfg
        .pipeline
        .int_division
        .expect("the h100 preset times divisions");
    (cfg, table)
}

#[test]
fn a_dependent_division_adds_its_sequences_latency() {
    let (cfg, t) = h100();
    let lat = |q: InstructionSequence| u64::from(q.latency_cycles);
    let narrow = 1 << 20;
    for (ty, a, wide_lanes, want) in [
        ("u32", narrow, 0, lat(t.u32)),
        ("s32", narrow, 0, lat(t.s32)),
        ("u64", narrow, 0, lat(t.narrow64)),
        ("s64", narrow, 0, lat(t.narrow64)),
        ("u64", narrow, 32, lat(t.u64)),
        ("s64", narrow, 32, lat(t.s64)),
        // A negative operand has its high word set: ptxas' test sends it the long way.
        ("s64", -narrow, 0, lat(t.s64)),
        // Lanes both ways: the warp runs both sequences.
        ("u64", narrow, 5, lat(t.narrow64.then(t.u64))),
    ] {
        assert_eq!(
            step(&cfg, ty, true, a, wide_lanes),
            want,
            "{ty} a={a} wide lanes {wide_lanes}"
        );
    }
}

#[test]
fn independent_divisions_overlap_until_their_instructions_fill_the_issue_slots() {
    let (mut cfg, t) = h100();
    // 64-bit divisions overlap too where a call does not wait (the next test).
    cfg.pipeline
        .int_division
        .as_mut()
        .expect("h100 times divisions")
        .call_waits_for_scoreboard = false;
    // In the PTX's order, so that the last division is the one the window's end waits for
    // (listed, it would issue first: the use after it gives it the longest chain).
    cfg.pipeline.list_arithmetic = None;
    for (ty, wide_lanes, q) in [
        ("u32", 0, t.u32),
        ("u64", 32, t.u64),
        ("u64", 0, t.narrow64),
    ] {
        let (n, lat) = (u64::from(q.instructions), u64::from(q.latency_cycles));
        let more = |k: usize| {
            window(&cfg, ty, k + 1, false, 1 << 20, wide_lanes)
                - window(&cfg, ty, k, false, 1 << 20, wide_lanes)
        };
        // Two sequences' instructions fit in one latency: the second overlaps the first.
        assert!(2 * n < lat, "{ty}: the case needs room");
        let second = more(1);
        // Enough that their instructions fill the latency many times: each more adds its own.
        let k = (4 * lat).div_ceil(n) as usize;
        let late = more(k);
        assert!(
            second <= n / 4,
            "{ty} wide lanes {wide_lanes}: the second added {second}"
        );
        assert!(
            late.abs_diff(n) <= 1,
            "{ty} wide lanes {wide_lanes}: one more added {late}"
        );
    }
}

#[test]
fn independent_64_bit_divisions_are_calls_one_after_another() {
    let (cfg, t) = h100();
    assert!(t.call_waits_for_scoreboard, "the h100 preset's calls wait");
    for (ty, wide_lanes, q) in [
        ("u64", 32, t.u64),
        ("s64", 32, t.s64),
        ("u64", 0, t.narrow64),
    ] {
        let lat = u64::from(q.latency_cycles);
        let independent = step(&cfg, ty, false, 1 << 20, wide_lanes);
        // The next call waits for the result before; the few cycles over it are the call's
        // own issue and the register's read.
        assert!(
            independent >= lat && independent <= lat + 8,
            "{ty} wide lanes {wide_lanes}: one more independent division added {independent}, \
             its latency is {lat}"
        );
    }
}

/// One warp: between two `%clock64` reads, a load of a line no launch has read and a division
/// of the kernel's parameters that does not read it; then a use of both. Lane 0's window.
fn load_then_division(cfg: &GpuConfig, ty: &str) -> u64 {
    let r = if ty.ends_with("32") { "%q" } else { "%rd" };
    let ptx = format!(
        r#".version 8.0
.target sm_75
.address_size 64
.visible .entry ld_div(.param .u64 out, .param .u64 src, .param .u64 a, .param .u64 b)
{{
 .reg .b64 %rd<20>;
 .reg .b32 %r<4>;
 .reg .b32 %q<8>;
 ld.param.u64 %rd1, [out];
 ld.param.u64 %rd2, [src];
 ld.param.u64 %rd3, [a];
 ld.param.u64 %rd4, [b];
 cvt.u32.u64 %q1, %rd3;
 cvt.u32.u64 %q2, %rd4;
 mov.u32 %r1, %tid.x;
 mov.u64 %rd5, %clock64;
 ld.global.u64 %rd6, [%rd2];
 div.{ty} {r}7, {r}1, {r}2;
 mov.u64 %rd8, %clock64;
 sub.s64 %rd9, %rd8, %rd5;
 mul.wide.u32 %rd10, %r1, 8;
 add.s64 %rd10, %rd1, %rd10;
 st.global.u64 [%rd10], %rd9;
 st.global.u64 [%rd10+256], %rd6;
 st.global.u32 [%rd10+512], %q7;
 st.global.u64 [%rd10+1024], %rd7;
 ret;
}}"#
    );
    let mut r = Rig::with_config(&ptx, cfg.clone());
    let out = r.zeros(2048);
    let src = r.zeros(256);
    r.launch(
        "ld_div",
        [1, 1, 1],
        [32, 1, 1],
        vec![a64(out), a64(src), a64(1 << 20), a64(3)],
    );
    r.get_u64(out)
}

#[test]
fn a_64_bit_division_waits_for_a_load_it_does_not_read() {
    let (cfg, t) = h100();
    // What the load takes from an empty cache: L1, L2 and DRAM.
    let miss = u64::from(cfg.l1.latency_cycles + cfg.l2.latency_cycles + cfg.dram.latency_cycles);
    // The call waits for the load, and the closing clock, which reads nothing either writes,
    // for the call's return: the warp runs the routine.
    let call = load_then_division(&cfg, "u64");
    let routine = u64::from(t.narrow64.latency_cycles);
    // (The three latencies add up to a few cycles more than a miss takes from its issue.)
    assert!(
        call + 8 >= miss + routine,
        "window {call}: the miss takes {miss} and the routine {routine}"
    );
    // Inline code waits for its own operands alone, and the clock not at all.
    let inline = load_then_division(&cfg, "u32");
    assert!(
        inline < miss,
        "a 32-bit division waited for the load: window {inline}, the miss takes {miss}"
    );
    let mut no_wait = cfg.clone();
    no_wait
        .pipeline
        .int_division
        .as_mut()
        .expect("h100 times divisions")
        .call_waits_for_scoreboard = false;
    let overlapped = load_then_division(&no_wait, "u64");
    assert!(
        overlapped < miss,
        "without the wait the division overlaps the load: window {overlapped}"
    );
}

#[test]
fn without_a_table_a_division_is_one_integer_instruction() {
    let (mut cfg, _) = h100();
    cfg.pipeline.int_division = None;
    let int = u64::from(cfg.pipeline.int_latency_cycles);
    for ty in ["u32", "u64", "s64"] {
        assert_eq!(step(&cfg, ty, true, 1 << 20, 32), int, "{ty}");
    }
}

#[test]
fn the_quotients_do_not_depend_on_the_timing() {
    let quotients = |cfg: &GpuConfig| {
        let mut r = Rig::with_config(&division_kernel(), cfg.clone());
        let out = r.zeros(512);
        r.launch(
            "q",
            [1, 1, 1],
            [32, 1, 1],
            vec![a64(out), a64(0x0123_4567_89ab_cdef)],
        );
        r.get_u32(out, 128)
    };
    let (with, _) = h100();
    let mut without = with.clone();
    without.pipeline.int_division = None;
    let got = quotients(&with);
    assert_eq!(got, quotients(&without));
    let want: Vec<u32> = (0..32u64)
        .flat_map(|l| {
            let a = 0x0123_4567_89ab_cdef_u64 >> (2 * l);
            let q = a / (l + 1);
            [q as u32, (q >> 32) as u32, (a % (l + 1)) as u32, 0]
        })
        .collect();
    assert_eq!(got, want);
}

/// Lane `l` divides `a >> 2l` by `l + 1` (wide in the low lanes, narrow in the high ones) and
/// stores the quotient and the remainder.
fn division_kernel() -> String {
    r#".version 8.0
.target sm_75
.address_size 64
.visible .entry q(.param .u64 out, .param .u64 a)
{
 .reg .b64 %rd<12>;
 .reg .b32 %r<4>;
 ld.param.u64 %rd1, [out];
 ld.param.u64 %rd2, [a];
 mov.u32 %r1, %tid.x;
 shl.b32 %r2, %r1, 1;
 shr.u64 %rd3, %rd2, %r2;
 add.u32 %r3, %r1, 1;
 cvt.u64.u32 %rd4, %r3;
 div.u64 %rd5, %rd3, %rd4;
 rem.u64 %rd6, %rd3, %rd4;
 mul.wide.u32 %rd7, %r1, 16;
 add.s64 %rd7, %rd1, %rd7;
 st.global.u64 [%rd7], %rd5;
 st.global.u64 [%rd7+8], %rd6;
 ret;
}"#
    .into()
}

/// One warp, two chains of `n` dependent u32 steps (`q = (q / b) ^ 5`), written as nvcc writes
/// `docs/gpu/int-division.cu`'s `latency2`: each quotient's xor before the other chain's next
/// division. Lane 0's window between two `%clock64` reads, and each lane's two results.
fn two_chains(cfg: &GpuConfig, n: usize) -> (u64, Vec<u32>) {
    let (mut body, mut a, mut b) = (String::new(), 1, 2);
    for k in 0..n {
        for (src, dst) in [(&mut a, 20 + 4 * k), (&mut b, 22 + 4 * k)] {
            body += &format!(
                " div.u32 %q{dst}, %q{src}, %q3;\n xor.b32 %q{}, %q{dst}, 5;\n",
                dst + 1
            );
            *src = dst + 1;
        }
    }
    let ptx = format!(
        r#".version 8.0
.target sm_75
.address_size 64
.visible .entry two(.param .u64 out)
{{
 .reg .b64 %rd<12>;
 .reg .b32 %q<200>;
 ld.param.u64 %rd1, [out];
 mov.u32 %q1, %tid.x;
 add.u32 %q2, %q1, 1000;
 add.u32 %q1, %q1, 77777;
 mov.u32 %q3, 3;
 mov.u64 %rd5, %clock64;
{body} mov.u64 %rd6, %clock64;
 sub.s64 %rd7, %rd6, %rd5;
 mov.u32 %q4, %tid.x;
 mul.wide.u32 %rd8, %q4, 8;
 add.s64 %rd8, %rd1, %rd8;
 st.global.u64 [%rd8], %rd7;
 st.global.u32 [%rd8+256], %q{a};
 st.global.u32 [%rd8+260], %q{b};
 ret;
}}"#
    );
    let mut r = Rig::with_config(&ptx, cfg.clone());
    let out = r.zeros(512);
    r.launch("two", [1, 1, 1], [32, 1, 1], vec![a64(out)]);
    let results = r.get_u32(out, 128)[64..].to_vec();
    (r.get_u64(out), results)
}

#[test]
fn two_independent_chains_overlap_where_the_preset_lists_their_arithmetic() {
    let (with, t) = h100();
    assert_eq!(
        with.pipeline.list_arithmetic,
        Some(emulator::ListArithmetic::Divisions)
    );
    let mut without = with.clone();
    without.pipeline.list_arithmetic = None;
    let n = 4;
    let (listed, got) = two_chains(&with, n);
    let (in_order, got_in_order) = two_chains(&without, n);
    let chain = |q0: u32| (0..n).fold(q0, |q, _| (q / 3) ^ 5);
    let want: Vec<u32> = (0..32u32)
        .flat_map(|l| [chain(l + 77777), chain(l + 1000)])
        .collect();
    assert_eq!(got, want);
    assert_eq!(got_in_order, want);
    // In PTX order each division waits for the other chain's before it; listed, the two
    // chains' divisions issue together, and the window is one chain's latencies and a little.
    let lat = u64::from(t.u32.latency_cycles);
    assert!(in_order >= 2 * n as u64 * lat, "in order {in_order}");
    assert!(
        (n as u64 * lat..n as u64 * (lat + 2 * u64::from(t.u32.instructions))).contains(&listed),
        "listed {listed}, in order {in_order}"
    );
}
