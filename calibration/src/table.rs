//! `docs/calibration/calibration.toml`: its one typed definition, read and written through
//! serde, and the rules a row keeps.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use check::micro::MicroCase;
use serde::{Deserialize, Serialize};
use trace::ProbeMode;

use crate::error::CalibrationError;

/// Where the table lives, from the workspace root.
pub const TABLE_PATH: &str = "docs/calibration/calibration.toml";

/// Where the raw measurement records live, from the workspace root; a row's source names a file
/// in it.
pub const RECORDS_DIR: &str = "docs/gpu";

/// What the file says before its rows. Comments are not part of the typed table, so the writer
/// puts this header back every time.
const HEADER: &str = "\
# The silicon calibration table: each row a quantity measured on a GPU (the raw record under
# docs/gpu/ it comes from, and the line that holds the number) beside the emulator preset's
# value for it, with the tolerance the two must agree within, or the reason they do not (gap).
# Defined by calibration/src/table.rs; `model` is computed, never typed:
#   cargo run -p warpscope-calibration --example calibrate -- --write
# recomputes every row whose measure is cheap (the test suite does the same and fails when a
# recorded value differs), and with --expensive also the paper-scale frames (kernel times,
# texture and L2 hit rates), the probes' cost over them and the DRAM patterns, which take about
# an hour on two cores and are recorded here from that run (until then such a row shows as not
# computed). The same command writes docs/validation.md from this table. A row outside its
# tolerance says why in `gap`; a tolerance may only narrow (the tests compare it with the
# merge base's).
";

/// The whole table, in the order its rows are shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    pub row: Vec<Row>,
}

/// One quantity on one GPU, beside the model's value for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// Unique in the table, stable across changes (the merge-base check matches rows by it).
    pub id: String,
    /// The quantity in words.
    pub quantity: String,
    pub unit: Unit,
    pub gpu: Gpu,
    /// The number as the raw record prints it.
    pub silicon: f64,
    pub source: Source,
    /// The emulator preset the model's value comes from.
    pub preset: String,
    /// How the model's value is computed.
    pub measure: Measure,
    /// The model's value, as the calibration program last computed it (rounded to
    /// [`MODEL_DIGITS`] significant digits); absent until it has run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<f64>,
    pub tolerance: Tolerance,
    /// A known gap: why the model is outside the tolerance (a finding). A row that agrees has
    /// none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap: Option<String>,
}

/// Significant digits the model's values are recorded with: enough that a recomputed value
/// that differs in any digit shown anywhere is a different value.
pub const MODEL_DIGITS: i32 = 6;

/// `x` rounded to [`MODEL_DIGITS`] significant digits.
pub fn round_model(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(MODEL_DIGITS - 1 - x.abs().log10().floor() as i32);
    (x * scale).round() / scale
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Cycles,
    Milliseconds,
    Microseconds,
    Nanoseconds,
    /// Gigabytes (10⁹ bytes) per second.
    #[serde(rename = "gb_s")]
    GigabytesPerSecond,
    /// A dimensionless ratio.
    Ratio,
    /// Per cent (a hit rate).
    Percent,
    /// A count of corpus files.
    Files,
    /// Operations per SM clock cycle.
    OpsPerClock,
    /// Bytes per SM clock cycle, per SM.
    BytesPerClock,
    /// A value a kernel computes.
    Value,
    /// A count of 32-byte sectors (or of lookups of them).
    Sectors,
}

impl Unit {
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Cycles => "cycles",
            Unit::Milliseconds => "ms",
            Unit::Microseconds => "µs",
            Unit::Nanoseconds => "ns",
            Unit::GigabytesPerSecond => "GB/s",
            Unit::Ratio => "×",
            Unit::Percent => "%",
            Unit::Files => "files",
            Unit::OpsPerClock => "ops/clock",
            Unit::BytesPerClock => "B/clock",
            Unit::Value => "",
            Unit::Sectors => "sectors",
        }
    }
}

/// The GPUs the records come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Gpu {
    H100,
    H200,
}

impl Gpu {
    pub const ALL: [Gpu; 2] = [Gpu::H100, Gpu::H200];

    pub fn name(self) -> &'static str {
        match self {
            Gpu::H100 => "H100",
            Gpu::H200 => "H200",
        }
    }
}

impl fmt::Display for Gpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a silicon number is: a file of [`RECORDS_DIR`], the line that prints it (1-based) and
/// what that line is, in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    pub file: String,
    pub line: usize,
    pub at: String,
}

impl Source {
    /// The day of the measurement, as the record's file name gives it (`YYYY-MM-DD`, the
    /// project's naming of raw records); the table refuses a source whose name has none.
    pub fn date(&self) -> Option<&str> {
        let b = self.file.as_bytes();
        (0..b.len().saturating_sub(9)).find_map(|i| {
            let w = &b[i..i + 10];
            let shaped = w.iter().enumerate().all(|(k, c)| match k {
                4 | 7 => *c == b'-',
                _ => c.is_ascii_digit(),
            });
            shaped.then(|| &self.file[i..i + 10])
        })
    }
}

/// How far the model may be from silicon and still agree.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Tolerance {
    /// |model − silicon| ≤ this × |silicon|.
    Relative(f64),
    /// |model − silicon| ≤ this, in the row's unit.
    Absolute(f64),
}

impl Tolerance {
    /// The largest |model − silicon| that agrees, at `silicon`.
    pub fn band(self, silicon: f64) -> f64 {
        match self {
            Tolerance::Relative(r) => r * silicon.abs(),
            Tolerance::Absolute(a) => a,
        }
    }

    pub fn admits(self, silicon: f64, model: f64) -> bool {
        (model - silicon).abs() <= self.band(silicon)
    }

    fn value(self) -> f64 {
        match self {
            Tolerance::Relative(v) | Tolerance::Absolute(v) => v,
        }
    }
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tolerance::Relative(r) => write!(f, "±{} %", num(r * 100.0)),
            Tolerance::Absolute(a) => write!(f, "±{}", num(*a)),
        }
    }
}

