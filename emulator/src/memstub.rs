//! Temporary fixed-latency stand-in for `crate::memory` (owned by the timing-model engineer),
//! with exactly its interface, so the issue engine can be built and tested before the cache
//! hierarchy lands. Switch by changing the `use` in `engine.rs`.

use crate::config::GpuConfig;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Space {
    Global,
    Local,
    Shared,
    Const,
    Param,
    Texture,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AccessKind {
    Load,
    Store,
    Atomic,
}

pub(crate) struct MemRequest<'a> {
    pub sm: u32,
    pub warp: u32,
    pub space: Space,
    pub kind: AccessKind,
    pub bytes_per_lane: u32,
    pub lanes: &'a [(u8, u64)],
    pub readonly_path: bool,
}

/// Counters of the stand-in: requests only.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MemCounters {
    pub requests: u64,
}

pub(crate) struct MemorySystem {
    global: u64,
    shared: u64,
    tex: u64,
    counters: MemCounters,
}

impl MemorySystem {
    pub(crate) fn new(cfg: &GpuConfig) -> MemorySystem {
        let l = cfg.unloaded_latencies();
        MemorySystem { global: l.dram, shared: l.shared, tex: l.texture_hit, counters: MemCounters::default() }
    }
    pub(crate) fn access(&mut self, now: u64, req: &MemRequest) -> u64 {
        let _ = (req.sm, req.warp, req.kind, req.bytes_per_lane, req.lanes.len(), req.readonly_path);
        self.counters.requests += 1;
        now + match req.space {
            Space::Shared => self.shared,
            Space::Texture => self.tex,
            Space::Param | Space::Const => 4,
            Space::Global | Space::Local => self.global,
        }
    }
    pub fn counters(&self) -> MemCounters {
        self.counters.clone()
    }
}
