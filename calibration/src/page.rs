//! `docs/validation.md`, generated from the table: the verdict first (how many rows agree), then
//! per section each quantity with the model beside every GPU that measured it, the tolerance,
//! whether they agree, and the raw record each number comes from; then the known gaps with
//! their reasons.

use std::fmt::Write;

use std::path::Path;

use crate::error::CalibrationError;
use crate::table::{Measure, RECORDS_DIR, Row, TABLE_PATH, Table, Tolerance, Verdict, num};

/// Where the page lives, from the workspace root.
pub const PAGE_PATH: &str = "docs/validation.md";

/// The page's sections, in order: which measures each holds and what it says of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Latency,
    Fences,
    Shared,
    Dram,
    Corpus,
    Launch,
    Frames,
    HitRates,
    Occupancy,
    Sites,
    ProbeCost,
    Dummies,
    Contention,
    Division,
    Issue,
    CacheOperators,
    L1Port,
    Constant,
    TexFootprints,
}

impl Section {
    const ALL: [Section; 19] = [
        Section::Latency,
        Section::CacheOperators,
        Section::L1Port,
        Section::Constant,
        Section::TexFootprints,
        Section::Fences,
        Section::Dummies,
        Section::Shared,
        Section::Contention,
        Section::Division,
        Section::Issue,
        Section::Dram,
        Section::Corpus,
        Section::Launch,
        Section::Frames,
        Section::HitRates,
        Section::Occupancy,
        Section::Sites,
        Section::ProbeCost,
    ];

    fn of(m: &Measure) -> Section {
        match m {
            Measure::Micro { .. } => Section::Latency,
            Measure::FenceWindow { .. } => Section::Fences,
            Measure::SharedChase { .. } => Section::Shared,
            Measure::DramBytes { .. }
            | Measure::DramRate { .. }
            | Measure::SmStream { .. }
            | Measure::LoadedLatency { .. } => Section::Dram,
            Measure::CorpusOutputs | Measure::CorpusTime { .. } => Section::Corpus,
            Measure::PaperFrame { .. } => Section::Frames,
            Measure::TexHitRate { .. } | Measure::L2HitRate { .. } => Section::HitRates,
            Measure::AchievedOccupancy { .. } => Section::Occupancy,
            Measure::SiteMean { .. } => Section::Sites,
            Measure::Overhead { .. } => Section::ProbeCost,
            Measure::DummyClosing { .. } => Section::Dummies,
            Measure::DivergentLoad { .. }
            | Measure::Reduce7Sum
            | Measure::AtomicRate { .. }
            | Measure::AtomicSpread { .. }
            | Measure::ChainStep { .. }
            | Measure::DivergentClosing { .. } => Section::Contention,
            Measure::DivisionLatency { .. }
            | Measure::DivisionPair { .. }
            | Measure::DivisionIssue { .. } => Section::Division,
            Measure::IssueRate { .. } => Section::Issue,
            Measure::CacheOperator { .. } => Section::CacheOperators,
            Measure::L1Fill { .. } | Measure::L1Lookups { .. } => Section::L1Port,
            Measure::ConstChase { .. } => Section::Constant,
            Measure::TexFootprint { .. } | Measure::TexLookupCount { .. } => Section::TexFootprints,
            Measure::LaunchSpan { .. } | Measure::BlockRamp { .. } => Section::Launch,
        }
    }