/// What the model's value of a row is, and how it is computed on the emulator.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Measure {
    /// The GPU check's microbenchmark (`check::micro`, `kernels/micro/pointer_chase.cu`): mean
    /// cycles per chase step or per probed load.
    Micro { case: MicroCase, mode: ProbeMode },
    /// A timed window of `docs/gpu/fence-variants.cu`: mean cycles of the warm windows.
    FenceWindow {
        access: FenceAccess,
        closing: Closing,
    },
    /// `docs/gpu/shared-latency.cu`: cycles per step of a shared-memory chase.
    SharedChase { op: SharedOp, lanes: u32 },
    /// The corpus files of the GPU check (`check::corpus`) whose outputs are their CPU
    /// reference's, byte for byte.
    CorpusOutputs,
    /// A corpus case's kernel time at the GPU check's timing size, µs; `case` is its name in
    /// `kernels::corpus_cases` (one of `check::corpus::calibration_cases`).
    CorpusTime { case: String },
    /// `docs/gpu/dram-granularity.cu`: DRAM bytes read ÷ the bytes the pattern's loads ask for.
    DramBytes { pattern: DramPattern },
    /// `docs/gpu/dram-granularity.cu`: the useful GB/s the pattern reads at (1 GiB over its
    /// kernel time), with every load in flight at once or, with `blocks_per_sm`, a grid of that
    /// many 256-thread blocks per SM looping over the reads (its parallelism section).
    DramRate {
        pattern: DramPattern,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blocks_per_sm: Option<u32>,
    },
    /// The bare build's kernel time of one paper-scale frame of the study (the GPU check's
    /// sweep: `study::demo_config` at `Scale::Paper`), ms.
    PaperFrame { shape: PaperShape, view: PaperView },
    /// The texture hit rate of the same bare frame, % (counted as Nsight Compute's
    /// `l1tex__t_sector_pipe_tex_mem_texture_op_tex_hit_rate.pct` counts it).
    TexHitRate { shape: PaperShape, view: PaperView },
    /// The L2 hit rate of the same bare frame, % (ncu's `lts__t_sector_hit_rate.pct`).
    L2HitRate { shape: PaperShape, view: PaperView },
    /// The achieved occupancy of the same bare frame, % (ncu's
    /// `sm__warps_active.avg.pct_of_peak_sustained_active`).
    AchievedOccupancy { shape: PaperShape, view: PaperView },
    /// The probes' cost over the study's 16 paper-scale frames: probed ÷ bare kernel time of
    /// `mode`, the lowest or the highest.
    Overhead { mode: ProbeMode, extreme: Extreme },
    /// The mean probe reading of one site (`site`: its `WS_LOAD` id) over every access the
    /// frame's warps timed, in the same sweep's frame probed in `mode`, cycles: the figure
    /// `warpscope analyze` gives per site in `hotspots.csv`.
    SiteMean {
        shape: PaperShape,
        view: PaperView,
        mode: ProbeMode,
        site: u16,
    },
    /// `docs/gpu/dummy-closing.cu`: mean cycles of a window around a load that hits L1 or L2,
    /// closed by `closing`.
    DummyClosing {
        closing: DummyClose,
        /// The load's hit: `l1_hit` (the default) or `l2_hit`.
        #[serde(default = "l1_hit", skip_serializing_if = "is_l1_hit")]
        access: FenceAccess,
    },
    /// `docs/gpu/contention.cu`: lane 0's cycles of one warp's window around its 32 lanes' loads
    /// of 32 cold lines, closed as `mode` closes it (naive, dummy or fence).
    DivergentLoad { mode: ProbeMode },
    /// `docs/gpu/contention.cu`: the sum lane 0 gets from reduce7's last step, whose shuffles
    /// read lanes that have exited.
    Reduce7Sum,
    /// `docs/gpu/contention.cu`: contended global atomics per SM clock, `pattern` over `words`
    /// words in all.
    AtomicRate { pattern: AtomicPattern, words: u32 },
    /// `docs/gpu/int-division.cu`: cycles per step of one warp's dependent chain.
    DivisionLatency { chain: DivisionChain },
    /// `docs/gpu/int-division.cu`: cycles per step of one warp's two independent chains, stepped
    /// together.
    DivisionPair { chain: DivisionChain },
    /// `docs/gpu/int-division.cu`: cycles per warp step per scheduler, 32 warps on the SM with
    /// 8 independent chains each.
    DivisionIssue { chain: DivisionChain },
    /// `docs/gpu/atomic-units.cu`: contended global atomics per SM clock, lane 0 of every warp
    /// adding to word 0 of one of `lines` lines `gap` bytes apart.
    AtomicSpread { gap: u32, lines: u32 },
    /// `docs/gpu/atomic-units.cu`: cycles per step of one thread's dependent chain.
    ChainStep { op: ChainOp },
    /// `docs/gpu/divergent-closing.cu`: lane 0's cycles of one warp's window around `lanes`
    /// lanes' loads of a cold line each, closed by `closing`.
    DivergentClosing { closing: DivergentClose, lanes: u32 },
    /// `docs/gpu/sm-inflight.cu`: DRAM bytes per cycle per SM while `threads` threads stream on
    /// one SM or, with `every_sm`, on every SM.
    SmStream { threads: u32, every_sm: bool },
    /// `docs/gpu/loaded-latency.cu`: SM cycles per step of one thread's chase of DRAM misses
    /// while `blocks_per_sm` blocks of 256 threads on every SM read `background` (0: the chase
    /// alone).
    LoadedLatency {
        background: LoadedBackground,
        blocks_per_sm: u32,
    },
    /// `docs/gpu/issue-rates.cu`: cycles per PTX warp instruction per scheduler of `op`, 8 warps
    /// per scheduler with 8 independent chains each.
    IssueRate { op: IssueOp },
    /// `docs/gpu/cache-operators.cu`: cycles per step of a dependent chain of `form` loads over
    /// one word, by one thread or by a warp's 32 lanes (each its own word of one line).
    CacheOperator { form: LoadForm, lanes: u32 },
    /// `docs/gpu/l1-port.cu`: cycles per warp access of one block of 1,024 threads on one SM,
    /// each access on 8 lines the L2 holds and the L1 does not, `sectors` (1, 2 or 4) of each;
    /// `nc` for `ld.global.nc`.
    L1Fill { sectors: u32, nc: bool },
    /// `docs/gpu/l1-port.cu`: cycles per warp-level point fetch of one block of 1,024 threads on
    /// one SM from a texture the L1 holds, each quad of lanes on `quad_sectors` (1, 2 or 4)
    /// sectors: 8, 16 or 32 sector lookups a fetch.
    L1Lookups { quad_sectors: u32 },
    /// `docs/gpu/const-latency.cu`: cycles per step of one warp's chase through a
    /// `__constant__` array over `bytes` (one word per 64-byte line), in `pass`.
    ConstChase { bytes: u32, pass: ConstPass },
    /// `docs/gpu/tex-footprint.cu`: one case's texture counts over its launch, as Nsight
    /// Compute counts them.
    TexFootprint { case: u32, count: TexCount },
    /// `docs/gpu/tex-lookup-count.cu`: one case's texture counts over its launch, as Nsight
    /// Compute counts them.
    TexLookupCount { case: u32, count: TexCount },
    /// `docs/gpu/launch-overhead.cu`: a grid of `blocks` blocks of 128 threads, each storing a
    /// word: its span from the blocks' earliest start to their latest end on `%globaltimer`, µs.
    LaunchSpan { blocks: u32 },
    /// `docs/gpu/block-placement.cu`: the grid of `shape` blocks, each held ~20 µs so that all
    /// are resident at once: ns between consecutive block starts on an SM, the least-squares
    /// slope of each block's start over its place in its SM's order of starts.
    BlockRamp { shape: PaperShape },
}

impl Measure {
    /// Whether computing it takes more than seconds: the calibration program computes these only
    /// with `--expensive`, and the tests take their recorded values.
    pub fn expensive(&self) -> bool {
        matches!(
            self,
            Measure::DramBytes { .. }
                | Measure::DramRate { .. }
                | Measure::PaperFrame { .. }
                | Measure::TexHitRate { .. }
                | Measure::L2HitRate { .. }
                | Measure::AchievedOccupancy { .. }
                | Measure::Overhead { .. }
                | Measure::SiteMean { .. }
                | Measure::AtomicRate { .. }
                | Measure::AtomicSpread { .. }
                | Measure::SmStream { every_sm: true, .. }
                | Measure::BlockRamp { .. }
        ) || matches!(self, Measure::LoadedLatency { blocks_per_sm, .. } if *blocks_per_sm > 0)
    }

