//! PTX that public CUDA suites compile to and that the emulator must run as it is: each test is
//! a minimal reproduction of what nvcc emits for an unmodified kernel.

use crate::common::*;
use emulator::{EmuError, Module};

const HEAD: &str = ".version 8.0\n.target sm_75\n.address_size 64\n";

/// A kernel `k(u64 out)` with registers of each width declared; `body` ends by storing.
fn kernel(body: &str) -> String {
    format!(
        "{HEAD}.visible .entry k(.param .u64 out)\n{{\n .reg .b64 %rd<8>;\n .reg .b32 %r<16>;\n .reg .pred %p<4>;\n ld.param.u64 %rd1, [out];\n mov.u32 %r15, %tid.x;\n mul.wide.u32 %rd2, %r15, 4;\n add.s64 %rd3, %rd1, %rd2;\n{body}\n ret;\n}}\n"
    )
}

/// Runs `body` on 64 threads, which stores %r2, %r4 and %r5 as three arrays of a word a thread.
fn run64_three(body: &str) -> Vec<u32> {
    let body = format!(
        "{body}\n st.global.u32 [%rd3], %r2;\n st.global.u32 [%rd3+256], %r4;\n st.global.u32 [%rd3+512], %r5;"
    );
    let mut r = Rig::new(&kernel(&body));
    let out = r.zeros(3 * 64 * 4);
    r.launch("k", [1, 1, 1], [64, 1, 1], vec![a64(out)]);
    r.get_u32(out, 3 * 64)
}

fn run32(body: &str, threads: u32) -> Vec<u32> {
    let src = kernel(body);
    let mut r = Rig::new(&src);
    let out = r.zeros(threads as usize * 4);
    r.launch("k", [1, 1, 1], [threads, 1, 1], vec![a64(out)]);
    r.get_u32(out, threads as usize)
}

#[test]
fn shared_addresses_in_32_bit_registers_wrap() {
    // nvcc: a negative 32-bit base plus an offset in the address, `[%r3+68]` with
    // %r3 = &s[t] - 64: the sum wraps mod 2^32 to &s[t+1]. The same sum formed in a 64-bit
    // register (zero-extended %r3, offset 64) lands on &s[t].
    let src = format!(
        "{HEAD}.visible .entry k(.param .u64 out)\n{{\n .shared .align 4 .b8 s[256];\n .reg .b64 %rd<8>;\n .reg .b32 %r<16>;\n ld.param.u64 %rd1, [out];\n mov.u32 %r15, %tid.x;\n mov.u32 %r1, s;\n shl.b32 %r2, %r15, 2;\n add.s32 %r5, %r1, %r2;\n add.s32 %r6, %r15, 100;\n st.shared.u32 [%r5], %r6;\n bar.sync 0;\n add.s32 %r3, %r5, -64;\n ld.shared.u32 %r4, [%r3+68];\n cvt.u64.u32 %rd5, %r3;\n ld.shared.u32 %r7, [%rd5+64];\n mul.lo.s32 %r7, %r7, 1000;\n add.s32 %r4, %r4, %r7;\n mul.wide.u32 %rd2, %r15, 4;\n add.s64 %rd3, %rd1, %rd2;\n st.global.u32 [%rd3], %r4;\n ret;\n}}\n"
    );
    let mut r = Rig::new(&src);
    let out = r.zeros(32 * 4);
    r.launch("k", [1, 1, 1], [32, 1, 1], vec![a64(out)]);
    let got = r.get_u32(out, 32);
    for t in 0..32u32 {
        let next = if t < 31 { t + 1 + 100 } else { 0 };
        assert_eq!(got[t as usize], next + 1000 * (t + 100), "thread {t}");
    }
}

