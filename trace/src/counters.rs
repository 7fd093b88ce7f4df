//! What the emulator counted in one launch, as `run.json` keeps it (the `emulator` field of
//! [`crate::RunMetrics`]). The one definition of these counters: the emulator counts into them
//! (its `LaunchStats` is [`EmuCounters`]) and every reader of a run (exporters, analysis) reads
//! them without depending on the emulator.
//!
//! Every field defaults to zero / empty when absent, so a counter a writer did not have reads as
//! nothing counted rather than failing the whole run.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The emulator's counters of one launch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EmuCounters {
    /// Cycles of the whole kernel (the slowest SM).
    pub cycles: u64,
    /// Cycles of each SM, by SM id.
    pub sm_cycles: Vec<u64>,
    /// Warp instructions issued.
    pub warp_instructions: u64,
    /// Thread instructions: each warp instruction counted once per active lane.
    pub thread_instructions: u64,
    /// Warp instructions by class (int, fp32, fp64, sfu, mem, tex, branch, special, shuffle,
    /// barrier, nop) and `flops` (thread-level floating-point operations, fma = 2).
    pub instructions_by_class: BTreeMap<String, u64>,
    /// Scheduler-cycles without issue, by reason (scoreboard, memory, barrier, membar,
    /// pipe_busy, idle).
    pub stall_cycles: BTreeMap<String, u64>,
    /// Achieved occupancy, 0–1: the warps resident on an SM (from their block's launch until
    /// they exit) per cycle in which any is, over the SM's warp slots, for all SMs together.
    /// Nsight Compute's `sm__warps_active.avg.pct_of_peak_sustained_active` ÷ 100 (its
    /// "Achieved Occupancy"); `null` when no warp ran.
    pub achieved_occupancy: Option<f64>,
    /// The memory system's counters.
    pub mem: MemCounters,
    /// Resident blocks per SM (the occupancy of the launch).
    pub blocks_per_sm: u32,
    /// Registers per thread the occupancy used: those asked for fitted to the GPU, as its
    /// compiler would have allocated them.
    pub registers_per_thread: u32,
    /// Registers per thread asked for beyond that: what the target's compiler would have
    /// spilled to local memory. Flagged only; the emulator does not model the spill traffic.
    pub spilled_registers_per_thread: u32,
}

/// The memory counters of one launch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct MemCounters {
    /// Global and local loads (and read-only loads where the L1 serves them).
    pub l1: CacheCounters,
    /// Texture fetches (the texture traffic of the L1 where the L1 serves textures).
    pub texture: CacheCounters,
    /// Constant and kernel-parameter loads, one lookup per distinct address.
    pub constant: CacheCounters,
    /// Reads from every L1-level cache's misses; stores and atomics count in `write_sectors`.
    pub l2: CacheCounters,
    /// Bytes the L2 read from DRAM.
    pub dram_bytes_read: u64,
    /// Bytes the L2 wrote to DRAM.
    pub dram_bytes_written: u64,
    /// Warp-level shared-memory accesses.
    pub shared_accesses: u64,
    /// Extra shared-memory passes caused by bank conflicts (ways − 1 per access).
    pub shared_bank_conflict_replays: u64,
    /// Extra constant-cache passes for distinct addresses in one warp (distinct − 1 per access).
    pub constant_serialization_replays: u64,
    /// Warp-level atomic operations (global and shared).
    pub atomics: u64,
    /// The L1's hit rate, 0–1 (hits and MSHR merges over all read sectors); `null` without
    /// accesses.
    pub l1_hit_rate: Option<f64>,
    /// The texture hit rate as Nsight Compute counts it, per lookup of a quad's or a pair's
    /// sectors ([`CacheCounters::lookup_hit_rate`]): the figure to set beside a GPU run's.
    pub tex_hit_rate: Option<f64>,
    /// The texture hit rate per warp request ([`CacheCounters::hit_rate`] of `texture`): the
    /// share of the distinct sectors of each fetch served without a fetch from the L2, what
    /// sets the traffic below and what a reuse-distance model predicts.
    pub tex_sector_hit_rate: Option<f64>,
    /// The L2's hit rate, 0–1, as Nsight Compute's `lts__t_sector_hit_rate` counts it: hits and
    /// MSHR merges over the sectors read plus one lookup per block fetched from DRAM
    /// (`CacheCounters::fills`); `null` without accesses.
    pub l2_hit_rate: Option<f64>,
    /// The constant cache's hit rate, 0–1, as `l1_hit_rate` counts it; `null` without accesses.
    pub constant_hit_rate: Option<f64>,
}