    fn title(self) -> &'static str {
        match self {
            Section::Latency => "Load latencies and the probes' microbenchmarks",
            Section::Fences => "Fences",
            Section::Shared => "Shared memory",
            Section::Dram => "DRAM",
            Section::Corpus => "The functional corpus",
            Section::Launch => "Launching a grid",
            Section::Frames => "The study's paper-scale frames",
            Section::HitRates => "Texture and L2 hit rates of the study's frames",
            Section::Occupancy => "Achieved occupancy of the study's frames",
            Section::Sites => "The probes' readings per site of the study's frames",
            Section::ProbeCost => "The probes' cost",
            Section::Dummies => "Dummy closings",
            Section::Contention => "Contended atomics, divergent loads and shuffles",
            Section::Division => "Integer division",
            Section::Issue => "Arithmetic issue rates",
            Section::CacheOperators => "Which loads the L1 serves",
            Section::L1Port => "What the L1 takes a cycle",
            Section::Constant => "Constant memory",
            Section::TexFootprints => "Texture lookups per footprint",
        }
    }

    /// How the section's model values are produced.
    fn how(self) -> &'static str {
        match self {
            Section::Latency => {
                "The GPU check's step 3 (`check::micro`: `kernels/micro/pointer_chase.cu` through \
                 the probe header, one warp) run on the emulator: cycles per chase step or per \
                 probed load, the mean over the records, as the check reports silicon's."
            }
            Section::Fences => {
                "`docs/gpu/fence-variants.cu`'s kernels on the emulator, launched as its `main` \
                 launches them: one thread, 32 windows `t0 = clock; access; closing; t1 = clock`, \
                 the mean of the 31 warm ones. As its `main` does, each case starts with the L2 \
                 flushed (there a 256 MiB memset, here `EmuDevice::flush_l2`), and the L2-hit, \
                 L1-hit and stores-in-L2 cases run a first launch that brings their lines in: the \
                 emulator's L2, like a GPU's, keeps them for the next launch, and every launch's \
                 L1 starts empty."
            }
            Section::Dummies => {
                "`docs/gpu/dummy-closing.cu`'s kernels on the emulator, one thread, 32 windows \
                 `t0 = clock; load; closing; t1 = clock` around an L1 hit (the same word each \
                 time) or an L2 hit (lines 8 MiB apart that a first launch read), the mean of the \
                 31 warm ones: the fence, fence-variants.cu's dummy (a predicated-off global \
                 store to the `sink` parameter), the same dummy with the address in a register, \
                 and warpscope's own dummy. Each case starts with the L2 flushed and a first \
                 launch, as the fences' do."
            }
            Section::Contention => {
                "`docs/gpu/contention.cu`'s kernels on the emulator, launched as its `main` \
                 launches them: contended global atomics per SM clock (2,048 blocks of 1,024 \
                 threads, 16 `atomicAdd` each; recorded with `--expensive`), lane 0's window \
                 around one warp's 32 loads of cold lines 4 KiB apart (one launch: each starts \
                 with cold caches), and the sum reduce7's last step gives lane 0 when its \
                 shuffles read lanes that have exited. `docs/gpu/atomic-units.cu`'s kernels the \
                 same way: lane 0 of each of 65,536 warps adding 16 times to one of 1 to 512 lines \
                 (recorded with `--expensive`; the second of two launches, since `main` clears the \
                 lines with `cudaMemset` before each, which leaves them in the L2), and one \
                 thread's chain of returned atomics or loads. `docs/gpu/divergent-closing.cu`'s \
                 window around 1 to 32 lanes' loads of a cold line each, one launch per row. Silicon's rates come from CUDA events, which \
                 include the 5.5–6.3 µs a launch adds (`launch-overhead.cu`); the model's from \
                 the launch's cycles."
            }
            Section::Division => {
                "`docs/gpu/int-division.cu`'s chains on the emulator: one warp's dependent chain \
                 of 256 steps (a division, or a subtraction in its place, between two ALU \
                 operations that make its operands depend on the step before), cycles per step; \
                 and 32 warps on one SM with 8 independent chains each, cycles per warp step per \
                 scheduler, where issue is the limit (silicon's launch runs a block on every SM \
                 and takes the slowest)."
            }
            Section::Issue => {
                "`docs/gpu/issue-rates.cu`'s kernel on the emulator, one block of 1,024 threads \
                 (silicon's launch runs one on every SM; the rate is each SM's own), each thread \
                 8 independent chains of one operation, 64 steps: the block's cycles per PTX \
                 warp instruction per scheduler."
            }
            Section::CacheOperators => {
                "`docs/gpu/cache-operators.cu`'s chains on the emulator: one thread's, or one \
                 warp's, 256 dependent loads of one word (a warp's lanes each their own word of \
                 one line), each load form in turn, cycles per step. As on silicon each chain's \
                 timed launch finds its words in the L2, which the launch before it read, and an \
                 empty L1: a form the L1 serves reads the L1's latency after its first step, one \
                 it does not the L2's."
            }
            Section::L1Port => {
                "`docs/gpu/l1-port.cu`'s fill on the emulator: its `warm` kernel on every SM \
                 brings the 8 MiB buffer into the L2, then one block of 1,024 threads on one SM \
                 makes 256 accesses a thread, 8 in flight, each warp access on 8 fresh lines; \
                 the block's cycles per warp access. Its lookups: the same block's point fetches \
                 from a 1D texture of 2,048 floats that the L1 holds, a hashed group of 8 lines \
                 per access, each quad of lanes on 1, 2 or 4 sectors; the second of two launches."
            }
            Section::Constant => {
                "`docs/gpu/const-latency.cu`'s chase on the emulator: the array uploaded \
                 (`cudaMemcpyToSymbol`), then one warp's launch makes two passes over the \
                 working set, each step's index the word it read, and a second launch one more: \
                 cycles per step of each pass."
            }
            Section::TexFootprints => {
                "`docs/gpu/tex-footprint.cu`'s kernels on the emulator, one launch per case after \
                 the L2 is flushed, as Nsight Compute flushes the caches before each kernel it \
                 measures: the texture's sector lookups as Nsight Compute counts them \
                 (`l1tex__t_sectors_pipe_tex_mem_texture_op_tex.sum`, each group of lanes' \
                 distinct sectors of a fetch) and the sectors the texture path read from the L2 \
                 (`lts__t_sectors_srcunit_tex_op_read.sum`; the emulator's texture misses, which \
                 go to the L2 one for one). Cases 0–13: 256 warps, one block each, sampling a \
                 3D u8 texture trilinearly in footprints that share sectors between lanes or \
                 not and straddle sectors and GOBs or not; 14–16: 264 warps point-sampling 32 \
                 sectors each, their own, shared by blocks 2k and 2k+1, or by blocks two apart; \
                 17–21: one warp sampling one point of a small 1D or 2D texture of float4, u8 \
                 or float, filtered or not. `docs/gpu/tex-lookup-count.cu`'s kernel the same \
                 way, one launch of 1,024 warps per case, each warp its own rows of a cold \
                 texture: the lookups and Nsight Compute's hit rate per lookup \
                 (`l1tex__t_sector_pipe_tex_mem_texture_op_tex_hit_rate.pct`), only the first \
                 lookup of a missing sector a miss. Cases 0–3 point-sample a 2D u8 texture; \
                 4–7 sample a 3D one, trilinearly but case 5."
            }
            Section::Launch => {
                "`docs/gpu/launch-overhead.cu`'s kernel on the emulator: a grid of one block, and \
                 of 1, 4, 16 and 64 blocks per SM, of 128 threads that each store one word; \
                 thread 0 of each block reads `%globaltimer` at its start and after the block's \
                 barrier and folds both into the grid's span with `atomicMin` and `atomicMax`. \
                 The span of the second of two launches, µs, where silicon's is the mean of 200 \
                 launches after 20. The model's `%globaltimer` is its cycle count over its \
                 clock; silicon's advances in steps of 32 ns (the start times of \
                 `block-placement.cu`'s records). What CUDA events add around the grid \
                 (`event_us` − `span_us` in the records, 5.5–13.5 µs on the H200) is not \
                 modelled: the emulator's kernel time runs from the grid's first cycle to its \
                 last warp's end or its last atomic's, whichever is later. \
                 `docs/gpu/block-placement.cu`'s grids (2,048 blocks of 128 threads in each of \
                 four paper shapes, up to 16 per SM, each held about 20 µs): how far apart an \
                 SM's blocks start, ns, the least-squares slope of each block's `%globaltimer` \
                 at its start over its place in its SM's order of starts; silicon's slopes are \
                 computed from its records the same way (`block-ramp-*.txt`)."
            }
            Section::Shared => {
                "`docs/gpu/shared-latency.cu`'s chases on the emulator: cycles per step over 256 \
                 dependent steps, one launch (the emulator gives every launch the same cycles)."
            }
            Section::Dram => {
                "`docs/gpu/dram-granularity.cu`'s `read_sectors` on the emulator, one launch of \
                 the grid its `main` uses (1 GiB read, every load at once), or where a row says \
                 so of 1 to 8 blocks of 256 threads per SM looping over the same reads (its \
                 parallelism section, fewer loads in flight): DRAM bytes read over the bytes \
                 asked for (what ncu's `dram__bytes_read.sum` says on silicon), and 1 GiB over \
                 the kernel time. Recorded with `--expensive` (2²⁶ loads, up to 8 GiB of \
                 buffer). `docs/gpu/sm-inflight.cu`'s stream, one block of 32 to 1,024 threads on \
                 one SM or on every SM (recorded with `--expensive`), each thread 16 trips of four \
                 16-byte loads: bytes per cycle per SM over the median block's own cycles. \
                 `docs/gpu/loaded-latency.cu`'s chase, one thread stepping through 1,024 lines \
                 16 KiB apart from an empty L2, beside 0 to 7 blocks of 256 threads per SM \
                 reading in the background until it ends (recorded with `--expensive`): cycles \
                 per step, one launch where silicon's is the median of three."
            }
            Section::Corpus => {
                "The GPU check's corpus (`check::corpus`) on the emulator: how many of its files \
                 give their CPU reference's output byte for byte (on silicon the same files also \
                 gave the emulator's bytes), and the kernel times of its step 4 at their timing \
                 size."
            }
            Section::Frames => {
                "The GPU check's study sweep (`study::demo_config` at the paper's geometry: a 1024³ \
                 volume, 512×512 image) on the emulator, the bare build's kernel time of each of \
                 the 16 frames. Recorded with `--expensive` (48 paper-scale frames with the \
                 probed ones below)."
            }
            Section::HitRates => {
                "The same sweep's bare frames: the texture hit rate as Nsight Compute counts it \
                 (`l1tex__t_sector_pipe_tex_mem_texture_op_tex_hit_rate.pct`: each lane's sectors \
                 lookups of their own) and the L2's hit rate as Nsight Compute counts it \
                 (`lts__t_sector_hit_rate.pct`: a lookup per sector read and one per block read \
                 from DRAM), beside ncu's on silicon. Recorded with `--expensive`, from the same \
                 sweep."
            }
            Section::Occupancy => {
                "The same sweep's bare frames: the warps resident per active cycle of an SM over \
                 its 64 warp slots, as Nsight Compute's \
                 `sm__warps_active.avg.pct_of_peak_sustained_active` counts them (a warp from its \
                 block's launch until it exits), beside ncu's on silicon. Recorded with \
                 `--expensive`, from the same sweep."
            }
            Section::Sites => {
                "The same sweep's probed builds: per site, the mean reading over every access the \
                 frame's warps timed (every access of every warp), as `warpscope analyze` gives \
                 it in `hotspots.csv`, beside the same from a sweep on silicon. Recorded with \
                 `--expensive`, from the same sweep."
            }
            Section::ProbeCost => {
                "The same sweep's probed builds: probed ÷ bare kernel time over the 16 frames, \
                 the lowest and the highest, per probe mode. Recorded with `--expensive`."
            }
        }
    }
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Agrees => "agrees",
        Verdict::KnownGap => "known gap",
        Verdict::Disagrees => "**disagrees, no reason given**",
        Verdict::StaleGap => "**agrees, yet marked as a gap**",
        Verdict::NotComputed => "not computed yet (expensive)",
        Verdict::NoModel => "**not computed**",
    }
}

