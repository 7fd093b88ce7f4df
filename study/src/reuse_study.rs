//! Working set and reuse distance of the volume renderer's texture fetches, per SM, per block
//! shape and per volume layout (block-linear as GPUs store cudaArrays, 8×8×8 bricks, row-major),
//! with the LRU stack-distance prediction checked against the emulator's set-associative texture
//! cache.
//!
//! Why: the paper explains frame rate by the texture-cache hit rate of each block shape; the
//! working set says *why* a shape hits: whether the data the resident blocks of one SM touch
//! between re-references fits the cache. The stack-distance histogram predicts the hit rate of
//! any fully associative LRU cache in one pass; re-running the emulator with other texture-cache
//! sizes shows how near the real (set-associative, sectored, concurrent) cache lands.
//!
//! Main items: [`ReuseStudyConfig`], [`reuse_study`] → [`ReuseStudySummary`] with
//! [`ReuseRow`] (one per shape × layout) and [`HitRow`] (one per shape × layout × cache size).
//!
//! # Method
//! - Each (shape, layout) renders one frame with probes off (`WS_OFF`, so the stream is the
//!   kernel's own) and the address recorder on; the stream of SM `sm` (texture fetches only, one
//!   event per distinct 32-byte sector per warp request) gives the working-set curve (distinct
//!   sectors/lines after every `sample_every` accesses) and stack-distance histograms at 32 B
//!   (sector) and 128 B (line) granularity.
//! - Predicted hit rate for a cache of C bytes: the mean over all SMs' streams (weighted by
//!   accesses) of the LRU prediction with C/32 sectors (`predicted_sector`) and C/128 lines
//!   (`predicted_line`); simulated: the emulator's texture hit rate per request
//!   (`tex_sector_hit_rate`: hits + MSHR merges over each fetch's distinct sectors, every SM)
//!   with `texture.cache.size_bytes` (or `l1.size_bytes` where the L1 serves textures) set to C,
//!   ways kept.
//! - "Fits": the LRU capacity that captures 90 % of SM `sm`'s re-references
//!   (`need90_bytes`, sector granularity) is at most the texture cache.
//!
//! # Files in `out_dir`
//! `reuse_summary.csv` (ReuseRow fields), `reuse_hit_rates.csv` (HitRow fields),
//! `reuse_working_set.csv` (shape, layout, accesses, sectors, lines), figures
//! `reuse_working_set.{png,svg}` (log–log, with the texture/L1 and L2 capacities as lines) and
//! `reuse_hit_rates.{png,svg}`, `reuse.md`, and one run folder per render under `runs/`.
//!
//! ```no_run
//! let cfg = study::ReuseStudyConfig::demo(emulator::GpuConfig::preset("gtx480").unwrap());
//! let s = study::reuse_study(&cfg, std::path::Path::new("reuse")).unwrap();
//! for r in &s.rows {
//!     println!("{} {}: needs {} B, fits: {}", r.shape, r.layout, r.need90_bytes, r.fits_texture_cache);
//! }
//! ```

use crate::StudyError;
use crate::params::RenderParams;
use crate::render::{RenderConfig, render_volume};
use crate::sweep::write_csv_rows;
use crate::view::{BlockShape, View};
use crate::volume::{VolumeKind, VolumeSource};
use analysis::reuse::{
    LINE_BYTES, SECTOR_BYTES, StackDistanceHistogram, WorkingSetPoint, XyFigure, XySeries,
    stack_distances, working_set_curve, write_xy_figure,
};
use device::EmuDevice;
use emulator::{AddressKind, GpuConfig, TextureLayout};
use rayon::prelude::*;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use trace::ProbeMode;

/// What the reuse study renders and measures.
#[derive(Debug, Clone, PartialEq)]
pub struct ReuseStudyConfig {
    pub volume: VolumeSource,
    pub params: RenderParams,
    pub view: View,
    pub shapes: Vec<BlockShape>,
    /// The base emulator config (its texture cache is the one varied).
    pub gpu: GpuConfig,
    /// The SM whose stream gives the working-set curve.
    pub sm: u32,
    /// Cache sizes (bytes) to predict and simulate; each must make a valid cache with the base
    /// config's line size and ways.
    pub cache_sizes_bytes: Vec<u32>,
    /// Volume layouts to compare (`[texture] layout` of each run).
    pub layouts: Vec<TextureLayout>,
    /// Working-set sample interval in accesses.
    pub sample_every: usize,
    /// The runaway guards of each frame.
    pub limits: device::EmuLimits,
}

