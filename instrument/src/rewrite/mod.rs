//! Probes for kernels nobody edited: the rewriter puts `kernels/warpscope.cuh`'s probes into
//! PTX text.
//!
//! Why PTX and not SASS (NVBit) or a compiler pass (Proton needs Triton's compiler): warpscope
//! already runs PTX on the emulator and hands PTX to the driver (ptxas), so one rewritten text
//! serves both backends, and the probes are the same instruction sequences the header produces
//! (see [`emit`]), so the log layout, its decoding, the exports and the analysis do not change.
//!
//! Per instrumented entry: a `ws::Log` parameter appended (`<kernel>_ws_log`), `WS_KERNEL_BEGIN`
//! before the first instruction, every `ret`/`exit` turned into a branch to one
//! `WS_KERNEL_END` block, and each selected load bracketed by its opening clock, the mode's
//! closing construct and the record. Sites are numbered per kernel in PTX order and named by
//! source line (the line table, present when the `.cu` was compiled with `-lineinfo`; a load in
//! inlined code by the line in the kernel's own function, see `lines.rs`) or else by PTX line,
//! which [`Instrumented::line_table`] tells apart. The output names its sites in comments
//! (`// ws-site ...`), read back by [`sites_in_ptx`].

mod emit;
mod lines;
mod sites;

pub use sites::{SiteKind, SiteSet};

use lines::LineTable;
use sites::{Instr, RegTypes, destinations, instr, load_kind};
use trace::{ProbeMode, SiteInfo};

/// What to instrument and how.
#[derive(Debug, Clone, PartialEq)]
pub struct RewriteOptions {
    /// Naive, Fence, Dummy or Auto (fence for writable memory, dummy for read-only memory).
    pub mode: ProbeMode,
    pub sites: SiteSet,
    /// Only this entry (others are left as they are); `None`: every entry.
    pub kernel: Option<String>,
    /// Give every probe the bare path of an untimed access, so that a launch may time only some
    /// warps (`--time-warps`) or some of each warp's accesses (`--time-accesses`); without it
    /// every warp times every access and the probe is as it was.
    pub sampled: bool,
}

impl Default for RewriteOptions {
    fn default() -> Self {
        RewriteOptions {
            mode: ProbeMode::Auto,
            sites: SiteSet::default(),
            kernel: None,
            sampled: false,
        }
    }
}

/// One probed load.
#[derive(Debug, Clone, PartialEq)]
pub struct Site {
    pub info: SiteInfo,
    pub kind: SiteKind,
    /// The closing construct it got: Naive, Fence or Dummy.
    pub method: ProbeMode,
    /// 1-based line of the load in the input PTX.
    pub ptx_line: usize,
}

/// One instrumented entry.
#[derive(Debug, Clone, PartialEq)]
pub struct InstrumentedKernel {
    pub name: String,
    /// The appended `ws::Log` parameter (the entry's last).
    pub log_param: String,
    pub sites: Vec<Site>,
}

impl InstrumentedKernel {
    /// The site table a probed launch needs ([`crate::Probe::sites`]).
    pub fn site_infos(&self) -> Vec<SiteInfo> {
        self.sites.iter().map(|s| s.info.clone()).collect()
    }
}

/// The rewritten module.
#[derive(Debug, Clone, PartialEq)]
pub struct Instrumented {
    pub ptx: String,
    pub mode: ProbeMode,
    pub kernels: Vec<InstrumentedKernel>,
    /// Whether the input had a line table (`.file`/`.loc`), so that sites are named by source
    /// line; without one they are named by PTX line (`ptx:LINE`).
    pub line_table: bool,
}

impl Instrumented {
    /// What to tell the user when the sites are named by PTX line for want of a line table;
    /// `None` when the input had one.
    pub fn line_table_note(&self) -> Option<&'static str> {
        (!self.line_table).then_some(
            "the PTX has no line table, so sites are named by PTX line (ptx:LINE); compile the .cu with -lineinfo (it changes no code) to name them by source line",
        )
    }

    /// Holds every instrumented entry to the register budget of the header's probed builds
    /// (`.maxnreg` from the bare entry's registers, see `kernels::budget`), so that the probes
    /// change occupancy no more than the header's do. `bare` is ptxas's usage of the input.
    pub fn with_register_budget(mut self, bare: &[kernels::budget::EntryUsage]) -> Self {
        let budgets: Vec<(String, u32)> = bare
            .iter()
            .filter(|u| u.registers > 0 && self.kernel(&u.name).is_some())
            .map(|u| {
                (
                    u.name.clone(),
                    kernels::budget::register_budget(u.registers),
                )
            })
            .collect();
        self.ptx = kernels::budget::with_maxnreg(&self.ptx, &budgets);
        self
    }

    pub fn kernel(&self, name: &str) -> Option<&InstrumentedKernel> {
        self.kernels.iter().find(|k| k.name == name)
    }
}

