//! Issue rates by unit: an instruction holds its unit for the unit's issue cycles, and where a
//! preset splits integer issue (`pipeline.int_split`), logic and adds, bit counts and
//! int-float conversions each have a unit of their own beside the integer unit. Where it lets
//! register moves vanish (`pipeline.free_register_moves`), they take no slot; where it hoists
//! loads (`pipeline.hoist_loads`), a warp issues a block's loads before their uses.

use crate::common::*;
use emulator::GpuConfig;

/// One warp: between two `%clock64` reads, `n` independent instructions, the `k`-th of which
/// `op(k)` writes (registers from 20 on); lane 0's window.
fn window(cfg: &GpuConfig, op: &dyn Fn(usize) -> String, n: usize) -> u64 {
    let body: String = (0..n).map(|k| format!(" {}\n", op(20 + k))).collect();
    let ptx = format!(
        r#".version 8.0
.target sm_75
.address_size 64
.visible .entry ops(.param .u64 out)
{{
 .reg .b64 %rd<60>;
 .reg .b32 %q<60>;
 .reg .f32 %f<60>;
 ld.param.u64 %rd3, [out];
 mov.u32 %q1, %tid.x;
 add.u32 %q2, %q1, 7;
 cvt.u64.u32 %rd1, %q1;
 add.s64 %rd2, %rd1, 9;
 mov.u64 %rd5, %clock64;
{body} mov.u64 %rd6, %clock64;
 sub.s64 %rd7, %rd6, %rd5;
 mul.wide.u32 %rd8, %q1, 8;
 add.s64 %rd8, %rd3, %rd8;
 st.global.u64 [%rd8], %rd7;
 ret;
}}"#
    );
    let mut r = Rig::with_config(&ptx, cfg.clone());
    let out = r.zeros(256);
    r.launch("ops", [1, 1, 1], [32, 1, 1], vec![a64(out)]);
    r.get_u64(out)
}

/// What one more instruction `op` adds to the window: its unit's issue cycles, or its issue
/// slots where those are more.
fn step(cfg: &GpuConfig, op: &dyn Fn(usize) -> String) -> u64 {
    window(cfg, op, 3) - window(cfg, op, 2)
}

/// Writes an instruction whose destination is register number `k`.
type Emit = Box<dyn Fn(usize) -> String>;