impl ReuseStudyConfig {
    /// The demo: a 64³ blob volume, 128×128 image, view (0,0,0), shapes 128×1, 16×8 and 1×128,
    /// all three layouts, SM 0, the base texture cache size × ¼ … ×8.
    pub fn demo(gpu: GpuConfig) -> Self {
        let base = texture_cache_bytes(&gpu);
        ReuseStudyConfig {
            volume: VolumeSource::Generated {
                kind: VolumeKind::Blobs,
                dims: [64, 64, 64],
                seed: 1,
            },
            params: RenderParams::with_size(128, 128),
            view: View::new(0.0, 0.0, 0.0),
            shapes: vec![
                BlockShape::new(128, 1),
                BlockShape::new(16, 8),
                BlockShape::new(1, 128),
            ],
            gpu,
            sm: 0,
            cache_sizes_bytes: [4u32, 2, 1]
                .iter()
                .map(|d| base / d)
                .chain([2u32, 4, 8].iter().map(|m| base * m))
                .collect(),
            layouts: TextureLayout::ALL.to_vec(),
            sample_every: 256,
            limits: device::EmuLimits::default(),
        }
    }

    /// One of the study's renders: `shape` on `gpu` (the base config with one texture cache
    /// size and layout), probes off, so that the texture stream is the kernel's own.
    pub fn render_config(&self, shape: BlockShape, gpu: GpuConfig) -> RenderConfig {
        RenderConfig {
            volume: self.volume.clone(),
            params: self.params,
            shape,
            view: self.view,
            mode: ProbeMode::Off,
            trace_warps: instrument::WarpSelection::none(),
            time_warps: instrument::WarpSelection::all(),
            time_accesses: instrument::AccessPeriod::ALL,
            slots_per_warp: 1,
            frames: 1,
            measure_overhead: false,
            compare_reference: false,
            ncu: None,
            emu_config: Some(gpu),
        }
    }
}

/// One (shape, layout): SM `sm`'s stream and the whole frame's prediction at the base size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReuseRow {
    pub shape: String,
    /// `block-linear`, `bricks` or `linear`.
    pub layout: String,
    pub sm: u32,
    /// Texture sector requests of SM `sm`.
    pub accesses: u64,
    pub distinct_sectors: u64,
    pub distinct_lines: u64,
    /// LRU capacity (bytes, sector granularity) that captures 90 % of SM `sm`'s re-references.
    pub need90_bytes: u64,
    pub texture_cache_bytes: u32,
    pub fits_texture_cache: bool,
    /// All SMs, at the base texture-cache size.
    pub predicted_sector: f64,
    pub simulated: Option<f64>,
    /// Emulator kernel cycles at the base size.
    pub cycles: Option<u64>,
}

/// One (shape, layout, cache size): predicted (fully associative LRU) vs simulated hit rate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HitRow {
    pub shape: String,
    pub layout: String,
    pub cache_bytes: u32,
    pub predicted_sector: f64,
    pub predicted_line: f64,
    pub simulated: Option<f64>,
}

/// What [`reuse_study`] measured and wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct ReuseStudySummary {
    pub rows: Vec<ReuseRow>,
    pub hits: Vec<HitRow>,
    /// Mean |predicted_sector − simulated| over all hit rows with a simulated value.
    pub mean_abs_error: Option<f64>,
    pub files: Vec<PathBuf>,
}

fn texture_cache_bytes(gpu: &GpuConfig) -> u32 {
    match (&gpu.texture.cache, gpu.texture.unified_with_l1) {
        (Some(c), false) => c.size_bytes,
        _ => gpu.l1.size_bytes,
    }
}