    /// How the model's value is produced, in words (the validation page's note per section),
    /// marked `(--expensive)` where [`Measure::expensive`] says so.
    pub fn how(&self) -> String {
        let what = match self {
            Measure::Micro { case, mode } => format!(
                "`check::micro`'s {} ({}) on the emulator",
                case.label(),
                mode.name()
            ),
            Measure::FenceWindow { access, closing } => format!(
                "`docs/gpu/fence-variants.cu`'s window {} {} on the emulator",
                access.label(),
                closing.label()
            ),
            Measure::SharedChase { op, lanes } => format!(
                "`docs/gpu/shared-latency.cu`'s {} with {lanes} lanes on the emulator",
                op.label()
            ),
            Measure::CorpusOutputs => {
                "`check::corpus` on the emulator, each output against its CPU reference".into()
            }
            Measure::CorpusTime { case } => {
                format!("`check::corpus::timed` on {case} on the emulator")
            }
            Measure::DramBytes { pattern }
            | Measure::DramRate {
                pattern,
                blocks_per_sm: None,
            } => format!(
                "`docs/gpu/dram-granularity.cu`'s {} on the emulator",
                pattern.label()
            ),
            Measure::DramRate {
                pattern,
                blocks_per_sm: Some(k),
            } => format!(
                "`docs/gpu/dram-granularity.cu`'s {} with {k} block{} of 256 threads per SM on the emulator",
                pattern.label(),
                if *k == 1 { "" } else { "s" }
            ),
            Measure::PaperFrame { shape, view } => {
                format!("the study's bare {shape} frame at ({view}), paper scale, on the emulator")
            }
            Measure::TexHitRate { shape, view } => format!(
                "the texture hit rate of the study's bare {shape} frame at ({view}), paper scale, on the emulator"
            ),
            Measure::L2HitRate { shape, view } => format!(
                "the L2 hit rate of the study's bare {shape} frame at ({view}), paper scale, on the emulator"
            ),
            Measure::AchievedOccupancy { shape, view } => format!(
                "the achieved occupancy of the study's bare {shape} frame at ({view}), paper scale, on the emulator"
            ),
            Measure::Overhead { mode, extreme } => format!(
                "the {} of the 16 paper-scale frames' {} ÷ bare kernel times on the emulator",
                extreme.word(),
                mode.name()
            ),
            Measure::SiteMean {
                shape,
                view,
                mode,
                site,
            } => format!(
                "the mean reading of site {site} in the study's {} {shape} frame at ({view}), paper scale, every access timed, on the emulator",
                mode.name()
            ),
            Measure::DummyClosing { closing, access } => format!(
                "`docs/gpu/dummy-closing.cu`'s window around an {} closed by {} on the emulator",
                access.label(),
                closing.label()
            ),
            Measure::DivergentLoad { mode } => format!(
                "`docs/gpu/contention.cu`'s window around 32 lanes' cold loads ({}) on the emulator",
                mode.name()
            ),
            Measure::Reduce7Sum => {
                "`docs/gpu/contention.cu`'s reduce7 step on the emulator, lane 0's sum".into()
            }
            Measure::AtomicRate { pattern, words } => format!(
                "`docs/gpu/contention.cu`'s atomics, {} over {words} words, on the emulator",
                pattern.label()
            ),
            Measure::DivisionLatency { chain } => format!(
                "`docs/gpu/int-division.cu`'s latency chain, {}, on the emulator",
                chain.label()
            ),
            Measure::DivisionPair { chain } => format!(
                "`docs/gpu/int-division.cu`'s two latency chains in one warp, {}, on the emulator",
                chain.label()
            ),
            Measure::DivisionIssue { chain } => format!(
                "`docs/gpu/int-division.cu`'s throughput chains, {}, one SM on the emulator",
                chain.label()
            ),
            Measure::AtomicSpread { gap, lines } => format!(
                "`docs/gpu/atomic-units.cu`'s atomics on {lines} line{} {gap} B apart on the emulator",
                if *lines == 1 { "" } else { "s" }
            ),
            Measure::ChainStep { op } => format!(
                "`docs/gpu/atomic-units.cu`'s chain of {} on the emulator",
                op.label()
            ),
            Measure::IssueRate { op } => format!(
                "`docs/gpu/issue-rates.cu`'s chains of {} on one SM of the emulator",
                op.label()
            ),
            Measure::TexFootprint { case, count } => format!(
                "`docs/gpu/tex-footprint.cu`'s case {case} on the emulator, its {}",
                count.label()
            ),
            Measure::TexLookupCount { case, count } => format!(
                "`docs/gpu/tex-lookup-count.cu`'s case {case} on the emulator, its {}",
                count.label()
            ),
            Measure::LaunchSpan { blocks } => format!(
                "`docs/gpu/launch-overhead.cu`'s grid of {blocks} block{} on the emulator, its span",
                if *blocks == 1 { "" } else { "s" }
            ),
            Measure::BlockRamp { shape } => format!(
                "`docs/gpu/block-placement.cu`'s {shape} grid on the emulator, its blocks' starts"
            ),
            Measure::ConstChase { bytes, pass } => format!(
                "`docs/gpu/const-latency.cu`'s chase over {bytes} B, {}, on the emulator",
                pass.label()
            ),
            Measure::L1Fill { sectors, nc } => format!(
                "`docs/gpu/l1-port.cu`'s fill, {sectors} sector{} a line{}, on the emulator",
                if *sectors == 1 { "" } else { "s" },
                if *nc { ", ld.global.nc" } else { "" }
            ),
            Measure::L1Lookups { quad_sectors } => format!(
                "`docs/gpu/l1-port.cu`'s lookups, {quad_sectors} sector{} a quad, on the emulator",
                if *quad_sectors == 1 { "" } else { "s" }
            ),
            Measure::CacheOperator { form, lanes } => format!(
                "`docs/gpu/cache-operators.cu`'s chain of `{}` with {lanes} lane{} on the emulator",
                form.label(),
                if *lanes == 1 { "" } else { "s" }
            ),
            Measure::DivergentClosing { closing, lanes } => format!(
                "`docs/gpu/divergent-closing.cu`'s window around {lanes} lanes' cold loads, {}, on the emulator",
                closing.label()
            ),
            Measure::SmStream { threads, every_sm } => format!(
                "`docs/gpu/sm-inflight.cu`'s stream of {threads} threads on {} on the emulator",
                if *every_sm { "every SM" } else { "one SM" }
            ),
            Measure::LoadedLatency {
                background,
                blocks_per_sm,
            } => format!(
                "`docs/gpu/loaded-latency.cu`'s chase beside {blocks_per_sm} block{} per SM reading {} on the emulator",
                if *blocks_per_sm == 1 { "" } else { "s" },
                background.label()
            ),
        };
        if self.expensive() {
            format!("{what} (--expensive)")
        } else {
            what
        }
    }