#[test]
fn a_full_warps_shared_loads_extend_as_their_type_says() {
    // Each lane stores the byte -(t+1) and reads it back as s8 and u8 through its shared
    // address, and as s8 through its generic address (`cvta.shared`), all 32 lanes at once.
    let src = format!(
        "{HEAD}.visible .entry k(.param .u64 out)\n{{\n .shared .align 4 .b8 s[64];\n .reg .b64 %rd<8>;\n .reg .b32 %r<16>;\n ld.param.u64 %rd1, [out];\n mov.u32 %r15, %tid.x;\n not.b32 %r1, %r15;\n mov.u32 %r2, s;\n add.s32 %r3, %r2, %r15;\n st.shared.u8 [%r3], %r1;\n bar.sync 0;\n ld.shared.s8 %r4, [%r3];\n ld.shared.u8 %r5, [%r3];\n cvta.shared.u64 %rd4, s;\n cvt.u64.u32 %rd5, %r15;\n add.s64 %rd6, %rd4, %rd5;\n ld.shared.s8 %r6, [%rd6];\n mul.wide.u32 %rd2, %r15, 4;\n add.s64 %rd3, %rd1, %rd2;\n st.global.u32 [%rd3], %r4;\n st.global.u32 [%rd3+128], %r5;\n st.global.u32 [%rd3+256], %r6;\n ret;\n}}\n"
    );
    let mut r = Rig::new(&src);
    let out = r.zeros(96 * 4);
    r.launch("k", [1, 1, 1], [32, 1, 1], vec![a64(out)]);
    let got = r.get_u32(out, 96);
    for t in 0..32usize {
        let byte = !(t as u8);
        assert_eq!(got[t], byte as i8 as i32 as u32, "s8, thread {t}");
        assert_eq!(got[32 + t], u32::from(byte), "u8, thread {t}");
        assert_eq!(
            got[64 + t],
            byte as i8 as i32 as u32,
            "generic s8, thread {t}"
        );
    }
}

#[test]
fn warp_sz_is_the_warp_size() {
    let got = run32(" mov.u32 %r1, WARP_SZ;\n st.global.u32 [%rd3], %r1;", 32);
    assert!(got.iter().all(|&v| v == 32), "{got:?}");
}

#[test]
fn one_bad_kernel_does_not_spoil_its_module() {
    let src = format!(
        "{HEAD}.visible .entry bad(.param .u64 out)\n{{\n .reg .b32 %r<4>;\n mov.u32 %r1, NO_SUCH_SYMBOL;\n ret;\n}}\n.visible .entry worse()\n{{\n add.s32 %r1, %r2 %r3;\n ret;\n}}\n.visible .entry good(.param .u64 out)\n{{\n .reg .b64 %rd<2>;\n ld.param.u64 %rd1, [out];\n st.global.u32 [%rd1], 7;\n ret;\n}}\n"
    );
    let module = Module::parse(&src).expect("the module parses");
    let names: Vec<String> = module.entries().into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["bad", "worse", "good"]);
    let mut r = Rig::new(&src);
    let out = r.zeros(4);
    r.launch("good", [1, 1, 1], [1, 1, 1], vec![a64(out)]);
    assert_eq!(r.get_u32(out, 1), [7]);
    let e = r
        .try_launch("bad", [1, 1, 1], [1, 1, 1], 0, vec![a64(out)])
        .unwrap_err();
    match &e {
        EmuError::Unusable {
            kernel, line, text, ..
        } => {
            assert_eq!((kernel.as_str(), *line), ("bad", 7));
            assert_eq!(text, "mov.u32 %r1, NO_SUCH_SYMBOL;");
        }
        other => panic!("expected an unusable kernel, got {other:?}"),
    }
    let msg = e.to_string();
    assert!(
        msg.contains("NO_SUCH_SYMBOL") && msg.contains("bad"),
        "{msg}"
    );
    let e = r
        .try_launch("worse", [1, 1, 1], [1, 1, 1], 0, vec![])
        .unwrap_err();
    assert!(
        matches!(&e, EmuError::Unusable { kernel, line: 12, .. } if kernel == "worse"),
        "{e}"
    );
}