/// The row's tolerance, an absolute one in the row's unit.
fn tolerance(r: &Row) -> String {
    match r.tolerance {
        Tolerance::Absolute(a) => format!("±{} {}", num(a), r.unit.symbol()),
        Tolerance::Relative(_) => r.tolerance.to_string(),
    }
}

fn row_line(r: &Row) -> String {
    let (model, ratio) = match r.model {
        Some(m) if r.silicon != 0.0 => (num(m), format!("{}×", num(m / r.silicon))),
        Some(m) => (num(m), "–".into()),
        None => ("–".into(), "–".into()),
    };
    format!(
        "| {} | {} | {} | {} {} | {model} | {ratio} | {} | {} | {} | [{}:{}](gpu/{}) |",
        r.quantity,
        r.gpu,
        r.preset,
        num(r.silicon),
        r.unit.symbol(),
        tolerance(r),
        verdict_word(r.verdict()),
        r.source.date().unwrap_or("–"),
        r.source.file,
        r.source.line,
        r.source.file,
    )
}

/// How many of some rows have each verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    rows: usize,
    agree: usize,
    gaps: usize,
    not_computed: usize,
}

impl Counts {
    fn of<'a>(rows: impl Iterator<Item = &'a Row>) -> Counts {
        rows.fold(Counts::default(), |mut c, r| {
            c.rows += 1;
            match r.verdict() {
                Verdict::Agrees => c.agree += 1,
                Verdict::KnownGap => c.gaps += 1,
                Verdict::NotComputed => c.not_computed += 1,
                Verdict::Disagrees | Verdict::StaleGap | Verdict::NoModel => {}
            }
            c
        })
    }

    /// Rows that neither agree, nor are known gaps, nor wait for an expensive run: the table
    /// is not acceptable with any (the tests fail).
    fn wrong(self) -> usize {
        self.rows - self.agree - self.gaps - self.not_computed
    }
}

