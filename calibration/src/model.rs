//! The model's values: each row's measure computed on the emulator with the row's preset.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use device::EmuDevice;
use emulator::GpuConfig;
use trace::{ProbeMode, SweepRow};

use crate::error::CalibrationError;
use crate::experiments::{
    self, AtomicUnitsRig, BlockPlacementRig, CacheOperatorsRig, ConstLatencyRig, ContentionRig,
    DivergentClosingRig, DramRun, DummyClosingRig, FenceRig, IntDivisionRig, IssueRatesRig,
    L1PortRig, LaunchOverheadRig, LoadedLatencyRig, SharedRig, SmInflightRig, TexFootprintRig,
    TexLookupCountRig,
};
use crate::table::{DramPattern, Extreme, Measure, PaperShape, PaperView, Table, round_model};

/// Which rows to compute.
pub struct Options<'a> {
    /// Also the expensive measures ([`Measure::expensive`]); without it they are left alone.
    pub expensive: bool,
    /// Only the rows whose id starts with one of these; empty: every row.
    pub only: &'a [String],
    /// Where the paper-scale frames are swept (a sweep folder: an interrupted sweep resumes).
    pub frames_dir: PathBuf,
    /// Told what is being computed, before each measure, and how the sweep of the paper-scale
    /// frames goes.
    pub progress: &'a (dyn Fn(&str) + Sync),
}

/// The model's value of every row of `table`, in its order, rounded as recorded; `None` for the
/// expensive rows unless `opts.expensive`, and for the rows `opts.only` leaves out. Rows with the same preset and measure are computed
/// once.
pub fn recompute(
    root: &Path,
    table: &Table,
    opts: &Options<'_>,
) -> Result<Vec<Option<f64>>, CalibrationError> {
    let mut labs: BTreeMap<String, Lab> = BTreeMap::new();
    let mut values = Vec::with_capacity(table.row.len());
    for row in &table.row {
        let chosen = opts.only.is_empty() || opts.only.iter().any(|p| row.id.starts_with(p));
        if !chosen || (row.measure.expensive() && !opts.expensive) {
            values.push(None);
            continue;
        }
        let lab = match labs.entry(row.preset.clone()) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                let cfg = GpuConfig::preset(&row.preset)?;
                e.insert(Lab::new(root, cfg, opts.frames_dir.join(&row.preset)))
            }
        };
        values.push(Some(round_model(lab.value(&row.measure, opts.progress)?)));
    }
    Ok(values)
}

/// One preset's emulator with the experiments loaded as they are first needed, and the values
/// computed so far.
struct Lab {
    root: PathBuf,
    cfg: GpuConfig,
    frames_dir: PathBuf,
    fence: Option<FenceRig>,
    shared: Option<SharedRig>,
    dummy: Option<DummyClosingRig>,
    contention: Option<ContentionRig>,
    division: Option<IntDivisionRig>,
    atomic_units: Option<AtomicUnitsRig>,
    divergent: Option<DivergentClosingRig>,
    sm_inflight: Option<SmInflightRig>,
    loaded: Option<LoadedLatencyRig>,
    issue: Option<IssueRatesRig>,
    cache_operators: Option<CacheOperatorsRig>,
    l1_port: Option<L1PortRig>,
    const_latency: Option<ConstLatencyRig>,
    tex_footprint: Option<TexFootprintRig>,
    tex_lookup_count: Option<TexLookupCountRig>,
    launch_overhead: Option<LaunchOverheadRig>,
    block_placement: Option<BlockPlacementRig>,
    /// Keyed by pattern and blocks per SM (none: the whole grid at once).
    dram: BTreeMap<(DramPattern, Option<u32>), DramRun>,
    frames: Option<Vec<SweepRow>>,
    done: BTreeMap<Measure, f64>,
}

impl Lab {
    fn new(root: &Path, cfg: GpuConfig, frames_dir: PathBuf) -> Lab {
        Lab {
            root: root.to_path_buf(),
            cfg,
            frames_dir,
            fence: None,
            shared: None,
            dummy: None,
            contention: None,
            division: None,
            atomic_units: None,
            divergent: None,
            sm_inflight: None,
            loaded: None,
            issue: None,
            cache_operators: None,
            l1_port: None,
            const_latency: None,
            tex_footprint: None,
            tex_lookup_count: None,
            launch_overhead: None,
            block_placement: None,
            dram: BTreeMap::new(),
            frames: None,
            done: BTreeMap::new(),
        }
    }