#[test]
fn match_any_groups_lanes_by_value() {
    // value = lane % 4; member mask: all 32 lanes
    let got = run32(
        " and.b32 %r1, %r15, 3;\n match.any.sync.b32 %r2, %r1, -1;\n st.global.u32 [%rd3], %r2;",
        32,
    );
    for (l, &v) in got.iter().enumerate() {
        assert_eq!(v, 0x1111_1111u32 << (l % 4), "lane {l}");
    }
    // a member mask of the low 16 lanes only
    let got = run32(
        " and.b32 %r1, %r15, 1;\n setp.lt.u32 %p1, %r15, 16;\n @!%p1 bra $END;\n match.any.sync.b32 %r2, %r1, 65535;\n st.global.u32 [%rd3], %r2;\n$END:",
        32,
    );
    for (l, &v) in got.iter().enumerate() {
        let want = if l < 16 { 0x5555u32 << (l % 2) } else { 0 };
        assert_eq!(v, want, "lane {l}");
    }
}

#[test]
fn predicates_keep_each_lanes_bit_through_divergence_votes_and_barrier_reductions() {
    // Odd lanes set %p2 and %p3 by a combined setp; even lanes, on their own path, set them
    // again, leaving the odd lanes' bits; every predicate operation then reads them back.
    let body = " and.b32 %r1, %r15, 1;
 setp.eq.u32 %p1, %r1, 1;
 setp.lt.and.u32 %p2|%p3, %r15, 20, %p1;
 @%p1 bra $ODD;
 setp.gt.u32 %p2, %r15, 40;
 not.pred %p3, %p2;
$ODD:
 xor.pred %p0, %p2, %p3;
 selp.u32 %r2, 1, 0, %p0;
 selp.u32 %r3, 2, 0, %p2;
 add.u32 %r2, %r2, %r3;
 selp.u32 %r3, 4, 0, %p3;
 add.u32 %r2, %r2, %r3;
 vote.sync.ballot.b32 %r4, %p2, -1;
 vote.sync.any.pred %p0, %p3, -1;
 selp.u32 %r3, 8, 0, %p0;
 add.u32 %r2, %r2, %r3;
 vote.sync.all.pred %p0, !%p1, -1;
 selp.u32 %r3, 16, 0, %p0;
 add.u32 %r2, %r2, %r3;
 setp.ne.u32 %p0, %r15, 63;
 bar.red.and.pred %p0, 0, %p0;
 selp.u32 %r3, 32, 0, %p0;
 add.u32 %r2, %r2, %r3;
 bar.red.or.pred %p0, 0, %p2;
 selp.u32 %r3, 64, 0, %p0;
 add.u32 %r2, %r2, %r3;
 bar.red.popc.u32 %r5, 0, %p2;
 mov.pred %p3, %p2;
 @%p3 add.u32 %r2, %r2, 128;";
    let got = run64_three(body);
    let p2 = |t: u32| if t % 2 == 1 { t < 20 } else { t > 40 };
    let p3 = |t: u32| if t % 2 == 1 { t >= 20 } else { t <= 40 };
    let ballot = |warp: u32| {
        (0..32)
            .filter(|&l| p2(warp * 32 + l))
            .fold(0u32, |b, l| b | 1 << l)
    };
    let popc = (0..64).filter(|&t| p2(t)).count() as u32;
    for t in 0..64u32 {
        let warp = t / 32;
        let any_p3 = (0..32).any(|l| p3(warp * 32 + l));
        let want = u32::from(p2(t) != p3(t))
            + 2 * u32::from(p2(t))
            + 4 * u32::from(p3(t))
            + 8 * u32::from(any_p3)
            + 64
            + 128 * u32::from(p2(t));
        assert_eq!(got[t as usize], want, "thread {t}");
        assert_eq!(got[64 + t as usize], ballot(warp), "ballot, thread {t}");
        assert_eq!(got[128 + t as usize], popc, "popc, thread {t}");
    }
}