/// Why a PTX text could not be instrumented; names the kernel and the PTX line.
#[derive(Debug, thiserror::Error)]
pub enum RewriteError {
    #[error("--mode off inserts no probes; choose naive, fence, dummy or auto")]
    ModeOff,
    #[error(
        "the PTX is already instrumented (it declares {})",
        emit::SHARED_SYMBOL
    )]
    AlreadyInstrumented,
    #[error("kernel {kernel:?} is not an entry of the PTX (entries: {available})")]
    NoSuchKernel { kernel: String, available: String },
    #[error("kernel {kernel:?}, PTX line {line}: {what}")]
    Ptx {
        kernel: String,
        line: usize,
        what: String,
    },
    #[error(
        "kernel {kernel:?} has {count} selected loads; the log holds statistics for {max} sites: select fewer kinds with --sites"
    )]
    TooManySites {
        kernel: String,
        count: usize,
        max: u32,
    },
    #[error("the instrumented PTX does not parse (a rewriter bug; please report it)")]
    Reparse(#[source] emulator::EmuError),
}

enum State {
    Outside,
    /// In an entry's parameter list.
    Header,
    /// Between the entry's `{` and its first instruction.
    Decls,
    Body,
}

struct Entry {
    name: String,
    log: String,
    /// The parameter list has not ended yet.
    params_open: bool,
    depth: i32,
    regs: RegTypes,
    sites: Vec<Site>,
}