    /// Refuses a measure the program cannot compute.
    fn validate(&self) -> Result<(), String> {
        match self {
            Measure::Micro { case, mode } => check::micro::PLAN
                .contains(&(*case, *mode))
                .then_some(())
                .ok_or_else(|| format!("the GPU check does not run {case:?} in {}", mode.name())),
            Measure::FenceWindow { access, closing } => (!(access.is_store()
                && *closing == Closing::Dummy))
                .then_some(())
                .ok_or_else(|| {
                    "a store window has no dummy closing (it needs a loaded value)".into()
                }),
            Measure::SharedChase { op, lanes } => {
                let ok = match op {
                    SharedOp::Load => *lanes == 1 || *lanes == 32,
                    SharedOp::Atomic | SharedOp::LoadReady => *lanes == 1,
                    SharedOp::AtomicWarp | SharedOp::AtomicSameWord => *lanes == 32,
                };
                ok.then_some(()).ok_or_else(|| {
                    format!(
                        "shared-latency.cu runs {} with other lanes than {lanes}",
                        op.label()
                    )
                })
            }
            Measure::CorpusOutputs => Ok(()),
            Measure::CorpusTime { case } => check::corpus::calibration_cases()
                .any(|c| c.name == case)
                .then_some(())
                .ok_or_else(|| format!("the GPU check does not time corpus case {case}")),
            Measure::DramBytes { pattern } => pattern.validate(),
            Measure::DramRate {
                pattern,
                blocks_per_sm,
            } => {
                pattern.validate()?;
                match blocks_per_sm {
                    Some(k) if !(1..=64).contains(k) => {
                        Err(format!("blocks_per_sm must be from 1 to 64, got {k}"))
                    }
                    _ => Ok(()),
                }
            }
            Measure::Overhead { mode, .. } => matches!(mode, ProbeMode::Naive | ProbeMode::Fence)
                .then_some(())
                .ok_or_else(|| {
                    format!(
                        "the study's sweep probes in naive and fence, not {}",
                        mode.name()
                    )
                }),
            Measure::SiteMean { mode, site, .. } => {
                if !matches!(mode, ProbeMode::Naive | ProbeMode::Fence) {
                    Err(format!(
                        "the study's sweep probes in naive and fence, not {}",
                        mode.name()
                    ))
                } else if *site > 1 {
                    Err(format!(
                        "the volume renderer has sites 0 (volume sample) and 1 (transfer function), not {site}"
                    ))
                } else {
                    Ok(())
                }
            }
            Measure::DivergentLoad { mode } => {
                matches!(mode, ProbeMode::Naive | ProbeMode::Dummy | ProbeMode::Fence)
                    .then_some(())
                    .ok_or_else(|| {
                        format!(
                            "contention.cu closes its window naive, dummy or fence, not {}",
                            mode.name()
                        )
                    })
            }
            Measure::AtomicRate { pattern, words } => pattern
                .words()
                .contains(words)
                .then_some(())
                .ok_or_else(|| {
                    format!(
                        "contention.cu runs {} over other words than {words}",
                        pattern.label()
                    )
                }),
            Measure::AtomicSpread { gap, lines } => ([128, 4096].contains(gap)
                && lines.is_power_of_two()
                && *lines <= 512)
                .then_some(())
                .ok_or_else(|| {
                    format!(
                        "atomic-units.cu spreads over 1 to 512 lines (powers of two) 128 or 4096 B apart, not {lines} lines {gap} B apart"
                    )
                }),
            Measure::DivergentClosing { lanes, .. } => (lanes.is_power_of_two() && *lanes <= 32)
                .then_some(())
                .ok_or_else(|| {
                    format!("divergent-closing.cu loads from 1, 2, 4, ... 32 lanes, not {lanes}")
                }),
            Measure::SmStream { threads, .. } => {
                (threads.is_power_of_two() && (32..=1024).contains(threads))
                    .then_some(())
                    .ok_or_else(|| {
                        format!(
                            "sm-inflight.cu streams with 32, 64, ... 1024 threads, not {threads}"
                        )
                    })
            }
            Measure::LoadedLatency { blocks_per_sm, .. } => [0, 1, 2, 4, 7]
                .contains(blocks_per_sm)
                .then_some(())
                .ok_or_else(|| {
                    format!(
                        "loaded-latency.cu runs 0, 1, 2, 4 or 7 background blocks per SM, not {blocks_per_sm}"
                    )
                }),
            Measure::TexFootprint { case, .. } => (*case <= TEX_FOOTPRINT_LAST_CASE)
                .then_some(())
                .ok_or_else(|| {
                    format!(
                        "tex-footprint.cu has cases 0 to {TEX_FOOTPRINT_LAST_CASE}, not {case}"
                    )
                }),
            Measure::TexLookupCount { case, .. } => (*case <= TEX_LOOKUP_COUNT_LAST_CASE)
                .then_some(())
                .ok_or_else(|| {
                    format!(
                        "tex-lookup-count.cu has cases 0 to {TEX_LOOKUP_COUNT_LAST_CASE}, not {case}"
                    )
                }),
            Measure::LaunchSpan { blocks } => (*blocks >= 1)
                .then_some(())
                .ok_or_else(|| "launch-overhead.cu launches at least one block".to_string()),
            Measure::ConstChase { bytes, .. } => (bytes.is_power_of_two()
                && (256..=65536).contains(bytes))
            .then_some(())
            .ok_or_else(|| {
                format!("const-latency.cu chases over 256 B, 512 B, ... 64 KiB, not {bytes} B")
            }),
            Measure::L1Fill { sectors, .. } => [1, 2, 4]
                .contains(sectors)
                .then_some(())
                .ok_or_else(|| format!("l1-port.cu fills 1, 2 or 4 sectors a line, not {sectors}")),
            Measure::L1Lookups { quad_sectors } => [1, 2, 4]
                .contains(quad_sectors)
                .then_some(())
                .ok_or_else(|| {
                    format!("l1-port.cu's quads fetch 1, 2 or 4 sectors, not {quad_sectors}")
                }),
            Measure::CacheOperator { lanes, .. } => [1, 32]
                .contains(lanes)
                .then_some(())
                .ok_or_else(|| {
                    format!("cache-operators.cu runs its chains on 1 or 32 lanes, not {lanes}")
                }),
            Measure::DummyClosing { access, .. } => {
                matches!(access, FenceAccess::L1Hit | FenceAccess::L2Hit)
                    .then_some(())
                    .ok_or_else(|| {
                        format!(
                            "dummy-closing.cu times L1 and L2 hits, not a {}",
                            access.label()
                        )
                    })
            }
            Measure::ChainStep { .. }
            | Measure::IssueRate { .. }
            | Measure::Reduce7Sum
            | Measure::DivisionLatency { .. }
            | Measure::DivisionPair { .. }
            | Measure::DivisionIssue { .. } => Ok(()),
            // Typed: a shape or view the paper does not have is refused when the table is read.
            Measure::PaperFrame { .. }
            | Measure::TexHitRate { .. }
            | Measure::L2HitRate { .. }
            | Measure::AchievedOccupancy { .. }
            | Measure::BlockRamp { .. } => Ok(()),
        }
    }
}

/// One of the paper's eight block shapes ([`study::BlockShape::PAPER`]), written as the sweep
/// names it (`16x8`); no other shape reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PaperShape(study::BlockShape);

impl PaperShape {
    pub fn shape(self) -> study::BlockShape {
        self.0
    }
}

impl TryFrom<String> for PaperShape {
    type Error = String;
    fn try_from(name: String) -> Result<Self, String> {
        study::BlockShape::PAPER
            .into_iter()
            .find(|s| s.name() == name)
            .map(PaperShape)
            .ok_or_else(|| {
                let known: Vec<String> =
                    study::BlockShape::PAPER.iter().map(|s| s.name()).collect();
                format!(
                    "{name:?} is not one of the paper's block shapes ({})",
                    known.join(", ")
                )
            })
    }
}

impl From<PaperShape> for String {
    fn from(s: PaperShape) -> String {
        s.0.name()
    }
}

impl fmt::Display for PaperShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// One of the paper's two viewpoints ([`study::View::PAPER`]), written as the sweep names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum PaperView {
    /// (0,0,0): looking down the volume's z axis.
    #[serde(rename = "0,0,0")]
    Front,
    /// (90,0,90).
    #[serde(rename = "90,0,90")]
    Turned,
}

impl PaperView {
    pub fn view(self) -> study::View {
        match self {
            PaperView::Front => study::View::PAPER[0],
            PaperView::Turned => study::View::PAPER[1],
        }
    }
}

impl fmt::Display for PaperView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.view().name())
    }
}

/// What precedes the closing in a window of `fence-variants.cu`, in its `main`'s order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FenceAccess {
    /// A load of a line no launch touched since the L2 was flushed: a DRAM miss.
    DramMiss,
    /// A load of a line a first launch read: an L2 hit (every launch's L1 starts empty).
    L2Hit,
    /// The same word loaded again: an L1 hit.
    L1Hit,
    /// A store to a line not in L2.
    StoreNotInL2,
    /// A store to a line a first launch stored to.
    StoreInL2,
}