/// The counters the analysis sets beside the probes' figures, with the same meaning on both
/// backends (Nsight Compute's counts on a GPU): the texture, L1 and L2 hit rates (0–1), the
/// bytes moved between the L2 and DRAM, and the achieved occupancy (0–1). `None` where the
/// backend did not count it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct HardwareCounters {
    pub tex_hit_rate: Option<f64>,
    pub l1_hit_rate: Option<f64>,
    pub l2_hit_rate: Option<f64>,
    pub dram_bytes: Option<u64>,
    pub achieved_occupancy: Option<f64>,
    /// The SM clock the launch ran at, MHz, as a GPU measured it (Nsight Compute's
    /// `sm__cycles_elapsed.avg.per_second`). `None` on the emulator, whose clock is its
    /// preset's by construction: a GPU's may sit below its maximum for power or heat, and
    /// kernel time × the maximum clock then overstates the cycles.
    pub sm_clock_mhz: Option<f64>,
}

impl HardwareCounters {
    /// The emulator's, from what it counted in a launch; a rate of no access is `None`.
    pub fn of_emulator(c: &EmuCounters) -> HardwareCounters {
        let rate = |r: Option<f64>| r.filter(|v| v.is_finite());
        let mem = &c.mem;
        HardwareCounters {
            tex_hit_rate: rate(mem.tex_hit_rate),
            l1_hit_rate: rate(mem.l1_hit_rate),
            l2_hit_rate: rate(mem.l2_hit_rate),
            dram_bytes: Some(mem.dram_bytes_read + mem.dram_bytes_written),
            achieved_occupancy: rate(c.achieved_occupancy),
            sm_clock_mhz: None,
        }
    }
}

/// Hit/miss counts of one cache level, per 32-byte sector (per line for an unsectored cache);
/// `requests` counts line lookups.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CacheCounters {
    /// Line lookups.
    pub requests: u64,
    /// Sectors read that were in the cache.
    pub sector_hits: u64,
    /// Sectors read that were fetched from the level below.
    pub sector_misses: u64,
    /// Sectors found in flight: they wait for the outstanding miss instead of a new fetch.
    pub mshr_merges: u64,
    /// Lines evicted to make room for a fill.
    pub evictions: u64,
    /// Sectors written (stores and atomics); not part of the hit rate.
    pub write_sectors: u64,
    /// L2 only: blocks of `l2.fetch_bytes` read from DRAM to fill missed sectors. Nsight
    /// Compute's L2 counts each as one more sector lookup, never a hit: on an H200 its
    /// `lts__t_sectors_op_read` is the sectors read plus the DRAM bytes read / 64 in all seven
    /// read patterns of docs/gpu/dram-granularity.cu, within 0.11 %. Counted among
    /// [`CacheCounters::hit_rate`]'s lookups, so that the L2's rate is Nsight Compute's.
    pub fills: u64,
    /// Texture path only: sector lookups as Nsight Compute counts them, each group of lanes'
    /// distinct sectors of a fetch (a quad of four lanes for a point sample or a filtered 1D or
    /// 2D one, a pair for a trilinear one, each lane for a filtered float4), so that a sector all
    /// 32 lanes of a warp point-sample counts eight times where `read_sectors` counts it once.
    /// Nsight Compute's texture hit rate divides by this count
    /// ([`CacheCounters::lookup_hit_rate`]).
    pub tex_lookups: u64,
}

impl CacheCounters {
    /// Fraction of the sector lookups that were served without a new fetch from below: the
    /// sectors read that hit or found their sector in flight (MSHR merges), over the sectors
    /// read plus the fills, which only the L2 counts ([`CacheCounters::fills`]); `None` when
    /// nothing was read.
    pub fn hit_rate(&self) -> Option<f64> {
        let total = self.read_sectors();
        (total > 0)
            .then(|| (self.sector_hits + self.mshr_merges) as f64 / (total + self.fills) as f64)
    }