/// Rewrites `ptx` with probes (see the module documentation). The result is checked by parsing
/// it with the emulator's front end.
pub fn instrument_ptx(ptx: &str, opts: &RewriteOptions) -> Result<Instrumented, RewriteError> {
    if opts.mode == ProbeMode::Off {
        return Err(RewriteError::ModeOff);
    }
    if ptx.contains(emit::SHARED_SYMBOL) {
        return Err(RewriteError::AlreadyInstrumented);
    }
    let names: Vec<String> = ptx.lines().filter_map(entry_name).collect();
    if let Some(k) = &opts.kernel
        && !names.contains(k)
    {
        return Err(RewriteError::NoSuchKernel {
            kernel: k.clone(),
            available: names.join(", "),
        });
    }
    let mut pos = LineTable::new(ptx);
    let mut out = String::with_capacity(ptx.len() * 2);
    let mut done: Vec<InstrumentedKernel> = Vec::new();
    let mut state = State::Outside;
    let mut cur: Option<Entry> = None;
    let mut declared = false;
    let mut n_label = 0usize;
    for (idx, line) in ptx.lines().enumerate() {
        let lineno = idx + 1;
        let trimmed = line.trim();
        match state {
            State::Outside => {
                if !declared && (trimmed.starts_with(".address_size") || entry_name(line).is_some())
                {
                    if trimmed.starts_with(".address_size") {
                        out.push_str(line);
                        out.push('\n');
                    }
                    out.push_str(&format!(
                        "\n// warpscope: the probes' per-warp state (dynamic shared memory)\n.extern .shared .align {} .b8 {}[];\n",
                        kernels::layout::WS_SHARED_ALIGN,
                        emit::SHARED_SYMBOL
                    ));
                    declared = true;
                    if trimmed.starts_with(".address_size") {
                        continue;
                    }
                }
                if let Some(name) = entry_name(line)
                    && opts.kernel.as_ref().is_none_or(|k| *k == name)
                {
                    let log = format!("{name}_ws_log");
                    let param = format!(
                        "\t.param .align {} .b8 {log}[{}]",
                        kernels::layout::WS_LOG_ARG_ALIGN,
                        kernels::layout::WS_LOG_ARG_BYTES
                    );
                    pos.reset();
                    let params_open = if let Some(open) = line.find("()") {
                        // No parameters: the log is the only one.
                        out.push_str(&line[..open + 1]);
                        out.push('\n');
                        out.push_str(&param);
                        out.push_str("\n)");
                        out.push_str(&line[open + 2..]);
                        out.push('\n');
                        false
                    } else if line.contains(')') {
                        return Err(RewriteError::Ptx {
                            kernel: name,
                            line: lineno,
                            what: "the parameter list must end on a line of its own".into(),
                        });
                    } else {
                        out.push_str(line);
                        out.push('\n');
                        true
                    };
                    cur = Some(Entry {
                        name,
                        log,
                        params_open,
                        depth: 0,
                        regs: RegTypes::default(),
                        sites: Vec::new(),
                    });
                    state = State::Header;
                    continue;
                }
                out.push_str(line);
                out.push('\n');
            }
            State::Header => {
                let Some(e) = cur.as_mut() else {
                    state = State::Outside;
                    continue;
                };
                if e.params_open && trimmed.starts_with(')') {
                    // The parameter list's end: the log is appended as the last parameter.
                    if !out.trim_end().ends_with('(') {
                        out.truncate(out.trim_end().len());
                        out.push_str(",\n");
                    }
                    out.push_str(&format!(
                        "\t.param .align {} .b8 {}[{}]\n",
                        kernels::layout::WS_LOG_ARG_ALIGN,
                        e.log,
                        kernels::layout::WS_LOG_ARG_BYTES
                    ));
                    e.params_open = false;
                }
                out.push_str(line);
                out.push('\n');
                if !e.params_open && trimmed.starts_with('{') {
                    out.push_str(emit::REGISTERS);
                    e.depth = 1;
                    state = State::Decls;
                }
            }
            State::Decls | State::Body => {
                let Some(e) = cur.as_mut() else {
                    state = State::Outside;
                    continue;
                };
                pos.see(line).map_err(|err| RewriteError::Ptx {
                    kernel: e.name.clone(),
                    line: lineno,
                    what: err.to_string(),
                })?;
                e.regs.declare(line);
                let code = line.split("//").next().unwrap_or("");
                let is_decl = trimmed.is_empty()
                    || trimmed.starts_with("//")
                    || (trimmed.starts_with('.') && !lines::is_loc(trimmed));
                if matches!(state, State::Decls) && !is_decl {
                    emit::begin(&mut out, &e.log, opts.sampled);
                    state = State::Body;
                }
                let opens = code.matches('{').count() as i32;
                let closes = code.matches('}').count() as i32;
                if e.depth + opens - closes <= 0 {
                    if matches!(state, State::Decls) {
                        emit::begin(&mut out, &e.log, opts.sampled);
                    }
                    emit::end(&mut out, &e.log, opts.sampled);
                    out.push_str(line);
                    out.push('\n');
                    let Some(e) = cur.take() else { continue };
                    if e.sites.len() > kernels::layout::WS_MAX_SITES as usize {
                        return Err(RewriteError::TooManySites {
                            kernel: e.name,
                            count: e.sites.len(),
                            max: kernels::layout::WS_MAX_SITES,
                        });
                    }
                    done.push(InstrumentedKernel {
                        name: e.name,
                        log_param: e.log,
                        sites: e.sites,
                    });
                    state = State::Outside;
                    continue;
                }
                e.depth += opens - closes;
                match instr(line) {
                    Some(i) if matches!(i.base(), "ret" | "exit") => {
                        let guard = i.guard.map(|g| format!("@{g} ")).unwrap_or_default();
                        out.push_str(&format!("{}{guard}bra \t{};\n", i.indent, emit::EXIT_LABEL));
                    }
                    Some(i) if load_kind(&i).is_some_and(|k| opts.sites.contains(k)) => {
                        let kind = load_kind(&i).unwrap_or(SiteKind::Global);
                        n_label += 1;
                        probe_site(&mut out, e, &i, kind, opts, &pos, lineno, n_label)?;
                    }
                    _ => {
                        out.push_str(line);
                        out.push('\n');
                    }
                }
            }
        }
    }
    if let Some(e) = cur {
        return Err(RewriteError::Ptx {
            kernel: e.name,
            line: ptx.lines().count(),
            what: "the entry's body does not end (no closing brace)".into(),
        });
    }
    let mut text = header_comment(opts.mode, &done);
    text.push_str(&out);
    emulator::Module::parse(&text).map_err(RewriteError::Reparse)?;
    Ok(Instrumented {
        ptx: text,
        mode: opts.mode,
        kernels: done,
        line_table: pos.present(),
    })
}

