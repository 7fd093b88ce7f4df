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
//! Requires cuobjdump and nvcc (scripts/setup-cuda installs both; build.rs already needed nvcc).

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

use kernels::layout::{WS_AUTO, WS_DUMMY, WS_FENCE, WS_NAIVE, WS_OFF};
use kernels::tools::{SassFunction, SassInstr, cuobjdump_sass, parse_sass};
use kernels::{KernelBuild, builds, find};

const ARCHS: [u32; 2] = [75, 90];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Naive,
    Fence,
    Dummy,
}

fn expect_for(mode: u32, read_only: bool) -> Expect {
    match mode {
        WS_NAIVE => Expect::Naive,
        WS_FENCE => Expect::Fence,
        WS_DUMMY => Expect::Dummy,
        WS_AUTO if read_only => Expect::Dummy,
        WS_AUTO => Expect::Fence,
        other => panic!("no placement rule for mode {other}"),
    }
}

// ---------------------------------------------------------------- SASS

fn is_sass_load(i: &SassInstr) -> bool {
    matches!(
        i.base_opcode(),
        "LDG" | "LD" | "TEX" | "TLD" | "TLD4" | "TXD"
    )
}

fn sass_read_only(i: &SassInstr) -> bool {
    i.base_opcode().starts_with('T') || i.opcode.contains(".CONSTANT")
}

#[derive(Debug, Clone, Copy)]
struct Interval {
    open: usize,
    load: usize,
    close: usize,
}

/// The timed intervals of a function, or why it is malformed.
fn sass_intervals(f: &SassFunction) -> Result<Vec<Interval>, String> {
    let clocks: Vec<usize> = (0..f.instrs.len())
        .filter(|&i| f.instrs[i].is_clock_read())
        .collect();
    let mut out = Vec::new();
    for w in clocks.windows(2) {
        let loads: Vec<usize> = (w[0] + 1..w[1])
            .filter(|&i| is_sass_load(&f.instrs[i]))
            .collect();
        match loads.as_slice() {
            [] => {}
            [l] => out.push(Interval {
                open: w[0],
                load: *l,
                close: w[1],
            }),
            many => {
                return Err(format!(
                    "{}: {} loads between clock reads at {:#x} and {:#x}",
                    f.name,
                    many.len(),
                    f.instrs[w[0]].offset,
                    f.instrs[w[1]].offset
                ));
            }
        }
    }
    // A load hoisted above its opening read lands in the window that starts at the kernel-begin
    // read (the first clock read) or at the previous site's closing read: reject both.
    for iv in &out {
        if Some(&iv.open) == clocks.first() || out.iter().any(|o| o.close == iv.open) {
            return Err(format!(
                "{}: the load at {:#x} is not preceded by its own opening clock read",
                f.name, f.instrs[iv.load].offset
            ));
        }
    }
    Ok(out)
}

fn waits_on(i: &SassInstr, bar: Option<u8>) -> bool {
    bar.is_some_and(|b| i.ctrl.wait_mask & (1 << b) != 0)
}

/// Checks one interval; `Err` names the rule that failed.
fn check_sass_interval(f: &SassFunction, iv: &Interval, mode: u32) -> Result<(), String> {
    let load = &f.instrs[iv.load];
    let expect = expect_for(mode, sass_read_only(load));
    let bar = load.ctrl.write_barrier;
    let here = format!(
        "{} {} at {:#x} (close at {:#x}), expected {:?}",
        f.name, load.opcode, load.offset, f.instrs[iv.close].offset, expect
    );
    if bar.is_none() {
        return Err(format!("{here}: the load sets no scoreboard"));
    }
    let between = iv.load + 1..iv.close;
    let through = iv.load + 1..iv.close + 1;
    let membar = between
        .clone()
        .find(|&i| f.instrs[i].base_opcode() == "MEMBAR");
    let waited = through.clone().any(|i| waits_on(&f.instrs[i], bar));
    let dests = load.dest_registers();
    let reader = between.clone().any(|i| {
        f.instrs[i]
            .source_registers(0)
            .iter()
            .any(|r| dests.contains(r))
    });
    match expect {
        Expect::Naive => {
            if membar.is_some() {
                return Err(format!("{here}: MEMBAR in a naive interval"));
            }
            if waited {
                return Err(format!("{here}: naive close waits for the load"));
            }
        }
        Expect::Dummy => {
            if membar.is_some() {
                return Err(format!("{here}: MEMBAR in a dummy interval"));
            }
            if !reader {
                return Err(format!(
                    "{here}: nothing reads the loaded register before the close"
                ));
            }
            if !waited {
                return Err(format!(
                    "{here}: nothing waits on the load's scoreboard before the close"
                ));
            }
        }
        Expect::Fence => {
            let Some(m) = membar else {
                return Err(format!("{here}: no MEMBAR between load and close"));
            };
            let mb = &f.instrs[m];
            // A MEMBAR that sets no scoreboard blocks issue itself (sm_75); one that sets a
            // scoreboard (sm_90) must be waited for before the close.
            let blocking = mb.ctrl.read_barrier.is_none() && mb.ctrl.write_barrier.is_none();
            let fenced = blocking
                || (m + 1..iv.close + 1).any(|i| {
                    waits_on(&f.instrs[i], mb.ctrl.read_barrier)
                        || waits_on(&f.instrs[i], mb.ctrl.write_barrier)
                        || waits_on(&f.instrs[i], bar)
                });
            if !fenced {
                return Err(format!("{here}: the close does not wait for the MEMBAR"));
            }
        }
    }
    // The closing read waits for the timed load only: no store to global memory (the log's or
    // any other) is in flight inside the window, where a fence would wait for it.
    if let Some(st) = (iv.open + 1..iv.close).find(|&i| is_sass_global_store(&f.instrs[i])) {
        return Err(format!(
            "{here}: global store {} at {:#x} inside the timed window",
            f.instrs[st].opcode, f.instrs[st].offset
        ));
    }
    Ok(())
}

