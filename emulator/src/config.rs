//! Typed GPU configuration for the emulator's timing model, loaded from TOML with named fields
//! and units in the names, and the built-in presets (`gtx480`, `v100`, `a100`, `h100`, `h200`).
//!
//! Why typed TOML: a GPGPU-Sim config is a positional mini-language (`S:4:128:64,L:T:m:L:L,…`)
//! where a swapped number silently builds another GPU. Here every number has a name with its unit
//! (`size_bytes`, `latency_cycles`, `bandwidth_bytes_per_cycle`, `clock_mhz`), unknown keys are
//! rejected, and [`GpuConfig::validate`] names the offending field
//! (`l2.slices: must be a power of two, got 12`). The effective config ([`GpuConfig::to_toml`]) is
//! written next to every result, so a run can always be reproduced.
//!
//! A file may start from a built-in preset and give only what differs: `base = "h100"` at its
//! top takes that preset's values, and the file's own replace them key by key (`h200` is the
//! `h100` preset with the H200's memory and fences). Its `name` is "custom" unless it gives
//! one. The effective config is always complete.
//!
//! Main types: [`GpuConfig`] (the whole GPU), [`SmConfig`] (occupancy limits and schedulers),
//! [`PipelineConfig`] (functional-unit latencies and issue intervals), [`CacheConfig`] (one
//! set-associative sectored cache), [`TextureConfig`] and [`TextureLayout`], [`SharedConfig`], [`L2Config`],
//! [`DramConfig`], and [`ConfigError`].
//!
//! # How the latencies compose
//! Memory latencies are *components* that add up along the path a request takes, so that an
//! unloaded dependent pointer chase sees exactly the end-to-end numbers the presets aim at
//! ([`GpuConfig::unloaded_latencies`] computes them):
//! - L1 hit = `l1.latency_cycles`
//! - L2 hit = `l1.latency_cycles + l2.latency_cycles`
//! - DRAM = `l1.latency_cycles + l2.latency_cycles + dram.latency_cycles`
//! - texture hit = `texture.pipeline_latency_cycles` + the texture cache's latency (the L1's when
//!   `texture.unified_with_l1`), and a texture miss adds `l2` (and `dram`) like an L1 miss;
//! - constant hit = `constant.latency_cycles`; a miss that hits `constant_second_level` takes
//!   its `latency_cycles`, one that misses every level adds `l2.constant_latency_cycles` (where
//!   unset `l2.latency_cycles`), and `dram` on an L2 miss, to the first's;
//! - shared = `shared.latency_cycles`, plus one cycle per extra bank-conflict way, or for an
//!   atomic whose lanes hit one word `shared.same_word_atomic_cycles` per further lane.
//!
//! Bandwidths only add *queueing* (a request waits until the resource is free); the first
//! request on an idle resource pays no transfer time, which keeps the unloaded numbers exact.
//!
//! # Example
//! ```
//! use emulator::GpuConfig;
//! let h100 = GpuConfig::preset("h100").unwrap();
//! assert_eq!(h100.unloaded_latencies().dram, 682);
//! let text = h100.to_toml();
//! let again = GpuConfig::from_toml_str(&text, "effective.toml").unwrap();
//! assert_eq!(again, h100);
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Built-in presets: (name, TOML text). Each file cites the source of every number.
const PRESETS: &[(&str, &str)] = &[
    ("gtx480", include_str!("presets/gtx480.toml")),
    ("v100", include_str!("presets/v100.toml")),
    ("a100", include_str!("presets/a100.toml")),
    ("h100", include_str!("presets/h100.toml")),
    ("h200", include_str!("presets/h200.toml")),
];

/// A built-in preset's TOML text.
fn preset_text(name: &str) -> Result<&'static str, ConfigError> {
    PRESETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .ok_or_else(|| ConfigError::UnknownPreset {
            name: name.to_string(),
            known: GpuConfig::preset_names().join(", "),
        })
}

/// A configuration's keys, over those of the preset its `base` names (and that preset's own
/// base), and whether it names one.
fn with_base(text: &str, origin: &str) -> Result<(toml::Table, bool), ConfigError> {
    let mut top: toml::Table = toml::from_str(text).map_err(|e| parse_error(origin, e))?;
    let Some(base) = top.remove("base") else {
        return Ok((top, false));
    };
    let name = base
        .as_str()
        .ok_or_else(|| parse_error(origin, "base: must be a preset's name"))?;
    let (mut merged, _) = with_base(preset_text(name)?, &format!("preset {name}"))?;
    // Values of its own make it another GPU than its base, whatever it leaves out.
    merged.insert("name".to_string(), "custom".into());
    overlay(&mut merged, top);
    Ok((merged, true))
}

/// A TOML text that did not parse, or did not fit the configuration's fields.
fn parse_error(origin: &str, message: impl std::fmt::Display) -> ConfigError {
    ConfigError::Parse {
        origin: origin.to_string(),
        message: message.to_string().trim_end().to_string(),
    }
}

/// Puts `top`'s values over `base`'s: tables merge key by key, anything else replaces.
fn overlay(base: &mut toml::Table, top: toml::Table) {
    for (key, value) in top {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(t)) => overlay(b, t),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// Errors loading or validating a configuration. `origin` is the file path or `preset NAME`.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("unknown preset {name:?} (known: {known})")]
    UnknownPreset { name: String, known: String },
    #[error("{origin}: cannot read")]
    Io {
        origin: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin}: {message}")]
    Parse { origin: String, message: String },
    #[error("{origin}: {field}: {message}")]
    Invalid {
        origin: String,
        field: String,
        message: String,
    },
}

/// A whole GPU as the emulator models it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GpuConfig {
    /// Preset name, or a configuration file's own ("custom" where it names a `base` and no
    /// name of its own).
    pub name: String,
    /// SM clock; turns cycles into seconds. `%clock` counts cycles of this clock.
    pub clock_mhz: f64,
    /// Per-SM resources: occupancy limits and warp schedulers.
    pub sm: SmConfig,
    /// Functional-unit latencies and issue intervals.
    pub pipeline: PipelineConfig,
    /// Per-SM L1 data cache (global and local loads).
    pub l1: CacheConfig,
    /// The texture path: its pipeline and, where it is not the L1, its own cache.
    pub texture: TextureConfig,
    /// Per-SM constant cache (also serves `ld.param`): the first level.
    pub constant: CacheConfig,
    /// A second constant level behind `constant`, one per SM. A first-level miss that hits it
    /// takes its `latency_cycles` (end to end, as the first level's); one that misses it goes
    /// on to the L2 as a first-level miss does without it, through its MSHRs. Its hits are not
    /// counted apart: the constant counters are the first level's. Absent: no second level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constant_second_level: Option<CacheConfig>,
    /// Per-SM shared memory: latency and banks.
    pub shared: SharedConfig,
    /// The L2 shared by every SM.
    pub l2: L2Config,
    /// Device memory.
    pub dram: DramConfig,
}

