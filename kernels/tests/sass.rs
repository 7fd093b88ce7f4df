//! Placement tests: does every timed load complete before its closing clock read, per probe mode,
//! in the PTX (what the emulator runs) and in the SASS ptxas made for sm_75 and sm_90?
//!
//! A timed load is a load (SASS `LDG`/`LD`/`TEX`/`TLD*`; PTX `ld.global*`/`ld`/`tex.*`/`tld4.*`)
//! that lies between two consecutive clock reads; each such interval must hold exactly one load,
//! and SASS and PTX must have the same number of them per kernel (so a load hoisted out of its
//! interval, or a clock read moved across a load, fails), and the window a load sits in must not
//! open with the kernel-begin read or another site's closing read (a load hoisted above its own
//! opening read). Per interval (load L, closing read C):
//! - naive: no MEMBAR in (L, C) and nothing in (L, C] waits on L's scoreboard: C reads the clock
//!   while the load may still be in flight (the paper's naive method, kept on purpose);
//! - dummy: an instruction in (L, C) reads L's destination register, and an instruction in (L, C]
//!   waits on L's scoreboard, so C cannot issue before the data arrived (issue is in order);
//! - fence: a MEMBAR M in (L, C); if M sets a scoreboard (sm_90), an instruction in (M, C] waits
//!   on it or on L's; a MEMBAR without a scoreboard (sm_75) blocks issue until it completes;
//! - auto: fence for writable global loads (`LDG`/`LD` without `.CONSTANT`), dummy for read-only
//!   ones (texture fetches, `LDG.*.CONSTANT` from `__ldg`).
//!
//! And in a sampled build every timed window has the bare path of an untimed access beside it
//! ([`check_bare_path`], in SASS and PTX): one branch before the opening read chooses between the
//! window and a bare copy of its load, from which an untimed access reaches no window's clock read
//! and no fence.
//!
//! Requires cuobjdump and nvcc (scripts/setup-cuda installs both; build.rs already needed nvcc).

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

use kernels::layout::{WS_AUTO, WS_DUMMY, WS_FENCE, WS_NAIVE, WS_OFF};
use kernels::placement::*;
use kernels::tools::{SassFunction, cuobjdump_sass, parse_sass};
use kernels::{KernelBuild, builds, find};

const ARCHS: [u32; 2] = [75, 90];

/// Disassembly per (source, mode, sampled, arch), cached: several tests look at the same builds
/// and cuobjdump dominates the run time.
fn sass_of(b: &KernelBuild, arch: u32) -> Vec<SassFunction> {
    type Cache = Mutex<BTreeMap<(&'static str, u32, bool, u32), Vec<SassFunction>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = (b.source, b.mode, b.sampled, arch);
    let cache = CACHE.get_or_init(|| Mutex::new(BTreeMap::new()));
    if let Some(f) = cache.lock().expect("cache").get(&key) {
        return f.clone();
    }
    let text = cuobjdump_sass(b.fatbin, arch)
        .unwrap_or_else(|e| panic!("{} mode {} sm_{arch}: {e}", b.source, b.mode));
    let funcs = parse_sass(&text);
    assert!(
        !funcs.is_empty(),
        "{} sm_{arch}: no functions in cuobjdump output",
        b.source
    );
    cache.lock().expect("cache").insert(key, funcs.clone());
    funcs
}

fn check_sass_build(b: &KernelBuild, arch: u32) -> Vec<String> {
    check_sass_functions(&sass_of(b, arch), b.ptx, b.mode, b.sampled)
        .into_iter()
        .map(|e| {
            format!(
                "{} mode {} sampled {} sm_{arch}: {e}",
                b.source, b.mode, b.sampled
            )
        })
        .collect()
}

fn instrumented() -> impl Iterator<Item = &'static KernelBuild> {
    builds().iter().filter(|b| b.mode != WS_OFF)
}