/// The config with the texture-serving cache resized and the layout set, validated.
fn sized(gpu: &GpuConfig, bytes: u32, layout: TextureLayout) -> Result<GpuConfig, StudyError> {
    let mut g = gpu.clone();
    match (&mut g.texture.cache, g.texture.unified_with_l1) {
        (Some(c), false) => c.size_bytes = bytes,
        _ => g.l1.size_bytes = bytes,
    }
    g.texture.layout = layout;
    g.validate("reuse study").map_err(|e| StudyError::Config {
        field: "cache_sizes_bytes",
        value: bytes.to_string(),
        reason: e.to_string(),
    })?;
    Ok(g)
}

/// A frame's texture hit rate, kernel cycles and per-SM texture sector streams.
type Rendered = (Option<f64>, Option<u64>, Vec<Vec<u64>>);

/// One frame, probes off, on a fresh emulator with `gpu`; returns the texture hit rate, cycles
/// and (when `record`) each SM's texture sector stream.
fn render_once(
    cfg: &ReuseStudyConfig,
    volume: &crate::volume::Volume,
    shape: BlockShape,
    gpu: GpuConfig,
    record: bool,
    run_dir: &Path,
) -> Result<Rendered, StudyError> {
    let mut dev = EmuDevice::new(gpu.clone()).with_limits(cfg.limits.clone());
    dev.set_record_addresses(record);
    let r = render_volume(&mut dev, &cfg.render_config(shape, gpu), volume, run_dir)?;
    let streams = dev
        .take_address_streams()
        .into_iter()
        .map(|sm| {
            sm.into_iter()
                .filter(|e| e.kind == AddressKind::Texture)
                .map(|e| e.sector_addr)
                .collect()
        })
        .collect();
    // Per request, as the reuse distances count sectors: `tex_hit_rate`, the rate Nsight
    // Compute counts, also counts a sector several lanes share as hits.
    let simulated = r
        .metrics
        .emulator
        .as_ref()
        .and_then(|e| e.mem.tex_sector_hit_rate);
    Ok((simulated, r.metrics.cycles, streams))
}

/// What the address streams of one base-size render give: SM `cfg.sm`'s working-set curve and
/// sector histogram, and every SM's sector and line histograms.
struct Streams {
    curve: Vec<WorkingSetPoint>,
    sectors: StackDistanceHistogram,
    all_sec: Vec<StackDistanceHistogram>,
    all_line: Vec<StackDistanceHistogram>,
}

impl Streams {
    fn of(streams: &[Vec<u64>], cfg: &ReuseStudyConfig) -> Streams {
        let empty = Vec::new();
        let mine = streams.get(cfg.sm as usize).unwrap_or(&empty);
        Streams {
            curve: working_set_curve(mine, cfg.sample_every),
            sectors: stack_distances(mine, SECTOR_BYTES),
            all_sec: streams
                .iter()
                .map(|s| stack_distances(s, SECTOR_BYTES))
                .collect(),
            all_line: streams
                .iter()
                .map(|s| stack_distances(s, LINE_BYTES))
                .collect(),
        }
    }
}