impl FenceAccess {
    /// Whether the window times a store rather than a load.
    pub fn is_store(self) -> bool {
        matches!(self, FenceAccess::StoreNotInL2 | FenceAccess::StoreInL2)
    }

    pub fn label(self) -> &'static str {
        match self {
            FenceAccess::DramMiss => "DRAM miss",
            FenceAccess::L2Hit => "L2 hit",
            FenceAccess::L1Hit => "L1 hit",
            FenceAccess::StoreNotInL2 => "store, not in L2",
            FenceAccess::StoreInL2 => "store, in L2",
        }
    }
}

/// `dummy-closing.cu`'s default case, which its rows written before its L2 case leave out.
fn l1_hit() -> FenceAccess {
    FenceAccess::L1Hit
}

fn is_l1_hit(a: &FenceAccess) -> bool {
    *a == FenceAccess::L1Hit
}

/// The closing construct of a window, in `fence-variants.cu`'s order (its template argument).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Closing {
    Naive,
    MembarCta,
    FenceAcqRelCta,
    MembarGl,
    FenceAcqRelGpu,
    MembarSys,
    /// A never-executed store of the loaded value (the paper's dummy).
    Dummy,
}

impl Closing {
    /// The template argument `V` of the experiment's kernels.
    pub fn variant(self) -> u32 {
        self as u32
    }

    pub fn label(self) -> &'static str {
        match self {
            Closing::Naive => "naive",
            Closing::MembarCta => "membar.cta",
            Closing::FenceAcqRelCta => "fence.acq_rel.cta",
            Closing::MembarGl => "membar.gl",
            Closing::FenceAcqRelGpu => "fence.acq_rel.gpu",
            Closing::MembarSys => "membar.sys",
            Closing::Dummy => "dummy",
        }
    }
}

/// The closing of `dummy-closing.cu`'s window (its template argument `V`, in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DummyClose {
    /// `fence.acq_rel.cta`.
    Fence,
    /// fence-variants.cu's dummy: a predicated-off global store to the `sink` parameter.
    DummyParam,
    /// The same store to an address loaded into a register before the loop.
    DummyRegister,
    /// warpscope's own dummy: a predicated-off shared store, its predicate a run-time zero.
    DummyWarpscope,
}

impl DummyClose {
    pub fn variant(self) -> u32 {
        self as u32
    }

    /// The name the experiment prints.
    pub fn label(self) -> &'static str {
        match self {
            DummyClose::Fence => "fence",
            DummyClose::DummyParam => "dummy-c",
            DummyClose::DummyRegister => "dummy-r",
            DummyClose::DummyWarpscope => "dummy-ws",
        }
    }
}

/// A chain of `int-division.cu` (a row of its `main`, in its order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DivisionChain {
    U32Subtract,
    U32Divide,
    S32Subtract,
    S32Divide,
    U64Subtract,
    U64DivideNarrow,
    U64DivideWide,
    S64Subtract,
    S64DivideNarrow,
    S64DivideWide,
}

impl DivisionChain {
    /// The C++ type of its template instance, and whether it is 64 bits wide.
    pub fn ty(self) -> (&'static str, bool) {
        use DivisionChain::*;
        match self {
            U32Subtract | U32Divide => ("unsigned int", false),
            S32Subtract | S32Divide => ("int", false),
            U64Subtract | U64DivideNarrow | U64DivideWide => ("unsigned long", true),
            S64Subtract | S64DivideNarrow | S64DivideWide => ("long", true),
        }
    }

    /// Whether the chain divides (its template's `DIVIDE`).
    pub fn divides(self) -> bool {
        use DivisionChain::*;
        !matches!(self, U32Subtract | S32Subtract | U64Subtract | S64Subtract)
    }

    /// The seed `main` passes: narrow below 2^32, wide with bit 40 set; the signed 32-bit one
    /// halved.
    pub fn seed(self) -> u64 {
        use DivisionChain::*;
        let narrow = 0x9e37_79b9u64;
        match self {
            S32Subtract | S32Divide => narrow >> 1,
            U64DivideWide | S64DivideWide => narrow | (1 << 40),
            _ => narrow,
        }
    }

    /// The row's name as `main` prints it.
    pub fn label(self) -> &'static str {
        use DivisionChain::*;
        match self {
            U32Subtract => "u32 subtract",
            U32Divide => "u32 divide",
            S32Subtract => "s32 subtract",
            S32Divide => "s32 divide",
            U64Subtract => "u64 subtract",
            U64DivideNarrow => "u64 divide, narrow",
            U64DivideWide => "u64 divide, wide",
            S64Subtract => "s64 subtract",
            S64DivideNarrow => "s64 divide, narrow",
            S64DivideWide => "s64 divide, wide",
        }
    }
}

/// The chains of `atomic-units.cu` (its template argument `ATOMIC`: true, false).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChainOp {
    /// `atomicAdd` of 0 whose returned value makes the next address.
    Atomic,
    /// `ld.global.cg` whose value makes the next address.
    Load,
}

impl ChainOp {
    pub fn label(self) -> &'static str {
        match self {
            ChainOp::Atomic => "returned atomicAdd",
            ChainOp::Load => "ld.global.cg",
        }
    }
}

/// The operations of `issue-rates.cu` (its template argument `OP`, in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueOp {
    FmaF32,
    AddF32,
    AddU32,
    XorB32,
    MadLoU32,
    ShlB32,
    AddU64,
    /// A `xor.b32` and a `sub.u32` per step.
    XorSubU32,
    ShrU32,
    MulWideU32,
    MinU32,
    PrmtB32,
    /// A `xor.b32` and a `popc.b32` of it per step.
    XorPopcB32,
    /// A `xor.b32` and a `cvt.rn.f32.u32` of it per step.
    XorCvtF32U32,
}

impl IssueOp {
    pub fn template(self) -> u32 {
        self as u32
    }

    /// PTX instructions per step of a chain.
    pub fn per_step(self) -> u32 {
        match self {
            IssueOp::XorSubU32 | IssueOp::XorPopcB32 | IssueOp::XorCvtF32U32 => 2,
            _ => 1,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            IssueOp::FmaF32 => "fma.rn.f32",
            IssueOp::AddF32 => "add.f32",
            IssueOp::AddU32 => "add.u32",
            IssueOp::XorB32 => "xor.b32",
            IssueOp::MadLoU32 => "mad.lo.u32",
            IssueOp::ShlB32 => "shl.b32",
            IssueOp::AddU64 => "add.u64",
            IssueOp::XorSubU32 => "xor then sub (u32)",
            IssueOp::ShrU32 => "shr.u32",
            IssueOp::MulWideU32 => "mul.wide.u32",
            IssueOp::MinU32 => "min.u32",
            IssueOp::PrmtB32 => "prmt.b32",
            IssueOp::XorPopcB32 => "popc.b32 (of a xor)",
            IssueOp::XorCvtF32U32 => "cvt.rn.f32.u32 (of a xor)",
        }
    }
}

/// The last case of `tex-footprint.cu`.
pub const TEX_FOOTPRINT_LAST_CASE: u32 = 23;

/// The last case of `tex-lookup-count.cu`.
pub const TEX_LOOKUP_COUNT_LAST_CASE: u32 = 7;

/// What a row of `tex-footprint.cu` or `tex-lookup-count.cu` counts, as Nsight Compute names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TexCount {
    /// `l1tex__t_sectors_pipe_tex_mem_texture_op_tex.sum`: the texture's sector lookups.
    Lookups,
    /// `lts__t_sectors_srcunit_tex_op_read.sum`: sectors the L2 read for the texture path.
    L2Sectors,
    /// `l1tex__t_sector_pipe_tex_mem_texture_op_tex_hit_rate.pct`: the lookups that needed no
    /// new fetch, per cent.
    HitRate,
}

