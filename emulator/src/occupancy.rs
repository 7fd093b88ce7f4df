//! Occupancy: how many blocks of a kernel fit on one SM at once, and which resource runs out
//! first — the arithmetic of NVIDIA's CUDA occupancy calculator.
//!
//! Why here: the emulator's block scheduler needs it to decide how many blocks an SM holds, and
//! `instrument` uses the same function to choose between shared-memory and global-memory log
//! buffering (the paper's rule: the measurement must not lower occupancy). One function, so the
//! two can never disagree.
//!
//! Main items: [`occupancy`], [`Occupancy`], [`Limiter`], [`OccupancyError`].
//!
//! The calculation, per the calculator's per-cc constants in [`SmConfig`]:
//! - warps per block = ⌈threads / 32⌉;
//! - registers per warp = ⌈regs per thread × 32 / `register_alloc_unit`⌉ × unit; blocks by
//!   registers = ⌊⌊registers / per-warp⌋ / warps per block⌋;
//! - shared per block = ⌈shared / `shared_alloc_unit_bytes`⌉ × unit + the per-block reservation;
//!   blocks by shared = ⌊`shared_bytes` / per-block⌋;
//! - blocks = the minimum of those and of the thread, warp and block limits; the limiter reported
//!   is the first reaching the minimum in the order warps, threads, blocks, registers, shared.
//!
//! ```
//! use emulator::{occupancy, GpuConfig, Limiter};
//! let v100 = GpuConfig::preset("v100").unwrap();
//! let o = occupancy(&v100.sm, 256, 64, 0).unwrap();
//! assert_eq!((o.blocks_per_sm, o.warps_per_sm, o.limited_by), (4, 32, Limiter::Registers));
//! ```

use crate::config::SmConfig;
use serde::Serialize;

/// Resident blocks and warps per SM for one kernel configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Occupancy {
    pub blocks_per_sm: u32,
    pub warps_per_sm: u32,
    pub limited_by: Limiter,
}

/// The resource that caps the number of resident blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Limiter {
    Threads,
    Warps,
    Blocks,
    Registers,
    SharedMemory,
}

/// A single block cannot fit on an SM; the variant names the limit and carries the numbers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OccupancyError {
    #[error("a block needs at least one thread")]
    EmptyBlock,
    #[error("{block_threads} threads per block exceed the limit of {max} per block")]
    TooManyThreads { block_threads: u32, max: u32 },
    #[error("{regs_per_thread} registers per thread exceed the limit of {max}")]
    TooManyRegistersPerThread { regs_per_thread: u32, max: u32 },
    #[error("one block needs {needed} registers but an SM has {available}")]
    RegistersExceedSm { needed: u64, available: u32 },
    #[error("{requested} bytes of shared memory per block exceed the limit of {max} per block")]
    SharedExceedsBlockLimit { requested: u32, max: u32 },
    #[error("one block needs {needed} bytes of shared memory but an SM has {available}")]
    SharedExceedsSm { needed: u64, available: u32 },
}

/// Registers per thread that a compiler targeting this SM would give a kernel that asks for
/// `regs_per_thread` (a count from ptxas for a newer target): at most the per-thread limit,
/// and few enough that one block of `block_threads` fits the register file — the compiler
/// spills the rest to local memory (Fermi's nvcc caps at 63, and `__launch_bounds__` or the
/// driver's resource check force blocks to fit). Never more than asked, never below 1; 0
/// (registers not counted) stays 0.
pub fn fit_registers(sm: &SmConfig, block_threads: u32, regs_per_thread: u32) -> u32 {
    if regs_per_thread == 0 {
        return 0;
    }
    let unit = u64::from(sm.register_alloc_unit.max(1));
    let warps = u64::from(block_threads.div_ceil(32).max(1));
    let fits =
        |r: u32| (u64::from(r) * 32).div_ceil(unit) * unit * warps <= u64::from(sm.registers);
    let mut r = regs_per_thread.min(sm.max_registers_per_thread).max(1);
    while r > 1 && !fits(r) {
        r -= 1;
    }
    r
}

