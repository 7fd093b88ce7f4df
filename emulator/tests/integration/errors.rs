//! Bad input ends a launch with an error value naming where it happened.

use crate::common::*;
use emulator::{EmuError, Module};

const HEAD: &str = ".version 8.0\n.target sm_75\n.address_size 64\n";

fn kernel(body: &str) -> String {
    format!(
        "{HEAD}.visible .entry k(.param .u64 p, .param .u32 n)\n{{\n .reg .b64 %rd<8>;\n .reg .b32 %r<8>;\n .reg .pred %p<4>;\n ld.param.u64 %rd1, [p];\n ld.param.u32 %r1, [n];\n mov.u32 %r2, %tid.x;\n{body}\n ret;\n}}\n"
    )
}

#[test]
fn out_of_bounds_store_names_kernel_line_block_and_thread() {
    let src = kernel(
        " mul.wide.u32 %rd2, %r2, 4;\n add.s64 %rd3, %rd1, %rd2;\n st.global.u32 [%rd3], %r2;",
    );
    let mut r = Rig::new(&src);
    let buf = r.zeros(40); // 10 ints, 64 threads write
    let e = r
        .try_launch("k", [2, 1, 1], [64, 1, 1], 0, vec![a64(buf), a32(0)])
        .unwrap_err();
    match e {
        EmuError::Fault {
            kernel,
            line,
            block,
            warp,
            thread,
            ..
        } => {
            assert_eq!(kernel, "k");
            assert_eq!(line, 14);
            assert_eq!(block, [0, 0, 0]);
            // 256-byte allocation granularity + guard: the first thread past the padding faults
            assert!(
                thread >= 10 && warp == thread / 32,
                "thread {thread} warp {warp}"
            );
        }
        other => panic!("expected a fault, got {other:?}"),
    }
}

#[test]
fn misaligned_load_faults() {
    let src = kernel(" add.s64 %rd3, %rd1, 2;\n ld.global.u32 %r3, [%rd3];");
    let mut r = Rig::new(&src);
    let buf = r.zeros(64);
    let e = r
        .try_launch("k", [1, 1, 1], [32, 1, 1], 0, vec![a64(buf), a32(0)])
        .unwrap_err();
    assert!(
        matches!(&e, EmuError::Fault { what, .. } if what.contains("misaligned")),
        "{e}"
    );
}

#[test]
fn bad_ptx_reports_line_and_column() {
    let src = format!(
        "{HEAD}.visible .entry k()\n{{\n .reg .b32 %r<3>;\n add.s32 %r1, %r2 %r2;\n ret;\n}}\n"
    );
    // The module still parses (its other kernels could run); launching this one names it,
    // the position and the line as written.
    let mut r = Rig::new(&src);
    match r.try_launch("k", [1, 1, 1], [32, 1, 1], 0, vec![]) {
        Err(EmuError::Unusable {
            kernel,
            line,
            col,
            text,
            ..
        }) => {
            assert_eq!((kernel.as_str(), line, col), ("k", 7, 19));
            assert_eq!(text, "add.s32 %r1, %r2 %r2;");
        }
        other => panic!("expected an unusable-kernel error, got {other:?}"),
    }
    // A well-formed but unknown instruction loads, and faults only when a warp issues it.
    let src = format!(
        "{HEAD}.visible .entry k()\n{{\n .reg .b32 %r<2>;\n frobnicate.b32 %r1;\n ret;\n}}\n"
    );
    let mut r = Rig::new(&src);
    match r.try_launch("k", [1, 1, 1], [32, 1, 1], 0, vec![]) {
        Err(EmuError::Unsupported { line, what }) => {
            assert_eq!(line, 7);
            assert!(
                what.contains("frobnicate") && what.contains("kernel k"),
                "{what}"
            );
        }
        other => panic!("expected an unsupported-instruction error, got {other:?}"),
    }
}

fn spin_params(max_warp_instructions: u64) -> emulator::LaunchParams {
    emulator::LaunchParams {
        grid: [1, 1, 1],
        block: [32, 1, 1],
        dynamic_shared_bytes: 0,
        regs_per_thread: 16,
        args: vec![a64(0), a32(0)],
        max_warp_instructions,
    }
}

const SPIN: &str = "$L:\n add.s32 %r3, %r3, 1;\n bra.uni $L;";

#[test]
fn runaway_kernel_hits_the_budget_and_says_where_it_was() {
    let mut r = Rig::new(&kernel(SPIN));
    match r.emu.launch(r.m, "k", &spin_params(10_000)) {
        Err(e @ EmuError::Budget { .. }) => {
            let EmuError::Budget {
                kernel,
                limit,
                block,
                warp,
                line,
                ..
            } = &e
            else {
                unreachable!()
            };
            assert_eq!((kernel.as_str(), *limit), ("k", 10_000));
            assert_eq!((*block, *warp), ([0, 0, 0], 0));
            // the loop is the add (line 14) and the branch (line 15)
            assert!((14..=15).contains(line), "line {line}");
            let text = e.to_string();
            assert!(text.contains("budget of 10000"), "{text}");
        }
        other => panic!("expected a budget error, got {other:?}"),
    }
}