/// Per-SM resources: the occupancy limits and the warp schedulers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SmConfig {
    /// SMs on the GPU.
    pub count: u32,
    /// Resident threads per SM.
    pub max_threads: u32,
    /// Resident warps per SM.
    pub max_warps: u32,
    /// Resident blocks per SM.
    pub max_blocks: u32,
    /// Largest block a launch may use.
    pub max_threads_per_block: u32,
    /// 32-bit registers per SM.
    pub registers: u32,
    /// Registers are allocated per warp in units of this many.
    pub register_alloc_unit: u32,
    /// Registers a thread may use; more are spilled (flagged in run.json, not modelled).
    pub max_registers_per_thread: u32,
    /// The SASS target (`sm_90` is 90) a GPU of this kind runs. A kernel takes its registers
    /// per thread, and with them its occupancy, from ptxas for this target, as the GPU's own
    /// build would: the embedded kernels from their build, which counts every target of their
    /// fatbin, and a kernel compiled at run time (`warpscope launch` of a `.cu`, the
    /// calibration's experiments) from ptxas then. The same PTX can take 42 registers on sm_75
    /// and 38 on sm_90 (docs/gpu/dram-granularity.cu's reader), five 256-thread blocks per H100
    /// SM where silicon holds six. Unset: ptxas' count for sm_75 fitted to this SM, as for GPUs
    /// today's ptxas no longer targets (sm_20, sm_70).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sass_arch: Option<u32>,
    /// Shared memory per SM, in bytes.
    pub shared_bytes: u32,
    /// Shared memory one block may use, in bytes.
    pub max_shared_bytes_per_block: u32,
    /// Shared memory is allocated per block in units of this many bytes.
    pub shared_alloc_unit_bytes: u32,
    /// Shared memory the driver reserves per resident block (1 KiB from sm_80 on).
    pub shared_reserved_bytes_per_block: u32,
    /// Warp schedulers per SM; warp slot `s` belongs to scheduler `s % warp_schedulers`.
    pub warp_schedulers: u32,
    /// Instructions each scheduler can issue per cycle.
    pub issue_per_scheduler: u32,
    /// Whether `membar.cta` / `fence.sc.cta` (SASS MEMBAR.SC.CTA) waits for the warp's
    /// outstanding loads, as the paper's fence did on Fermi (true, the default). On an H200 it
    /// did not: a load issued to L1 is already ordered at CTA scope, and the fence retired ~29
    /// cycles after a load that missed to DRAM (docs/gpu/h200-2026-11-26-findings.md). Stores and
    /// atomics are waited for either way, and so is everything by `fence.acq_rel.cta` and every
    /// wider fence.
    #[serde(default = "waits_for_loads")]
    pub cta_sc_fence_waits_for_loads: bool,
    /// The least time, in cycles, a GPU-scope fence (`membar.gl`, `fence.sc.gpu`,
    /// `fence.acq_rel.gpu`) takes from reaching the head of its warp to retiring, whatever the
    /// warp has outstanding; it still waits for that too (and `wide_fence_drain_cycles` more).
    /// On sm_90 such a fence is MEMBAR.SC.GPU, ERRBAR, CGAERRBAR and CCTL.IVALL, and it took
    /// ~560 cycles more than no fence after a store or an L1 hit on an H200 (a CTA fence:
    /// 15–22); see docs/gpu/2026-11-27-findings.md.
    /// 0 (the default): only the wait for outstanding operations, for presets not measured.
    #[serde(default)]
    pub gpu_fence_cycles: u32,
    /// The same for a system-scope fence (`membar.sys`, `fence.*.sys`).
    #[serde(default)]
    pub sys_fence_cycles: u32,
    /// Cycles a GPU- or system-scope fence takes after the last operation it waits for has
    /// completed: it retires at the later of that and its own least time (`gpu_fence_cycles`,
    /// `sys_fence_cycles`). After a load that missed to DRAM, `membar.gl` and
    /// `fence.acq_rel.gpu` retired 130 and 138 cycles after `fence.acq_rel.cta`, which waits for
    /// the load alone, on an H200 (104 and 125 on an H100); after an L1 hit their own time
    /// decided (docs/gpu/fence-variants-2026-11-27.txt). Unset: the fence retires when the last
    /// operation completes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wide_fence_drain_cycles: Option<u32>,
    /// Cycles after its L1 lookup slot at which a global store is done for its warp: visible to
    /// the CTA, which is what a CTA-scope fence waits for (its write goes on to the L2 either
    /// way). Unset: `l1.latency_cycles`, the whole L1 stage. An H200 and an H100 both retired a
    /// CTA fence 14–15 cycles after a store, whether its line was in L2 or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_visible_cycles: Option<u32>,
    /// Whether a global or local load waits unissued while its SM has no free miss slot
    /// (`l1.mshrs`, or the texture cache's for a read-only load), until the earliest in flight
    /// returns: Nsight Compute's `lg_throttle` stall, the L1/TEX unit's queue for local and
    /// global operations full. A freed slot then goes to whichever warp its scheduler issues
    /// next, and the SM's schedulers take turns, cycle by cycle, at issuing first, as the unit
    /// serves its sub-partitions in turn (else the first would take every slot freed while all
    /// wait). A texture fetch does not wait at issue: in the 1×128 frame, whose fetches keep the
    /// model's miss slots full, an H200's naive window around the renderer's fetch reads 6.3
    /// cycles, where holding fetches at issue read 76
    /// (docs/gpu/2026-12-06-lg-throttle-table.md). False (the default): the load
    /// issues, and its miss waits for a slot behind every miss its SM issued before it, so a
    /// pointer chase beside a stream waits out the stream's backlog at its own SM
    /// (docs/gpu/2026-12-06-loaded-chase.md). No preset sets it: a stream's misses then reach
    /// DRAM in another order, and with the h100 preset's DRAM row model 62 % of its DRAM chunks
    /// open a row (4 % without), so that it reads 2.48 TB/s (3.26 without; an H100 3.13).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lg_throttle: bool,
    /// Cycles one scheduler's loads take for each line they send below the L1 (a line that
    /// misses, or a line an L1-skipping load reads), one line after another: a warp's lines
    /// leave its sub-partition at this rate, and the warps of one sub-partition share it.
    /// The SM's port (`l1.miss_line_cycles`) spaces the lines of all its schedulers as before:
    /// four schedulers at 4 cycles a line still send a line a cycle. Texture fetches are not
    /// held to it, nor are hits, stores and atomics. On an H200 a warp's window around N lanes'
    /// cold lines grows by about 4 cycles a line from 2 to 16 lanes (3.3–4.4 with the fence in
    /// three runs, docs/gpu/divergent-closing.cu), and one SM's `ld.global.cg` stream costs
    /// 3.9, 3.9 and 4.4 cycles a line request with 2, 4 and 8 warps to a sub-partition, where
    /// one warp on each of one to four takes the same time
    /// (docs/gpu/2026-12-06-line-rate.md). Unset: only the SM's port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_line_cycles: Option<u32>,
    /// The order in which the block dispatcher visits the SMs (their ids, `%smid`) as it places
    /// a launch's first blocks: block by block, each to the next SM of this list that has room,
    /// from the list's start again after its end. Every SM must appear; an SM may appear more
    /// than once, as a GPU's dispatcher comes round to some SMs more often. Blocks after the
    /// first wave go to whichever SM frees room first, as before. Unset: 0, 1, …, `count` − 1,
    /// round-robin, so that an SM holds blocks `count` apart. An H100 or H200 visits one GPC at
    /// a time instead, and its placement of a grid's blocks, read from `%smid`
    /// (docs/gpu/block-placement.cu), can be given here to run a grid as silicon placed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_order: Option<Vec<u32>>,
    /// The block dispatcher by units of SMs, as an H100 and an H200 place a launch's first
    /// blocks (the Dispatch table); not with `dispatch_order`. No preset sets it yet;
    /// `docs/gpu/hopper-dispatch.toml` gives those GPUs' units. Unset: `dispatch_order`, or
    /// round-robin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch: Option<Dispatch>,
}

/// A block dispatcher that visits units of SMs (a GPC, or part of one) rather than single SMs,
/// as an H100 and an H200 place a launch's first blocks. It puts 1,860–1,981 of the 2,048
/// blocks of each of three warm launches recorded on both GPUs on the SM silicon ran them on
/// (`docs/gpu/block-placement.cu`, `docs/gpu/2026-12-06-gpc-dispatch.md`). The units are
/// visited in turn, from the first again after the last, and a visit gives one block to each
/// of the unit's SMs that has room, in the order listed. `extra` is a unit visited before the
/// others and again after every `extra_every` visits of the others (the first time after
/// `extra_first`), as those GPUs come round to SMs 124–131 more often; a visit due while none
/// of its SMs may take a block waits, and comes first once one may. Blocks go out in levels:
/// while a launch has fewer blocks than its SMs have room for, no SM takes more than `blocks ÷
/// count` (at least one) until every SM has that many, then one more at a time, and in the last
/// level, which cannot fill every SM, each TPC (`sms_per_tpc` SMs of consecutive ids) takes one
/// block before any takes a second. Blocks after the first wave go to whichever SM frees room
/// first, as with any order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Dispatch {
    /// The units in the order they are visited, each its SMs' ids (`%smid`) in the order a
    /// visit gives them blocks.
    pub units: Vec<Vec<u32>>,
    /// The unit visited first and more often; may be empty. Every SM is in exactly one unit
    /// or here.
    #[serde(default)]
    pub extra: Vec<u32>,
    /// Visits of `units` before `extra`'s second visit.
    #[serde(default = "one")]
    pub extra_first: u32,
    /// Visits of `units` between `extra`'s later visits; at least 1.
    #[serde(default = "one")]
    pub extra_every: u32,
    /// SMs per TPC: SM `i` is in TPC `i ÷ sms_per_tpc`; at least 1.
    #[serde(default = "one")]
    pub sms_per_tpc: u32,
}

fn one() -> u32 {
    1
}

/// Why `d` cannot be `sm.dispatch` on a GPU of `count` SMs, if it cannot.
fn check_dispatch(d: &Dispatch, count: u32) -> Result<(), String> {
    if d.extra_every == 0 || d.sms_per_tpc == 0 {
        return Err("extra_every and sms_per_tpc must be at least 1".into());
    }
    if d.units.is_empty() {
        return Err("units must name at least one unit".into());
    }
    if let Some(i) = d.units.iter().position(Vec::is_empty) {
        return Err(format!("unit {i} names no SM"));
    }
    let mut seen = vec![false; count as usize];
    for (where_, ids) in d
        .units
        .iter()
        .enumerate()
        .map(|(i, u)| (format!("unit {i}"), u))
        .chain([("extra".to_string(), &d.extra)])
    {
        for &id in ids {
            match seen.get_mut(id as usize) {
                None => {
                    return Err(format!(
                        "{where_} names SM {id}, but sm.count is {count} (SMs 0 to {})",
                        count.saturating_sub(1)
                    ));
                }
                Some(true) => return Err(format!("{where_} names SM {id} a second time")),
                Some(s) => *s = true,
            }
        }
    }
    match seen.iter().position(|&s| !s) {
        Some(id) => Err(format!(
            "must name every SM once, so that none is left without blocks; SM {id} is missing"
        )),
        None => Ok(()),
    }
}

fn waits_for_loads() -> bool {
    true
}

/// Why `order` cannot be `sm.dispatch_order` on a GPU of `count` SMs, if it cannot.
fn check_dispatch_order(order: &[u32], count: u32) -> Result<(), String> {
    if let Some((i, id)) = order.iter().enumerate().find(|&(_, &id)| id >= count) {
        return Err(format!(
            "names SM {id} at place {i}, but sm.count is {count} (SMs 0 to {})",
            count.saturating_sub(1)
        ));
    }
    // Every SM named needs at least `count` places; checked first so that the marks below
    // never outnumber the list.
    if order.len() < count as usize {
        return Err(format!(
            "must name every SM, so that none is left without blocks, but has {} places for {count} SMs",
            order.len()
        ));
    }
    let mut seen = vec![false; count as usize];
    for &id in order {
        seen[id as usize] = true;
    }
    let missing: Vec<u32> = (0..count).filter(|&id| !seen[id as usize]).collect();
    if missing.is_empty() {
        Ok(())
    } else {
        let shown: Vec<String> = missing.iter().take(8).map(u32::to_string).collect();
        let more = if missing.len() > 8 { ", …" } else { "" };
        Err(format!(
            "must name every SM, so that none is left without blocks; {} of {count} are missing ({}{more})",
            missing.len(),
            shown.join(", ")
        ))
    }
}

/// Latencies (cycles from issue until a dependent instruction can issue) and issue intervals
/// (cycles a functional unit is busy per warp instruction) by instruction class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PipelineConfig {
    /// Integer and logic instructions.
    pub int_latency_cycles: u32,
    /// Single-precision floating point (add, mul, fma).
    pub fp32_latency_cycles: u32,
    /// Double-precision floating point.
    pub fp64_latency_cycles: u32,
    /// Special functions (`sin`, `rsqrt`, `ex2`, …).
    pub sfu_latency_cycles: u32,
    /// Branches.
    pub branch_latency_cycles: u32,
    /// `%clock`/`%clock64` and other special-register reads.
    pub special_reg_latency_cycles: u32,
    /// Warp shuffles (`shfl.sync`).
    pub shuffle_latency_cycles: u32,
    /// Cycles the integer unit is busy per warp instruction. Where `int_split` is set, the
    /// unit of the integer operations it does not name: multiplies, shifts, `min`/`max`,
    /// `prmt`, bit-field operations.
    pub int_issue_cycles: u32,
    /// Cycles the FP32 unit is busy per warp instruction.
    pub fp32_issue_cycles: u32,
    /// Cycles the FP64 unit is busy per warp instruction.
    pub fp64_issue_cycles: u32,
    /// Cycles the special-function unit is busy per warp instruction.
    pub sfu_issue_cycles: u32,
    /// Cycles the load/store unit is busy per warp memory or texture instruction.
    pub mem_issue_cycles: u32,
    /// What an integer `div` or `rem` costs, as the instruction sequence a GPU runs for it.
    /// Unset, one integer instruction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub int_division: Option<IntDivision>,
    /// Integer operations that issue at other rates than `int_issue_cycles`, each group on a
    /// unit of its own beside it. Unset, every integer instruction issues on one unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub int_split: Option<IntSplit>,
    /// Moves that take no issue slot and no time, as ptxas allocates registers so that they
    /// vanish from the SASS: an unguarded `mov` from a register (a float's bits included) and
    /// a `cvt` that narrows an integer. The next instruction may issue in the same cycle, and
    /// the moved value is ready when its source is. Unset, every PTX instruction issues.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub free_register_moves: bool,
    /// Loads and texture fetches issue where ptxas schedules them: each moves up its basic
    /// block past the arithmetic that neither computes its operands nor reads or writes its
    /// destinations, stopping at any other memory access, barrier, fence, branch, shuffle or
    /// special-register read (a probe's clock reads included), and at arithmetic the SASS runs
    /// with a branch or a call (a float division, reciprocal or square root rounded to nearest,
    /// a 64-bit integer division or remainder). nvcc's PTX often puts each load
    /// right before its use, where the SASS issues a block's loads back to back and keeps them
    /// in flight together. Unset, the PTX's order.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hoist_loads: bool,
    /// Runs of plain arithmetic within a basic block issue in the order a list scheduler gives
    /// them, as ptxas orders its SASS: of the instructions whose operands are computed, the one
    /// with the longest chain of latencies after it first (a 32-bit division's is
    /// `int_division`'s), ties in the PTX's order. A run ends at any other instruction (a
    /// memory access, branch, barrier, special-register read) and at arithmetic that reads or
    /// writes the carry flag. `divisions` lists only the runs that hold a 32-bit integer
    /// division or remainder, whose independent divisions then issue together where nvcc's PTX
    /// puts each quotient's use before the next division's operands; `all` lists every run.
    /// A run of more than 256 instructions is listed in windows of 256. Unset, the PTX's order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_arithmetic: Option<ListArithmetic>,
}

