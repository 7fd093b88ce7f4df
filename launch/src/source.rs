//! A launch's kernel source as PTX: a `.cu` compiled with the project's nvcc (through the compile
//! cache), a `.ptx` read as it is, or either with the probes put in by the PTX rewriter.

use crate::error::{Context, Result, invalid};
use crate::spec::ArgPlan;
use instrument::rewrite::{Instrumented, RewriteOptions, SiteSet, instrument_ptx};
use kernels::cache::CompileCache;
use std::path::{Path, PathBuf};
use trace::{ProbeMode, SiteInfo};

/// Where `.cu` sources are compiled.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Cache {
    /// `~/.cache/warpscope/compile` (none where the home folder is unknown).
    #[default]
    Default,
    Dir(PathBuf),
    /// nvcc every time.
    Off,
}

impl Cache {
    fn open(&self) -> Option<CompileCache> {
        match self {
            Cache::Default => CompileCache::default_dir().map(CompileCache::new),
            Cache::Dir(dir) => Some(CompileCache::new(dir)),
            Cache::Off => None,
        }
    }
}

/// PTX text and the registers per thread ptxas reports for it (for the emulator's occupancy).
#[derive(Debug, Clone)]
pub(crate) struct Compiled {
    pub ptx: String,
    pub regs: Option<u32>,
    /// The probe mode it was built with; None for a .ptx, whose mode is found per kernel.
    pub mode: Option<ProbeMode>,
    /// The sites of a kernel instrumented by the PTX rewriter (else the PTX's or the spec's).
    pub sites: Option<Vec<SiteInfo>>,
}

impl Compiled {
    /// Counts the registers again as ptxas assembles the PTX for `sm_{arch}`, the GPU the
    /// emulator models, whose occupancy follows them (a kernel of 42 registers on sm_75 may take
    /// 38 on sm_90): the most of any entry, or of `kernel`'s where the count was its own. Where
    /// ptxas cannot, the count stays and a note says so. A `.ptx` read as it is, with no count,
    /// keeps none.
    pub(crate) fn retarget(&mut self, arch: u32, kernel: Option<&str>, note: &dyn Fn(&str)) {
        if self.regs.is_none() {
            return;
        }
        match kernels::ptx_usage_for(&self.ptx, arch) {
            Ok(usage) => {
                let regs = usage
                    .iter()
                    .filter(|e| kernel.is_none_or(|k| e.name == k))
                    .map(|e| e.registers)
                    .max()
                    .filter(|&r| r > 0);
                if regs.is_some() {
                    self.regs = regs;
                }
            }
            Err(e) => note(&format!(
                "note: registers not counted for sm_{arch} ({e}); the occupancy uses sm_75's"
            )),
        }
    }
}

fn compile_context(src: &Path) -> String {
    format!(
        "compiling {} (run scripts/setup-cuda if nvcc is missing, or give a .ptx source)",
        src.display()
    )
}

pub(crate) fn compile_cu(
    src: &Path,
    cache: &Cache,
    mode: ProbeMode,
    sampled: bool,
    note: &dyn Fn(&str),
) -> Result<Compiled> {
    let c = match cache.open() {
        Some(cache) => {
            let (c, hit) = kernels::compile_ptx_cached(src, mode.ws_mode(), sampled, &cache)
                .with_context(|| compile_context(src))?;
            if hit {
                note(&format!(
                    "{} unchanged, compiled PTX from {}",
                    src.display(),
                    cache.dir().display()
                ));
            } else {
                note(&c.command);
            }
            c
        }
        None => {
            let c = kernels::compile_ptx(src, mode.ws_mode(), sampled)
                .with_context(|| compile_context(src))?;
            note(&c.command);
            c
        }
    };
    Ok(Compiled {
        ptx: c.ptx,
        regs: c.registers,
        mode: Some(mode),
        sites: None,
    })
}

