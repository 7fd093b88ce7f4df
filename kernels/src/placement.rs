//! The placement rules of timed loads: does every timed load complete before its closing clock
//! read, per probe mode, in the PTX (what the emulator runs) and in the SASS ptxas made?
//!
//! Why a library module: the header's builds (kernels/tests/sass.rs) and kernels instrumented by
//! the PTX rewriter (instrument/tests/rewrite_sass.rs) are held to the same rules, so the rules
//! live once, here. The rules themselves are described in kernels/tests/sass.rs.
//!
//! A timed load is a load (SASS `LDG`/`LD`/`TEX`/`TLD*`; PTX `ld.global*`/`ld`/`tex.*`/`tld4.*`)
//! between two consecutive clock reads; each such interval must hold exactly one load, and the
//! window a load sits in must not open with the kernel-begin read or another site's closing read.
//! An untimed warp's bare copy of a load (`bare`) is no timed load: it sits outside every window,
//! on the path that skips the window.

mod bare;

pub use bare::{BareCopy, Step};

use crate::layout::{WS_AUTO, WS_DUMMY, WS_FENCE, WS_NAIVE};
use crate::tools::{SassFunction, SassInstr};

// ---------------------------------------------------------------- SASS

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    Naive,
    Fence,
    Dummy,
}

pub fn expect_for(mode: u32, read_only: bool) -> Expect {
    match mode {
        WS_NAIVE => Expect::Naive,
        WS_FENCE => Expect::Fence,
        WS_DUMMY => Expect::Dummy,
        WS_AUTO if read_only => Expect::Dummy,
        WS_AUTO => Expect::Fence,
        other => panic!("no placement rule for mode {other}"),
    }
}

pub fn is_sass_load(i: &SassInstr) -> bool {
    matches!(
        i.base_opcode(),
        "LDG" | "LD" | "TEX" | "TLD" | "TLD4" | "TXD"
    )
}

pub fn sass_read_only(i: &SassInstr) -> bool {
    i.base_opcode().starts_with('T') || i.opcode.contains(".CONSTANT")
}

#[derive(Debug, Clone, Copy)]
pub struct Interval {
    pub open: usize,
    pub load: usize,
    pub close: usize,
}