impl PipelineConfig {
    /// The fewest cycles an integer warp instruction holds its unit: the integer unit's, or
    /// where integer issue is split, the fastest group's. A scheduler issues one instruction a
    /// cycle, so this bounds its integer rate.
    pub fn int_peak_issue_cycles(&self) -> u32 {
        self.int_split.map_or(self.int_issue_cycles, |x| {
            self.int_issue_cycles.min(x.logic_add_issue_cycles)
        })
    }
}

/// Which runs of arithmetic a preset lists as ptxas would (`pipeline.list_arithmetic`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ListArithmetic {
    /// The runs that hold a 32-bit integer division or remainder.
    Divisions,
    /// Every run.
    All,
}

/// The integer operations a GPU issues on units of their own, at their own rates. Each group
/// has its unit, so a warp instruction of one group and one of another issue on consecutive
/// cycles. An operation of the first group on 64-bit operands (an add, subtract, logic
/// operation, compare or select) takes two of its scheduler's issue slots, as the GPU runs it
/// as two 32-bit instructions (a low and a high half: IADD3 and IADD3.X, two LOP3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IntSplit {
    /// Cycles the unit is busy per warp instruction of logic operations (`and`, `or`, `xor`,
    /// `not`, `lop3`), adds and subtractions (with carry, and `neg`), integer compares and
    /// selects, moves, and conversions between integer types.
    pub logic_add_issue_cycles: u32,
    /// Cycles the unit is busy per warp instruction of `popc`, `clz` and `bfind`.
    pub bit_count_issue_cycles: u32,
    /// Cycles the unit is busy per warp instruction of a conversion between an integer and
    /// a single- or half-precision float (`cvt` both ways; double-precision conversions stay
    /// on the FP64 unit).
    pub conversion_issue_cycles: u32,
}

/// Integer division as a GPU runs it. No GPU divides integers in one instruction: ptxas turns
/// a PTX 32-bit `div` or `rem` into an inline sequence (a reciprocal estimate, refined by
/// integer multiplies and corrected), and a 64-bit one into a call to a longer routine
/// (`CALL.REL.NOINC`, SASS of ptxas 13.0 for sm_75, sm_80 and sm_90). nvcc's PTX for a 64-bit
/// division first tests whether every lane's operands fit in 32 bits and divides in 32 bits if
/// so. The model times a 64-bit division by its lanes' operands, a warp whose lanes go both
/// ways running both, one after the other. Each entry is per type; `rem` is charged as `div`
/// (its sequence is one to six instructions shorter).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IntDivision {
    /// 32-bit (and 16-bit) unsigned.
    pub u32: InstructionSequence,
    /// 32-bit (and 16-bit) signed.
    pub s32: InstructionSequence,
    /// 64-bit, signed or not, where a lane's operands both fit in 32 bits (unsigned).
    pub narrow64: InstructionSequence,
    /// 64-bit unsigned, where a lane's operands do not.
    pub u64: InstructionSequence,
    /// 64-bit signed, where a lane's operands do not.
    pub s64: InstructionSequence,
    /// Whether a 64-bit division first waits for every register write its warp has pending.
    /// ptxas makes it a call, and it sets the call to wait on every dependency barrier the
    /// warp holds: a load that nothing before the division reads holds it back until its
    /// data is in, and two 64-bit divisions of one warp never overlap. The 32-bit sequences
    /// are inline code, which waits for its own operands alone.
    pub call_waits_for_scoreboard: bool,
}

/// An instruction sequence the model times as one warp instruction: it takes `instructions`
/// of its scheduler's issue slots, the first at its issue and the others spread evenly over
/// its latency, and its result is ready `latency_cycles` after its issue. Other warps, and the
/// same warp's independent instructions, issue in the cycles between, as a GPU issues them in
/// the gaps the sequence's own dependencies leave; where issue is the limit, the sequence's
/// instructions queue and its result waits for the last of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstructionSequence {
    /// Instructions issued; at least 1.
    pub instructions: u32,
    /// Cycles from the first instruction's issue until the result can be read; at least
    /// `instructions`.
    pub latency_cycles: u32,
}

impl InstructionSequence {
    /// Both in turn, as a warp whose lanes take both paths of a branch runs them.
    pub fn then(self, next: InstructionSequence) -> InstructionSequence {
        InstructionSequence {
            instructions: self.instructions.saturating_add(next.instructions),
            latency_cycles: self.latency_cycles.saturating_add(next.latency_cycles),
        }
    }
}

/// Which line a full set gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Replacement {
    /// Least recently used.
    Lru,
    /// First in, first out (oldest fill).
    Fifo,
}

/// One set-associative, sectored cache. Sets = `size_bytes / (line_bytes × ways)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    /// Capacity in bytes.
    pub size_bytes: u32,
    /// Line size in bytes: the unit of tags and of allocation.
    pub line_bytes: u32,
    /// Fill granularity; equal to `line_bytes` for an unsectored cache.
    pub sector_bytes: u32,
    /// Associativity: lines per set.
    pub ways: u32,
    /// Hit latency, end to end from issue (see the module docs for how levels compose).
    pub latency_cycles: u32,
    /// Which line a full set gives up.
    pub replacement: Replacement,
    /// Lines in flight from below: a line that misses, and at the L1 a line an L1-skipping load
    /// reads, each hold one until answered; with none free a line waits for the earliest.
    pub mshrs: u32,
    /// Cycles of the cache's port that a line with a sector to fetch takes; a line whose
    /// sectors all hit, or merge with sectors in flight, takes one. How fast the cache sends
    /// its misses on to the L2 (1 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miss_line_cycles: Option<u32>,
}

/// The texture path: a fixed pipeline latency on top of a cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TextureConfig {
    /// Volta and later: texture and read-only loads share the L1 data cache. Fermi: a separate
    /// per-SM texture cache (`texture.cache`).
    pub unified_with_l1: bool,
    /// Address computation, filtering and return through the texture unit, added to the cache
    /// latency of every texture fetch.
    pub pipeline_latency_cycles: u32,
    /// Required when `unified_with_l1 = false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheConfig>,
    /// Texture fetches return their data to the warps in the order the SM issued them, so a
    /// fetch whose texels all hit waits for the misses of every fetch before it: the in-order
    /// texture cache of Igehy et al. (1998), which GPGPU-Sim models. Off: each fetch completes
    /// when its own texels are there.
    #[serde(default)]
    pub in_order: bool,
    /// Sector lookups the texture unit's tag stage makes a cycle (Nsight Compute's texture
    /// lookups: a warp's trilinear fetch looks up each pair of lanes' distinct sectors). A
    /// texture fetch holds the cache's port for its lookups at this rate, or for its lines if
    /// those take longer. Absent: only the lines count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lookups_per_cycle: Option<u32>,
    /// With `unified_with_l1`: cycles of the L1's port that a texture fetch's line with a sector
    /// to fetch takes (`l1.miss_line_cycles`, a global load's, when absent). A separate texture
    /// cache sets its own (`texture.cache.miss_line_cycles`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miss_line_cycles: Option<u32>,
    /// How textures (cudaArrays) are laid out in device memory, which decides the addresses, and
    /// so the cache lines and sets, a texture fetch touches. A 1D array is laid out as a 2D one
    /// of one row; a texture over linear memory (`tex1Dfetch`) is always linear.
    #[serde(default)]
    pub layout: TextureLayout,
}

/// Storage layout of textures (cudaArrays); the texture module's docs give the address functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TextureLayout {
    /// NVIDIA's block-linear cudaArray layout: 64-byte × 8-row GOBs stacked into blocks whose
    /// height and depth in GOBs the driver picks from the extent (the default: what a GPU does).
    #[default]
    BlockLinear,
    /// 3D textures in symmetric 8×8×8-texel bricks, 1D and 2D ones row-major: the emulator's
    /// layout before block-linear, kept to compare against.
    Bricks,
    /// Row-major (x fastest, then y, then z): the untiled baseline.
    Linear,
}

impl TextureLayout {
    /// Every layout, in the order the studies report them.
    pub const ALL: [TextureLayout; 3] = [
        TextureLayout::BlockLinear,
        TextureLayout::Bricks,
        TextureLayout::Linear,
    ];

    /// The name used in config files and reports (`block-linear`, `bricks`, `linear`).
    pub fn name(self) -> &'static str {
        match self {
            TextureLayout::BlockLinear => "block-linear",
            TextureLayout::Bricks => "bricks",
            TextureLayout::Linear => "linear",
        }
    }
}

impl std::fmt::Display for TextureLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Shared memory: banks serve one 4-byte word each per cycle; lanes reading the same word are
/// served together (broadcast).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SharedConfig {
    /// Latency of a conflict-free access, from issue.
    pub latency_cycles: u32,
    /// Banks, each serving one word per cycle.
    pub banks: u32,
    /// Width of a bank's word in bytes.
    pub bank_width_bytes: u32,
    /// Cycles each further lane of a warp's atomic adds when its lanes hit one word (they
    /// serialize). Unset: 1. An H200 took 97.7 cycles a dependent step for 32 lanes adding to
    /// one word and 29.2 for one lane: 2.2 cycles per further lane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_word_atomic_cycles: Option<f64>,
}