    fn value(
        &mut self,
        m: &Measure,
        progress: &(dyn Fn(&str) + Sync),
    ) -> Result<f64, CalibrationError> {
        if let Some(v) = self.done.get(m) {
            return Ok(*v);
        }
        progress(&m.how());
        let v = self.compute(m, progress)?;
        self.done.insert(m.clone(), v);
        Ok(v)
    }

    fn compute(
        &mut self,
        m: &Measure,
        progress: &(dyn Fn(&str) + Sync),
    ) -> Result<f64, CalibrationError> {
        let check_err = |what: String| {
            move |source: check::CheckError| CalibrationError::Check {
                what,
                source: Box::new(source),
            }
        };
        match m {
            Measure::Micro { case, mode } => {
                let mut dev = EmuDevice::new(self.cfg.clone());
                check::micro::measure(&mut dev, &self.cfg, *case, *mode)
                    .map(|r| r.mean_cycles)
                    .map_err(check_err(format!("{} ({})", case.label(), mode.name())))
            }
            Measure::FenceWindow { access, closing } => {
                rig(&mut self.fence, || FenceRig::new(&self.root, &self.cfg))?
                    .window(*access, *closing)
            }
            Measure::SharedChase { op, lanes } => {
                rig(&mut self.shared, || SharedRig::new(&self.root, &self.cfg))?.step(*op, *lanes)
            }
            Measure::DummyClosing { closing, access } => rig(&mut self.dummy, || {
                DummyClosingRig::new(&self.root, &self.cfg)
            })?
            .window(*closing, *access),
            Measure::DivergentLoad { mode } => self.contention()?.divergent_window(*mode),
            Measure::Reduce7Sum => self.contention()?.reduce7_sum(),
            Measure::AtomicRate { pattern, words } => {
                self.contention()?.atomic_rate(*pattern, *words)
            }
            Measure::AtomicSpread { gap, lines } => rig(&mut self.atomic_units, || {
                AtomicUnitsRig::new(&self.root, &self.cfg)
            })?
            .spread(*gap, *lines),
            Measure::ChainStep { op } => rig(&mut self.atomic_units, || {
                AtomicUnitsRig::new(&self.root, &self.cfg)
            })?
            .chain(*op),
            Measure::DivergentClosing { closing, lanes } => rig(&mut self.divergent, || {
                DivergentClosingRig::new(&self.root, &self.cfg)
            })?
            .window(*closing, *lanes),
            Measure::IssueRate { op } => rig(&mut self.issue, || {
                IssueRatesRig::new(&self.root, &self.cfg)
            })?
            .rate(*op),
            Measure::ConstChase { bytes, pass } => rig(&mut self.const_latency, || {
                ConstLatencyRig::new(&self.root, &self.cfg)
            })?
            .step(*bytes, *pass),
            Measure::L1Fill { sectors, nc } => {
                rig(&mut self.l1_port, || L1PortRig::new(&self.root, &self.cfg))?
                    .fill(*sectors, *nc)
            }
            Measure::L1Lookups { quad_sectors } => {
                rig(&mut self.l1_port, || L1PortRig::new(&self.root, &self.cfg))?
                    .lookups(*quad_sectors)
            }
            Measure::CacheOperator { form, lanes } => rig(&mut self.cache_operators, || {
                CacheOperatorsRig::new(&self.root, &self.cfg)
            })?
            .step(*form, *lanes),
            Measure::TexFootprint { case, count } => rig(&mut self.tex_footprint, || {
                TexFootprintRig::new(&self.root, &self.cfg)
            })?
            .count(*case, *count),
            Measure::TexLookupCount { case, count } => rig(&mut self.tex_lookup_count, || {
                TexLookupCountRig::new(&self.root, &self.cfg)
            })?
            .count(*case, *count),
            Measure::BlockRamp { shape } => rig(&mut self.block_placement, || {
                BlockPlacementRig::new(&self.root, &self.cfg)
            })?
            .ramp_ns(*shape),
            Measure::LaunchSpan { blocks } => rig(&mut self.launch_overhead, || {
                LaunchOverheadRig::new(&self.root, &self.cfg)
            })?
            .span_us(*blocks),
            Measure::SmStream { threads, every_sm } => rig(&mut self.sm_inflight, || {
                SmInflightRig::new(&self.root, &self.cfg)
            })?
            .rate(*threads, *every_sm),
            Measure::LoadedLatency {
                background,
                blocks_per_sm,
            } => rig(&mut self.loaded, || {
                LoadedLatencyRig::new(&self.root, &self.cfg)
            })?
            .step(*background, *blocks_per_sm),
            Measure::DivisionLatency { chain } => rig(&mut self.division, || {
                IntDivisionRig::new(&self.root, &self.cfg)
            })?
            .latency(*chain),
            Measure::DivisionPair { chain } => rig(&mut self.division, || {
                IntDivisionRig::new(&self.root, &self.cfg)
            })?
            .pair(*chain),
            Measure::DivisionIssue { chain } => rig(&mut self.division, || {
                IntDivisionRig::new(&self.root, &self.cfg)
            })?
            .issue(*chain),
            Measure::CorpusOutputs => {
                let mut matching = 0usize;
                for case in check::corpus::cases() {
                    let mut dev = EmuDevice::new(self.cfg.clone());
                    let row = check::corpus::check(case, &mut dev, None)
                        .map_err(check_err(format!("corpus file {}", case.file)))?;
                    matching += usize::from(row.matches_reference);
                }
                Ok(matching as f64)
            }
            Measure::CorpusTime { case: name } => {
                let case = check::corpus::calibration_cases()
                    .find(|c| c.name == name)
                    .ok_or_else(|| CalibrationError::Result {
                        what: format!("corpus case {name}"),
                        reason: "the GPU check does not time it".into(),
                    })?;
                let mut dev = EmuDevice::new(self.cfg.clone());
                let (ms, mismatch) = check::corpus::timed(case, &mut dev)
                    .map_err(check_err(format!("timing corpus case {name}")))?;
                match mismatch {
                    Some(m) => Err(CalibrationError::Result {
                        what: format!("timing corpus case {name}"),
                        reason: m,
                    }),
                    None => Ok(ms * 1000.0),
                }
            }
            Measure::DramBytes { pattern } => Ok(self.dram(*pattern, None)?.bytes_ratio),
            Measure::DramRate {
                pattern,
                blocks_per_sm,
            } => Ok(self.dram(*pattern, *blocks_per_sm)?.useful_gb_s),
            Measure::PaperFrame { shape, view } => {
                self.bare_frame(*shape, *view, "kernel time", |r| r.kernel_ms, progress)
            }
            Measure::TexHitRate { shape, view } => self
                .bare_frame(
                    *shape,
                    *view,
                    "texture hit rate",
                    |r| r.tex_hit_rate,
                    progress,
                )
                .map(|f| f * 100.0),
            Measure::L2HitRate { shape, view } => self
                .bare_frame(*shape, *view, "L2 hit rate", |r| r.l2_hit_rate, progress)
                .map(|f| f * 100.0),
            Measure::AchievedOccupancy { shape, view } => self
                .bare_frame(
                    *shape,
                    *view,
                    "achieved occupancy",
                    |r| r.achieved_occupancy,
                    progress,
                )
                .map(|f| f * 100.0),
            Measure::SiteMean {
                shape,
                view,
                mode,
                site,
            } => self.site_mean(*shape, *view, *mode, *site, progress),
            Measure::Overhead { mode, extreme } => {
                let rows = self.frames(progress)?;
                let overheads = rows
                    .iter()
                    .filter(|r| r.mode == mode.name())
                    .map(|r| {
                        r.overhead
                            .ok_or_else(|| missing_frame(&r.shape, &r.view, *mode))
                    })
                    .collect::<Result<Vec<f64>, _>>()?;
                let pick = match extreme {
                    Extreme::Min => overheads.iter().copied().reduce(f64::min),
                    Extreme::Max => overheads.iter().copied().reduce(f64::max),
                };
                pick.ok_or_else(|| CalibrationError::Result {
                    what: "the probes' cost".into(),
                    reason: format!("the sweep has no {} runs", mode.name()),
                })
            }
        }
    }