/// The timed intervals of a function, or why it is malformed.
pub fn sass_intervals(f: &SassFunction) -> Result<Vec<Interval>, String> {
    let clocks = f.clock_reads();
    let bare: Vec<usize> = sass_bare_copies(f).iter().map(|c| c.load).collect();
    let mut out = Vec::new();
    for w in clocks.windows(2) {
        let loads: Vec<usize> = (w[0] + 1..w[1])
            .filter(|&i| is_sass_load(&f.instrs[i]) && !bare.contains(&i))
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

pub fn waits_on(i: &SassInstr, bar: Option<u8>) -> bool {
    bar.is_some_and(|b| i.ctrl.wait_mask & (1 << b) != 0)
}

/// Checks one interval; `Err` names the rule that failed.
pub fn check_sass_interval(f: &SassFunction, iv: &Interval, mode: u32) -> Result<(), String> {
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
pub fn is_sass_global_store(i: &SassInstr) -> bool {
    matches!(i.base_opcode(), "STG" | "ST" | "RED" | "ATOM" | "ATOMG")
}

/// A traced warp's record store (the log's only global store before `WS_KERNEL_END`, 16 bytes)
/// must be drained by a MEMBAR before the next clock read opens a window: otherwise the next
/// fenced access would wait for it.
pub fn check_record_drains(f: &SassFunction) -> Result<(), String> {
    let clocks = f.clock_reads();
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

/// The instruction index a branch jumps to, if `i` is a `BRA` with a target in `f` (its last
/// operand; a uniform or divergence branch names a predicate or register first).
fn branch_target(f: &SassFunction, i: &SassInstr) -> Option<usize> {
    let op = i.operands.last()?;
    let off = u32::from_str_radix(op.trim().trim_start_matches("0x"), 16).ok()?;
    f.instrs.iter().position(|k| k.offset == off)
}

/// A function's SASS as the bare-path analysis sees it.
fn sass_steps(f: &SassFunction) -> Vec<Step> {
    f.instrs
        .iter()
        .map(|i| match i.base_opcode() {
            _ if i.is_clock_read() => Step::Clock,
            _ if is_sass_load(i) => Step::Load,
            "MEMBAR" => Step::Fence,
            "BRA" => Step::Branch {
                // Only a plain `BRA <target>` without a guard (or under `@PT`) always jumps.
                conditional: i.predicate.as_deref().is_some_and(|p| p != "@PT")
                    || i.operands.len() > 1,
                target: branch_target(f, i),
            },
            "EXIT" | "RET" => Step::Exit,
            _ => Step::Other,
        })
        .collect()
}

/// The untimed warps' bare copies of a function's timed loads (a copy is the same opcode).
pub fn sass_bare_copies(f: &SassFunction) -> Vec<BareCopy> {
    let i = &f.instrs;
    bare::bare_copies(
        &sass_steps(f),
        |a, b| i[a].opcode == i[b].opcode,
        |a, b| i[a].predicate.is_some() && i[a].predicate == i[b].predicate,
    )
}

/// The untimed warp's bare path (see "TIMED AND UNTIMED WARPS" in `warpscope.cuh`): every timed
/// window has a bare copy of its load, chosen by a branch before the window opens, and from that
/// copy the straight-line path reads no window's clock and runs no fence before it leaves (a
/// conditional branch, an exit, or the kernel-end clock read).
pub fn check_bare_path(f: &SassFunction, ivs: &[Interval]) -> Result<(), String> {
    let windows: Vec<(usize, usize, usize)> =
        ivs.iter().map(|iv| (iv.open, iv.load, iv.close)).collect();
    let at = |k: usize| format!("{} at {:#x}", f.instrs[k].opcode, f.instrs[k].offset);
    check_bare(&sass_steps(f), &sass_bare_copies(f), &windows)
        .map_err(|e| format!("{}: {}", f.name, e.describe(at)))
}

/// [`check_bare_path`] on PTX (`ptx_intervals`' windows of `body`).
pub fn check_ptx_bare_path(body: &[&str], windows: &[(usize, usize, usize)]) -> Result<(), String> {
    check_bare(&ptx_steps(body), &ptx_bare_copies(body), windows)
        .map_err(|e| e.describe(|k| body[k].to_string()))
}

/// How a window's bare path breaks the rule (instruction indices).
enum BareFault {
    /// The timed load has no bare copy.
    Missing { load: usize },
    /// The path from the bare copy runs probe work.
    Work { copy: usize, work: usize },
}

impl BareFault {
    fn describe(&self, at: impl Fn(usize) -> String) -> String {
        match *self {
            BareFault::Missing { load } => format!(
                "{}: no branch before the window takes an untimed warp to a bare copy of the load",
                at(load)
            ),
            BareFault::Work { copy, work } => format!(
                "the untimed warp's path after the bare copy {} runs {}",
                at(copy),
                at(work)
            ),
        }
    }
}

/// The bare-path rule over either stream.
fn check_bare(
    steps: &[Step],
    copies: &[BareCopy],
    windows: &[(usize, usize, usize)],
) -> Result<(), BareFault> {
    let clocks: Vec<usize> = windows.iter().flat_map(|&(o, _, c)| [o, c]).collect();
    for &(open, load, _) in windows {
        let Some(copy) = copies.iter().find(|c| c.open == open) else {
            return Err(BareFault::Missing { load });
        };
        if let Some(work) = bare::probe_work_after(steps, copy, &clocks) {
            return Err(BareFault::Work {
                copy: copy.load,
                work,
            });
        }
    }
    Ok(())
}

/// Checks every function of a build's SASS (`funcs`) against the placement rules for `mode`
/// (a `WS_*` mode), that SASS and `ptx` have the same number of timed loads per entry, and for a
/// `sampled` build the bare-path rule in both (another build must have no bare copy). Returns
/// one line per violation.
pub fn check_sass_functions(
    funcs: &[SassFunction],
    ptx: &str,
    mode: u32,
    sampled: bool,
) -> Vec<String> {
    let mut errors = Vec::new();
    let ptx = ptx_entries(ptx);
    for f in funcs {
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
        if sampled && let Err(e) = check_bare_path(f, &ivs) {
            errors.push(e);
        }
        if !sampled && !sass_bare_copies(f).is_empty() {
            errors.push(format!(
                "{}: a bare copy of a timed load in a build that times every warp",
                f.name
            ));
        }
        let body = ptx.iter().find(|(n, _)| *n == f.name).map(|(_, body)| body);
        let ptx_ivs = body.map(|body| ptx_intervals(body));
        if sampled
            && let (Some(body), Some(Ok(windows))) = (body, &ptx_ivs)
            && let Err(e) = check_ptx_bare_path(body, windows)
        {
            errors.push(format!("{} (PTX): {e}", f.name));
        }
        let ptx_count = ptx_ivs.map(|v| v.map(|v| v.len()).unwrap_or(usize::MAX));
        if ptx_count != Some(ivs.len()) {
            errors.push(format!(
                "{}: {} timed loads in SASS, {:?} in PTX",
                f.name,
                ivs.len(),
                ptx_count
            ));
        }
        for iv in &ivs {
            if let Err(e) = check_sass_interval(f, iv, mode) {
                errors.push(e);
            }
        }
    }
    errors
}

// ---------------------------------------------------------------- PTX

/// (entry name, instruction and label lines) per `.entry` of a PTX module (labels are kept for
/// the branches that name them).
pub fn ptx_entries(ptx: &str) -> Vec<(&str, Vec<&str>)> {
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
            && (t.ends_with(';') || t.ends_with(':'))
            && !t.starts_with('.')
            && !t.starts_with("//")
        {
            body.push(t);
        }
    }
    out
}

/// Splits a PTX instruction into (predicate, opcode, operands).
pub fn ptx_split(line: &str) -> (Option<&str>, &str, Vec<String>) {
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

pub fn is_ptx_clock(line: &str) -> bool {
    line.contains("%clock64") || line.contains("%clock;")
}

pub fn is_ptx_load(op: &str) -> bool {
    op.starts_with("tex.")
        || op.starts_with("tld4.")
        || (op.starts_with("ld.")
            && !op.starts_with("ld.param")
            && !op.starts_with("ld.shared")
            && !op.starts_with("ld.local")
            && !op.starts_with("ld.const"))
}

pub fn is_ptx_fence(op: &str) -> bool {
    op.starts_with("membar") || op.starts_with("fence")
}

/// A PTX body as the bare-path analysis sees it.
fn ptx_steps(body: &[&str]) -> Vec<Step> {
    let label = |name: &str| body.iter().position(|l| l.strip_suffix(':') == Some(name));
    body.iter()
        .map(|line| {
            let (pred, op, _) = ptx_split(line);
            match op {
                _ if is_ptx_clock(line) => Step::Clock,
                _ if is_ptx_load(op) => Step::Load,
                _ if is_ptx_fence(op) => Step::Fence,
                "bra" | "bra.uni" => Step::Branch {
                    conditional: pred.is_some(),
                    target: line
                        .trim_end_matches(';')
                        .split_whitespace()
                        .last()
                        .and_then(label),
                },
                "ret" | "exit" => Step::Exit,
                _ => Step::Other,
            }
        })
        .collect()
}

/// A PTX load's operation with its element type reduced to the width: the front end may load a
/// value as `.f32` on one path and as `.u32` on another (a dummy probe reads its bits).
fn ptx_load_kind(op: &str) -> Vec<&str> {
    op.split('.')
        .map(|t| match t.as_bytes().first() {
            Some(b'f' | b'u' | b's' | b'b') if t[1..].parse::<u32>().is_ok() => &t[1..],
            _ => t,
        })
        .collect()
}

/// The untimed warps' bare copies of a PTX body's timed loads (a copy is the same operation).
pub fn ptx_bare_copies(body: &[&str]) -> Vec<BareCopy> {
    bare::bare_copies(
        &ptx_steps(body),
        |a, b| ptx_load_kind(ptx_split(body[a]).1) == ptx_load_kind(ptx_split(body[b]).1),
        |a, b| {
            let guard = |k: usize| ptx_split(body[k]).0;
            guard(a).is_some() && guard(a) == guard(b)
        },
    )
}

pub fn ptx_intervals(body: &[&str]) -> Result<Vec<(usize, usize, usize)>, String> {
    let clocks: Vec<usize> = (0..body.len()).filter(|&i| is_ptx_clock(body[i])).collect();
    let bare: Vec<usize> = ptx_bare_copies(body).iter().map(|c| c.load).collect();
    let mut out = Vec::new();
    for w in clocks.windows(2) {
        let loads: Vec<usize> = (w[0] + 1..w[1])
            .filter(|&i| is_ptx_load(ptx_split(body[i]).1) && !bare.contains(&i))
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

pub fn check_ptx_interval(
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
        if is_ptx_fence(op) {
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