/// The shared L2, split into slices selected by a hash of the line address.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct L2Config {
    /// Total over all slices.
    pub size_bytes: u64,
    /// Power of two (the slice hash XOR-folds address bits).
    pub slices: u32,
    /// Line size in bytes.
    pub line_bytes: u32,
    /// Fill granularity in bytes.
    pub sector_bytes: u32,
    /// Associativity: lines per set.
    pub ways: u32,
    /// Added to the requesting L1's latency on an L1 miss that hits in L2.
    pub latency_cycles: u32,
    /// Added to `constant.latency_cycles` on a constant read that misses every constant level
    /// and hits in L2, in place of `latency_cycles`: a GPU's constant caches may reach the L2 by
    /// a way of their own. On an H200 a constant line no SM held took about 150 cycles from the
    /// L2 where a global load's L2 hit takes 281 (docs/gpu/const-latency.cu). Unset:
    /// `latency_cycles`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constant_latency_cycles: Option<u32>,
    /// A write to a `__constant__` variable (`cudaMemcpyToSymbol`) leaves its lines in the L2
    /// for the next launch, where a write to global memory leaves the L2 as it was. On an H200
    /// a constant array that no SM had read took 182-192 cycles a step right after its upload,
    /// as lines another SM had read took from the L2 (docs/gpu/const-sharing.cu), not a DRAM
    /// read's 540 or more; uploads of global buffers of 1-16 MB stayed at most in part
    /// (docs/gpu/upload-warmth.cu), and small ones are not measured. A launch's parameters,
    /// which the driver uploads to constant memory too, are held the same way.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub holds_constant_uploads: bool,
    /// Which line a full set gives up.
    pub replacement: Replacement,
    /// Bytes each slice moves per cycle.
    pub bandwidth_bytes_per_cycle: f64,
    /// Bytes the L2 reads from DRAM for a missed sector: the aligned block holding it, every
    /// sector of which not already in the slice is filled (and counted as DRAM bytes read).
    /// Unset: the sector alone. On an H100 and an H200 the context's L2 fetch granularity
    /// (`cudaLimitMaxL2FetchGranularity`) reads 64 by default, and reading every other 32-byte
    /// sector made DRAM move twice the bytes asked for (ncu's `dram__bytes_read.sum`) and took
    /// twice the time of reading them all; set to 32, it took 1.1x (docs/gpu/dram-granularity.cu).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetch_bytes: Option<u32>,
    /// Each slice's atomic unit, which serves the read-modify-writes of global atomics one request
    /// after another, per L2 line a request touches: `same_address_cycles` per operation on its
    /// most contended word, plus `address_cycles` per further word. Unset: a request's lanes on
    /// one word add a cycle each and requests of different warps are not serialised. On an H200
    /// atomics to one word ran at 0.69 per SM clock whether one lane of each warp or all 32 sent
    /// them, and a warp's 32 lanes on 32 words of one line at 6.9 (docs/gpu/contention.cu).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atomic_unit: Option<AtomicUnit>,
}

/// The L2 slice's atomic unit (`l2.atomic_unit`); cycles are SM cycles, fractions allowed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AtomicUnit {
    /// Cycles per operation on the request's most contended word.
    pub same_address_cycles: f64,
    /// Cycles per further word the request touches in the line.
    pub address_cycles: f64,
    /// The address bits that pick a line's unit among its partition's slices, one list per bit
    /// of the unit's number: that bit is the XOR of the address bits listed. Address bits above
    /// the highest listed fold onto the unit's number as the slices' XOR fold folds a line's.
    /// Unset: a line's unit is its slice's. On an H200 two consecutive lines shared a unit,
    /// four reached two and eight still two, and lines 4 KiB apart reached a new unit each up to
    /// 16 (64 KiB) and no more at 32 (docs/gpu/atomic-units.cu): bits 8 and 9 pick alike, 10
    /// and 11 each add one, and bit 16 folds onto those below it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<Vec<u32>>>")]
    pub unit_address_bits: Option<UnitBits>,
    /// Global atomics (`atom` and `red` naming `.global`) an SM may have in flight, sent and
    /// not yet acknowledged: a warp whose atomic would go past these waits to send it until the
    /// oldest is acknowledged. Unset: no limit, and no warp waits for an atomic whose result it
    /// does not read. On an H200 a grid of 64 blocks per SM, each sending two atomics to one
    /// line, spanned what the line's unit takes for all but about 64 per SM, where 16 blocks per
    /// SM waited for none (docs/gpu/launch-overhead.cu).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight_per_sm: Option<u32>,
}

/// Address bits XORed into each bit of a number (`l2.atomic_unit.unit_address_bits`), written
/// as lists of bit numbers and held as masks, so that the config stays `Copy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<Vec<u32>>", into = "Vec<Vec<u32>>")]
pub struct UnitBits {
    masks: [u64; UnitBits::MOST],
    len: u8,
}

impl UnitBits {
    /// The most bits a number may have: units for 256 slices in a partition.
    const MOST: usize = 8;

    /// One address mask per bit of the number, lowest first.
    pub fn masks(&self) -> &[u64] {
        &self.masks[..usize::from(self.len)]
    }

    /// The lowest address bit any list names.
    pub fn lowest(&self) -> u32 {
        self.masks().iter().fold(0, |a, m| a | m).trailing_zeros()
    }

    /// The highest address bit any list names.
    pub fn highest(&self) -> u32 {
        63 - self.masks().iter().fold(0, |a, m| a | m).leading_zeros()
    }
}

impl TryFrom<Vec<Vec<u32>>> for UnitBits {
    type Error = String;

    fn try_from(lists: Vec<Vec<u32>>) -> Result<Self, String> {
        if lists.is_empty() || lists.len() > Self::MOST {
            return Err(format!(
                "must give 1 to {} lists of address bits, got {}",
                Self::MOST,
                lists.len()
            ));
        }
        let mut out = UnitBits {
            masks: [0; Self::MOST],
            len: lists.len() as u8,
        };
        let mut seen = 0u64;
        for (mask, list) in out.masks.iter_mut().zip(&lists) {
            if list.is_empty() {
                return Err("each list must name at least one address bit".into());
            }
            for &b in list {
                let bit = 1u64
                    .checked_shl(b)
                    .ok_or_else(|| format!("address bit {b} is past bit 63"))?;
                if seen & bit != 0 {
                    return Err(format!("address bit {b} is listed twice"));
                }
                seen |= bit;
                *mask |= bit;
            }
        }
        Ok(out)
    }
}

impl From<UnitBits> for Vec<Vec<u32>> {
    fn from(u: UnitBits) -> Self {
        u.masks()
            .iter()
            .map(|&m| (0..64).filter(|b| m >> b & 1 == 1).collect())
            .collect()
    }
}

/// Device memory: a latency and a bandwidth shared by all slices, optionally its rows, and
/// optionally its partitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DramConfig {
    /// Added to the L2-hit latency on an L2 miss.
    pub latency_cycles: u32,
    /// Bytes DRAM moves per SM clock cycle, shared by every L2 slice (an equal share per
    /// partition, `partitions`).
    pub bandwidth_bytes_per_cycle: f64,
    /// Row buffers: reads that find their row open cost only their bytes, reads that open a
    /// row cost more. Unset: every read costs its bytes, whatever the pattern.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<DramRows>,
    /// Memory partitions, a power of two up to `l2.slices`: each has its own DRAM channel at
    /// this share of the bandwidth, its own banks (`dram.rows`' banks, grouped by the top bits
    /// of their numbers) and the L2 slices in front of them, and shares nothing with the others,
    /// as a GPU's memory controllers each own their channels and L2 slices. The engine then
    /// answers each partition's L2 requests on a thread of its own. Unset: one, every slice in
    /// front of one DRAM queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitions: Option<u32>,
    /// The order a DRAM channel serves the reads queued at it; unset, `arrival`. No preset sets
    /// it: on the h200 preset `shuffled` brings the chases beside a saturating background from
    /// 1.8-2.5x the H200's wait to 1.3-1.7x, but slows streams of 2 to 8 blocks per SM to
    /// 0.77-0.90 of the H200's rate, which agree in arrival order
    /// (docs/gpu/2026-12-02-dram-order.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<DramOrder>,
}

/// The order a DRAM channel serves its queued reads (`dram.order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DramOrder {
    /// In the order the reads reach it: a read waits for the whole backlog in front of it.
    Arrival,
    /// A read waits for a part of the backlog in front of it, drawn from its line and arrival
    /// cycle, uniform from none to all of it: a stand-in for the controllers' reordering by bank
    /// and row, under which a lone read passes most of a backlog and a warp whose reads span
    /// many of them waits for its slowest. The channel's bandwidth is spent as in arrival order.
    Shuffled,
    /// As `shuffled`, but a read waits for the smaller of two drawn parts: a third of the
    /// backlog on average where `shuffled` waits half, as a controller that serves the reads
    /// of an open row first lets most lone reads pass.
    Front,
}

impl DramConfig {
    /// The memory partitions' count: `partitions`, or one when unset.
    pub fn partition_count(&self) -> u32 {
        self.partitions.unwrap_or(1)
    }
}

/// DRAM's open rows, which make scattered reads slower than a stream. Addresses go to `banks`
/// banks in chunks of `interleave_bytes`, one chunk per bank in turn, so each bank's page of
/// `page_bytes` holds chunks `banks × interleave_bytes` apart (the order of the banks is
/// permuted per stripe of `banks × page_bytes`). A read from the L2 (a missed fetch block)
/// costs its bytes of DRAM time, and `row_miss_bytes` more for each chunk whose page it opens.
/// Write-backs of dirty lines cost their bytes only. A memory controller gathers the queued
/// reads of a row before it closes it, which the model, taking reads in issue order, stands in
/// for by keeping each bank's `reorder_rows` rows served last open.
///
/// Interleaved finely, a stream keeps every bank in one page while reads spread over many
/// stripes open a page per chunk, however long their runs. On an H100, reading every sector
/// once in scattered order runs at 0.96, 0.79 and 0.66 of the stream's rate inside 2 KiB, 2 MiB
/// and 8 MiB blocks, random runs of 128 B to 16 KiB of adjacent sectors at 0.66 whatever their
/// length, and random 64-byte reads at 0.61 (docs/gpu/dram-granularity.cu). The stream there
/// reads four places 256 MiB apart at once, so it needs 4 rows per bank to run at its rate;
/// with 8, reads scattered over 2 MiB would too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DramRows {
    /// Banks across the device, each with its own open rows; a power of two.
    pub banks: u32,
    /// Bytes of a page (row), a power of two of at least an L2 line.
    pub page_bytes: u32,
    /// Bytes of a chunk: consecutive chunks go to different banks. A power of two from an L2
    /// sector to `page_bytes`; unset, a whole page goes to one bank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleave_bytes: Option<u32>,
    /// What opening a page costs, in bytes of DRAM transfer time.
    pub row_miss_bytes: u32,
    /// Rows per bank whose reads its controller gathers: a read of any of the rows a bank
    /// served last finds it open. From 1 to 64; unset, 1: the row it served last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder_rows: Option<u32>,
    /// Cycles a bank keeps a row open after its last read: a read of one of its
    /// `reorder_rows` rows that no read used for longer opens it again, as a controller's queue
    /// gathers only the reads of a row that wait in it together. From 1 to 1,000,000; unset,
    /// rows stay open until newer ones push them out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_cycles: Option<u32>,
    /// What the banks' order is permuted for; unset, `stripe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permute_per: Option<BankPermutation>,
}