    fn contention(&mut self) -> Result<&mut ContentionRig, CalibrationError> {
        rig(&mut self.contention, || {
            ContentionRig::new(&self.root, &self.cfg)
        })
    }

    /// `field` of the bare build's run of one paper-scale frame.
    fn bare_frame(
        &mut self,
        shape: PaperShape,
        view: PaperView,
        what: &str,
        field: impl Fn(&SweepRow) -> Option<f64>,
        progress: &(dyn Fn(&str) + Sync),
    ) -> Result<f64, CalibrationError> {
        let (shape, view) = (shape.to_string(), view.to_string());
        let rows = self.frames(progress)?;
        frame_of(rows, &shape, &view, ProbeMode::Off)
            .and_then(field)
            .ok_or_else(|| CalibrationError::Result {
                what: format!("the bare paper-scale frame {shape} at ({view})"),
                reason: format!("the sweep did not produce its {what}"),
            })
    }

    /// The mean probe reading of `site` in the paper-scale frame probed in `mode`: over every
    /// timed warp's accesses of the site, from the per-site statistics every timed warp of the
    /// sweep's summary logs keeps (a traced warp's records repeat the same accesses).
    fn site_mean(
        &mut self,
        shape: PaperShape,
        view: PaperView,
        mode: ProbeMode,
        site: u16,
        progress: &(dyn Fn(&str) + Sync),
    ) -> Result<f64, CalibrationError> {
        let (shape, view) = (shape.to_string(), view.to_string());
        let what = || {
            format!(
                "site {site} of the paper-scale frame {shape} at ({view}), {}",
                mode.name()
            )
        };
        let rows = self.frames(progress)?;
        let run = frame_of(rows, &shape, &view, mode)
            .ok_or_else(|| missing_frame(&shape, &view, mode))?
            .run
            .clone();
        let path = self.frames_dir.join(run).join(trace::TRACE_FILE_NAME);
        let trace_err = |source| CalibrationError::Trace {
            what: what(),
            source,
        };
        let reader = trace::TraceReader::open(&path).map_err(trace_err)?;
        let (mut count, mut sum) = (0u64, 0u64);
        for w in reader.warps().map_err(trace_err)? {
            for s in w
                .map_err(trace_err)?
                .summaries
                .iter()
                .filter(|s| s.site == site)
            {
                count += s.count;
                sum += s.sum.0;
            }
        }
        if count == 0 {
            return Err(CalibrationError::Result {
                what: what(),
                reason: format!("{} holds no timed access of it", path.display()),
            });
        }
        Ok(sum as f64 / count as f64)
    }