#[test]
fn set_writes_all_ones_or_one_as_its_comparison_and_combining_predicate_say() {
    // A signed comparison that an unsigned one would get wrong below t = 20, a float result
    // combined with a negated predicate, and a guarded form whose other lanes keep their value.
    let body = " sub.s32 %r1, %r15, 20;
 set.lt.u32.s32 %r2, %r1, 5;
 and.b32 %r3, %r15, 1;
 setp.eq.u32 %p1, %r3, 1;
 set.gt.and.f32.s32 %r4, %r1, -3, !%p1;
 mov.u32 %r5, 7;
 @%p1 set.hs.xor.s32.u32 %r5, %r15, 40, %p1;";
    let got = run64_three(body);
    let ones = |b: bool| if b { u32::MAX } else { 0 };
    for t in 0..64u32 {
        let (i, odd) = (t as i32, t % 2 == 1);
        assert_eq!(got[t as usize], ones(i - 20 < 5), "lt, thread {t}");
        let f = if i - 20 > -3 && !odd {
            1.0f32.to_bits()
        } else {
            0
        };
        assert_eq!(got[64 + t as usize], f, "gt.and, thread {t}");
        let x = if odd { ones((t >= 40) != odd) } else { 7 };
        assert_eq!(got[128 + t as usize], x, "hs.xor, thread {t}");
    }
}

#[test]
fn match_all_reports_whether_every_member_agrees() {
    // lanes 0..31 hold 5 except lane 7 in the second run
    let body = |odd: u32| {
        format!(
            " mov.u32 %r1, 5;\n setp.eq.u32 %p2, %r15, {odd};\n @%p2 mov.u32 %r1, 6;\n match.all.sync.b32 %r2|%p1, %r1, -1;\n selp.u32 %r3, 1000, 0, %p1;\n add.s32 %r2, %r2, %r3;\n st.global.u32 [%rd3], %r2;"
        )
    };
    let all = run32(&body(99), 32);
    assert!(
        all.iter().all(|&v| v == 0xFFFF_FFFFu32.wrapping_add(1000)),
        "{all:?}"
    );
    let split = run32(&body(7), 32);
    assert!(split.iter().all(|&v| v == 0), "{split:?}");
}

#[test]
fn cache_hint_qualifiers_parse_and_run() {
    let got = run32(
        " prefetch.global.L2::evict_last [%rd3];\n ld.global.L1::no_allocate.u32 %r1, [%rd3];\n add.s32 %r1, %r1, 9;\n st.global.u32 [%rd3], %r1;",
        32,
    );
    assert!(got.iter().all(|&v| v == 9), "{got:?}");
}

#[test]
fn misspelled_state_space_is_not_taken_for_another() {
    let src = kernel(" ld.globul.u32 %r1, [%rd3];\n st.global.u32 [%rd3], %r1;");
    let mut r = Rig::new(&src);
    let out = r.zeros(32 * 4);
    let e = r
        .try_launch("k", [1, 1, 1], [32, 1, 1], 0, vec![a64(out)])
        .unwrap_err();
    assert!(
        matches!(&e, EmuError::Unsupported { line: 13, what } if what.contains(".globul") && what.contains("kernel k")),
        "{e}"
    );
}

#[test]
fn shfl_outside_the_member_mask_reads_that_lanes_register() {
    // All 32 lanes execute with member mask 0x0000ffff (undefined in PTX): as on silicon, every
    // lane gets lane 0's value (the SASS of __shfl_sync carries no mask).
    let got = run32(
        " add.s32 %r1, %r15, 100;\n shfl.sync.idx.b32 %r2, %r1, 0, 31, 65535;\n st.global.u32 [%rd3], %r2;",
        32,
    );
    assert!(got.iter().all(|&v| v == 100), "{got:?}");
    // Lanes 0..15 read lanes 16..31, which skip the shuffle and wait to store after it: they
    // get those lanes' registers as they are (set before the branch).
    let got = run32(
        " add.s32 %r1, %r15, 100;\n mov.u32 %r2, 0;\n setp.lt.u32 %p1, %r15, 16;\n @!%p1 bra $END;\n add.s32 %r3, %r15, 16;\n shfl.sync.idx.b32 %r2, %r1, %r3, 31, 65535;\n$END:\n st.global.u32 [%rd3], %r2;",
        32,
    );
    for (l, &v) in got.iter().enumerate() {
        let want = if l < 16 { l as u32 + 16 + 100 } else { 0 };
        assert_eq!(v, want, "lane {l}");
    }
}