#[test]
fn time_limit_ends_a_runaway_launch_and_progress_is_reported_on_the_way() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let mut r = Rig::new(&kernel(SPIN));
    let seen = Arc::new(AtomicU64::new(0));
    let seen_in = seen.clone();
    r.emu.set_watch(emulator::Watch {
        time_limit: Some(std::time::Duration::ZERO),
        progress: Some(Arc::new(move |p: &emulator::Progress| {
            seen_in.store(p.warp_instructions, Ordering::Relaxed);
        })),
    });
    match r.emu.launch(r.m, "k", &spin_params(u64::MAX)) {
        Err(EmuError::TimeLimit {
            kernel, executed, ..
        }) => {
            assert_eq!(kernel, "k");
            // a zero limit ends the launch at the first look at the clock, which comes between
            // rounds once WATCH_INTERVAL instructions ran; progress was reported just before
            assert!(
                (emulator::WATCH_INTERVAL..emulator::WATCH_INTERVAL + 10_000).contains(&executed),
                "{executed}"
            );
            assert_eq!(seen.load(Ordering::Relaxed), executed);
        }
        other => panic!("expected a time-limit error, got {other:?}"),
    }
}

#[test]
fn launches_outside_cuda_limits_are_refused_before_running() {
    let mut r = Rig::new(&kernel(""));
    for (grid, block, want) in [
        (
            [1, 1, 1],
            [1, 1, 65],
            "block z = 65 exceeds CUDA's limit of 64",
        ),
        (
            [1, 65536, 1],
            [32, 1, 1],
            "grid y = 65536 exceeds CUDA's limit of 65535",
        ),
        ([1, 1, 1], [64, 32, 1], "2048 threads"),
        ([0, 1, 1], [32, 1, 1], "must be positive"),
    ] {
        let p = emulator::LaunchParams {
            grid,
            block,
            ..spin_params(1_000)
        };
        match r.emu.launch(r.m, "k", &p) {
            Err(e @ EmuError::Args { .. }) => assert!(e.to_string().contains(want), "{e}"),
            other => panic!("{grid:?} {block:?}: expected a refusal, got {other:?}"),
        }
    }
}