    fn dram(
        &mut self,
        pattern: DramPattern,
        blocks_per_sm: Option<u32>,
    ) -> Result<&DramRun, CalibrationError> {
        let key = (pattern, blocks_per_sm);
        if !self.dram.contains_key(&key) {
            let run = experiments::dram_run(&self.root, &self.cfg, pattern, blocks_per_sm)?;
            self.dram.insert(key, run);
        }
        self.dram.get(&key).ok_or_else(|| CalibrationError::Result {
            what: "dram-granularity.cu".into(),
            reason: format!("no run of {}", pattern.label()),
        })
    }

    /// The study's sweep at the paper's geometry on this preset, as the GPU check runs it on a
    /// GPU (`study::demo_config` at `Scale::Paper`: the paper's 8 shapes × 2 views), with the bare
    /// build as a run of its own beside naive and fence; one frame each (the emulator is
    /// deterministic).
    fn frames(
        &mut self,
        progress: &(dyn Fn(&str) + Sync),
    ) -> Result<&[SweepRow], CalibrationError> {
        if self.frames.is_none() {
            let study_err = |e| CalibrationError::Study(Box::new(e));
            let mut cfg =
                study::demo_config(&self.frames_dir, study::Scale::Paper).map_err(study_err)?;
            cfg.emu_config = self.cfg.clone();
            cfg.modes = vec![ProbeMode::Off, ProbeMode::Naive, ProbeMode::Fence];
            // The silicon rows were measured timing every access of every warp.
            cfg.time_accesses = instrument::AccessPeriod::ALL;
            cfg.frames = 1;
            let total = cfg.runs().len();
            progress(&format!(
                "sweeping {total} paper-scale runs into {}",
                self.frames_dir.display()
            ));
            let swept = study::sweep(&cfg, &|done, total| {
                progress(&format!("{done} of {total} paper-scale runs done"))
            })
            .map_err(study_err)?;
            self.frames = Some(swept.rows);
        }
        Ok(self.frames.as_deref().unwrap_or_default())
    }
}

/// The experiment rig in `slot`, made by `make` the first time a row asks for it: one device and
/// one compiled experiment serve all its rows.
fn rig<R>(
    slot: &mut Option<R>,
    make: impl FnOnce() -> Result<R, CalibrationError>,
) -> Result<&mut R, CalibrationError> {
    let r = match slot.take() {
        Some(r) => r,
        None => make()?,
    };
    Ok(slot.insert(r))
}

fn frame_of<'a>(
    rows: &'a [SweepRow],
    shape: &str,
    view: &str,
    mode: ProbeMode,
) -> Option<&'a SweepRow> {
    rows.iter()
        .find(|r| r.shape == shape && r.view == view && r.mode == mode.name())
}

fn missing_frame(shape: &str, view: &str, mode: ProbeMode) -> CalibrationError {
    CalibrationError::Result {
        what: format!("the paper-scale frame {shape} at ({view}), {}", mode.name()),
        reason: "the sweep did not produce its kernel time".into(),
    }
}