#[test]
fn shfl_from_an_exited_lane_reads_zero() {
    // cuda-samples' reduce7: lanes 0..7 shuffle down from lanes that have left the kernel. An
    // H200 gives them 0 (docs/gpu/contention-h200-2026-11-29.txt), so the sum is right; the lanes
    // still alive keep their registers' values.
    let got = run32(
        " add.s32 %r1, %r15, 100;\n setp.lt.u32 %p1, %r15, 8;\n @!%p1 exit;\n shfl.sync.down.b32 %r2, %r1, 16, 31, 255;\n shfl.sync.down.b32 %r4, %r1, 4, 31, 255;\n mul.lo.s32 %r4, %r4, 1000;\n add.s32 %r2, %r2, %r4;\n st.global.u32 [%rd3], %r2;",
        32,
    );
    for (l, &v) in got.iter().enumerate() {
        let want = match l {
            0..4 => 1000 * (l as u32 + 4 + 100),
            _ => 0,
        };
        assert_eq!(v, want, "lane {l}");
    }
}

#[test]
fn a_fermi_preset_fits_registers_counted_for_a_newer_target() {
    let src = kernel(" st.global.u32 [%rd3], %r15;");
    let mut r = Rig::with_preset(&src, "gtx480");
    let out = r.zeros(1024 * 4);
    let launch = |r: &mut Rig, threads: u32, regs: u32| {
        let p = emulator::LaunchParams {
            grid: [1, 1, 1],
            block: [threads, 1, 1],
            dynamic_shared_bytes: 0,
            regs_per_thread: regs,
            args: vec![a64(out)],
            max_warp_instructions: 1_000_000,
        };
        r.emu.launch(r.m, "k", &p)
    };
    // ptxas for sm_75 said 64; Fermi allows 63: the rest is spilled, and the launch runs.
    let s = launch(&mut r, 128, 64).expect("runs on gtx480");
    assert_eq!(
        (s.registers_per_thread, s.spilled_registers_per_thread),
        (63, 1)
    );
    // 44 × 1024 threads = 45056 registers > 32768: fitted to 32 per thread.
    let s = launch(&mut r, 1024, 44).expect("runs on gtx480");
    assert_eq!(
        (s.registers_per_thread, s.spilled_registers_per_thread),
        (32, 12)
    );
    assert_eq!(r.get_u32(out, 1024)[1023], 1023);
    // What fits is not touched.
    let s = launch(&mut r, 128, 20).unwrap();
    assert_eq!(
        (s.registers_per_thread, s.spilled_registers_per_thread),
        (20, 0)
    );
}

#[test]
fn a_launch_that_fits_no_way_names_the_limit_and_the_presets_it_fits() {
    let src = format!(
        "{HEAD}.visible .entry k()\n{{\n .shared .align 4 .b8 s[65536];\n .reg .b32 %r<2>;\n mov.u32 %r1, s;\n st.shared.u32 [%r1], 1;\n ret;\n}}\n"
    );
    let mut r = Rig::with_preset(&src, "gtx480");
    let e = r
        .try_launch("k", [1, 1, 1], [32, 1, 1], 0, vec![])
        .unwrap_err()
        .to_string();
    assert!(e.contains("49152") && e.contains("gtx480"), "{e}");
    assert!(e.contains("it fits on: v100, a100, h100, h200"), "{e}");
    Rig::with_preset(&src, "v100").launch("k", [1, 1, 1], [32, 1, 1], vec![]);
}