/// Stores and reductions that may reach global memory (generic `ST` included).
fn is_sass_global_store(i: &SassInstr) -> bool {
    matches!(i.base_opcode(), "STG" | "ST" | "RED" | "ATOM" | "ATOMG")
}

/// A traced warp's record store (the log's only global store before `WS_KERNEL_END`, 16 bytes)
/// must be drained by a MEMBAR before the next clock read opens a window: otherwise the next
/// fenced access would wait for it.
fn check_record_drains(f: &SassFunction) -> Result<(), String> {
    let clocks: Vec<usize> = (0..f.instrs.len())
        .filter(|&i| f.instrs[i].is_clock_read())
        .collect();
    let (Some(&first), Some(&last)) = (clocks.first(), clocks.last()) else {
        return Ok(());
    };
    for i in first + 1..last {
        let s = &f.instrs[i];
        if !(is_sass_global_store(s) && s.opcode.contains(".128")) {
            continue;
        }
        let next_clock = clocks.iter().copied().find(|&c| c > i).unwrap_or(last);
        if !(i + 1..next_clock).any(|k| f.instrs[k].base_opcode() == "MEMBAR") {
            return Err(format!(
                "{}: record store {} at {:#x} is not drained before the clock read at {:#x}",
                f.name, s.opcode, s.offset, f.instrs[next_clock].offset
            ));
        }
    }
    Ok(())
}