impl TexCount {
    pub fn label(self) -> &'static str {
        match self {
            TexCount::Lookups => "texture sector lookups",
            TexCount::L2Sectors => "sectors the texture path read from the L2",
            TexCount::HitRate => "texture hit rate per sector lookup",
        }
    }

    /// The count in a launch's texture counters; `None` for a hit rate when nothing was looked
    /// up. The emulator's texture misses go to the L2 one for one, so they are the L2's sectors.
    pub fn of(self, c: &trace::CacheCounters) -> Option<f64> {
        match self {
            TexCount::Lookups => Some(c.tex_lookups as f64),
            TexCount::L2Sectors => Some(c.sector_misses as f64),
            TexCount::HitRate => c.lookup_hit_rate().map(|r| 100.0 * r),
        }
    }
}

/// The passes of `const-latency.cu`'s chase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConstPass {
    /// The first pass of the launch right after the array's upload.
    First,
    /// The same launch's second pass.
    Second,
    /// A second launch's first pass.
    Again,
}

impl ConstPass {
    /// The pass as `main` names its column.
    pub fn label(self) -> &'static str {
        match self {
            ConstPass::First => "first",
            ConstPass::Second => "second",
            ConstPass::Again => "again",
        }
    }
}

/// The load forms of `cache-operators.cu` (its template argument `K`, in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadForm {
    /// `ld.global`, whose default operator is `.ca`.
    Ca,
    Cg,
    Cs,
    Lu,
    Cv,
    /// `ld.volatile.global`.
    Volatile,
    /// `ld.relaxed.gpu.global`.
    RelaxedGpu,
    /// `ld.acquire.gpu.global`.
    AcquireGpu,
    /// `ld.relaxed.cta.global`.
    RelaxedCta,
    /// `ld.global.nc`.
    Nc,
}

impl LoadForm {
    pub fn template(self) -> u32 {
        self as u32
    }

    /// The load as the experiment prints it.
    pub fn label(self) -> &'static str {
        match self {
            LoadForm::Ca => "ld.global",
            LoadForm::Cg => "ld.global.cg",
            LoadForm::Cs => "ld.global.cs",
            LoadForm::Lu => "ld.global.lu",
            LoadForm::Cv => "ld.global.cv",
            LoadForm::Volatile => "ld.volatile.global",
            LoadForm::RelaxedGpu => "ld.relaxed.gpu",
            LoadForm::AcquireGpu => "ld.acquire.gpu",
            LoadForm::RelaxedCta => "ld.relaxed.cta",
            LoadForm::Nc => "ld.global.nc",
        }
    }
}

/// The closings of `divergent-closing.cu` (its template argument `MODE`, in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DivergentClose {
    Naive,
    Dummy,
    /// `fence.acq_rel.cta`.
    Fence,
    /// The dummy, then the fence.
    DummyFence,
}

impl DivergentClose {
    pub fn mode(self) -> u32 {
        self as u32
    }

    pub fn label(self) -> &'static str {
        match self {
            DivergentClose::Naive => "naive",
            DivergentClose::Dummy => "closed by a dummy",
            DivergentClose::Fence => "closed by fence.acq_rel.cta",
            DivergentClose::DummyFence => "closed by a dummy and then the fence",
        }
    }
}

/// The contended atomics of `contention.cu` (its template argument `MODE`, in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AtomicPattern {
    /// Every lane of a warp adds to the warp's one word.
    LanesOnOneWord,
    /// Each lane adds to a word of its own, 32 consecutive words per warp.
    #[serde(rename = "lanes_on_32_words")]
    LanesOn32Words,
    /// Lane 0 alone adds (a warp-aggregated counter).
    OneLanePerWarp,
}

impl AtomicPattern {
    pub fn mode(self) -> u32 {
        self as u32
    }

    /// The words in all that the experiment runs the pattern over.
    pub fn words(self) -> &'static [u32] {
        match self {
            AtomicPattern::LanesOnOneWord => &[1, 32, 1024],
            AtomicPattern::LanesOn32Words => &[32, 1024],
            AtomicPattern::OneLanePerWarp => &[1],
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            AtomicPattern::LanesOnOneWord => "a warp's lanes on one word",
            AtomicPattern::LanesOn32Words => "a warp's lanes on 32 words",
            AtomicPattern::OneLanePerWarp => "one lane per warp",
        }
    }
}

/// What the background blocks of `loaded-latency.cu` read (its `kind` argument).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadedBackground {
    /// Every sector in order.
    Stream,
    /// Random 64-byte pairs of sectors.
    Random64,
}

impl LoadedBackground {
    pub fn kind(self) -> i32 {
        match self {
            LoadedBackground::Stream => 0,
            LoadedBackground::Random64 => 1,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            LoadedBackground::Stream => "a stream",
            LoadedBackground::Random64 => "random 64-byte pairs of sectors",
        }
    }
}

/// The chase of `shared-latency.cu` (its template argument `MODE`, in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SharedOp {
    /// `ld.shared`, each lane its own chain.
    Load,
    /// `atom.shared.add` of 0 by one lane.
    Atomic,
    /// The same by 32 lanes, each on its own chain in its own bank.
    AtomicWarp,
    /// 32 lanes adding to one word (a serialised atomic).
    AtomicSameWord,
    /// `ld.shared` of a word that holds the next word's shared address: the access alone, no
    /// address arithmetic between steps.
    LoadReady,
}

impl SharedOp {
    pub fn mode(self) -> u32 {
        self as u32
    }

    pub fn label(self) -> &'static str {
        match self {
            SharedOp::Load => "ld.shared",
            SharedOp::Atomic => "atom.shared.add",
            SharedOp::AtomicWarp => "atom, warp",
            SharedOp::AtomicSameWord => "atom, same word",
            SharedOp::LoadReady => "ld.shared, ready",
        }
    }
}

/// A read pattern of `dram-granularity.cu`: its `sector_of` kinds. Each reads 2^25 sectors
/// (1 GiB) of 32 bytes, a lane pair per sector, nothing twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DramPattern {
    /// Sectors 0, n, 2n, … (1: a dense stream; 2: half of each 64 bytes).
    Stride(u32),
    /// Sectors drawn by a hash over the whole 8 GiB buffer.
    Random,
    /// Random runs of this many adjacent sectors (2: random 64-byte pairs; 4: 128-byte lines).
    RandomRun(u32),
    /// Every sector of the first GiB once, in blocks of 2^this sectors taken in order, scattered
    /// inside each block.
    ScatteredBlocks(u32),
}

impl DramPattern {
    /// The kernel's `kind` and `arg` for the pattern.
    pub fn kind_arg(self) -> (i32, i32) {
        let arg = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
        match self {
            DramPattern::Stride(n) => (0, arg(n)),
            DramPattern::Random => (1, 1),
            DramPattern::RandomRun(n) => (2, arg(n)),
            DramPattern::ScatteredBlocks(lg) => (3, arg(lg)),
        }
    }

    pub fn label(self) -> String {
        match self {
            DramPattern::Stride(1) => "stride 1 (dense)".into(),
            DramPattern::Stride(n) => format!("stride {n} ({} B)", 32 * n),
            DramPattern::Random => "random".into(),
            DramPattern::RandomRun(n) => format!("random-{}", 32 * n),
            DramPattern::ScatteredBlocks(lg) => {
                format!(
                    "every sector once, scattered inside blocks of {} B",
                    32u64 << lg
                )
            }
        }
    }