/// Compiles (a .cu, `sampled` for a launch that times only some warps) or reads (a .ptx) a
/// launch's source.
pub(crate) fn load_source(
    source: &Path,
    cache: &Cache,
    mode: Option<ProbeMode>,
    sampled: bool,
    note: &dyn Fn(&str),
) -> Result<Compiled> {
    let ext = source.extension().and_then(|e| e.to_str()).unwrap_or("");
    Ok(match ext {
        "cu" => compile_cu(
            source,
            cache,
            mode.unwrap_or(ProbeMode::Auto),
            sampled,
            note,
        )?,
        "ptx" => Compiled {
            ptx: read(source)?,
            regs: None,
            mode: None,
            sites: None,
        },
        _ => invalid!("{}: source must be a .ptx or .cu file", source.display()),
    })
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| crate::LaunchError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads (or compiles, with `-lineinfo` and without probes) `input` and instruments it. The
/// probed entries get the header builds' register budget when ptxas can tell the bare entries'
/// registers (else a note says so).
pub fn instrument_source(
    input: &Path,
    opts: &RewriteOptions,
    note: &dyn Fn(&str),
) -> Result<Instrumented> {
    let ext = input.extension().and_then(|e| e.to_str()).unwrap_or("");
    let (ptx, usage) = match ext {
        "cu" => {
            let c = kernels::compile_ptx_lineinfo(input).with_context(|| {
                format!(
                    "compiling {} (run scripts/setup-cuda if nvcc is missing, or give a .ptx)",
                    input.display()
                )
            })?;
            note(&c.command);
            (c.ptx, Ok(c.entries))
        }
        "ptx" => {
            let ptx = read(input)?;
            let usage = kernels::ptx_usage(&ptx);
            (ptx, usage)
        }
        _ => invalid!("{}: input must be a .cu or .ptx file", input.display()),
    };
    let inst =
        instrument_ptx(&ptx, opts).with_context(|| format!("instrumenting {}", input.display()))?;
    if let Some(n) = inst.line_table_note() {
        note(&format!("note: {}: {n}", input.display()));
    }
    Ok(match usage {
        Ok(entries) if !entries.is_empty() => inst.with_register_budget(&entries),
        other => {
            let why = match other {
                Err(e) => e.to_string(),
                Ok(_) => "ptxas reported no entries".into(),
            };
            note(&format!(
                "note: no bare register counts for {} ({why}); the probed entries get no .maxnreg budget",
                input.display()
            ));
            inst
        }
    })
}

/// `--instrument MODE`: the spec's kernel instrumented on the fly (`sampled`: with the untimed
/// warps' bare path), with the log argument appended to the spec's arguments (which must not
/// name one).
pub(crate) fn for_launch(
    source: &Path,
    kernel: &str,
    mode: Option<ProbeMode>,
    sampled: bool,
    plans: &mut Vec<ArgPlan>,
    note: &dyn Fn(&str),
) -> Result<Compiled> {
    if plans.contains(&ArgPlan::Log) {
        invalid!(
            "--instrument appends the log argument itself; remove the spec's log = true argument"
        );
    }
    let opts = RewriteOptions {
        mode: mode.unwrap_or(ProbeMode::Auto),
        sites: SiteSet::default(),
        kernel: Some(kernel.to_string()),
        sampled,
    };
    let inst = instrument_source(source, &opts, note)?;
    let sites = inst.kernel(kernel).map(|k| k.site_infos());
    for k in &inst.kernels {
        for s in &k.sites {
            note(&format!(
                "{}: site {} {} {} at {}",
                k.name,
                s.info.id,
                s.kind.name(),
                s.method.name(),
                s.info.name
            ));
        }
    }
    plans.push(ArgPlan::Log);
    // Registers per thread of the probed entry, for the emulator's occupancy (as for a .cu).
    let regs = kernels::ptx_usage(&inst.ptx).ok().and_then(|u| {
        u.iter()
            .find(|e| e.name == kernel)
            .map(|e| e.registers)
            .filter(|&r| r > 0)
    });
    Ok(Compiled {
        ptx: inst.ptx,
        regs,
        mode: Some(opts.mode),
        sites,
    })
}