/// What a new permutation of the banks' order comes with (`dram.rows.permute_per`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BankPermutation {
    /// Each stripe of `banks × page_bytes`: chunks a round of the banks apart
    /// (`banks × interleave_bytes`) go to one bank, the same page.
    Stripe,
    /// Each round of the banks, one chunk per bank: the chunks of a bank's page lie at hashed
    /// places in their stripe, as a GPU's address hash folds the bits above the bank's into
    /// its choice, so reads a whole number of rounds apart go to different banks.
    Round,
}

/// End-to-end unloaded latencies (cycles from issue to data in a register) the configured
/// components add up to; what a dependent pointer chase measures on an idle GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct UnloadedLatencies {
    pub l1_hit: u64,
    pub l2_hit: u64,
    pub dram: u64,
    pub texture_hit: u64,
    pub constant_hit: u64,
    /// A constant read that misses every constant level and hits in L2.
    pub constant_l2_hit: u64,
    pub shared: u64,
    /// A global store, from issue until it is done for its warp (the CTA sees it: what a CTA
    /// fence waits for): `sm.store_visible_cycles`, or the whole L1 stage where unset.
    pub store_visible: u64,
}

impl GpuConfig {
    /// The names [`GpuConfig::preset`] accepts.
    pub fn preset_names() -> Vec<&'static str> {
        PRESETS.iter().map(|(n, _)| *n).collect()
    }

    /// A built-in preset by name (`gtx480`, `v100`, `a100`, `h100`, `h200`).
    pub fn preset(name: &str) -> Result<Self, ConfigError> {
        Self::from_toml_str(preset_text(name)?, &format!("preset {name}"))
    }

    /// Parses and validates TOML; `origin` (a path or `preset NAME`) prefixes every error. A
    /// `base = "PRESET"` key takes that built-in preset's values for every key the text leaves
    /// out.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Self, ConfigError> {
        let parse = |e| parse_error(origin, e);
        let cfg: GpuConfig = match with_base(text, origin)? {
            (merged, true) => toml::Value::Table(merged).try_into().map_err(parse)?,
            // Parsed from the text itself, so that an error gives its line.
            (_, false) => toml::from_str(text).map_err(parse)?,
        };
        cfg.validate(origin)?;
        Ok(cfg)
    }

    /// Reads, parses and validates a TOML file.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            origin: origin.clone(),
            source,
        })?;
        Self::from_toml_str(&text, &origin)
    }

    /// The effective configuration as TOML (written next to every result).
    pub fn to_toml(&self) -> String {
        // Every field is a plain number, string, bool or table, which TOML always represents;
        // the fallback keeps a library panic out of the picture all the same.
        toml::to_string(self)
            .unwrap_or_else(|e| format!("# cannot write the config as TOML: {e}\n"))
    }

    /// End-to-end unloaded latencies; see the module docs for the composition.
    pub fn unloaded_latencies(&self) -> UnloadedLatencies {
        let l1 = u64::from(self.l1.latency_cycles);
        let l2 = u64::from(self.l2.latency_cycles);
        let tex_cache = self
            .texture
            .cache
            .as_ref()
            .filter(|_| !self.texture.unified_with_l1)
            .map_or(l1, |c| u64::from(c.latency_cycles));
        UnloadedLatencies {
            l1_hit: l1,
            l2_hit: l1 + l2,
            dram: l1 + l2 + u64::from(self.dram.latency_cycles),
            texture_hit: u64::from(self.texture.pipeline_latency_cycles) + tex_cache,
            constant_hit: u64::from(self.constant.latency_cycles),
            constant_l2_hit: u64::from(self.constant.latency_cycles)
                + u64::from(
                    self.l2
                        .constant_latency_cycles
                        .unwrap_or(self.l2.latency_cycles),
                ),
            shared: u64::from(self.shared.latency_cycles),
            store_visible: self.sm.store_visible_cycles.map_or(l1, u64::from),
        }
    }

    /// The memory partitions the memory model builds: `dram.partitions` kept within one and
    /// `l2.slices`, so that each holds at least one slice.
    pub fn memory_partitions(&self) -> u32 {
        self.dram.partition_count().clamp(1, self.l2.slices.max(1))
    }

    /// Checks every field's range and the relations between fields; the error names the field.
    pub fn validate(&self, origin: &str) -> Result<(), ConfigError> {
        let err = |field: &str, message: String| ConfigError::Invalid {
            origin: origin.to_string(),
            field: field.to_string(),
            message,
        };
        if self.name.is_empty() {
            return Err(err("name", "must not be empty".into()));
        }
        if !(self.clock_mhz.is_finite() && self.clock_mhz > 0.0) {
            return Err(err(
                "clock_mhz",
                format!("must be a positive number, got {}", self.clock_mhz),
            ));
        }
        let sm = &self.sm;
        for (field, v) in [
            ("sm.count", sm.count),
            ("sm.max_threads", sm.max_threads),
            ("sm.max_warps", sm.max_warps),
            ("sm.max_blocks", sm.max_blocks),
            ("sm.max_threads_per_block", sm.max_threads_per_block),
            ("sm.registers", sm.registers),
            ("sm.register_alloc_unit", sm.register_alloc_unit),
            ("sm.max_registers_per_thread", sm.max_registers_per_thread),
            ("sm.shared_alloc_unit_bytes", sm.shared_alloc_unit_bytes),
            ("sm.warp_schedulers", sm.warp_schedulers),
            ("sm.issue_per_scheduler", sm.issue_per_scheduler),
        ] {
            positive(v).map_err(|m| err(field, m))?;
        }
        if let Some(arch) = sm.sass_arch.filter(|a| *a < 75) {
            return Err(err(
                "sm.sass_arch",
                format!("must be 75 or later (today's ptxas targets no older SM), got {arch}"),
            ));
        }
        if sm.max_threads_per_block > sm.max_threads {
            return Err(err(
                "sm.max_threads_per_block",
                format!(
                    "must not exceed sm.max_threads ({}), got {}",
                    sm.max_threads, sm.max_threads_per_block
                ),
            ));
        }
        if sm.max_threads > sm.max_warps.saturating_mul(32) {
            return Err(err(
                "sm.max_threads",
                format!(
                    "must not exceed 32 × sm.max_warps ({}), got {}",
                    sm.max_warps.saturating_mul(32),
                    sm.max_threads
                ),
            ));
        }
        if let Some(order) = &sm.dispatch_order {
            check_dispatch_order(order, sm.count).map_err(|m| err("sm.dispatch_order", m))?;
        }
        if let Some(d) = &sm.dispatch {
            if sm.dispatch_order.is_some() {
                return Err(err(
                    "sm.dispatch",
                    "names a dispatcher by units, and sm.dispatch_order one by SMs: set one".into(),
                ));
            }
            check_dispatch(d, sm.count).map_err(|m| err("sm.dispatch", m))?;
        }
        within(sm.scheduler_line_cycles, 1, 1000)
            .map_err(|m| err("sm.scheduler_line_cycles", m))?;
        if sm.max_shared_bytes_per_block > sm.shared_bytes {
            return Err(err(
                "sm.max_shared_bytes_per_block",
                format!(
                    "must not exceed sm.shared_bytes ({}), got {}",
                    sm.shared_bytes, sm.max_shared_bytes_per_block
                ),
            ));
        }
        let p = &self.pipeline;
        for (field, v) in [
            ("pipeline.int_issue_cycles", p.int_issue_cycles),
            ("pipeline.fp32_issue_cycles", p.fp32_issue_cycles),
            ("pipeline.fp64_issue_cycles", p.fp64_issue_cycles),
            ("pipeline.sfu_issue_cycles", p.sfu_issue_cycles),
            ("pipeline.mem_issue_cycles", p.mem_issue_cycles),
        ] {
            positive(v).map_err(|m| err(field, m))?;
        }
        if let Some(x) = &p.int_split {
            for (field, v) in [
                (
                    "pipeline.int_split.logic_add_issue_cycles",
                    x.logic_add_issue_cycles,
                ),
                (
                    "pipeline.int_split.bit_count_issue_cycles",
                    x.bit_count_issue_cycles,
                ),
                (
                    "pipeline.int_split.conversion_issue_cycles",
                    x.conversion_issue_cycles,
                ),
            ] {
                positive(v).map_err(|m| err(field, m))?;
            }
        }
        if let Some(d) = &p.int_division {
            for (field, q) in [
                ("pipeline.int_division.u32", d.u32),
                ("pipeline.int_division.s32", d.s32),
                ("pipeline.int_division.narrow64", d.narrow64),
                ("pipeline.int_division.u64", d.u64),
                ("pipeline.int_division.s64", d.s64),
            ] {
                positive(q.instructions).map_err(|m| err(&format!("{field}.instructions"), m))?;
                if q.latency_cycles < q.instructions {
                    return Err(err(
                        &format!("{field}.latency_cycles"),
                        format!(
                            "must be at least instructions ({}): one issues per cycle, got {}",
                            q.instructions, q.latency_cycles
                        ),
                    ));
                }
            }
        }
        validate_cache(&self.l1, "l1").map_err(|(f, m)| err(&f, m))?;
        validate_cache(&self.constant, "constant").map_err(|(f, m)| err(&f, m))?;
        if let Some(c) = &self.constant_second_level {
            validate_cache(c, "constant_second_level").map_err(|(f, m)| err(&f, m))?;
            // The first level hands its missing line on as it is, and a hit below it is never
            // sooner than one in it.
            let first = &self.constant;
            if (c.line_bytes, c.sector_bytes) != (first.line_bytes, first.sector_bytes) {
                return Err(err(
                    "constant_second_level.line_bytes",
                    format!(
                        "lines and sectors must be the first level's ({} and {} bytes), got {} and {}",
                        first.line_bytes, first.sector_bytes, c.line_bytes, c.sector_bytes
                    ),
                ));
            }
            if c.latency_cycles < first.latency_cycles {
                return Err(err(
                    "constant_second_level.latency_cycles",
                    format!(
                        "must be at least constant.latency_cycles ({}), got {}",
                        first.latency_cycles, c.latency_cycles
                    ),
                ));
            }
        }
        match (&self.texture.cache, self.texture.unified_with_l1) {
            (Some(c), false) => validate_cache(c, "texture.cache").map_err(|(f, m)| err(&f, m))?,
            (None, false) => {
                return Err(err(
                    "texture.cache",
                    "required when texture.unified_with_l1 = false".into(),
                ));
            }
            (Some(_), true) => {
                return Err(err(
                    "texture.cache",
                    "must be absent when texture.unified_with_l1 = true (the L1 serves textures)"
                        .into(),
                ));
            }
            (None, true) => {}
        }
        within(self.texture.lookups_per_cycle, 1, 64)
            .map_err(|m| err("texture.lookups_per_cycle", m))?;
        if self.texture.miss_line_cycles.is_some() && !self.texture.unified_with_l1 {
            return Err(err(
                "texture.miss_line_cycles",
                "applies to a texture path unified with the L1; a separate texture cache sets \
                 texture.cache.miss_line_cycles"
                    .into(),
            ));
        }
        within(self.texture.miss_line_cycles, 1, 1000)
            .map_err(|m| err("texture.miss_line_cycles", m))?;
        let sh = &self.shared;
        positive(sh.banks).map_err(|m| err("shared.banks", m))?;
        power_of_two(sh.bank_width_bytes).map_err(|m| err("shared.bank_width_bytes", m))?;
        if let Some(c) = sh.same_word_atomic_cycles
            && !(c.is_finite() && (1.0..=1000.0).contains(&c))
        {
            return Err(err(
                "shared.same_word_atomic_cycles",
                format!("{c} is not a number of cycles in 1–1000"),
            ));
        }
        let l2 = &self.l2;
        power_of_two(l2.slices).map_err(|m| err("l2.slices", m))?;
        let l2_slice = CacheConfig {
            size_bytes: u32::try_from(l2.size_bytes / u64::from(l2.slices)).map_err(|_| {
                err(
                    "l2.size_bytes",
                    format!("per-slice size must fit in 32 bits, got {}", l2.size_bytes),
                )
            })?,
            line_bytes: l2.line_bytes,
            sector_bytes: l2.sector_bytes,
            ways: l2.ways,
            latency_cycles: l2.latency_cycles,
            replacement: l2.replacement,
            mshrs: 1,
            miss_line_cycles: None,
        };
        if !l2.size_bytes.is_multiple_of(u64::from(l2.slices)) {
            return Err(err(
                "l2.size_bytes",
                format!(
                    "must divide evenly into {} slices, got {}",
                    l2.slices, l2.size_bytes
                ),
            ));
        }
        validate_cache(&l2_slice, "l2").map_err(|(f, m)| {
            if f == "l2.size_bytes" {
                err(&f, format!("{m} per slice ({} slices)", l2.slices))
            } else {
                err(&f, m)
            }
        })?;
        positive_f64(l2.bandwidth_bytes_per_cycle)
            .map_err(|m| err("l2.bandwidth_bytes_per_cycle", m))?;
        // An L2 hit is never sooner than a hit in the constant level it answers for.
        let last = self
            .constant_second_level
            .as_ref()
            .unwrap_or(&self.constant);
        if let Some(c) = l2.constant_latency_cycles
            && u64::from(self.constant.latency_cycles) + u64::from(c)
                < u64::from(last.latency_cycles)
        {
            return Err(err(
                "l2.constant_latency_cycles",
                format!(
                    "with constant.latency_cycles ({}) must reach the last constant level's \
                     latency_cycles ({}), got {c}",
                    self.constant.latency_cycles, last.latency_cycles
                ),
            ));
        }
        if let Some(rows) = &self.dram.rows {
            power_of_two(rows.banks).map_err(|m| err("dram.rows.banks", m))?;
            power_of_two(rows.page_bytes).map_err(|m| err("dram.rows.page_bytes", m))?;
            if rows.page_bytes < l2.line_bytes {
                return Err(err(
                    "dram.rows.page_bytes",
                    format!(
                        "must be at least l2.line_bytes ({}), got {}",
                        l2.line_bytes, rows.page_bytes
                    ),
                ));
            }
            if let Some(chunk) = rows.interleave_bytes {
                power_of_two_within(
                    chunk,
                    ("l2.sector_bytes", l2.sector_bytes),
                    ("dram.rows.page_bytes", rows.page_bytes),
                )
                .map_err(|m| err("dram.rows.interleave_bytes", m))?;
            }
            within(rows.reorder_rows, 1, 64).map_err(|m| err("dram.rows.reorder_rows", m))?;
            within(rows.open_cycles, 1, 1_000_000).map_err(|m| err("dram.rows.open_cycles", m))?;
        }
        if let Some(fetch) = l2.fetch_bytes {
            power_of_two_within(
                fetch,
                ("sector_bytes", l2.sector_bytes),
                ("line_bytes", l2.line_bytes),
            )
            .map_err(|m| err("l2.fetch_bytes", m))?;
        }
        if let Some(u) = l2.atomic_unit {
            positive_f64(u.same_address_cycles)
                .map_err(|m| err("l2.atomic_unit.same_address_cycles", m))?;
            positive_f64(u.address_cycles).map_err(|m| err("l2.atomic_unit.address_cycles", m))?;
            if let Some(n) = u.in_flight_per_sm {
                positive(n).map_err(|m| err("l2.atomic_unit.in_flight_per_sm", m))?;
            }
            if let Some(bits) = u.unit_address_bits {
                let per_part = l2.slices / self.memory_partitions();
                let field = "l2.atomic_unit.unit_address_bits";
                if bits.lowest() < l2.line_bytes.trailing_zeros() {
                    return Err(err(
                        field,
                        format!(
                            "address bit {} lies within a line (line_bytes {}), whose atomics \
                             one unit serves",
                            bits.lowest(),
                            l2.line_bytes
                        ),
                    ));
                }
                if 1u64 << bits.masks().len() > u64::from(per_part) {
                    return Err(err(
                        field,
                        format!(
                            "{} bits number more units than a partition's {per_part} slices",
                            bits.masks().len()
                        ),
                    ));
                }
            }
        }
        positive_f64(self.dram.bandwidth_bytes_per_cycle)
            .map_err(|m| err("dram.bandwidth_bytes_per_cycle", m))?;
        self.validate_partitions()
            .map_err(|m| err("dram.partitions", m))
    }

    /// A line's partition must hold all of it, and every request the SMs send: the partition is
    /// the top bits of the line's banks' numbers, so a line's chunks must differ in the low bits
    /// alone, and a request is one line of an SM-level cache, which must lie within one L2 line.
    fn validate_partitions(&self) -> Result<(), String> {
        let Some(n) = self.dram.partitions else {
            return Ok(());
        };
        power_of_two(n)?;
        let l2 = &self.l2;
        if n > l2.slices {
            return Err(format!(
                "must be at most l2.slices ({}), got {n}",
                l2.slices
            ));
        }
        if n == 1 {
            return Ok(());
        }
        if let Some(rows) = &self.dram.rows {
            let chunk = rows.interleave_bytes.unwrap_or(rows.page_bytes);
            let per_line = (l2.line_bytes / chunk).max(1);
            if u64::from(n) * u64::from(per_line) > u64::from(rows.banks) {
                return Err(format!(
                    "{n} partitions of dram.rows.banks ({}) leave fewer banks than the {per_line} \
                     chunks of one l2 line",
                    rows.banks
                ));
            }
        }
        let tex = self
            .texture
            .cache
            .as_ref()
            .filter(|_| !self.texture.unified_with_l1);
        for (name, c) in [
            ("l1", Some(&self.l1)),
            ("texture.cache", tex),
            ("constant", Some(&self.constant)),
            ("constant_second_level", self.constant_second_level.as_ref()),
        ] {
            if let Some(c) = c
                && c.line_bytes > l2.line_bytes
            {
                return Err(format!(
                    "with several partitions {name}.line_bytes ({}) must be at most \
                     l2.line_bytes ({})",
                    c.line_bytes, l2.line_bytes
                ));
            }
        }
        Ok(())
    }
}

