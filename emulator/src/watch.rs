//! Watching a long launch from outside: a wall-clock limit and a progress callback. The engine
//! consults both between rounds (engine/mod.rs) once another [`WATCH_INTERVAL`] warp
//! instructions ran, so the hot loop pays nothing and a runaway kernel (an infinite loop, a
//! livelock, a huge grid) is reported while it runs instead of after hours. Neither changes a result: a launch either completes with the same
//! numbers or ends with an error.

use std::sync::Arc;
use std::time::Duration;

/// Warp instructions between two looks at the clock (a power of two).
pub const WATCH_INTERVAL: u64 = 1 << 20;

/// Where a launch stands, as given to the progress callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub warp_instructions: u64,
    /// Simulated cycle of the SM first in global order.
    pub cycle: u64,
    /// Blocks handed to an SM so far, and in all.
    pub blocks_started: u64,
    pub blocks_total: u64,
}

/// Called with the launch's progress about every [`WATCH_INTERVAL`] warp instructions.
pub type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Limits and observers of later launches (see [`crate::Emulator::set_watch`]).
#[derive(Clone, Default)]
pub struct Watch {
    /// A launch still running this long after it started fails with `EmuError::TimeLimit`.
    pub time_limit: Option<Duration>,
    pub progress: Option<ProgressFn>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("time_limit", &self.time_limit)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// Equal limits, and the same callback (or none): a callback is compared by identity.
impl PartialEq for Watch {
    fn eq(&self, other: &Self) -> bool {
        self.time_limit == other.time_limit
            && match (&self.progress, &other.progress) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            }
    }
}
