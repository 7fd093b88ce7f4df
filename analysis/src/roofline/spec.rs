//! The GPU a run's roofline and bound are computed for: the subset of the emulator's effective
//! `config.toml` this crate reads ([`GpuSpec`]), without depending on the emulator.
//!
//! Why its own file: the roofline model and the bound both need it, and neither may depend on the
//! other for it.

use crate::AnalysisError;
use serde::{Deserialize, Serialize};

/// One cache as the effective config describes it (subset).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct CacheSpec {
    pub size_bytes: u64,
    pub line_bytes: u32,
    pub sector_bytes: u32,
    pub ways: u32,
}

/// `[sm]` subset.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct SmSpec {
    pub count: u32,
    pub warp_schedulers: u32,
}

/// `[pipeline]` subset.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct PipelineSpec {
    pub int_issue_cycles: u32,
    pub fp32_issue_cycles: u32,
}

/// `[texture]` subset.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct TextureSpec {
    pub unified_with_l1: bool,
    #[serde(default)]
    pub cache: Option<CacheSpec>,
}

/// `[l2]` subset.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct L2Spec {
    pub size_bytes: u64,
    pub slices: u32,
    pub line_bytes: u32,
    pub sector_bytes: u32,
    pub ways: u32,
    /// Per slice.
    pub bandwidth_bytes_per_cycle: f64,
}

/// `[dram]` subset.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct DramSpec {
    pub bandwidth_bytes_per_cycle: f64,
}

/// The fields of the emulator's `GpuConfig` (its effective `config.toml`) that the roofline and
/// the bound need. Other keys are ignored, so any emulator config parses.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct GpuSpec {
    pub name: String,
    pub clock_mhz: f64,
    pub sm: SmSpec,
    pub pipeline: PipelineSpec,
    pub l1: CacheSpec,
    pub texture: TextureSpec,
    pub l2: L2Spec,
    pub dram: DramSpec,
}

impl GpuSpec {
    /// Parses an emulator config (TOML); `origin` names it in errors.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<GpuSpec, AnalysisError> {
        let s: GpuSpec = toml::from_str(text).map_err(|e| AnalysisError::Toml {
            origin: origin.to_string(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let bad = |field: &str, message: &str| AnalysisError::Invalid {
            origin: origin.to_string(),
            field: field.to_string(),
            message: message.to_string(),
        };
        if !(s.clock_mhz.is_finite() && s.clock_mhz > 0.0) {
            return Err(bad("clock_mhz", "must be a positive number"));
        }
        for (f, v) in [
            ("sm.count", s.sm.count),
            ("sm.warp_schedulers", s.sm.warp_schedulers),
            ("pipeline.int_issue_cycles", s.pipeline.int_issue_cycles),
            ("pipeline.fp32_issue_cycles", s.pipeline.fp32_issue_cycles),
            ("l1.sector_bytes", s.l1.sector_bytes),
            ("l2.sector_bytes", s.l2.sector_bytes),
            ("l2.slices", s.l2.slices),
        ] {
            if v == 0 {
                return Err(bad(f, "must be at least 1"));
            }
        }
        Ok(s)
    }

    /// FP32 lanes per SM per cycle in the emulator's issue model.
    fn lanes(&self, issue_cycles: u32) -> f64 {
        f64::from(self.sm.warp_schedulers) * 32.0 / f64::from(issue_cycles.max(1))
    }

    /// SMs × FP32 lanes × 2 (an FMA is two flops).
    pub fn flops_per_cycle(&self) -> f64 {
        f64::from(self.sm.count) * self.lanes(self.pipeline.fp32_issue_cycles) * 2.0
    }

    /// SMs × integer lanes (one op per lane).
    pub fn int_ops_per_cycle(&self) -> f64 {
        f64::from(self.sm.count) * self.lanes(self.pipeline.int_issue_cycles)
    }

    /// One L1 tag lookup (one line) per cycle per SM.
    pub fn l1_bytes_per_cycle(&self) -> f64 {
        f64::from(self.sm.count) * f64::from(self.l1.line_bytes)
    }

    pub fn l2_bytes_per_cycle(&self) -> f64 {
        f64::from(self.l2.slices) * self.l2.bandwidth_bytes_per_cycle
    }

    /// A small made-up GPU for examples and tests (not a preset).
    pub fn example() -> GpuSpec {
        GpuSpec {
            name: "example".into(),
            clock_mhz: 1000.0,
            sm: SmSpec {
                count: 2,
                warp_schedulers: 4,
            },
            pipeline: PipelineSpec {
                int_issue_cycles: 2,
                fp32_issue_cycles: 2,
            },
            l1: CacheSpec {
                size_bytes: 32768,
                line_bytes: 128,
                sector_bytes: 32,
                ways: 4,
            },
            texture: TextureSpec {
                unified_with_l1: true,
                cache: None,
            },
            l2: L2Spec {
                size_bytes: 262144,
                slices: 4,
                line_bytes: 128,
                sector_bytes: 32,
                ways: 8,
                bandwidth_bytes_per_cycle: 32.0,
            },
            dram: DramSpec {
                bandwidth_bytes_per_cycle: 64.0,
            },
        }
    }
}