/// Blocks per SM for blocks of `block_threads` threads using `regs_per_thread` registers and
/// `shared_bytes_per_block` bytes of shared memory (static + dynamic).
pub fn occupancy(
    sm: &SmConfig,
    block_threads: u32,
    regs_per_thread: u32,
    shared_bytes_per_block: u32,
) -> Result<Occupancy, OccupancyError> {
    if block_threads == 0 {
        return Err(OccupancyError::EmptyBlock);
    }
    if block_threads > sm.max_threads_per_block {
        return Err(OccupancyError::TooManyThreads {
            block_threads,
            max: sm.max_threads_per_block,
        });
    }
    if regs_per_thread > sm.max_registers_per_thread {
        return Err(OccupancyError::TooManyRegistersPerThread {
            regs_per_thread,
            max: sm.max_registers_per_thread,
        });
    }
    if shared_bytes_per_block > sm.max_shared_bytes_per_block {
        return Err(OccupancyError::SharedExceedsBlockLimit {
            requested: shared_bytes_per_block,
            max: sm.max_shared_bytes_per_block,
        });
    }
    let warps_per_block = block_threads.div_ceil(32);
    let by_warps = sm.max_warps / warps_per_block;
    let by_threads = sm.max_threads / block_threads;
    let by_blocks = sm.max_blocks;

    let by_regs = if regs_per_thread == 0 {
        u32::MAX
    } else {
        let unit = u64::from(sm.register_alloc_unit.max(1));
        let per_warp = (u64::from(regs_per_thread) * 32).div_ceil(unit) * unit;
        let warps = u64::from(sm.registers) / per_warp;
        let blocks = warps / u64::from(warps_per_block);
        if blocks == 0 {
            return Err(OccupancyError::RegistersExceedSm {
                needed: per_warp * u64::from(warps_per_block),
                available: sm.registers,
            });
        }
        u32::try_from(blocks).unwrap_or(u32::MAX)
    };

    let unit = u64::from(sm.shared_alloc_unit_bytes.max(1));
    let shared_per_block = u64::from(shared_bytes_per_block).div_ceil(unit) * unit
        + u64::from(sm.shared_reserved_bytes_per_block);
    let by_shared = match u64::from(sm.shared_bytes).checked_div(shared_per_block) {
        None => u32::MAX,
        Some(0) => {
            return Err(OccupancyError::SharedExceedsSm {
                needed: shared_per_block,
                available: sm.shared_bytes,
            });
        }
        Some(blocks) => u32::try_from(blocks).unwrap_or(u32::MAX),
    };

    let candidates = [
        (by_warps, Limiter::Warps),
        (by_threads, Limiter::Threads),
        (by_blocks, Limiter::Blocks),
        (by_regs, Limiter::Registers),
        (by_shared, Limiter::SharedMemory),
    ];
    let blocks = candidates.iter().map(|c| c.0).min().unwrap_or(0);
    let limited_by = candidates
        .iter()
        .find(|c| c.0 == blocks)
        .map_or(Limiter::Warps, |c| c.1);
    if blocks == 0 {
        // Only the thread/warp limits can reach zero here, and max_threads_per_block ≤
        // max_threads (validated) rules that out; report it rather than panic.
        return Err(OccupancyError::TooManyThreads {
            block_threads,
            max: sm.max_threads,
        });
    }
    Ok(Occupancy {
        blocks_per_sm: blocks,
        warps_per_sm: blocks * warps_per_block,
        limited_by,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GpuConfig;

    fn sm(name: &str) -> SmConfig {
        GpuConfig::preset(name).unwrap().sm
    }

    // Expected values below are what NVIDIA's CUDA occupancy calculator (spreadsheet) shows for
    // the same inputs and compute capability.
    #[test]
    fn sm70_matches_the_occupancy_calculator() {
        let s = sm("v100");
        let o = occupancy(&s, 256, 32, 0).unwrap();
        assert_eq!((o.blocks_per_sm, o.warps_per_sm), (8, 64));
        let o = occupancy(&s, 256, 64, 0).unwrap();
        assert_eq!((o.blocks_per_sm, o.limited_by), (4, Limiter::Registers));
        // 128 threads, 32 regs, 48 KB shared: 96 KB / 48 KB = 2 blocks.
        let o = occupancy(&s, 128, 32, 48 * 1024).unwrap();
        assert_eq!((o.blocks_per_sm, o.limited_by), (2, Limiter::SharedMemory));
        // 64-thread blocks hit the 32-block limit before the 64-warp limit.
        let o = occupancy(&s, 32, 16, 0).unwrap();
        assert_eq!((o.blocks_per_sm, o.limited_by), (32, Limiter::Blocks));
    }

    #[test]
    fn sm20_matches_the_occupancy_calculator() {
        let s = sm("gtx480");
        // 128 threads, 20 regs: regs/warp = 640 → 51 warps by regs, 48 by warps → 8 blocks (block limit).
        let o = occupancy(&s, 128, 20, 0).unwrap();
        assert_eq!(
            (o.blocks_per_sm, o.warps_per_sm, o.limited_by),
            (8, 32, Limiter::Blocks)
        );
        // 256 threads, 32 regs: 1024 regs/warp → 32 warps → 4 blocks.
        let o = occupancy(&s, 256, 32, 0).unwrap();
        assert_eq!((o.blocks_per_sm, o.limited_by), (4, Limiter::Registers));
        // 192 threads → 48 warps / 6 = 8 blocks, warps and blocks tie: warps reported first.
        let o = occupancy(&s, 192, 16, 0).unwrap();
        assert_eq!((o.blocks_per_sm, o.limited_by), (8, Limiter::Warps));
        // 13 KB shared per block → 3 blocks in 48 KB.
        let o = occupancy(&s, 64, 16, 13 * 1024).unwrap();
        assert_eq!((o.blocks_per_sm, o.limited_by), (3, Limiter::SharedMemory));
    }

    #[test]
    fn sm80_counts_the_reserved_kilobyte() {
        let s = sm("a100");
        // 32 KB + 1 KB reserved per block → 164 KB / 33 KB = 4 blocks (not 5).
        let o = occupancy(&s, 128, 32, 32 * 1024).unwrap();
        assert_eq!((o.blocks_per_sm, o.limited_by), (4, Limiter::SharedMemory));
    }

    #[test]
    fn blocks_that_cannot_fit_name_the_limit() {
        let s = sm("gtx480");
        assert_eq!(
            occupancy(&s, 2048, 16, 0),
            Err(OccupancyError::TooManyThreads {
                block_threads: 2048,
                max: 1024
            })
        );
        assert!(matches!(
            occupancy(&s, 128, 64, 0),
            Err(OccupancyError::TooManyRegistersPerThread { .. })
        ));
        assert!(matches!(
            occupancy(&s, 1024, 63, 0),
            Err(OccupancyError::RegistersExceedSm { .. })
        ));
        let e = occupancy(&s, 32, 8, 64 * 1024).unwrap_err();
        assert!(e.to_string().contains("65536"), "{e}");
        assert_eq!(occupancy(&s, 0, 8, 0), Err(OccupancyError::EmptyBlock));
    }

    #[test]
    fn registers_are_fitted_the_way_the_target_compiler_would() {
        let s = sm("gtx480");
        // sm_75's 64 registers: Fermi allows 63 per thread.
        assert_eq!(fit_registers(&s, 128, 64), 63);
        // 44 registers × 1024 threads = 45056 > 32768: 32 per thread fit one block.
        assert_eq!(fit_registers(&s, 1024, 44), 32);
        assert!(occupancy(&s, 1024, fit_registers(&s, 1024, 44), 0).is_ok());
        // what already fits is left alone
        assert_eq!(fit_registers(&s, 256, 20), 20);
        assert_eq!(fit_registers(&sm("v100"), 1024, 64), 64);
        assert_eq!(fit_registers(&sm("v100"), 128, 255), 255);
        assert_eq!(fit_registers(&s, 1024, 0), 0);
    }

    #[test]
    fn more_shared_memory_never_raises_occupancy() {
        let s = sm("h100");
        let mut last = u32::MAX;
        for kb in [0, 1, 4, 16, 48, 100, 200] {
            let o = occupancy(&s, 128, 32, kb * 1024).unwrap();
            assert!(o.blocks_per_sm <= last);
            last = o.blocks_per_sm;
        }
        assert!(last >= 1);
    }
}