fn positive(v: u32) -> Result<(), String> {
    if v == 0 {
        Err("must be at least 1, got 0".into())
    } else {
        Ok(())
    }
}

fn positive_f64(v: f64) -> Result<(), String> {
    // Below 1/65536 byte per cycle the fixed-point queue arithmetic would overflow its scale.
    if v.is_finite() && v >= 1.0 / 65536.0 {
        Ok(())
    } else {
        Err(format!("must be a positive number (≥ 1/65536), got {v}"))
    }
}

fn power_of_two(v: u32) -> Result<(), String> {
    if v.is_power_of_two() {
        Ok(())
    } else {
        Err(format!("must be a power of two, got {v}"))
    }
}

/// Absent, or from `lo` to `hi`.
fn within(v: Option<u32>, lo: u32, hi: u32) -> Result<(), String> {
    match v {
        Some(v) if !(lo..=hi).contains(&v) => Err(format!("must be from {lo} to {hi}, got {v}")),
        _ => Ok(()),
    }
}

/// A power of two from `lo` to `hi`, each given with the field it comes from.
fn power_of_two_within(v: u32, lo: (&str, u32), hi: (&str, u32)) -> Result<(), String> {
    power_of_two(v)?;
    if v < lo.1 || v > hi.1 {
        return Err(format!(
            "must be from {} ({}) to {} ({}), got {v}",
            lo.0, lo.1, hi.0, hi.1
        ));
    }
    Ok(())
}