#[test]
fn barrier_that_cannot_complete_is_a_deadlock() {
    // bar.sync 1, 64 in a block of 32 threads: the other 32 never come.
    let src = kernel(" bar.sync 1, 64;");
    let mut r = Rig::new(&src);
    match r.try_launch("k", [1, 1, 1], [32, 1, 1], 0, vec![a64(0), a32(0)]) {
        Err(EmuError::Deadlock {
            kernel,
            block,
            line,
            ..
        }) => {
            assert_eq!(kernel, "k");
            assert_eq!(block, [0, 0, 0]);
            assert_eq!(line, 12);
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

#[test]
fn wrong_arguments_are_rejected() {
    let src = kernel("");
    let mut r = Rig::new(&src);
    let e = r
        .try_launch("k", [1, 1, 1], [32, 1, 1], 0, vec![a64(0)])
        .unwrap_err();
    assert!(matches!(e, EmuError::Args { .. }), "{e}");
    let e = r
        .try_launch("k", [1, 1, 1], [32, 1, 1], 0, vec![a64(0), a64(0)])
        .unwrap_err();
    assert!(matches!(e, EmuError::Args { .. }), "{e}");
    let e = r
        .try_launch("nope", [1, 1, 1], [32, 1, 1], 0, vec![])
        .unwrap_err();
    assert!(matches!(e, EmuError::NotFound { .. }), "{e}");
}

#[test]
fn divergent_early_exit_and_reconvergence() {
    // Odd lanes exit early; even lanes take an if/else and all survivors meet at a barrier.
    let src = kernel(
        " and.b32 %r3, %r2, 1;\n setp.ne.s32 %p1, %r3, 0;\n @%p1 exit;\n and.b32 %r4, %r2, 2;\n setp.eq.s32 %p2, %r4, 0;\n @%p2 bra $A;\n mov.u32 %r5, 100;\n bra.uni $B;\n$A:\n mov.u32 %r5, 200;\n$B:\n bar.sync 0;\n add.s32 %r5, %r5, %r2;\n mul.wide.u32 %rd2, %r2, 4;\n add.s64 %rd3, %rd1, %rd2;\n st.global.u32 [%rd3], %r5;",
    );
    let mut r = Rig::new(&src);
    let buf = r.zeros(64 * 4);
    r.try_launch("k", [1, 1, 1], [64, 1, 1], 0, vec![a64(buf), a32(0)])
        .unwrap();
    let got = r.get_u32(buf, 64);
    for t in 0..64u32 {
        let want = if t % 2 == 1 {
            0
        } else if t & 2 == 0 {
            200 + t
        } else {
            100 + t
        };
        assert_eq!(got[t as usize], want, "thread {t}");
    }
}

#[test]
fn absurd_declarations_are_errors_not_crashes() {
    let regs = format!("{HEAD}.visible .entry k()\n{{\n .reg .b32 %r<4000000000>;\n ret;\n}}\n");
    let e = Rig::new(&regs)
        .try_launch("k", [1, 1, 1], [32, 1, 1], 0, vec![])
        .unwrap_err();
    assert!(matches!(e, EmuError::Unusable { line: 6, .. }), "{e}");
    let local =
        format!("{HEAD}.visible .entry k()\n{{\n .local .b8 big[99999999999999];\n ret;\n}}\n");
    let e = Rig::new(&local)
        .try_launch("k", [1, 1, 1], [32, 1, 1], 0, vec![])
        .unwrap_err();
    assert!(matches!(e, EmuError::Unusable { .. }), "{e}");
    let shared = format!("{HEAD}.visible .entry k()\n{{\n .shared .b8 s[1000000];\n ret;\n}}\n");
    let mut r = Rig::new(&shared);
    let e = r
        .try_launch("k", [1, 1, 1], [32, 1, 1], 0, vec![])
        .unwrap_err();
    assert!(matches!(e, EmuError::Args { .. }), "{e}");
    let global =
        format!("{HEAD}.global .b8 g[999999999999999];\n.visible .entry k()\n{{\n ret;\n}}\n");
    let m = Module::parse(&global).unwrap();
    let mut emu = emulator::Emulator::new(emulator::GpuConfig::preset("v100").unwrap());
    assert!(matches!(emu.load(&m), Err(EmuError::Memory { .. })));
}

#[test]
fn printf_is_accepted_and_assert_traps() {
    let decl = ".extern .func (.param .b32 func_retval0) vprintf(.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);\n";
    let body = " { .param .b64 param0;\n st.param.b64 [param0], %rd1;\n .param .b64 param1;\n st.param.b64 [param1], %rd1;\n .param .b32 retval0;\n call.uni (retval0), vprintf, (param0, param1);\n }";
    let src = kernel(body).replacen(".visible .entry", &format!("{decl}.visible .entry"), 1);
    let mut r = Rig::new(&src);
    r.try_launch("k", [1, 1, 1], [32, 1, 1], 0, vec![a64(0), a32(0)])
        .unwrap();
    let trap = kernel(" setp.eq.s32 %p1, %r2, 5;\n @%p1 trap;");
    let mut r = Rig::new(&trap);
    let e = r
        .try_launch("k", [1, 1, 1], [32, 1, 1], 0, vec![a64(0), a32(0)])
        .unwrap_err();
    assert!(matches!(e, EmuError::Fault { thread: 5, .. }), "{e}");
}

#[test]
fn three_dimensional_indices_and_barrier_count() {
    // out[linear thread id] = tid.x | tid.y<<4 | tid.z<<8 | ctaid.x<<12 | ctaid.y<<16 | ctaid.z<<20,
    // and out[n + block] = __syncthreads_count(tid.x == 0).
    let body = " mov.u32 %r3, %tid.y;\n mov.u32 %r4, %tid.z;\n mov.u32 %r5, %ctaid.x;\n mov.u32 %r6, %ctaid.y;\n mov.u32 %r7, %ctaid.z;\n shl.b32 %r3, %r3, 4;\n or.b32 %r3, %r3, %r2;\n shl.b32 %r4, %r4, 8;\n or.b32 %r3, %r3, %r4;\n shl.b32 %r5, %r5, 12;\n or.b32 %r3, %r3, %r5;\n shl.b32 %r6, %r6, 16;\n or.b32 %r3, %r3, %r6;\n shl.b32 %r7, %r7, 20;\n or.b32 %r3, %r3, %r7;\n mov.u32 %r4, %ntid.x;\n mov.u32 %r5, %tid.y;\n mov.u32 %r6, %ntid.y;\n mov.u32 %r7, %tid.z;\n mad.lo.s32 %r7, %r7, %r6, %r5;\n mad.lo.s32 %r7, %r7, %r4, %r2;\n mov.u32 %r5, %ctaid.x;\n mov.u32 %r6, %ctaid.y;\n mov.u32 %r4, %nctaid.x;\n mad.lo.s32 %r5, %r6, %r4, %r5;\n mov.u32 %r6, %ctaid.z;\n mov.u32 %r4, %nctaid.y;\n mul.lo.s32 %r6, %r6, %r4;\n mov.u32 %r4, %nctaid.x;\n mad.lo.s32 %r5, %r6, %r4, %r5;\n mul.lo.s32 %r6, %r5, 60;\n add.s32 %r6, %r6, %r7;\n mul.wide.u32 %rd2, %r6, 4;\n add.s64 %rd3, %rd1, %rd2;\n st.global.u32 [%rd3], %r3;\n setp.eq.s32 %p1, %r2, 0;\n bar.red.popc.u32 %r4, 0, %p1;\n setp.eq.s32 %p2, %r7, 0;\n @!%p2 bra $D;\n add.s32 %r5, %r5, %r1;\n mul.wide.u32 %rd2, %r5, 4;\n add.s64 %rd3, %rd1, %rd2;\n st.global.u32 [%rd3], %r4;\n$D:";
    let src = kernel(body);
    let mut r = Rig::new(&src);
    let (grid, block) = ([2u32, 3, 2], [5u32, 4, 3]);
    let blocks = 12usize;
    let n = blocks * 60;
    let buf = r.zeros((n + blocks) * 4);
    r.try_launch("k", grid, block, 0, vec![a64(buf), a32(n as i32)])
        .unwrap();
    let got = r.get_u32(buf, n + blocks);
    for bz in 0..2u32 {
        for by in 0..3u32 {
            for bx in 0..2u32 {
                let b = ((bz * 3 + by) * 2 + bx) as usize;
                for tz in 0..3u32 {
                    for ty in 0..4u32 {
                        for tx in 0..5u32 {
                            let t = ((tz * 4 + ty) * 5 + tx) as usize;
                            let want = tx | ty << 4 | tz << 8 | bx << 12 | by << 16 | bz << 20;
                            assert_eq!(got[b * 60 + t], want);
                        }
                    }
                }
                // threads with tid.x == 0: 4 * 3 = 12 per block
                assert_eq!(got[n + b], 12, "block {b}");
            }
        }
    }
}

#[test]
fn kernel_parameters_through_generic_pointers() {
    // newer nvcc reads by-value struct parameters through `cvta.param` generic pointers
    let src = kernel(
        " mov.b64 %rd4, p;\n cvta.param.u64 %rd5, %rd4;\n ld.u64 %rd6, [%rd5];\n ld.u32 %r3, [%rd5+8];\n st.global.u32 [%rd6], %r3;",
    );
    let mut r = Rig::new(&src);
    let buf = r.zeros(4);
    r.try_launch("k", [1, 1, 1], [1, 1, 1], 0, vec![a64(buf), a32(4242)])
        .unwrap();
    assert_eq!(r.get_u32(buf, 1)[0], 4242);
}

#[test]
fn shared_memory_out_of_bounds_faults() {
    let src = format!(
        "{HEAD}.visible .entry k()\n{{\n .reg .b32 %r<4>;\n .shared .align 4 .b8 s[128];\n mov.u32 %r1, %tid.x;\n shl.b32 %r2, %r1, 2;\n ld.shared.u32 %r3, [%r2];\n st.shared.u32 [%r2], %r3;\n ret;\n}}\n"
    );
    let mut r = Rig::new(&src);
    r.try_launch("k", [1, 1, 1], [32, 1, 1], 0, vec![]).unwrap();
    let e = r
        .try_launch("k", [1, 1, 1], [64, 1, 1], 0, vec![])
        .unwrap_err();
    match e {
        EmuError::Fault {
            thread, line, what, ..
        } => {
            assert_eq!(thread, 32);
            assert_eq!(line, 10);
            assert!(what.contains("out of bounds"), "{what}");
        }
        other => panic!("expected a fault, got {other:?}"),
    }
}

#[test]
fn a_full_warps_shared_load_names_its_one_misaligned_lane() {
    // Lane 5 alone loads 4 bytes from an odd address; the other 31 lanes are aligned.
    let src = format!(
        "{HEAD}.visible .entry k()\n{{\n .reg .b32 %r<6>;\n .reg .pred %p1;\n .shared .align 4 .b8 s[256];\n mov.u32 %r1, %tid.x;\n shl.b32 %r2, %r1, 2;\n setp.eq.u32 %p1, %r1, 5;\n selp.b32 %r4, 1, 0, %p1;\n add.s32 %r5, %r2, %r4;\n ld.shared.u32 %r3, [%r5];\n ret;\n}}\n"
    );
    let mut r = Rig::new(&src);
    let e = r
        .try_launch("k", [1, 1, 1], [32, 1, 1], 0, vec![])
        .unwrap_err();
    match e {
        EmuError::Fault { thread, what, .. } => {
            assert_eq!(thread, 5);
            assert!(what.contains("misaligned"), "{what}");
        }
        other => panic!("expected a fault, got {other:?}"),
    }
}