/// Runs the study (see the module docs) and writes its files into `out_dir`.
pub fn reuse_study(
    cfg: &ReuseStudyConfig,
    out_dir: &Path,
) -> Result<ReuseStudySummary, StudyError> {
    if cfg.shapes.is_empty() || cfg.layouts.is_empty() {
        return Err(StudyError::Config {
            field: "shapes",
            value: format!("{} shapes, {} layouts", cfg.shapes.len(), cfg.layouts.len()),
            reason: "the study needs at least one shape and one layout".into(),
        });
    }
    let volume = cfg.volume.load()?;
    std::fs::create_dir_all(out_dir).map_err(|e| StudyError::io(out_dir, e))?;
    let base = texture_cache_bytes(&cfg.gpu);
    // Every render is independent (a fresh emulator each), so all of them run in parallel and
    // their results are put together in plan order: the files do not depend on the threads.
    // The base size's render of each (layout, shape) records the address streams.
    let mut plan = Vec::new();
    for &layout in &cfg.layouts {
        for &shape in &cfg.shapes {
            let sizes = std::iter::once(base)
                .chain(cfg.cache_sizes_bytes.iter().copied().filter(|&b| b != base));
            for bytes in sizes {
                plan.push((layout, shape, bytes, sized(&cfg.gpu, bytes, layout)?));
            }
        }
    }
    let runs = out_dir.join("runs");
    // A base render's streams become their curve and histograms inside its job, so no more than
    // one stream per thread is held at a time.
    let rendered: Vec<(Option<f64>, Option<u64>, Option<Streams>)> = plan
        .par_iter()
        .map(|(layout, shape, bytes, gpu)| {
            let tag = format!("{}_{layout}_{bytes}", shape.name());
            let record = *bytes == base;
            let (hit, cycles, streams) =
                render_once(cfg, &volume, *shape, gpu.clone(), record, &runs.join(tag))?;
            Ok((hit, cycles, record.then(|| Streams::of(&streams, cfg))))
        })
        .collect::<Result<_, StudyError>>()?;
    let simulated_at = |layout: TextureLayout, shape: BlockShape, bytes: u32| {
        plan.iter()
            .zip(&rendered)
            .find(|((l, s, b, _), _)| (*l, *s, *b) == (layout, shape, bytes))
            .and_then(|(_, r)| r.0)
    };
    let mut rows = Vec::new();
    let mut hits = Vec::new();
    let mut curves: Vec<(String, Vec<WorkingSetPoint>)> = Vec::new();
    for ((layout, shape, _, _), (sim_base, cycles, streams)) in plan.iter().zip(&rendered) {
        let (layout, shape) = (*layout, *shape);
        let Some(Streams {
            curve,
            sectors,
            all_sec,
            all_line,
        }) = streams
        else {
            continue;
        };
        let predict = |hs: &[StackDistanceHistogram], bytes: u32| {
            let total: u64 = hs.iter().map(|h| h.accesses).sum();
            let hit: f64 = hs
                .iter()
                .map(|h| h.predicted_hit_rate_bytes(u64::from(bytes)) * h.accesses as f64)
                .sum();
            if total == 0 { 0.0 } else { hit / total as f64 }
        };
        let need90 = sectors.capacity_for_fraction(0.9) * SECTOR_BYTES;
        let last = curve.last().copied();
        rows.push(ReuseRow {
            shape: shape.name(),
            layout: layout.name().into(),
            sm: cfg.sm,
            accesses: sectors.accesses,
            distinct_sectors: last.map_or(0, |p| p.sectors),
            distinct_lines: last.map_or(0, |p| p.lines),
            need90_bytes: need90,
            texture_cache_bytes: base,
            fits_texture_cache: need90 <= u64::from(base),
            predicted_sector: predict(all_sec, base),
            simulated: *sim_base,
            cycles: *cycles,
        });
        curves.push((format!("{} {layout}", shape.name()), curve.clone()));
        for &bytes in &cfg.cache_sizes_bytes {
            hits.push(HitRow {
                shape: shape.name(),
                layout: layout.name().into(),
                cache_bytes: bytes,
                predicted_sector: predict(all_sec, bytes),
                predicted_line: predict(all_line, bytes),
                simulated: simulated_at(layout, shape, bytes),
            });
        }
    }
    let errs: Vec<f64> = hits
        .iter()
        .filter_map(|h| h.simulated.map(|s| (h.predicted_sector - s).abs()))
        .collect();
    let mean_abs_error = (!errs.is_empty()).then(|| errs.iter().sum::<f64>() / errs.len() as f64);
    let mut files = Vec::new();
    let path = out_dir.join("reuse_summary.csv");
    write_csv_rows(&path, &rows)?;
    files.push(path);
    let path = out_dir.join("reuse_hit_rates.csv");
    write_csv_rows(&path, &hits)?;
    files.push(path);
    let path = out_dir.join("reuse_working_set.csv");
    let mut ws_rows = Vec::new();
    for (name, curve) in &curves {
        for p in curve {
            ws_rows.push((name.clone(), p.accesses, p.sectors, p.lines));
        }
    }
    write_csv_rows(&path, &ws_rows)?;
    files.push(path);
    let fig_err = |e: analysis::AnalysisError| StudyError::Config {
        field: "figure",
        value: out_dir.display().to_string(),
        reason: e.to_string(),
    };
    let ws_fig = XyFigure {
        stem: "reuse_working_set".into(),
        title: format!("Working set of SM {} (texture sectors)", cfg.sm),
        x_desc: "texture sector requests".into(),
        y_desc: "distinct bytes touched (32-B sectors)".into(),
        log_y: true,
        series: curves
            .iter()
            .enumerate()
            .map(|(i, (name, c))| XySeries {
                name: name.clone(),
                points: c
                    .iter()
                    .map(|p| (p.accesses as f64, p.sector_bytes() as f64))
                    .collect(),
                markers_only: false,
                color: i,
            })
            .collect(),
        hlines: vec![
            (format!("texture/L1 {} KiB", base / 1024), f64::from(base)),
            (
                format!("L2 {} KiB", cfg.gpu.l2.size_bytes / 1024),
                cfg.gpu.l2.size_bytes as f64,
            ),
        ],
    };
    write_xy_figure(out_dir, &ws_fig).map_err(fig_err)?;
    let mut series = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let mine: Vec<&HitRow> = hits
            .iter()
            .filter(|h| h.shape == r.shape && h.layout == r.layout)
            .collect();
        let name = format!("{} {}", r.shape, r.layout);
        series.push(XySeries {
            name: format!("{name} predicted"),
            points: mine
                .iter()
                .map(|h| (f64::from(h.cache_bytes), h.predicted_sector))
                .collect(),
            markers_only: false,
            color: i,
        });
        series.push(XySeries {
            name: format!("{name} simulated"),
            points: mine
                .iter()
                .filter_map(|h| h.simulated.map(|s| (f64::from(h.cache_bytes), s)))
                .collect(),
            markers_only: true,
            color: i,
        });
    }
    let hit_fig = XyFigure {
        stem: "reuse_hit_rates".into(),
        title: "Texture hit rate: LRU stack-distance prediction vs simulated cache".into(),
        x_desc: "cache size (bytes)".into(),
        y_desc: "hit rate".into(),
        log_y: false,
        series,
        hlines: Vec::new(),
    };
    write_xy_figure(out_dir, &hit_fig).map_err(fig_err)?;
    for stem in ["reuse_working_set", "reuse_hit_rates"] {
        files.push(out_dir.join(format!("{stem}.png")));
        files.push(out_dir.join(format!("{stem}.svg")));
    }
    let summary = ReuseStudySummary {
        rows,
        hits,
        mean_abs_error,
        files,
    };
    let md = out_dir.join("reuse.md");
    trace::write_bytes_atomic(&md, markdown(cfg, &summary).as_bytes())?;
    let mut summary = summary;
    summary.files.push(md);
    Ok(summary)
}