/// Geometry checks shared by every cache; the error carries `prefix.field`.
fn validate_cache(c: &CacheConfig, prefix: &str) -> Result<(), (String, String)> {
    let f = |name: &str| format!("{prefix}.{name}");
    power_of_two(c.line_bytes).map_err(|m| (f("line_bytes"), m))?;
    power_of_two(c.sector_bytes).map_err(|m| (f("sector_bytes"), m))?;
    if c.sector_bytes > c.line_bytes {
        return Err((
            f("sector_bytes"),
            format!(
                "must not exceed line_bytes ({}), got {}",
                c.line_bytes, c.sector_bytes
            ),
        ));
    }
    if c.line_bytes / c.sector_bytes > 8 {
        return Err((
            f("sector_bytes"),
            format!(
                "at most 8 sectors per line are supported, got {} / {} = {}",
                c.line_bytes,
                c.sector_bytes,
                c.line_bytes / c.sector_bytes
            ),
        ));
    }
    positive(c.ways).map_err(|m| (f("ways"), m))?;
    positive(c.mshrs).map_err(|m| (f("mshrs"), m))?;
    within(c.miss_line_cycles, 1, 1000).map_err(|m| (f("miss_line_cycles"), m))?;
    let set_bytes = u64::from(c.line_bytes) * u64::from(c.ways);
    let size = u64::from(c.size_bytes);
    if size == 0 || !size.is_multiple_of(set_bytes) {
        return Err((
            f("size_bytes"),
            format!(
                "must be a positive multiple of line_bytes × ways = {set_bytes}, got {}",
                c.size_bytes
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Validates `cfg` as `f.toml`: it must pass when `refused` is `None`, and otherwise fail
    /// naming that field.
    fn assert_validates(cfg: &GpuConfig, refused: Option<&str>, case: &str) {
        let r = cfg.validate("f.toml");
        match refused {
            None => assert!(r.is_ok(), "{case}: {r:?}"),
            Some(f) => {
                let e = r.expect_err("refused").to_string();
                assert!(e.starts_with(&format!("f.toml: {f}:")), "{case}: {e}");
            }
        }
    }

    #[test]
    fn every_preset_validates_and_round_trips() {
        for name in GpuConfig::preset_names() {
            let cfg = GpuConfig::preset(name).unwrap();
            assert_eq!(cfg.name, name);
            let text = cfg.to_toml();
            let again = GpuConfig::from_toml_str(&text, "round-trip").unwrap();
            assert_eq!(again, cfg, "{name}");
        }
    }

    #[test]
    fn a_sass_target_older_than_ptxas_assembles_is_refused() {
        let mut cfg = GpuConfig::preset("h100").unwrap();
        assert_eq!(cfg.sm.sass_arch, Some(90));
        cfg.sm.sass_arch = Some(20);
        assert_validates(&cfg, Some("sm.sass_arch"), "sm_20");
        cfg.sm.sass_arch = None;
        assert_validates(&cfg, None, "unset");
    }

    #[test]
    fn h200_is_h100_with_its_memory_and_fences() {
        let mut want = GpuConfig::preset("h100").unwrap();
        want.name = "h200".into();
        want.sm.gpu_fence_cycles = 563;
        want.sm.sys_fence_cycles = 1014;
        want.sm.wide_fence_drain_cycles = Some(134);
        want.l2.size_bytes = 60 << 20;
        want.l2.latency_cycles = 247;
        want.dram.latency_cycles = 391;
        want.dram.bandwidth_bytes_per_cycle = 2424.2;
        assert_eq!(GpuConfig::preset("h200").unwrap(), want);
    }

    #[test]
    fn a_dram_rows_open_time_is_bounded_and_its_permutation_named() {
        let cfg = |rows: &str| {
            let text = format!("base = \"h200\"\n[dram.rows]\n{rows}\n");
            GpuConfig::from_toml_str(&text, "a.toml")
        };
        let ok = cfg("open_cycles = 256\npermute_per = \"round\"").unwrap();
        let rows = ok.dram.rows.unwrap();
        assert_eq!(rows.open_cycles, Some(256));
        assert_eq!(rows.permute_per, Some(BankPermutation::Round));
        let e = cfg("open_cycles = 0").unwrap_err().to_string();
        assert!(e.contains("dram.rows.open_cycles"), "{e}");
        let e = cfg("permute_per = \"page\"").unwrap_err().to_string();
        assert!(e.contains("round") && e.contains("stripe"), "{e}");
    }

    #[test]
    fn a_drams_order_is_arrival_shuffled_or_front() {
        let cfg = |order: &str| {
            let text = format!("base = \"h200\"\n[dram]\norder = \"{order}\"\n");
            GpuConfig::from_toml_str(&text, "a.toml")
        };
        assert_eq!(
            cfg("shuffled").unwrap().dram.order,
            Some(DramOrder::Shuffled)
        );
        assert_eq!(cfg("arrival").unwrap().dram.order, Some(DramOrder::Arrival));
        assert_eq!(cfg("front").unwrap().dram.order, Some(DramOrder::Front));
        assert_eq!(GpuConfig::preset("h200").unwrap().dram.order, None);
        let e = cfg("fifo").unwrap_err().to_string();
        assert!(e.contains("fifo") && e.contains("shuffled"), "{e}");
    }

    #[test]
    fn a_base_gives_what_the_file_leaves_out() {
        let text = "base = \"h200\"\n[l2]\nways = 16\n";
        let cfg = GpuConfig::from_toml_str(text, "mine.toml").unwrap();
        let mut want = GpuConfig::preset("h200").unwrap();
        want.name = "custom".into();
        want.l2.ways = 16;
        assert_eq!(cfg, want);
        let named = GpuConfig::from_toml_str("base = \"v100\"\nname = \"v\"", "n.toml").unwrap();
        assert_eq!(named.name, "v");
        assert_eq!(named.l2, GpuConfig::preset("v100").unwrap().l2);
        for (text, says) in [
            ("base = \"gtx9000\"", "unknown preset \"gtx9000\""),
            ("base = 3", "mine.toml: base: must be a preset's name"),
            ("base = \"h100\"\n[l2]\nwayz = 16", "unknown field `wayz`"),
            (
                "base = \"h100\"\n[l2]\nslices = 12",
                "mine.toml: l2.slices: must be a power",
            ),
        ] {
            let e = GpuConfig::from_toml_str(text, "mine.toml")
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn unknown_preset_lists_the_known_ones() {
        let e = GpuConfig::preset("gtx9000").unwrap_err().to_string();
        assert!(e.contains("gtx9000") && e.contains("h100"), "{e}");
    }

    #[test]
    fn non_power_of_two_slices_names_the_field() {
        let mut cfg = GpuConfig::preset("h100").unwrap();
        cfg.l2.slices = 12;
        let text = cfg.to_toml();
        let e = GpuConfig::from_toml_str(&text, "my.toml")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "my.toml: l2.slices: must be a power of two, got 12");
    }

    #[test]
    fn dram_rows_need_power_of_two_banks_pages_of_a_line_chunks_within_a_page_and_a_row_to_keep() {
        // h100: 32-byte sectors, 128-byte lines.
        for (banks, page, chunk, field) in [
            (512, 2048, None, None),
            (1, 128, None, None),
            (512, 2048, Some(32), None),
            (512, 2048, Some(2048), None),
            (0, 2048, None, Some("dram.rows.banks")),
            (500, 2048, None, Some("dram.rows.banks")),
            (512, 3000, None, Some("dram.rows.page_bytes")),
            (512, 64, None, Some("dram.rows.page_bytes")),
            (512, 2048, Some(16), Some("dram.rows.interleave_bytes")),
            (512, 2048, Some(96), Some("dram.rows.interleave_bytes")),
            (512, 2048, Some(4096), Some("dram.rows.interleave_bytes")),
        ] {
            for (reorder, refused) in [
                (None, false),
                (Some(4), false),
                (Some(0), true),
                (Some(65), true),
            ] {
                let mut cfg = GpuConfig::preset("h100").unwrap();
                // The rows alone, in one partition: its 8 would refuse a single bank.
                cfg.dram.partitions = None;
                cfg.dram.rows = Some(DramRows {
                    banks,
                    page_bytes: page,
                    interleave_bytes: chunk,
                    row_miss_bytes: 36,
                    reorder_rows: reorder,
                    open_cycles: None,
                    permute_per: None,
                });
                let field = field.or(refused.then_some("dram.rows.reorder_rows"));
                let case = format!("{banks} {page} {chunk:?} {reorder:?}");
                assert_validates(&cfg, field, &case);
            }
        }
    }

    #[test]
    fn a_division_sequence_needs_an_instruction_and_no_less_latency_than_its_issue() {
        for (instructions, latency_cycles, refused) in [
            (1, 1, None),
            (76, 209, None),
            (0, 10, Some("instructions")),
            (20, 19, Some("latency_cycles")),
        ] {
            let mut cfg = GpuConfig::preset("h100").unwrap();
            let table = cfg
                .pipeline
                .int_division
                .as_mut()
                .expect("h100 times divisions");
            table.s64 = InstructionSequence {
                instructions,
                latency_cycles,
            };
            let field = refused.map(|f| format!("pipeline.int_division.s64.{f}"));
            let case = format!("{instructions} {latency_cycles}");
            assert_validates(&cfg, field.as_deref(), &case);
        }
    }

    #[test]
    fn a_split_integer_unit_must_take_a_cycle() {
        let mut cfg = GpuConfig::preset("h100").unwrap();
        let split = cfg
            .pipeline
            .int_split
            .as_mut()
            .expect("h100 splits integer issue");
        split.bit_count_issue_cycles = 0;
        let field = "pipeline.int_split.bit_count_issue_cycles";
        assert_validates(&cfg, Some(field), "a unit of 0 cycles");
    }

    /// `field` of `preset`, set by `set`: unset, `lo` and `hi` validate; `lo - 1` and `hi + 1`
    /// are refused, naming `field`.
    fn assert_range(
        preset: &str,
        field: &str,
        (lo, hi): (u32, u32),
        set: impl Fn(&mut GpuConfig, Option<u32>),
    ) {
        for (v, ok) in [
            (None, true),
            (Some(lo), true),
            (Some(hi), true),
            (Some(lo - 1), false),
            (Some(hi + 1), false),
        ] {
            let mut cfg = GpuConfig::preset(preset).unwrap();
            set(&mut cfg, v);
            assert_validates(&cfg, (!ok).then_some(field), &format!("{field} {v:?}"));
        }
    }

    #[test]
    fn a_line_that_fetches_holds_a_cache_port_from_1_to_1000_cycles() {
        assert_range(
            "gtx480",
            "texture.cache.miss_line_cycles",
            (1, 1000),
            |cfg, v| {
                let cache = cfg.texture.cache.as_mut().expect("fermi's texture cache");
                cache.miss_line_cycles = v;
            },
        );
    }

    #[test]
    fn a_unified_texture_paths_miss_line_cycles_must_be_from_1_to_1000() {
        assert_range("h100", "texture.miss_line_cycles", (1, 1000), |cfg, v| {
            cfg.texture.miss_line_cycles = v;
        });
        let mut fermi = GpuConfig::preset("gtx480").unwrap();
        fermi.texture.miss_line_cycles = Some(2);
        assert_validates(&fermi, Some("texture.miss_line_cycles"), "a separate cache");
    }

    #[test]
    fn a_schedulers_line_cycles_must_be_from_1_to_1000() {
        assert_range("gtx480", "sm.scheduler_line_cycles", (1, 1000), |cfg, v| {
            cfg.sm.scheduler_line_cycles = v;
        });
    }

    #[test]
    fn texture_lookups_per_cycle_must_be_from_1_to_64() {
        assert_range("h100", "texture.lookups_per_cycle", (1, 64), |cfg, v| {
            cfg.texture.lookups_per_cycle = v;
        });
    }

    #[test]
    fn the_constant_paths_l2_hit_is_no_sooner_than_its_last_level() {
        let h100 = GpuConfig::preset("h100").unwrap();
        let first = h100.constant.latency_cycles;
        let second = h100.constant_second_level.as_ref().unwrap().latency_cycles;
        for (latency, with_second, ok) in [
            (None, true, true),
            (Some(second - first), true, true),
            (Some(second - first - 1), true, false),
            (Some(0), false, true),
        ] {
            let mut cfg = h100.clone();
            cfg.l2.constant_latency_cycles = latency;
            if !with_second {
                cfg.constant_second_level = None;
            }
            let field = (!ok).then_some("l2.constant_latency_cycles");
            assert_validates(&cfg, field, &format!("{latency:?} {with_second}"));
        }
    }

    #[test]
    fn a_second_constant_level_takes_the_first_levels_lines_and_is_no_faster() {
        let h100 = GpuConfig::preset("h100").unwrap();
        let first = h100.constant.clone();
        let second = h100.constant_second_level.clone().unwrap();
        let cases = [
            (second.clone(), None),
            (
                CacheConfig {
                    line_bytes: 128,
                    sector_bytes: 128,
                    ..second.clone()
                },
                Some("constant_second_level.line_bytes"),
            ),
            (
                CacheConfig {
                    latency_cycles: first.latency_cycles - 1,
                    ..second.clone()
                },
                Some("constant_second_level.latency_cycles"),
            ),
            (
                CacheConfig {
                    latency_cycles: first.latency_cycles,
                    ..second
                },
                None,
            ),
        ];
        for (level, field) in cases {
            let mut cfg = h100.clone();
            let what = format!("{level:?}");
            cfg.constant_second_level = Some(level);
            assert_validates(&cfg, field, &what);
        }
    }

    #[test]
    fn l2_fetch_bytes_must_be_a_power_of_two_from_a_sector_to_a_line() {
        for (fetch, ok) in [
            (32, true),
            (64, true),
            (128, true),
            (16, false),
            (48, false),
            (256, false),
        ] {
            let mut cfg = GpuConfig::preset("h100").unwrap();
            cfg.l2.fetch_bytes = Some(fetch);
            let field = (!ok).then_some("l2.fetch_bytes");
            assert_validates(&cfg, field, &fetch.to_string());
        }
    }

    #[test]
    fn atomic_unit_bits_lie_above_a_line_and_number_at_most_a_partitions_slices() {
        // The h100 preset's L2: 128-byte lines, 64 slices in 8 partitions.
        let lists = |l: &[&[u32]]| l.iter().map(|b| b.to_vec()).collect::<Vec<_>>();
        for (bits, ok) in [
            (lists(&[&[7]]), true),
            (lists(&[&[8, 9, 15, 16], &[10], &[11]]), true),
            (lists(&[&[6]]), false),
            (lists(&[&[8], &[9], &[10], &[11]]), false),
        ] {
            let mut cfg = GpuConfig::preset("h100").unwrap();
            if let Some(u) = &mut cfg.l2.atomic_unit {
                u.unit_address_bits = Some(UnitBits::try_from(bits.clone()).unwrap());
            }
            let field = (!ok).then_some("l2.atomic_unit.unit_address_bits");
            assert_validates(&cfg, field, &format!("{bits:?}"));
        }
    }

    #[test]
    fn atomic_unit_bits_are_refused_empty_repeated_or_past_bit_63() {
        for (bits, why) in [
            (vec![], "1 to 8 lists"),
            (vec![vec![8], vec![]], "at least one address bit"),
            (vec![vec![8, 9], vec![9]], "address bit 9 is listed twice"),
            (vec![vec![64]], "address bit 64 is past bit 63"),
        ] {
            let e = UnitBits::try_from(bits.clone()).expect_err("refused");
            assert!(e.contains(why), "{bits:?}: {e}");
        }
        let text = GpuConfig::preset("h100")
            .unwrap()
            .to_toml()
            .replace("[[8, 9, 15, 16], [10], [11]]", "[[8, 9], [9]]");
        let e = GpuConfig::from_toml_str(&text, "f.toml").expect_err("refused");
        assert!(e.to_string().contains("listed twice"), "{e}");
    }

    #[test]
    fn atomics_in_flight_must_be_at_least_one() {
        for (limit, ok) in [
            (None, true),
            (Some(1), true),
            (Some(64), true),
            (Some(0), false),
        ] {
            let mut cfg = GpuConfig::preset("h100").unwrap();
            if let Some(u) = &mut cfg.l2.atomic_unit {
                u.in_flight_per_sm = limit;
            }
            let field = (!ok).then_some("l2.atomic_unit.in_flight_per_sm");
            assert_validates(&cfg, field, &format!("{limit:?}"));
        }
    }

    #[test]
    fn memory_partitions_must_each_hold_whole_lines_and_requests() {
        // h100: 64 slices, 512 banks, 128-byte lines in 64-byte chunks.
        let h100 = |parts, l1_line: Option<u32>, banks: Option<u32>| {
            let mut cfg = GpuConfig::preset("h100").unwrap();
            cfg.dram.partitions = Some(parts);
            if let Some(line) = l1_line {
                cfg.l1.line_bytes = line;
            }
            if let (Some(b), Some(rows)) = (banks, &mut cfg.dram.rows) {
                rows.banks = b;
            }
            // The preset's atomic units number 8 per partition, more than 64 partitions have.
            if let Some(u) = cfg.l2.atomic_unit.as_mut().filter(|_| parts > 8) {
                u.unit_address_bits = None;
            }
            cfg
        };
        for (cfg, ok, why) in [
            (h100(1, None, None), true, "1"),
            (h100(8, None, None), true, "8"),
            (h100(64, None, Some(128)), true, "64 partitions of 2 banks"),
            (h100(6, None, None), false, "a power of two, got 6"),
            (h100(128, None, None), false, "at most l2.slices (64)"),
            (h100(64, None, Some(64)), false, "chunks of one l2 line"),
            (h100(8, Some(256), None), false, "l1.line_bytes (256)"),
            (h100(1, Some(256), None), true, "256"),
        ] {
            let field = (!ok).then_some("dram.partitions");
            assert_validates(&cfg, field, why);
            if let Err(e) = cfg.validate("f.toml") {
                assert!(e.to_string().contains(why), "{why}: {e}");
            }
        }
    }

    #[test]
    fn unknown_key_is_rejected_with_its_name() {
        let text = GpuConfig::preset("v100")
            .unwrap()
            .to_toml()
            .replace("[l1]\n", "[l1]\nsize_kb = 3\n");
        let e = GpuConfig::from_toml_str(&text, "x.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.toml:") && e.contains("size_kb"), "{e}");
    }

    #[test]
    fn bad_cache_geometry_names_the_field() {
        let mut cfg = GpuConfig::preset("a100").unwrap();
        cfg.l1.size_bytes = 1000;
        let e = cfg.validate("a.toml").unwrap_err().to_string();
        assert!(e.starts_with("a.toml: l1.size_bytes:"), "{e}");
        let mut cfg = GpuConfig::preset("a100").unwrap();
        cfg.constant.sector_bytes = 128;
        let e = cfg.validate("a.toml").unwrap_err().to_string();
        assert!(e.starts_with("a.toml: constant.sector_bytes:"), "{e}");
        let mut cfg = GpuConfig::preset("a100").unwrap();
        cfg.dram.bandwidth_bytes_per_cycle = 0.0;
        let e = cfg.validate("a.toml").unwrap_err().to_string();
        assert!(
            e.starts_with("a.toml: dram.bandwidth_bytes_per_cycle:"),
            "{e}"
        );
    }

    #[test]
    fn texture_cache_presence_must_match_unification() {
        let mut cfg = GpuConfig::preset("gtx480").unwrap();
        cfg.texture.cache = None;
        let e = cfg.validate("f").unwrap_err().to_string();
        assert!(e.contains("texture.cache: required"), "{e}");
        let mut cfg = GpuConfig::preset("h100").unwrap();
        cfg.texture.cache = Some(cfg.l1.clone());
        let e = cfg.validate("f").unwrap_err().to_string();
        assert!(e.contains("texture.cache: must be absent"), "{e}");
    }

    #[test]
    fn latencies_compose_from_components() {
        let cfg = GpuConfig::preset("a100").unwrap();
        let u = cfg.unloaded_latencies();
        assert_eq!(u.l1_hit, u64::from(cfg.l1.latency_cycles));
        assert_eq!(u.l2_hit, u.l1_hit + u64::from(cfg.l2.latency_cycles));
        assert_eq!(u.dram, u.l2_hit + u64::from(cfg.dram.latency_cycles));
        assert!(u.l1_hit < u.l2_hit && u.l2_hit < u.dram);
    }

    #[test]
    fn texture_layout_defaults_to_block_linear_and_bad_names_are_rejected() {
        for name in GpuConfig::preset_names() {
            let cfg = GpuConfig::preset(name).unwrap();
            assert_eq!(cfg.texture.layout, TextureLayout::BlockLinear, "{name}");
        }
        let text = GpuConfig::preset("gtx480").unwrap().to_toml();
        assert!(text.contains("layout = \"block-linear\""), "{text}");
        for layout in TextureLayout::ALL {
            let t = text.replace(
                "layout = \"block-linear\"",
                &format!("layout = \"{layout}\""),
            );
            let cfg = GpuConfig::from_toml_str(&t, "l.toml").unwrap();
            assert_eq!(cfg.texture.layout, layout);
        }
        // An older config without the key gets the default.
        let t = text.replace("layout = \"block-linear\"\n", "");
        let cfg = GpuConfig::from_toml_str(&t, "old.toml").unwrap();
        assert_eq!(cfg.texture.layout, TextureLayout::BlockLinear);
        let t = text.replace("layout = \"block-linear\"", "layout = \"tiled\"");
        let e = GpuConfig::from_toml_str(&t, "bad.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("bad.toml:") && e.contains("layout") && e.contains("block-linear"),
            "{e}"
        );
    }

    #[test]
    fn from_file_reads_and_names_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gpu.toml");
        let cfg = GpuConfig::preset("gtx480").unwrap();
        std::fs::write(&path, cfg.to_toml()).unwrap();
        assert_eq!(GpuConfig::from_file(&path).unwrap(), cfg);
        let missing = dir.path().join("nope.toml");
        let e = GpuConfig::from_file(&missing).unwrap_err().to_string();
        assert!(e.contains("nope.toml"), "{e}");
    }
}