    /// The patterns `dram-granularity.cu` runs: strides and runs of 1 to 512 sectors, blocks of
    /// 2^2 to 2^20 sectors.
    fn validate(self) -> Result<(), String> {
        let ok = match self {
            DramPattern::Stride(n) | DramPattern::RandomRun(n) => (1..=512).contains(&n),
            DramPattern::Random => true,
            DramPattern::ScatteredBlocks(lg) => (2..=20).contains(&lg),
        };
        ok.then_some(())
            .ok_or_else(|| format!("dram-granularity.cu has no pattern {self:?}"))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Extreme {
    Min,
    Max,
}

impl Extreme {
    pub fn word(self) -> &'static str {
        match self {
            Extreme::Min => "lowest",
            Extreme::Max => "highest",
        }
    }
}

/// Whether a row's model agrees with its silicon, as the page and the tests say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Agrees,
    /// Outside the tolerance and marked as a known gap.
    KnownGap,
    /// Outside the tolerance with no reason given: the table is not acceptable so.
    Disagrees,
    /// Within the tolerance yet marked as a gap: the gap is stale.
    StaleGap,
    /// An expensive row ([`Measure::expensive`]) whose model value has not been computed yet:
    /// no verdict either way, shown so on the page. The calibration program records it with
    /// `--expensive`; the tests never compute it.
    NotComputed,
    /// A cheap row without a model value: the calibration program was not run.
    NoModel,
}

impl Row {
    pub fn verdict(&self) -> Verdict {
        match (self.model, &self.gap) {
            (None, _) if self.measure.expensive() => Verdict::NotComputed,
            (None, _) => Verdict::NoModel,
            (Some(m), None) if self.tolerance.admits(self.silicon, m) => Verdict::Agrees,
            (Some(_), None) => Verdict::Disagrees,
            (Some(m), Some(_)) if self.tolerance.admits(self.silicon, m) => Verdict::StaleGap,
            (Some(_), Some(_)) => Verdict::KnownGap,
        }
    }
}

/// A row whose tolerance is wider than it was in an earlier table.
#[derive(Debug, Clone, PartialEq)]
pub struct Widened {
    pub id: String,
    pub before: Tolerance,
    pub now: Tolerance,
}

impl fmt::Display for Widened {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: tolerance {} is wider than the merge base's {}",
            self.id, self.now, self.before
        )
    }
}

impl Table {
    /// Parses and validates the table's text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Table, CalibrationError> {
        let table: Table = toml::from_str(text).map_err(|source| CalibrationError::Parse {
            path: path.to_path_buf(),
            source: Box::new(source),
        })?;
        table.validate(path)?;
        Ok(table)
    }

    /// Reads and validates the table at `root`/[`TABLE_PATH`].
    pub fn read(root: &Path) -> Result<Table, CalibrationError> {
        let path = root.join(TABLE_PATH);
        let text = std::fs::read_to_string(&path).map_err(|source| CalibrationError::Io {
            path: path.clone(),
            source,
        })?;
        Table::parse(&text, &path)
    }

    /// The file's text: the header, then the rows, each a flat block with its source, measure
    /// and tolerance as inline tables (serde writes them as sub-tables of their own).
    pub fn to_text(&self) -> Result<String, CalibrationError> {
        let body = toml::to_string(self).map_err(|source| CalibrationError::Serialize {
            source: Box::new(source),
        })?;
        let mut doc: toml_edit::DocumentMut =
            body.parse().map_err(|source| CalibrationError::Reformat {
                source: Box::new(source),
            })?;
        if let Some(rows) = doc
            .get_mut("row")
            .and_then(toml_edit::Item::as_array_of_tables_mut)
        {
            for row in rows.iter_mut() {
                for (mut key, item) in row.iter_mut() {
                    item.make_value();
                    key.fmt();
                }
                row.fmt();
            }
        }
        Ok(format!("{HEADER}\n{doc}"))
    }

    /// Writes the table to `root`/[`TABLE_PATH`] (atomically).
    pub fn write(&self, root: &Path) -> Result<(), CalibrationError> {
        let path = root.join(TABLE_PATH);
        let text = self.to_text()?;
        trace::write_bytes_atomic(&path, text.as_bytes()).map_err(CalibrationError::Write)
    }

    /// Ids unique and non-empty, sources in [`RECORDS_DIR`] by name, finite numbers, tolerances
    /// positive, measures the program can compute, presets that exist.
    fn validate(&self, path: &Path) -> Result<(), CalibrationError> {
        let bad = |id: &str, reason: String| CalibrationError::Row {
            path: path.to_path_buf(),
            id: id.to_string(),
            reason,
        };
        let mut ids = BTreeSet::new();
        for r in &self.row {
            if r.id.trim().is_empty() {
                return Err(bad(&r.id, "an empty id".into()));
            }
            if !ids.insert(r.id.as_str()) {
                return Err(bad(&r.id, "the id is used twice".into()));
            }
            if r.source.file.contains(['/', '\\']) || r.source.file.is_empty() {
                return Err(bad(
                    &r.id,
                    format!(
                        "source file {:?} must be a file name in {RECORDS_DIR}",
                        r.source.file
                    ),
                ));
            }
            if r.source.date().is_none() {
                return Err(bad(
                    &r.id,
                    format!(
                        "source file {:?} has no date (YYYY-MM-DD) in its name",
                        r.source.file
                    ),
                ));
            }
            if r.source.line == 0 {
                return Err(bad(&r.id, "source lines count from 1".into()));
            }
            if !r.silicon.is_finite() || r.model.is_some_and(|m| !m.is_finite()) {
                return Err(bad(
                    &r.id,
                    "silicon and model must be finite numbers".into(),
                ));
            }
            let t = r.tolerance.value();
            if !(t.is_finite() && t >= 0.0) {
                return Err(bad(&r.id, format!("tolerance {t} must be a number ≥ 0")));
            }
            if r.gap.as_deref().is_some_and(|g| g.trim().is_empty()) {
                return Err(bad(&r.id, "a gap says why".into()));
            }
            r.measure.validate().map_err(|reason| bad(&r.id, reason))?;
            if !emulator::GpuConfig::preset_names().contains(&r.preset.as_str()) {
                return Err(bad(&r.id, format!("no preset {:?}", r.preset)));
            }
        }
        Ok(())
    }

    /// The rows whose tolerance is wider than the same row's (by id) in `base`, compared as the
    /// band each allows at the row's silicon value now (so a relative and an absolute tolerance
    /// compare too). Rows new since `base` have nothing to compare with.
    pub fn widened_since(&self, base: &Tolerances) -> Vec<Widened> {
        self.row
            .iter()
            .filter_map(|now| {
                let before = *base.0.get(&now.id)?;
                (now.tolerance.band(now.silicon) > before.band(now.silicon)).then(|| Widened {
                    id: now.id.clone(),
                    before,
                    now: now.tolerance,
                })
            })
            .collect()
    }
}

/// An earlier table's tolerances by row id: all the comparison with a merge base needs. Read
/// from the earlier text on its own terms (only `id` and `tolerance` of each row), so that a
/// table from before a change of the other fields still compares.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tolerances(BTreeMap<String, Tolerance>);