fn markdown(cfg: &ReuseStudyConfig, s: &ReuseStudySummary) -> String {
    let mut m = String::from("## Working set and reuse distance\n\n");
    let _ = writeln!(
        m,
        "Preset {}, view {}, {}×{} image; working set of SM {}. A shape *fits* when the LRU \
         capacity that captures 90 % of its re-references is at most the texture cache. \
         Volume layouts: `block-linear` (GPUs' cudaArray layout: 64-byte × 8-row GOBs stacked \
         into blocks, so a 128-byte line holds 32 bytes × 4 rows of one slice), `bricks` \
         (8×8×8-texel bricks: a line of 1-byte texels is 8 × 8 × 2) and `linear` (row-major: a \
         line is 128 bytes of one row).\n",
        cfg.gpu.name,
        cfg.view.name(),
        cfg.params.width,
        cfg.params.height,
        cfg.sm
    );
    let _ = writeln!(
        m,
        "| shape | layout | sector requests | distinct sectors | 90 % reuse needs (B) | fits | predicted | simulated |"
    );
    let _ = writeln!(m, "|---|---|---|---|---|---|---|---|");
    for r in &s.rows {
        let _ = writeln!(
            m,
            "| {} | {} | {} | {} | {} | {} | {:.3} | {} |",
            r.shape,
            r.layout,
            r.accesses,
            r.distinct_sectors,
            r.need90_bytes,
            if r.fits_texture_cache { "yes" } else { "no" },
            r.predicted_sector,
            r.simulated.map_or("–".into(), |v| format!("{v:.3}"))
        );
    }
    let cache = match (&cfg.gpu.texture.cache, cfg.gpu.texture.unified_with_l1) {
        (Some(c), false) => c,
        _ => &cfg.gpu.l1,
    };
    let ways = cache.ways.max(1);
    let sets = u64::from(cache.size_bytes) / (u64::from(cache.line_bytes.max(1)) * u64::from(ways));
    let _ = writeln!(
        m,
        "\nThe simulated texture-serving cache at the preset's size has {sets} sets × {ways} ways \
         of {}-B lines (set = line address mod sets): where a shape's simulated hit rate falls \
         far below the prediction at that size, its simultaneous fetches crowd few sets.",
        cache.line_bytes
    );
    if let Some(e) = s.mean_abs_error {
        let _ = writeln!(
            m,
            "\nMean |predicted − simulated| hit rate over all sizes: {e:.3}. The prediction is a \
             fully associative LRU cache of 32-B sectors per SM stream, taken in issue order; the \
             simulated cache has limited ways (conflict misses), allocates 128-B lines with \
             sector fills (capacity lost to unfilled sectors), counts MSHR merges of in-flight \
             sectors as hits, and sees the interleaving of concurrent warps in cycle order."
        );
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sized_changes_the_texture_cache_and_rejects_bad_sizes() {
        let g = GpuConfig::preset("gtx480").unwrap();
        let base = texture_cache_bytes(&g);
        let big = sized(&g, base * 2, TextureLayout::Linear).unwrap();
        assert_eq!(texture_cache_bytes(&big), base * 2);
        assert_eq!(big.texture.layout, TextureLayout::Linear);
        assert!(sized(&g, 100, TextureLayout::BlockLinear).is_err());
        let demo = ReuseStudyConfig::demo(g);
        assert!(demo.cache_sizes_bytes.contains(&base));
        assert_eq!(demo.cache_sizes_bytes.len(), 6);
    }

    #[test]
    fn tiny_study_writes_its_files_and_predictions_grow_with_the_cache() {
        let g = GpuConfig::preset("gtx480").unwrap();
        let base = texture_cache_bytes(&g);
        let mut cfg = ReuseStudyConfig::demo(g);
        cfg.volume = VolumeSource::Generated {
            kind: VolumeKind::Blobs,
            dims: [16, 16, 16],
            seed: 1,
        };
        cfg.params = RenderParams::with_size(32, 32);
        cfg.shapes = vec![BlockShape::new(32, 1), BlockShape::new(4, 8)];
        cfg.cache_sizes_bytes = vec![base / 4, base];
        cfg.sample_every = 16;
        let dir = tempfile::tempdir().unwrap();
        let s = reuse_study(&cfg, dir.path()).unwrap();
        assert_eq!(s.rows.len(), 6);
        assert_eq!(s.hits.len(), 12);
        for f in &s.files {
            assert!(f.is_file(), "{}", f.display());
        }
        for r in &s.rows {
            assert!(r.accesses > 0, "{r:?}");
            assert!(r.distinct_sectors <= r.accesses);
            assert!(r.distinct_lines <= r.distinct_sectors);
            assert!(r.simulated.is_some());
        }
        for pair in s.hits.chunks(2) {
            // Same shape and layout, sizes ascending: LRU inclusion means no fewer hits.
            assert!(pair[0].predicted_sector <= pair[1].predicted_sector);
            assert!(pair[1].predicted_sector <= 1.0);
            assert!(pair[0].predicted_line <= pair[1].predicted_line);
        }
        // The layout changes the addresses, so the footprint in sectors differs from the bricks'.
        // (Block-linear and linear coincide here: with 16-byte rows both put 16 × 2 texels in a
        // 32-byte sector.)
        let footprint = |l: &str| -> Vec<u64> {
            s.rows
                .iter()
                .filter(|r| r.layout == l)
                .map(|r| r.distinct_sectors)
                .collect()
        };
        let (bl, br, li) = (
            footprint("block-linear"),
            footprint("bricks"),
            footprint("linear"),
        );
        assert!(bl != br && br != li, "{bl:?} {br:?} {li:?}");
        let md = std::fs::read_to_string(dir.path().join("reuse.md")).unwrap();
        for layout in TextureLayout::ALL {
            assert!(md.contains(&format!("| 32x1 | {layout} |")), "{md}");
        }
    }
}