    /// Fraction of the sector lookups (`tex_lookups`) that needed no new fetch from below: only
    /// the first lookup of a missing sector misses, and every other group's lookup of it in the
    /// same fetch hits. This is what Nsight Compute's
    /// `l1tex__t_sector_pipe_tex_mem_texture_op_tex_hit_rate` reports on silicon: on an H100,
    /// 32 lanes point-sampling one cold texel read 8 sectors and 87.5 % (1 miss in 8 lookups),
    /// 32 lanes sampling one point trilinearly 32 sectors and 93.75 % (2 misses)
    /// (docs/gpu/tex-lookup-count.cu). `None` when nothing was looked up that way.
    pub fn lookup_hit_rate(&self) -> Option<f64> {
        (self.tex_lookups > 0).then(|| {
            1.0 - self.sector_misses.min(self.tex_lookups) as f64 / self.tex_lookups as f64
        })
    }

    /// Sectors read through this level: hits, misses and MSHR merges.
    pub fn read_sectors(&self) -> u64 {
        self.sector_hits + self.sector_misses + self.mshr_merges
    }

    /// Adds another cache's (or another SM's) counts.
    pub fn add(&mut self, o: &CacheCounters) {
        self.requests += o.requests;
        self.sector_hits += o.sector_hits;
        self.sector_misses += o.sector_misses;
        self.mshr_merges += o.mshr_merges;
        self.evictions += o.evictions;
        self.write_sectors += o.write_sectors;
        self.fills += o.fills;
        self.tex_lookups += o.tex_lookups;
    }

    /// Sectors moved through this level (reads of every kind plus writes).
    pub fn sectors(&self) -> u64 {
        self.read_sectors() + self.write_sectors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hit_rate_counts_merges_as_served_and_ignores_writes() {
        let mut c = CacheCounters {
            write_sectors: 9,
            ..CacheCounters::default()
        };
        assert_eq!(c.hit_rate(), None, "nothing read");
        c.add(&CacheCounters {
            requests: 2,
            sector_hits: 1,
            sector_misses: 2,
            mshr_merges: 1,
            evictions: 1,
            write_sectors: 1,
            fills: 0,
            tex_lookups: 0,
        });
        assert_eq!(c.hit_rate(), Some(0.5));
        assert_eq!(c.read_sectors(), 4);
        assert_eq!((c.requests, c.write_sectors, c.sectors()), (2, 10, 14));
        assert_eq!(c.lookup_hit_rate(), None, "no texture lookups");
    }

    #[test]
    fn an_l2_fill_is_a_lookup_that_does_not_hit() {
        // Two sectors read: one hit, one miss whose 64-byte fetch is one more lookup.
        let mut c = CacheCounters {
            sector_hits: 1,
            sector_misses: 1,
            fills: 1,
            ..CacheCounters::default()
        };
        assert_eq!(c.hit_rate(), Some(1.0 / 3.0));
        assert_eq!(c.read_sectors(), 2, "a fill is not a sector read");
        let twice = c;
        c.add(&twice);
        assert_eq!(c.fills, 2);
        assert_eq!(c.hit_rate(), Some(2.0 / 6.0));
    }

    #[test]
    fn lookup_hit_rate_counts_only_each_missing_sectors_first_lookup_as_a_miss() {
        // One fetch: 8 quads read one sector that misses, 2 read another that hits.
        let mut c = CacheCounters {
            requests: 1,
            sector_hits: 1,
            sector_misses: 1,
            tex_lookups: 10,
            ..CacheCounters::default()
        };
        assert_eq!(c.hit_rate(), Some(0.5));
        assert_eq!(c.lookup_hit_rate(), Some(1.0 - 1.0 / 10.0));
        let twice = c;
        c.add(&twice);
        assert_eq!(c.tex_lookups, 20);
        assert_eq!(c.lookup_hit_rate(), Some(1.0 - 2.0 / 20.0));
    }
}