impl Tolerances {
    pub fn parse(text: &str, path: &Path) -> Result<Tolerances, CalibrationError> {
        #[derive(Deserialize)]
        struct Earlier {
            row: Vec<EarlierRow>,
        }
        #[derive(Deserialize)]
        struct EarlierRow {
            id: String,
            tolerance: Tolerance,
        }
        let earlier: Earlier = toml::from_str(text).map_err(|source| CalibrationError::Parse {
            path: path.to_path_buf(),
            source: Box::new(source),
        })?;
        Ok(Tolerances(
            earlier
                .row
                .into_iter()
                .map(|r| (r.id, r.tolerance))
                .collect(),
        ))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// `x` with four significant digits (none after the point from 1000 on), trailing zeros cut.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    if x.abs() >= 1000.0 || x == 0.0 {
        return format!("{x:.0}");
    }
    let decimals = (3 - x.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_four_significant_digits() {
        assert_eq!(num(265.09375), "265.1");
        assert_eq!(num(34.0625), "34.06");
        assert_eq!(num(0.30772), "0.3077");
        assert_eq!(num(2.0), "2");
        assert_eq!(num(3130.1), "3130");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(-1.5), "-1.5");
    }

    fn row(id: &str, silicon: f64, model: Option<f64>, tolerance: Tolerance) -> String {
        let model = model.map_or(String::new(), |m| format!("model = {m}\n"));
        let tolerance = match tolerance {
            Tolerance::Relative(r) => format!("{{ relative = {r:?} }}"),
            Tolerance::Absolute(a) => format!("{{ absolute = {a:?} }}"),
        };
        format!(
            "[[row]]\nid = \"{id}\"\nquantity = \"q\"\nunit = \"cycles\"\ngpu = \"H100\"\n\
             silicon = {silicon:?}\nsource = {{ file = \"f-2026-11-27.txt\", line = 1, at = \"here\" }}\n\
             preset = \"h100\"\nmeasure = {{ kind = \"shared_chase\", op = \"load\", lanes = 1 }}\n\
             {model}tolerance = {tolerance}\n"
        )
    }

    fn parse(text: &str) -> Result<Table, CalibrationError> {
        Table::parse(text, Path::new("t.toml"))
    }

    #[test]
    fn a_row_agrees_within_its_band_and_needs_a_reason_outside_it() {
        let t = parse(&row("a", 100.0, Some(109.0), Tolerance::Relative(0.1))).unwrap();
        assert_eq!(t.row[0].verdict(), Verdict::Agrees);
        let mut r = t.row[0].clone();
        r.model = Some(111.0);
        assert_eq!(r.verdict(), Verdict::Disagrees);
        r.gap = Some("the model lacks X".into());
        assert_eq!(r.verdict(), Verdict::KnownGap);
        r.model = Some(100.0);
        assert_eq!(r.verdict(), Verdict::StaleGap);
        r.model = None;
        assert_eq!(r.verdict(), Verdict::NoModel);
        r.measure = Measure::DramRate {
            pattern: DramPattern::Stride(1),
            blocks_per_sm: None,
        };
        assert_eq!(r.verdict(), Verdict::NotComputed);
        assert!(Tolerance::Absolute(5.0).admits(17.2, 12.2));
        assert!(!Tolerance::Absolute(5.0).admits(17.2, 12.1));
    }

    #[test]
    fn the_text_round_trips_through_the_one_definition() {
        let t = parse(&row("a", 29.2, Some(29.03125), Tolerance::Absolute(5.0))).unwrap();
        let again = parse(&t.to_text().unwrap()).unwrap();
        assert_eq!(again, t);
        assert!(
            t.to_text()
                .unwrap()
                .starts_with("# The silicon calibration table")
        );
    }

    #[test]
    fn bad_rows_are_refused_with_their_id() {
        let twice = format!(
            "{}{}",
            row("a", 1.0, None, Tolerance::Absolute(1.0)),
            row("a", 2.0, None, Tolerance::Absolute(1.0))
        );
        let e = parse(&twice).unwrap_err().to_string();
        assert!(e.contains("\"a\"") && e.contains("twice"), "{e}");
        let negative = row("b", 1.0, None, Tolerance::Relative(-0.1));
        assert!(parse(&negative).unwrap_err().to_string().contains("≥ 0"));
        let lanes = row("c", 1.0, None, Tolerance::Absolute(1.0)).replace("lanes = 1", "lanes = 7");
        assert!(parse(&lanes).unwrap_err().to_string().contains("lanes"));
        let dram = |blocks: &str| {
            row("g", 1.0, None, Tolerance::Absolute(1.0)).replace(
                "kind = \"shared_chase\", op = \"load\", lanes = 1",
                &format!("kind = \"dram_rate\", pattern = {{ stride = 1 }}{blocks}"),
            )
        };
        assert!(parse(&dram("")).is_ok());
        assert!(parse(&dram(", blocks_per_sm = 8")).is_ok());
        let none = parse(&dram(", blocks_per_sm = 0")).unwrap_err().to_string();
        assert!(
            none.contains("\"g\"") && none.contains("blocks_per_sm"),
            "{none}"
        );
        let unknown = row("d", 1.0, None, Tolerance::Absolute(1.0)).replace("quantity", "quantiy");
        assert!(matches!(
            parse(&unknown),
            Err(CalibrationError::Parse { .. })
        ));
        let path = row("e", 1.0, None, Tolerance::Absolute(1.0))
            .replace("f-2026-11-27.txt", "../f-2026-11-27.txt");
        assert!(parse(&path).unwrap_err().to_string().contains("docs/gpu"));
    }

    #[test]
    fn a_tolerance_that_allows_more_at_the_row_is_widened() {
        let base_text = row("a", 200.0, None, Tolerance::Relative(0.1));
        let base = Tolerances::parse(&base_text, Path::new("base.toml")).unwrap();
        assert_eq!(base.len(), 1);
        let same = parse(&row("a", 200.0, None, Tolerance::Absolute(20.0))).unwrap();
        assert!(same.widened_since(&base).is_empty());
        let narrower = parse(&row("a", 200.0, None, Tolerance::Relative(0.05))).unwrap();
        assert!(narrower.widened_since(&base).is_empty());
        let wider = parse(&row("a", 200.0, None, Tolerance::Absolute(21.0))).unwrap();
        let w = wider.widened_since(&base);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].to_string()
                .contains("±21 is wider than the merge base's ±10 %"),
            "{}",
            w[0]
        );
        let new_row = parse(&row("b", 200.0, None, Tolerance::Relative(0.5))).unwrap();
        assert!(
            new_row.widened_since(&base).is_empty(),
            "nothing to compare a new row with"
        );
        // An earlier table with fields this definition no longer has still gives its tolerances.
        let older = base_text.replace("quantity = \"q\"", "quantity = \"q\"\nretired = 1");
        assert!(parse(&older).is_err());
        let older = Tolerances::parse(&older, Path::new("base.toml")).unwrap();
        assert_eq!(wider.widened_since(&older).len(), 1);
    }

    #[test]
    fn a_source_is_dated_by_its_file_name() {
        let at = |file: &str| Source {
            file: file.into(),
            line: 1,
            at: String::new(),
        };
        assert_eq!(at("h100-2026-11-27-ncu.md").date(), Some("2026-11-27"));
        assert_eq!(at("bare-2026-11-27b.csv").date(), Some("2026-11-27"));
        assert_eq!(at("2026-11-27.txt").date(), Some("2026-11-27"));
        assert_eq!(at("fence-variants.cu").date(), None);
        assert_eq!(at("h100-2026-1-27.md").date(), None);
        let undated =
            row("a", 1.0, None, Tolerance::Absolute(1.0)).replace("f-2026-11-27.txt", "f.txt");
        assert!(parse(&undated).unwrap_err().to_string().contains("no date"));
    }

    #[test]
    fn model_values_keep_six_significant_digits() {
        assert_eq!(round_model(265.09375), 265.094);
        assert_eq!(round_model(0.151_987_654), 0.151988);
        assert_eq!(round_model(3_130_123.4), 3_130_120.0);
        assert_eq!(round_model(0.0), 0.0);
    }
}