#[test]
fn redux_sync_reduces_over_the_member_lanes() {
    // value = lane + 1; lanes 0..31 → sum 528; member mask of the even lanes → min 1, max 31
    let got = run32(
        " add.s32 %r1, %r15, 1;\n redux.sync.add.u32 %r2, %r1, -1;\n redux.sync.max.u32 %r3, %r1, 1431655765;\n redux.sync.or.b32 %r4, %r1, 15;\n mul.lo.s32 %r2, %r2, 1000000;\n mul.lo.s32 %r3, %r3, 1000;\n add.s32 %r2, %r2, %r3;\n add.s32 %r2, %r2, %r4;\n st.global.u32 [%rd3], %r2;",
        32,
    );
    // max over lanes 0, 2, ..., 30 of lane + 1 = 31; or over lanes 0..3 of 1..4 = 7
    assert!(
        got.iter().all(|&v| v == 528_000_000 + 31_000 + 7),
        "{got:?}"
    );
    let got = run32(
        " sub.s32 %r1, 10, %r15;\n redux.sync.min.s32 %r2, %r1, -1;\n st.global.u32 [%rd3], %r2;",
        32,
    );
    assert!(got.iter().all(|&v| v as i32 == 10 - 31), "{got:?}");
}

#[test]
fn elect_sync_picks_the_lowest_member_lane() {
    let got = run32(
        " setp.ge.u32 %p2, %r15, 5;\n @!%p2 bra $END;\n elect.sync %r1|%p1, -1;\n selp.u32 %r2, 100, 0, %p1;\n add.s32 %r1, %r1, %r2;\n st.global.u32 [%rd3], %r1;\n$END:",
        32,
    );
    for (l, &v) in got.iter().enumerate() {
        let want = match l {
            0..5 => 0,
            5 => 105,
            _ => 5,
        };
        assert_eq!(v, want, "lane {l}");
    }
}

#[test]
fn lop3_and_dp4a_compute_what_the_isa_says() {
    // lop3 0x96 is a ^ b ^ c; 0xE8 is the majority function
    let got = run32(
        " mov.u32 %r1, 0xF0F0F0F0;\n mov.u32 %r2, 0xCCCCCCCC;\n mov.u32 %r3, %r15;\n lop3.b32 %r4, %r1, %r2, %r3, 0x96;\n lop3.b32 %r5, %r1, %r2, %r3, 0xE8;\n xor.b32 %r4, %r4, %r5;\n st.global.u32 [%rd3], %r4;",
        32,
    );
    for (l, &v) in got.iter().enumerate() {
        let (a, b, c) = (0xF0F0_F0F0u32, 0xCCCC_CCCCu32, l as u32);
        let maj = (a & b) | (a & c) | (b & c);
        assert_eq!(v, (a ^ b ^ c) ^ maj, "lane {l}");
    }
    // dp4a.s32.s32: bytes (-1, 2, -3, 4) · (5, -6, 7, 8) + lane = -5 - 12 - 21 + 32 + lane
    let got = run32(
        " mov.u32 %r1, 0x04FD02FF;\n mov.u32 %r2, 0x0807FA05;\n dp4a.s32.s32 %r3, %r1, %r2, %r15;\n dp2a.hi.u32.u32 %r4, 0x00020003, %r2, 0;\n mul.lo.s32 %r4, %r4, 1000;\n add.s32 %r3, %r3, %r4;\n st.global.u32 [%rd3], %r3;",
        32,
    );
    // dp2a.hi: halves (3, 2) · bytes 2, 3 of b (7, 8) = 21 + 16 = 37
    for (l, &v) in got.iter().enumerate() {
        assert_eq!(v as i32, -5 - 12 - 21 + 32 + l as i32 + 37_000, "lane {l}");
    }
}

#[test]
fn a_one_cta_cluster_has_rank_zero_of_one() {
    let got = run32(
        " mov.u32 %r1, %cluster_ctarank;\n mov.u32 %r2, %cluster_nctarank;\n mov.u32 %r3, %clusterid.x;\n mul.lo.s32 %r2, %r2, 10;\n mul.lo.s32 %r3, %r3, 100;\n add.s32 %r1, %r1, %r2;\n add.s32 %r1, %r1, %r3;\n st.global.u32 [%rd3], %r1;",
        32,
    );
    assert!(got.iter().all(|&v| v == 10), "{got:?}");
}