/// The page's text.
pub fn render(table: &Table) -> String {
    let mut out = String::new();
    let all = Counts::of(table.row.iter());
    let _ = writeln!(out, "# Validation: the emulator against silicon\n");
    let mut verdict = format!(
        "**{} of {} rows agree** with silicon within their tolerance; {} are known gaps, each \
         with its reason below",
        all.agree,
        all.rows - all.not_computed,
        all.gaps
    );
    if all.not_computed > 0 {
        let _ = write!(
            verdict,
            ". {} more rows are not computed yet: their measures are expensive (paper-scale \
             frames or DRAM patterns, which the tests do not run), and the calibration program \
             records them with `--expensive`",
            all.not_computed
        );
    }
    if all.wrong() > 0 {
        let _ = write!(
            verdict,
            "; **{} neither agree nor say why (the table is not acceptable so)**",
            all.wrong()
        );
    }
    let _ = writeln!(out, "{verdict}.\n");
    let _ = writeln!(
        out,
        "Each row is a quantity measured on a GPU (the raw record under `{RECORDS_DIR}/` and the \
         line that prints it) beside the emulator preset's value for it, computed by running the \
         same measurement on the emulator. Generated from [the calibration \
         table](calibration/calibration.toml) (`{TABLE_PATH}`) by `cargo run -p \
         warpscope-calibration --example calibrate -- --write`, which recomputes the model's \
         values; the tests fail when a recorded value is not what the code computes, when a row \
         is outside its tolerance without a reason, when a tolerance is wider than on the merge \
         base, or when this page is not what the table gives.\n"
    );
    let _ = writeln!(
        out,
        "| section | rows | agree | known gaps | not computed yet |\n|--|--|--|--|--|"
    );
    for s in Section::ALL {
        let c = Counts::of(table.row.iter().filter(|r| Section::of(&r.measure) == s));
        if c.rows > 0 {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                s.title(),
                c.rows,
                c.agree,
                c.gaps,
                c.not_computed
            );
        }
    }
    for s in Section::ALL {
        let rows: Vec<&Row> = table
            .row
            .iter()
            .filter(|r| Section::of(&r.measure) == s)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n## {}\n\n{}\n", s.title(), s.how());
        let _ = writeln!(
            out,
            "| quantity | GPU | preset | silicon | model | model ÷ silicon | tolerance | verdict | measured | source |\n\
             |--|--|--|--|--|--|--|--|--|--|"
        );
        // A quantity's GPUs side by side, in the order the quantities first appear.
        let mut quantities: Vec<&str> = Vec::new();
        for r in &rows {
            if !quantities.contains(&r.quantity.as_str()) {
                quantities.push(&r.quantity);
            }
        }
        for q in quantities {
            for r in rows.iter().filter(|r| r.quantity == q) {
                let _ = writeln!(out, "{}", row_line(r));
            }
        }
    }
    let gaps: Vec<&Row> = table.row.iter().filter(|r| r.gap.is_some()).collect();
    if !gaps.is_empty() {
        let _ = writeln!(out, "\n## Known gaps\n");
        for r in gaps {
            let _ = writeln!(
                out,
                "- **{}, {}** (`{}`): {}",
                r.quantity,
                r.gpu,
                r.id,
                r.gap.as_deref().unwrap_or_default()
            );
        }
    }
    out
}

/// Writes the page of `table` to `root`/[`PAGE_PATH`] (atomically).
pub fn write(root: &Path, table: &Table) -> Result<(), CalibrationError> {
    trace::write_bytes_atomic(&root.join(PAGE_PATH), render(table).as_bytes())
        .map_err(CalibrationError::Write)
}