fn assert_sass_arch(arch: u32) {
    let mut errors = Vec::new();
    let mut checked = 0;
    for b in instrumented() {
        errors.extend(check_sass_build(b, arch));
        checked += 1;
    }
    assert!(checked >= 8, "too few builds checked: {checked}");
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn sass_placement_sm75() {
    assert_sass_arch(ARCHS[0]);
}

#[test]
fn sass_placement_sm90() {
    assert_sass_arch(ARCHS[1]);
}

#[test]
fn probe_test_has_the_expected_timed_loads_in_sass() {
    // Independent of the rules above: the probe kernels really contain timed global and texture
    // loads on both architectures, so the placement checks are not vacuous.
    for &arch in &ARCHS {
        let b = find("probe_test", WS_AUTO).expect("probe_test auto build");
        let funcs = sass_of(b, arch);
        let mut kinds = std::collections::BTreeSet::new();
        let mut total = 0;
        for f in &funcs {
            for iv in sass_intervals(f).expect("well-formed") {
                kinds.insert(f.instrs[iv.load].base_opcode().to_string());
                total += 1;
            }
        }
        assert!(kinds.contains("LDG"), "sm_{arch}: {kinds:?}");
        assert!(
            kinds.iter().any(|k| k.starts_with('T')),
            "sm_{arch}: {kinds:?}"
        );
        assert!(total >= 12, "sm_{arch}: only {total} timed loads");
    }
}

#[test]
fn an_undrained_record_store_or_a_store_inside_a_window_is_detected() {
    // Mutation tests for the "waits for the timed load only" rules, on real SASS of every mode:
    // (a) drop the MEMBAR that drains a record store: the next window would wait for the store;
    // (b) move a record store into the following timed window.
    let mut drains = 0;
    for mode in [WS_NAIVE, WS_FENCE, WS_DUMMY] {
        let b = find("probe_test", mode).expect("build");
        for &arch in &ARCHS {
            for f in sass_of(b, arch) {
                let stores: Vec<usize> = (0..f.instrs.len())
                    .filter(|&i| {
                        is_sass_global_store(&f.instrs[i]) && f.instrs[i].opcode.contains(".128")
                    })
                    .collect();
                for &st in &stores {
                    let Some(m) =
                        (st + 1..f.instrs.len()).find(|&k| f.instrs[k].base_opcode() == "MEMBAR")
                    else {
                        continue;
                    };
                    let mut g = f.clone();
                    g.instrs.remove(m);
                    drains += 1;
                    assert!(
                        check_record_drains(&g).is_err(),
                        "mode {mode} sm_{arch} {}: undrained record store not detected",
                        f.name
                    );
                }
                let ivs = sass_intervals(&f).expect("well-formed");
                if let (Some(&st), Some(iv)) = (stores.first(), ivs.last()) {
                    let mut g = f.clone();
                    let store = g.instrs[st].clone();
                    g.instrs.insert(iv.load + 1, store);
                    let moved = Interval {
                        close: iv.close + 1,
                        ..*iv
                    };
                    assert!(
                        check_sass_interval(&g, &moved, mode).is_err(),
                        "mode {mode} sm_{arch} {}: store inside a window not detected",
                        f.name
                    );
                }
            }
        }
    }
    assert!(drains > 0, "no record store found to mutate");
}

#[test]
fn a_bare_path_that_reaches_probe_work_is_detected() {
    // Mutation tests for the bare path of an untimed access, on real SASS of every sampled build:
    // (a) drop the branch that chooses the path: no bare copy is left; (b) where ptxas placed the
    // copy before its window, drop the jump that takes the copy past it: an untimed access falls
    // into the timed path and reads its clocks (and fences). The present builds place every copy
    // after its window, so (b) finds nothing to mutate there; the rule it tests is also checked
    // on a synthetic layout (placement::bare's tests).
    let mut choices = 0;
    for b in instrumented().filter(|b| b.sampled) {
        let mode = b.mode;
        for &arch in &ARCHS {
            for f in sass_of(b, arch) {
                let ivs = sass_intervals(&f).expect("well-formed");
                assert!(check_bare_path(&f, &ivs).is_ok(), "{}", f.name);
                let copies = sass_bare_copies(&f);
                for copy in copies
                    .iter()
                    .filter(|c| ivs.iter().any(|iv| iv.open == c.open))
                {
                    let mut g = f.clone();
                    g.instrs[copy.branch].opcode = "NOP".into();
                    assert!(
                        check_bare_path(&g, &ivs).is_err(),
                        "mode {mode} sm_{arch} {}: a window without its choosing branch passed",
                        f.name
                    );
                    choices += 1;
                    if copy.load > copy.open {
                        continue;
                    }
                    let jump = (copy.load + 1..copy.open)
                        .find(|&k| f.instrs[k].base_opcode() == "BRA")
                        .filter(|&k| f.instrs[k].predicate.is_none())
                        .unwrap_or_else(|| {
                            panic!("mode {mode} sm_{arch} {}: no jump past the window", f.name)
                        });
                    let mut g = f.clone();
                    g.instrs[jump].opcode = "NOP".into();
                    assert!(
                        check_bare_path(&g, &ivs).is_err(),
                        "mode {mode} sm_{arch} {}: a bare copy falling into its window passed",
                        f.name
                    );
                }
            }
        }
    }
    assert!(choices > 0, "no choosing branch found to mutate");
}

#[test]
fn moving_the_close_before_the_wait_is_detected() {
    // Mutation test: take real dummy- and fence-mode SASS and move each closing clock read to
    // right after its load, as a scheduler that ignored the dependency would. Every interval must
    // then fail its check — the test suite would catch such a compiler change.
    for mode in [WS_DUMMY, WS_FENCE] {
        let b = find("probe_test", mode).expect("build");
        for &arch in &ARCHS {
            for f in sass_of(b, arch) {
                let ivs = sass_intervals(&f).expect("well-formed");
                for iv in ivs {
                    let mut g = f.clone();
                    let close = g.instrs.remove(iv.close);
                    g.instrs.insert(iv.load + 1, close);
                    let moved = Interval {
                        open: iv.open,
                        load: iv.load,
                        close: iv.load + 1,
                    };
                    assert!(
                        check_sass_interval(&g, &moved, mode).is_err(),
                        "mode {mode} sm_{arch} {}: moved close not detected",
                        f.name
                    );
                }
            }
        }
    }
}

#[test]
fn a_close_read_hoisted_above_the_waiting_instruction_is_detected() {
    // The failure the issue reports (`LDG; CS2R clock; @!P FADD` — the dummy consumer scheduled
    // after the clock read): move each dummy-mode closing read to just before the first
    // instruction that waits on the load's scoreboard. The check must reject every such order.
    let b = find("probe_test", WS_DUMMY).expect("build");
    let mut mutated = 0;
    for &arch in &ARCHS {
        for f in sass_of(b, arch) {
            for iv in sass_intervals(&f).expect("well-formed") {
                let bar = f.instrs[iv.load].ctrl.write_barrier;
                let Some(w) = (iv.load + 1..iv.close).find(|&i| waits_on(&f.instrs[i], bar)) else {
                    continue; // the close itself waits: nothing to hoist above
                };
                let mut g = f.clone();
                let close = g.instrs.remove(iv.close);
                g.instrs.insert(w, close);
                let moved = Interval {
                    open: iv.open,
                    load: iv.load,
                    close: w,
                };
                assert!(
                    check_sass_interval(&g, &moved, WS_DUMMY).is_err(),
                    "sm_{arch} {}: hoisted close not detected",
                    f.name
                );
                mutated += 1;
            }
        }
    }
    assert!(
        mutated > 0,
        "no interval had a separate waiting instruction"
    );
}

#[test]
fn a_load_hoisted_above_its_opening_read_is_detected() {
    // In every mode, naive included: move each timed load to just before its opening clock read.
    for mode in [WS_NAIVE, WS_FENCE, WS_DUMMY] {
        let b = find("probe_test", mode).expect("build");
        for &arch in &ARCHS {
            for f in sass_of(b, arch) {
                for iv in sass_intervals(&f).expect("well-formed") {
                    let mut g = f.clone();
                    let load = g.instrs.remove(iv.load);
                    g.instrs.insert(iv.open, load);
                    let caught = match sass_intervals(&g) {
                        Err(_) => true,
                        Ok(ivs) => ivs
                            .iter()
                            .any(|v| check_sass_interval(&g, v, mode).is_err()),
                    };
                    assert!(
                        caught,
                        "mode {mode} sm_{arch} {}: hoisted load not detected: {iv:?}",
                        f.name
                    );
                }
            }
        }
    }
}

// ---------------------------------------------------------------- PTX

#[test]
fn ptx_placement() {
    let mut errors = Vec::new();
    let mut intervals = 0;
    for b in instrumented() {
        for (name, body) in ptx_entries(b.ptx) {
            match ptx_intervals(&body) {
                Ok(ivs) => {
                    if b.sampled
                        && let Err(e) = check_ptx_bare_path(&body, &ivs)
                    {
                        errors.push(format!("{} mode {} {name}: {e}", b.source, b.mode));
                    }
                    if !b.sampled && !ptx_bare_copies(&body).is_empty() {
                        errors.push(format!(
                            "{} mode {} {name}: a bare copy in a build that times every warp",
                            b.source, b.mode
                        ));
                    }
                    for iv in ivs {
                        intervals += 1;
                        if let Err(e) = check_ptx_interval(&body, iv, b.mode) {
                            errors.push(format!("{} mode {} {name}: {e}", b.source, b.mode));
                        }
                    }
                }
                Err(e) => errors.push(format!("{} mode {} {name}: {e}", b.source, b.mode)),
            }
        }
    }
    // probe_test has 18 timed loads per build (4 instrumented modes, each also sampled),
    // volume_render 2 per build.
    assert!(
        intervals >= 160,
        "only {intervals} timed loads found in PTX"
    );
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn ptx_moved_close_is_detected() {
    for mode in [WS_DUMMY, WS_FENCE] {
        let b = find("probe_test", mode).expect("build");
        for (_, body) in ptx_entries(b.ptx) {
            for (o, l, c) in ptx_intervals(&body).expect("well-formed") {
                let mut moved = body.clone();
                let close = moved.remove(c);
                moved.insert(l + 1, close);
                assert!(check_ptx_interval(&moved, (o, l, l + 1), mode).is_err());
            }
        }
    }
}

#[test]
fn ptx_load_hoisted_above_its_opening_read_is_detected() {
    for mode in [WS_NAIVE, WS_FENCE, WS_DUMMY] {
        let b = find("probe_test", mode).expect("build");
        for (name, body) in ptx_entries(b.ptx) {
            for (o, l, _) in ptx_intervals(&body).expect("well-formed") {
                let mut moved = body.clone();
                let load = moved.remove(l);
                moved.insert(o, load);
                let caught = match ptx_intervals(&moved) {
                    Err(_) => true,
                    Ok(ivs) => ivs
                        .iter()
                        .any(|&iv| check_ptx_interval(&moved, iv, mode).is_err()),
                };
                assert!(caught, "mode {mode} {name}: hoisted load not detected");
            }
        }
    }
}

// ---------------------------------------------------------------- WS_OFF

/// `kernels/probe_test.cu` with the probe macros removed by hand: `WS_LOAD(s, r, e)` becomes
/// `(e)`, BEGIN/END lines vanish, and the include becomes a bare `ws::Log` so the signature stays.
fn header_free(src: &str) -> String {
    let mut s = src.replace(
        "#include \"warpscope.cuh\"",
        "namespace ws { struct Log { unsigned char* buf; unsigned int slots; int dummy; unsigned int flags; unsigned int shared_offset; unsigned int sites; unsigned int n_warps; }; }",
    );
    s = s
        .lines()
        .filter(|l| !l.contains("WS_KERNEL_BEGIN(") && !l.contains("WS_KERNEL_END("))
        .collect::<Vec<_>>()
        .join("\n");
    while let Some(p) = s.find("WS_LOAD(") {
        let open = p + "WS_LOAD".len();
        let bytes = s.as_bytes();
        let (mut depth, mut commas, mut expr_start, mut end) = (0, 0, 0, open);
        for (i, &c) in bytes.iter().enumerate().skip(open) {
            match c {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i;
                        break;
                    }
                }
                b',' if depth == 1 && commas < 2 => {
                    commas += 1;
                    if commas == 2 {
                        expr_start = i + 1;
                    }
                }
                _ => {}
            }
        }
        assert!(
            expr_start > 0 && end > expr_start,
            "malformed WS_LOAD in probe_test.cu"
        );
        let expr = s[expr_start..end].trim().to_string();
        s.replace_range(p..end + 1, &format!("({expr})"));
    }
    s
}

#[test]
fn off_ptx_equals_header_free_ptx() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(root.join("probe_test.cu")).expect("probe_test.cu");
    let bare = header_free(&src);
    assert!(
        !bare.contains("WS_LOAD(") && !bare.contains("WS_KERNEL_"),
        "macros left in the header-free source"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("probe_test.cu");
    std::fs::write(&file, bare).expect("write");
    let compiled = kernels::compile_ptx(&file, WS_OFF, false).expect("nvcc");
    let off = find("probe_test", WS_OFF).expect("off build");
    assert_eq!(
        compiled.ptx, off.ptx,
        "WS_OFF PTX differs from the header-free kernel's"
    );
}

#[test]
fn instrumented_ptx_differs_from_off() {
    // The equality above must not be vacuous: every instrumented build reads the clock.
    let off = find("probe_test", WS_OFF).expect("off build");
    assert!(!off.ptx.contains("%clock64"));
    for b in instrumented().filter(|b| b.source == "probe_test") {
        assert!(b.ptx.contains("%clock64"), "mode {}", b.mode);
    }
}