fn ops() -> [(&'static str, Emit); 8] {
    [
        ("xor.b32", Box::new(|k| format!("xor.b32 %q{k}, %q1, %q2;"))),
        ("add.u32", Box::new(|k| format!("add.u32 %q{k}, %q1, %q2;"))),
        (
            "mad.lo.u32",
            Box::new(|k| format!("mad.lo.u32 %q{k}, %q1, %q2, %q1;")),
        ),
        ("shl.b32", Box::new(|k| format!("shl.b32 %q{k}, %q1, %q2;"))),
        ("popc.b32", Box::new(|k| format!("popc.b32 %q{k}, %q1;"))),
        (
            "cvt.rn.f32.u32",
            Box::new(|k| format!("cvt.rn.f32.u32 %f{k}, %q1;")),
        ),
        (
            "xor.b64",
            Box::new(|k| format!("xor.b64 %rd{k}, %rd1, %rd2;")),
        ),
        (
            "add.s64",
            Box::new(|k| format!("add.s64 %rd{k}, %rd1, %rd2;")),
        ),
    ]
}

#[test]
fn split_integer_operations_issue_at_their_units_rates() {
    let cfg = GpuConfig::preset("h100").unwrap();
    let p = &cfg.pipeline;
    let x = p.int_split.expect("the h100 preset splits integer issue");
    let want = |name: &str| match name {
        "xor.b32" | "add.u32" => x.logic_add_issue_cycles,
        "mad.lo.u32" | "shl.b32" => p.int_issue_cycles,
        "popc.b32" => x.bit_count_issue_cycles,
        "cvt.rn.f32.u32" => x.conversion_issue_cycles,
        // Two 32-bit halves: two issue slots, each holding the unit.
        "xor.b64" | "add.s64" => 2 * x.logic_add_issue_cycles.max(1),
        _ => unreachable!(),
    };
    for (name, op) in ops() {
        assert_eq!(step(&cfg, &op), u64::from(want(name)), "{name}");
    }
    // The preset's rates differ, or the test proves nothing.
    assert!(x.logic_add_issue_cycles < p.int_issue_cycles);
    assert!(x.bit_count_issue_cycles > p.int_issue_cycles);
}

#[test]
fn operations_of_two_units_issue_side_by_side() {
    // A xor and a multiply-add a step: the xor's unit is free again after one cycle, the
    // multiply's after two, so a step takes the multiply's two cycles; on one unit, four.
    let pair = |k: usize| {
        format!(
            "xor.b32 %q{k}, %q1, %q2;\n mad.lo.u32 %q{}, %q1, %q2, %q1;",
            k + 20
        )
    };
    let split = GpuConfig::preset("h100").unwrap();
    let mut one = split.clone();
    one.pipeline.int_split = None;
    assert_eq!(step(&split, &pair), 2);
    assert_eq!(step(&one, &pair), 4);
}

#[test]
fn without_a_split_every_integer_operation_takes_the_integer_unit() {
    let mut cfg = GpuConfig::preset("h100").unwrap();
    cfg.pipeline.int_split = None;
    let p = &cfg.pipeline;
    for (name, op) in ops() {
        let want = if name.starts_with("cvt") {
            p.fp32_issue_cycles
        } else {
            p.int_issue_cycles
        };
        assert_eq!(step(&cfg, &op), u64::from(want), "{name}");
    }
}

#[test]
fn register_moves_vanish_where_the_preset_says_so() {
    let mut free = GpuConfig::preset("h100").unwrap();
    free.pipeline.free_register_moves = true;
    let mut issued = free.clone();
    issued.pipeline.free_register_moves = false;
    let logic = u64::from(free.pipeline.int_split.unwrap().logic_add_issue_cycles);
    let moves: [(&str, Emit, u64); 5] = [
        ("mov.u32", Box::new(|k| format!("mov.u32 %q{k}, %q1;")), 0),
        (
            "mov.b32 of a float",
            Box::new(|k| format!("mov.b32 %q{k}, %f1;")),
            0,
        ),
        (
            "cvt.u32.u64",
            Box::new(|k| format!("cvt.u32.u64 %q{k}, %rd1;")),
            0,
        ),
        // Widening needs the high word set, and an immediate a register written: they issue.
        (
            "cvt.u64.u32",
            Box::new(|k| format!("cvt.u64.u32 %rd{k}, %q1;")),
            logic,
        ),
        (
            "mov.u32 of an immediate",
            Box::new(|k| format!("mov.u32 %q{k}, 5;")),
            logic,
        ),
    ];
    for (name, op, want) in &moves {
        assert_eq!(step(&free, op), *want, "{name}, free");
        assert_eq!(step(&issued, op), logic, "{name}, issued");
    }
}

#[test]
fn a_vanished_move_carries_its_value() {
    // A chain through moves computes what it computes without them: the kernel stores
    // tid + 7 moved twice and narrowed once.
    let ptx = r#".version 8.0
.target sm_75
.address_size 64
.visible .entry moves(.param .u64 out)
{
 .reg .b64 %rd<8>;
 .reg .b32 %q<8>;
 ld.param.u64 %rd3, [out];
 mov.u32 %q1, %tid.x;
 add.u32 %q2, %q1, 7;
 mov.u32 %q3, %q2;
 cvt.u64.u32 %rd1, %q3;
 cvt.u32.u64 %q4, %rd1;
 mov.b32 %q5, %q4;
 mul.wide.u32 %rd4, %q1, 4;
 add.s64 %rd4, %rd3, %rd4;
 st.global.u32 [%rd4], %q5;
 ret;
}"#;
    let mut cfg = GpuConfig::preset("h100").unwrap();
    cfg.pipeline.free_register_moves = true;
    let mut r = Rig::with_config(ptx, cfg);
    let out = r.zeros(128);
    r.launch("moves", [1, 1, 1], [32, 1, 1], vec![a64(out)]);
    let want: Vec<u32> = (0..32).map(|t| t + 7).collect();
    assert_eq!(r.get_u32(out, 32), want);
}

#[test]
fn hoisted_loads_compute_the_same_and_keep_a_warps_loads_in_flight_together() {
    // nvcc's order for a loop of loads each xor-ed in at once (as in `docs/gpu/l1-port.cu`'s
    // `fill`): in PTX order a warp waits for each load before it issues the next.
    let ptx = r#".version 8.0
.target sm_90
.address_size 64
.visible .entry chain(.param .u64 buf, .param .u64 out)
{
 .reg .b64 %rd<8>;
 .reg .b32 %r<16>;
 ld.param.u64 %rd1, [buf];
 ld.param.u64 %rd2, [out];
 mov.u32 %r1, %tid.x;
 mul.wide.u32 %rd3, %r1, 4;
 add.s64 %rd4, %rd1, %rd3;
 mov.u32 %r2, 0;
 ld.global.u32 %r3, [%rd4];
 xor.b32 %r4, %r3, %r2;
 ld.global.u32 %r5, [%rd4+4096];
 xor.b32 %r6, %r5, %r4;
 ld.global.u32 %r7, [%rd4+8192];
 xor.b32 %r8, %r7, %r6;
 ld.global.u32 %r9, [%rd4+12288];
 xor.b32 %r10, %r9, %r8;
 add.s64 %rd5, %rd2, %rd3;
 st.global.u32 [%rd5], %r10;
 ret;
}"#;
    let words: Vec<u32> = (0..4096u32).map(|i| i.wrapping_mul(0x9e37_79b1)).collect();
    let run = |hoist: bool| {
        let mut cfg = GpuConfig::preset("h100").unwrap();
        cfg.pipeline.hoist_loads = hoist;
        let mut r = Rig::with_config(ptx, cfg);
        let buf = r.buf(&words);
        let out = r.zeros(128);
        let s = r.launch("chain", [1, 1, 1], [32, 1, 1], vec![a64(buf), a64(out)]);
        (r.get_u32(out, 32), s.cycles)
    };
    let (inorder, slow) = run(false);
    let (hoisted, fast) = run(true);
    let want: Vec<u32> = (0..32)
        .map(|t| (0..4).fold(0, |x, k| x ^ words[t + 1024 * k]))
        .collect();
    assert_eq!(inorder, want);
    assert_eq!(hoisted, want);
    // Four cold misses one after another against four at once: the hoisted warp saves at
    // least two of the three later misses' DRAM latency.
    let dram = u64::from(GpuConfig::preset("h100").unwrap().dram.latency_cycles);
    assert!(slow >= fast + 2 * dram, "in order {slow}, hoisted {fast}");
}