/// Disassembly per (source, mode, arch), cached: several tests look at the same builds and
/// cuobjdump dominates the run time.
fn sass_of(b: &KernelBuild, arch: u32) -> Vec<SassFunction> {
    type Cache = Mutex<BTreeMap<(&'static str, u32, u32), Vec<SassFunction>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = (b.source, b.mode, arch);
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
    let mut errors = Vec::new();
    let funcs = sass_of(b, arch);
    let ptx = ptx_entries(b.ptx);
    for f in &funcs {
        if let Err(e) = check_record_drains(f) {
            errors.push(e);
        }
        let ivs = match sass_intervals(f) {
            Ok(v) => v,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let ptx_count = ptx
            .iter()
            .find(|(n, _)| *n == f.name)
            .map(|(_, body)| ptx_intervals(body).map(|v| v.len()).unwrap_or(usize::MAX));
        if ptx_count != Some(ivs.len()) {
            errors.push(format!(
                "{}: {} timed loads in SASS, {:?} in PTX",
                f.name,
                ivs.len(),
                ptx_count
            ));
        }
        for iv in &ivs {
            if let Err(e) = check_sass_interval(f, iv, b.mode) {
                errors.push(e);
            }
        }
    }
    errors
        .into_iter()
        .map(|e| format!("{} mode {} sm_{arch}: {e}", b.source, b.mode))
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

/// (entry name, instruction lines) per `.entry` of a PTX module.
fn ptx_entries(ptx: &str) -> Vec<(&str, Vec<&str>)> {
    let mut out: Vec<(&str, Vec<&str>)> = Vec::new();
    for line in ptx.lines() {
        let t = line.trim();
        if let Some(p) = t.find(".entry ") {
            let name = t[p + 7..]
                .split(|c: char| c == '(' || c.is_whitespace())
                .next()
                .unwrap_or("");
            out.push((name, Vec::new()));
        } else if let Some((_, body)) = out.last_mut()
            && t.ends_with(';')
            && !t.starts_with('.')
            && !t.starts_with("//")
        {
            body.push(t);
        }
    }
    out
}

/// Splits a PTX instruction into (predicate, opcode, operands).
fn ptx_split(line: &str) -> (Option<&str>, &str, Vec<String>) {
    let mut t = line.trim_end_matches(';').trim();
    let mut pred = None;
    if t.starts_with('@') {
        let (p, r) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
        pred = Some(p);
        t = r.trim();
    }
    let (op, rest) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
    let regs = rest
        .split(|c: char| !(c.is_alphanumeric() || c == '%' || c == '_'))
        .filter(|w| w.starts_with('%'))
        .map(str::to_string)
        .collect();
    (pred, op, regs)
}

fn is_ptx_clock(line: &str) -> bool {
    line.contains("%clock64") || line.contains("%clock;")
}

fn is_ptx_load(op: &str) -> bool {
    op.starts_with("tex.")
        || op.starts_with("tld4.")
        || (op.starts_with("ld.")
            && !op.starts_with("ld.param")
            && !op.starts_with("ld.shared")
            && !op.starts_with("ld.local")
            && !op.starts_with("ld.const"))
}

fn ptx_intervals(body: &[&str]) -> Result<Vec<(usize, usize, usize)>, String> {
    let clocks: Vec<usize> = (0..body.len()).filter(|&i| is_ptx_clock(body[i])).collect();
    let mut out = Vec::new();
    for w in clocks.windows(2) {
        let loads: Vec<usize> = (w[0] + 1..w[1])
            .filter(|&i| is_ptx_load(ptx_split(body[i]).1))
            .collect();
        match loads.as_slice() {
            [] => {}
            [l] => out.push((w[0], *l, w[1])),
            many => {
                return Err(format!(
                    "{} loads between clock reads: {}",
                    many.len(),
                    body[w[0]]
                ));
            }
        }
    }
    for &(o, l, _) in &out {
        if Some(&o) == clocks.first() || out.iter().any(|&(_, _, c)| c == o) {
            return Err(format!(
                "{} is not preceded by its own opening clock read",
                body[l]
            ));
        }
    }
    Ok(out)
}

fn check_ptx_interval(
    body: &[&str],
    (_, l, c): (usize, usize, usize),
    mode: u32,
) -> Result<(), String> {
    let (_, op, regs) = ptx_split(body[l]);
    // Destinations: the first operand, or the `{...}` vector of a vector load / texture fetch.
    let n_dest = if body[l].contains('{') {
        body[l]
            .split('{')
            .nth(1)
            .and_then(|s| s.split('}').next())
            .map(|s| s.split(',').count())
            .unwrap_or(1)
    } else {
        1
    };
    let read_only = op.starts_with("tex.") || op.starts_with("tld4.") || op.contains(".nc");
    let expect = expect_for(mode, read_only);
    let mut tainted: Vec<String> = regs.iter().take(n_dest).cloned().collect();
    let mut membar = false;
    let mut reader = false;
    let mut dependent_store = false;
    for line in &body[l + 1..c] {
        let (pred, op, regs) = ptx_split(line);
        if op.starts_with("membar") || op.starts_with("fence") {
            membar = true;
        }
        let is_store = op.starts_with("st.");
        let (dst, src): (&[String], &[String]) = if is_store || regs.is_empty() {
            (&[], &regs)
        } else {
            (&regs[..1], &regs[1..])
        };
        if src.iter().any(|r| tainted.contains(r)) {
            reader = true;
            if is_store && op.contains(".volatile") && pred.is_some() {
                dependent_store = true;
            }
            tainted.extend(dst.iter().cloned());
        }
    }
    let here = format!("{} .. {} expected {expect:?}", body[l], body[c]);
    match expect {
        Expect::Naive if membar || reader => {
            Err(format!("{here}: fence or consumer in a naive interval"))
        }
        Expect::Dummy if membar || !dependent_store => Err(format!(
            "{here}: no predicated volatile store of the loaded value before the close"
        )),
        Expect::Fence if !membar => Err(format!("{here}: no membar between load and close")),
        _ => Ok(()),
    }
}

#[test]
fn ptx_placement() {
    let mut errors = Vec::new();
    let mut intervals = 0;
    for b in instrumented() {
        for (name, body) in ptx_entries(b.ptx) {
            match ptx_intervals(&body) {
                Ok(ivs) => {
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
    // probe_test has 22 timed loads per build (4 instrumented modes), volume_render 2 per build.
    assert!(intervals >= 88, "only {intervals} timed loads found in PTX");
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
    let compiled = kernels::compile_ptx(&file, WS_OFF).expect("nvcc");
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
