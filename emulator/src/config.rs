//! Typed GPU configuration for the emulator's timing model, loaded from TOML with named fields
//! and units in the names, and the built-in presets (gtx480, v100, a100, h100).
//!
//! (Skeleton: `sm` and `pipeline` are the contract the scheduler relies on; the memory sections
//! and presets are filled in by the timing model.)

use serde::{Deserialize, Serialize};

/// A whole GPU as the emulator models it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuConfig {
    /// Preset name or "custom".
    pub name: String,
    /// SM clock; turns cycles into seconds.
    pub clock_mhz: f64,
    pub sm: SmConfig,
    pub pipeline: PipelineConfig,
}

/// Per-SM resources: the occupancy limits and the warp schedulers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmConfig {
    pub count: u32,
    pub max_threads: u32,
    pub max_warps: u32,
    pub max_blocks: u32,
    /// 32-bit registers per SM.
    pub registers: u32,
    /// Registers are allocated per warp in units of this many.
    pub register_alloc_unit: u32,
    pub max_registers_per_thread: u32,
    pub shared_bytes: u32,
    pub max_shared_bytes_per_block: u32,
    /// Shared memory is allocated per block in units of this many bytes.
    pub shared_alloc_unit_bytes: u32,
    pub warp_schedulers: u32,
    /// Instructions each scheduler can issue per cycle.
    pub issue_per_scheduler: u32,
}

/// Latencies (cycles from issue until a dependent instruction can issue) and issue intervals
/// (cycles a functional unit is busy per warp instruction) by instruction class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineConfig {
    pub int_latency_cycles: u32,
    pub fp32_latency_cycles: u32,
    pub fp64_latency_cycles: u32,
    pub sfu_latency_cycles: u32,
    pub branch_latency_cycles: u32,
    /// `%clock`/`%clock64` and other special-register reads.
    pub special_reg_latency_cycles: u32,
    pub shuffle_latency_cycles: u32,
    pub int_issue_cycles: u32,
    pub fp32_issue_cycles: u32,
    pub fp64_issue_cycles: u32,
    pub sfu_issue_cycles: u32,
    pub mem_issue_cycles: u32,
}