#[allow(clippy::too_many_arguments)]
fn probe_site(
    out: &mut String,
    e: &mut Entry,
    i: &Instr<'_>,
    kind: SiteKind,
    opts: &RewriteOptions,
    pos: &LineTable,
    lineno: usize,
    n: usize,
) -> Result<(), RewriteError> {
    let mode = opts.mode;
    let id = u16::try_from(e.sites.len()).map_err(|_| RewriteError::TooManySites {
        kernel: e.name.clone(),
        count: e.sites.len(),
        max: kernels::layout::WS_MAX_SITES,
    })?;
    let method = kind.method(mode);
    let mut dests = Vec::new();
    for d in destinations(i) {
        let bits = e.regs.bits(d).ok_or_else(|| RewriteError::Ptx {
            kernel: e.name.clone(),
            line: lineno,
            what: format!("register {d} of `{}` is not declared", i.opcode),
        })?;
        if !matches!(bits, 16 | 32 | 64) {
            return Err(RewriteError::Ptx {
                kernel: e.name.clone(),
                line: lineno,
                what: format!("cannot time a load into the {bits}-bit register {d}"),
            });
        }
        dests.push((d, bits));
    }
    if dests.is_empty() {
        return Err(RewriteError::Ptx {
            kernel: e.name.clone(),
            line: lineno,
            what: format!("`{}` has no destination register", i.opcode),
        });
    }
    let name = pos.name(lineno);
    let what = format!("{name}, {kind} `{}`, {}", i.opcode, method.name());
    // A guarded load: the whole probe runs only where the load does.
    let skip = i.guard.map(|g| {
        let neg = match g.strip_prefix('!') {
            Some(p) => p.to_string(),
            None => format!("!{g}"),
        };
        out.push_str(&format!("{}@{neg} bra \t$WS_SKIP_{n};\n", i.indent));
        format!("$WS_SKIP_{n}:\n")
    });
    emit::site(
        out,
        &e.log,
        &emit::Site {
            id,
            method,
            load: &i.unguarded(),
            dests: &dests,
            what: &what,
        },
        n,
        opts.sampled,
    );
    if let Some(label) = skip {
        out.push_str(&label);
    }
    e.sites.push(Site {
        info: SiteInfo::new(id, name, kind.region()),
        kind,
        method,
        ptx_line: lineno,
    });
    Ok(())
}

/// The entry declared on this line, if any (`.entry NAME(`).
fn entry_name(line: &str) -> Option<String> {
    let code = line.split("//").next()?;
    let rest = code.split(".entry").nth(1)?;
    let name = rest.trim_start().split(['(', ' ', '\t']).next()?.trim();
    (!name.is_empty()).then(|| name.to_string())
}

const SITE_TAG: &str = "// ws-site";

fn header_comment(mode: ProbeMode, kernels: &[InstrumentedKernel]) -> String {
    let mut s = format!(
        "// warpscope instrument: probes inserted into this PTX, mode {}\n// Sites: kernel, id, memory, closing construct, source line.\n",
        mode.name()
    );
    for k in kernels {
        for site in &k.sites {
            s.push_str(&format!(
                "{SITE_TAG} {} {} {} {} {}\n",
                k.name,
                site.info.id,
                site.kind,
                site.method.name(),
                site.info.name
            ));
        }
    }
    s
}

/// The sites an instrumented PTX names for `kernel` (its `// ws-site` comments), or `None` when
/// the PTX was not made by [`instrument_ptx`].
pub fn sites_in_ptx(ptx: &str, kernel: &str) -> Option<Vec<SiteInfo>> {
    if !ptx.contains(emit::SHARED_SYMBOL) {
        return None;
    }
    let mut out = Vec::new();
    for line in ptx.lines() {
        let Some(rest) = line.strip_prefix(SITE_TAG) else {
            continue;
        };
        let mut w = rest.split_whitespace();
        let (Some(k), Some(id), Some(kind), Some(_method)) =
            (w.next(), w.next(), w.next(), w.next())
        else {
            continue;
        };
        let name: Vec<&str> = w.collect();
        if k != kernel {
            continue;
        }
        let (Ok(id), Ok(kind)) = (id.parse::<u16>(), kind.parse::<SiteSet>()) else {
            continue;
        };
        out.push(SiteInfo::new(id, name.join(" "), kind.0[0].region()));
    }
    Some(out)
}

/// The probe mode an instrumented PTX was made with (from its first line).
pub fn mode_of_ptx(ptx: &str) -> Option<ProbeMode> {
    let first = ptx.lines().next()?;
    let name = first
        .strip_prefix("// warpscope instrument: probes inserted into this PTX, mode ")?
        .trim();
    ProbeMode::ALL.into_iter().find(|m| m.name() == name)
}
