//! Probed launches: allocate and initialise the log buffer, give the probes their per-warp state
//! in dynamic shared memory, fill in the `ws::Log` argument, launch, download and decode.
//!
//! Why shared memory, always: the probes' statistics are updated with shared-memory reductions,
//! so no log store to global memory is in flight when a fenced access closes (traced warps store
//! their records to global memory and drain them before the next access; see
//! `kernels/warpscope.cuh`). The state is small (48 bytes + 16 per site per warp); when it would
//! still lower the resident blocks per SM, the launch goes ahead and says so
//! ([`ProbedLaunch::occupancy_note`]) — it never changes silently.

use crate::InstrumentError;
use crate::log::{LogShape, decode, initial_log};
use crate::selection::{AccessPeriod, WarpSelection};
use device::{Arg, Device, LaunchConfig, LaunchOutcome, ModuleId};
use emulator::LoadWarps;
use trace::{LaunchInfo, ProbeMode, SiteInfo, Trace};

/// How to probe a launch. `mode` must match the build that was loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub mode: ProbeMode,
    /// Warps that also keep per-access records; they are always timed.
    pub trace_warps: WarpSelection,
    /// Warps that time their accesses (per-site statistics); the others take the bare path.
    /// Every traced warp is timed too, selected here or not.
    pub time_warps: WarpSelection,
    /// Which of its accesses a timed warp times, traced warps included.
    pub access_period: AccessPeriod,
    /// Records each traced warp can keep; more are counted as dropped.
    pub slots_per_warp: u32,
    pub sites: Vec<SiteInfo>,
}

impl Probe {
    /// Summary entries per warp: site ids `0..n` with n = the highest declared id + 1.
    pub fn site_slots(&self) -> u32 {
        self.sites
            .iter()
            .map(|s| u32::from(s.id) + 1)
            .max()
            .unwrap_or(0)
    }

    /// The log of a launch of `n_warps` warps with these probes.
    pub fn log_shape(&self, n_warps: u64) -> LogShape {
        let traced = self.trace_warps.select(n_warps);
        let n = u32::try_from(n_warps).unwrap_or(u32::MAX);
        let untimed = if self.time_warps.is_all() {
            Vec::new()
        } else {
            (0..n)
                .filter(|w| !self.time_warps.contains(*w) && traced.binary_search(w).is_err())
                .collect()
        };
        LogShape {
            sites: self.site_slots(),
            slots_per_warp: self.slots_per_warp,
            n_warps,
            traced,
            untimed,
            access_period: self.access_period,
        }
    }
}

/// An argument of a probed kernel: a value, or the `ws::Log` the probes write to, which
/// [`launch_probed`] allocates and fills in.
#[derive(Debug, Clone, PartialEq)]
pub enum ProbedArg {
    Value(Arg),
    Log,
}

impl From<Arg> for ProbedArg {
    fn from(a: Arg) -> Self {
        ProbedArg::Value(a)
    }
}

/// A probed launch's results.
#[derive(Debug, Clone)]
pub struct ProbedLaunch {
    pub outcome: LaunchOutcome,
    pub trace: Trace,
    /// Warps that timed their accesses (the traced ones among them).
    pub timed_warps: u64,
    /// Dynamic shared memory the probes added per block.
    pub probe_shared_bytes: u64,
    /// Resident blocks per SM as launched, and of the same build without the probes' shared state.
    pub blocks_per_sm: u32,
    pub blocks_per_sm_without_log: u32,
    /// Why the occupancy is what it is, in words (says so when the probes' state lowered it).
    pub occupancy_note: String,
}

/// Byte offsets of the `ws::Log` argument's fields, for code that reads it in PTX (the rewriter).
/// [`log_arg`] writes the fields in this order; a test holds the two together.
pub(crate) mod log_arg_offset {
    pub const BUF: u32 = 0;
    pub const SLOTS: u32 = 8;
    pub const DUMMY: u32 = 12;
    pub const FLAGS: u32 = 16;
    pub const SHARED_OFFSET: u32 = 20;
    pub const SITES: u32 = 24;
    pub const N_WARPS: u32 = 28;
}

/// The `ws::Log` argument (`WS_LOG_ARG_BYTES`):
/// `{u64 buf; u32 slots; i32 dummy = 0; u32 flags; u32 shared_offset; u32 sites; u32 n_warps}`;
/// `flags` bit 0 says that some warp is traced, bits 8..10 carry the access period
/// ([`AccessPeriod::flag_bits`]).
fn log_arg(buf: u64, shape: &LogShape, shared_offset: u32) -> Vec<u8> {
    let traced = if shape.traced.is_empty() {
        0
    } else {
        kernels::layout::WS_LOG_FLAG_TRACED
    };
    let flags = traced | shape.access_period.flag_bits();
    let mut b = Vec::with_capacity(kernels::layout::WS_LOG_ARG_BYTES as usize);
    b.extend_from_slice(&buf.to_le_bytes());
    b.extend_from_slice(&shape.slots_per_warp.to_le_bytes());
    b.extend_from_slice(&0i32.to_le_bytes());
    b.extend_from_slice(&flags.to_le_bytes());
    b.extend_from_slice(&shared_offset.to_le_bytes());
    b.extend_from_slice(&shape.sites.to_le_bytes());
    b.extend_from_slice(&(shape.n_warps as u32).to_le_bytes());
    b
}

/// A probed launch worked out before anything reaches a device: the log's shape and bytes, the
/// `ws::Log` argument, the shared memory the probes add, and how to decode what comes back. Any
/// launcher uses it — [`launch_probed`] on a [`Device`], or code that calls a GPU driver itself.
#[derive(Debug, Clone)]
pub struct ProbePlan {
    shape: LogShape,
    mode: ProbeMode,
    launch: LaunchInfo,
    /// Where the probes' shared state starts in dynamic shared memory (after the kernel's own).
    shared_offset: u32,
    /// The probes' shared state per block, and the launch's dynamic shared memory with it.
    probe_shared_bytes: u64,
    dynamic_shared_bytes: u32,
}

impl ProbePlan {
    /// The plan of `kernel` launched with `cfg` and `probe` on a device whose SM clock is
    /// `clock_mhz` (named by `backend` and `device` in the trace). Refuses a launch whose log the
    /// layout cannot describe.
    pub fn new(
        kernel: &str,
        cfg: &LaunchConfig,
        probe: &Probe,
        (clock_mhz, backend, device): (f64, &str, &str),
    ) -> Result<ProbePlan, InstrumentError> {
        let wpb = cfg.block.volume().div_ceil(32) as u32;
        let n_warps = cfg.grid.volume() * wpb as u64;
        if n_warps > u32::MAX as u64 {
            return Err(InstrumentError::Launch {
                what: format!("kernel {kernel:?}"),
                reason: format!("{n_warps} warps exceed the log's 32-bit warp index"),
            });
        }
        let sites = probe.site_slots();
        if sites > kernels::layout::WS_MAX_SITES {
            return Err(InstrumentError::Launch {
                what: format!("kernel {kernel:?}"),
                reason: format!(
                    "site ids up to {} declared; the log holds statistics for ids below {}",
                    sites - 1,
                    kernels::layout::WS_MAX_SITES
                ),
            });
        }
        let mut shape = probe.log_shape(n_warps);
        if probe.mode == ProbeMode::Off {
            shape.traced = Vec::new();
        }
        let launch = LaunchInfo::new(kernel, cfg.grid, cfg.block)
            .with_probe(probe.mode, probe.log_shape(n_warps).kind())
            .with_sites(probe.sites.clone())
            .with_clock(clock_mhz)
            .with_backend(backend, device);
        let shared_offset = cfg
            .dynamic_shared_bytes
            .next_multiple_of(kernels::layout::WS_SHARED_ALIGN);
        let probe_shared_bytes = match probe.mode {
            ProbeMode::Off => 0,
            _ => shape.shared_bytes_per_block(wpb),
        };
        let dynamic_shared_bytes = match probe.mode {
            ProbeMode::Off => cfg.dynamic_shared_bytes,
            _ => u32::try_from(u64::from(shared_offset) + probe_shared_bytes).map_err(|_| {
                InstrumentError::Launch {
                    what: format!("kernel {kernel:?}"),
                    reason: format!("{probe_shared_bytes} bytes of probe state per block overflow"),
                }
            })?,
        };
        Ok(ProbePlan {
            shape,
            mode: probe.mode,
            launch,
            shared_offset,
            probe_shared_bytes,
            dynamic_shared_bytes,
        })
    }

    /// The log's shape.
    pub fn shape(&self) -> &LogShape {
        &self.shape
    }

    /// Bytes of the global log buffer (none with the probes off).
    pub fn log_bytes(&self) -> u64 {
        match self.mode {
            ProbeMode::Off => 0,
            _ => self.shape.total_bytes(),
        }
    }

    /// The log buffer's contents before the launch.
    pub fn initial_log(&self) -> Vec<u8> {
        initial_log(self.mode, &self.shape)
    }

    /// The `ws::Log` argument for a log buffer at device address `buf` (0 with the probes off).
    pub fn log_arg(&self, buf: u64) -> Vec<u8> {
        match self.mode {
            ProbeMode::Off => log_arg(0, &self.shape, 0),
            _ => log_arg(buf, &self.shape, self.shared_offset),
        }
    }

    /// The probes' shared state per block.
    pub fn probe_shared_bytes(&self) -> u64 {
        self.probe_shared_bytes
    }

    /// The launch's dynamic shared memory: the kernel's own and, after it, the probes' state.
    pub fn dynamic_shared_bytes(&self) -> u32 {
        self.dynamic_shared_bytes
    }

    /// The trace of a launch whose log came back as `bytes`.
    pub fn decode(&self, bytes: &[u8], slots_per_warp: u32) -> Result<Trace, InstrumentError> {
        let mut launch = self.launch.clone();
        launch.shared_buffer = true;
        launch.slots_per_warp = slots_per_warp;
        decode(bytes, &launch, &self.shape)
    }

    /// The trace of a launch with the probes off: the launch, no warps.
    fn empty_trace(&self) -> Trace {
        Trace {
            launch: self.launch.clone(),
            warps: Vec::new(),
        }
    }
}

/// Launches `kernel` with probes and decodes its log. Exactly one argument must be
/// [`ProbedArg::Log`].
pub fn launch_probed(
    dev: &mut dyn Device,
    module: ModuleId,
    kernel: &str,
    cfg: &LaunchConfig,
    args: &[ProbedArg],
    probe: &Probe,
) -> Result<ProbedLaunch, InstrumentError> {
    single_log_arg(kernel, args)?;
    let plan = ProbePlan::new(
        kernel,
        cfg,
        probe,
        (dev.clock_mhz(), dev.backend().name(), &dev.name()),
    )?;
    // Every warp's loads, on a device that knows when their data arrives: the ground truth
    // beside the timed warps' records and statistics, and in the bare run (whose log times
    // nothing) beside the same loads; the untimed warps' loads too, so that the whole run's
    // figure covers the memory system as a whole. Only the traced warps' windows name the timed
    // loads, so without a traced warp nothing could be paired and nothing is recorded.
    let shape = plan.shape();
    let recorded = if probe.trace_warps.select(shape.n_warps).is_empty() {
        LoadWarps::default()
    } else {
        LoadWarps::new((0..shape.n_warps).collect())
    };
    let blocks_without_log = dev.occupancy(module, kernel, cfg)?;
    // The arguments as the device takes them, with the log's bytes put in place below.
    let with_log = |log: Vec<u8>| -> Vec<Arg> {
        args.iter()
            .map(|a| match a {
                ProbedArg::Value(v) => v.clone(),
                ProbedArg::Log => Arg::Bytes(log.clone()),
            })
            .collect()
    };
    if probe.mode == ProbeMode::Off {
        let outcome = launch_recording(
            dev,
            &recorded,
            (module, kernel, cfg),
            &with_log(plan.log_arg(0)),
        )?;
        return Ok(ProbedLaunch {
            outcome,
            trace: plan.empty_trace(),
            timed_warps: 0,
            probe_shared_bytes: 0,
            blocks_per_sm: blocks_without_log,
            blocks_per_sm_without_log: blocks_without_log,
            occupancy_note: "probes off".into(),
        });
    }
    let total = plan.log_bytes();
    let free = dev.free_memory_bytes();
    if total > free {
        return Err(InstrumentError::OutOfMemory {
            what: format!(
                "the probe log ({} warps, {} traced × {} slots); trace fewer warps or lower --slots",
                shape.n_warps,
                shape.traced.len(),
                probe.slots_per_warp
            ),
            needed_bytes: total,
            available_bytes: free,
        });
    }
    let probe_shared = plan.probe_shared_bytes();
    let run_cfg = LaunchConfig {
        dynamic_shared_bytes: plan.dynamic_shared_bytes(),
        ..*cfg
    };
    let blocks = dev.occupancy(module, kernel, &run_cfg).unwrap_or(0);
    if blocks == 0 {
        return Err(InstrumentError::Launch {
            what: format!("kernel {kernel:?} with the probes' state in shared memory"),
            reason: format!(
                "{probe_shared} bytes of shared memory per block ({} warps × {} bytes) do not fit beside the kernel's {} bytes",
                cfg.block.volume().div_ceil(32),
                shape.warp_area_bytes(),
                cfg.dynamic_shared_bytes
            ),
        });
    }
    let occupancy_note = if blocks < blocks_without_log {
        format!(
            "the probes' {probe_shared} B/block of shared state lower residency from {blocks_without_log} to {blocks} blocks/SM"
        )
    } else {
        format!("the probes' {probe_shared} B/block of shared state keep {blocks} blocks/SM")
    };
    let buf = dev.alloc(total)?;
    let mut bytes = plan.initial_log();
    dev.upload(&buf, &bytes)?;
    let launched = launch_recording(
        dev,
        &recorded,
        (module, kernel, &run_cfg),
        &with_log(plan.log_arg(buf.addr)),
    )
    .and_then(|outcome| dev.download(&buf, &mut bytes).map(|_| outcome))
    .map(|mut outcome| {
        // The probes' own reads of their log are not the kernel's loads.
        if let Some(loads) = &mut outcome.loads {
            loads.retain(|e| !(buf.addr..buf.addr + total).contains(&e.addr));
        }
        outcome
    });
    // The log is freed on every path: timing N frames must not leak N logs.
    dev.free(&buf)?;
    let outcome = launched?;
    let trace = plan.decode(&bytes, probe.slots_per_warp)?;
    Ok(ProbedLaunch {
        outcome,
        trace,
        timed_warps: shape.timed_warps(),
        probe_shared_bytes: probe_shared,
        blocks_per_sm: blocks,
        blocks_per_sm_without_log: blocks_without_log,
        occupancy_note,
    })
}

/// Launches with the loads of `warps` recorded, where the device can, and recording off again
/// after, whatever the launch did.
fn launch_recording(
    dev: &mut dyn Device,
    warps: &LoadWarps,
    (module, kernel, cfg): (ModuleId, &str, &LaunchConfig),
    args: &[Arg],
) -> Result<LaunchOutcome, device::DeviceError> {
    if warps.is_empty() {
        return dev.launch(module, kernel, cfg, args);
    }
    dev.record_loads(Some(warps.clone()));
    let outcome = dev.launch(module, kernel, cfg, args);
    dev.record_loads(None);
    outcome
}

fn single_log_arg(kernel: &str, args: &[ProbedArg]) -> Result<usize, InstrumentError> {
    let logs: Vec<usize> = args
        .iter()
        .enumerate()
        .filter(|(_, a)| matches!(a, ProbedArg::Log))
        .map(|(i, _)| i)
        .collect();
    match logs.as_slice() {
        [i] => Ok(*i),
        _ => Err(InstrumentError::Arg {
            kernel: kernel.into(),
            index: logs.get(1).copied().unwrap_or(args.len()),
            what: format!(
                "a probed launch needs exactly one ws::Log argument (ProbedArg::Log), found {}",
                logs.len()
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_arg_matches_the_header_struct() {
        let shape = LogShape {
            sites: 3,
            slots_per_warp: 7,
            n_warps: 9,
            traced: vec![2],
            untimed: Vec::new(),
            access_period: AccessPeriod::ALL,
        };
        let b = log_arg(0x1122_3344_5566_7788, &shape, 48);
        assert_eq!(b.len(), kernels::layout::WS_LOG_ARG_BYTES as usize);
        assert_eq!(&b[0..8], &0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(&b[8..12], &7u32.to_le_bytes());
        assert_eq!(&b[12..16], &0i32.to_le_bytes(), "dummy is always 0");
        assert_eq!(
            &b[16..20],
            &kernels::layout::WS_LOG_FLAG_TRACED.to_le_bytes()
        );
        assert_eq!(&b[20..24], &48u32.to_le_bytes());
        assert_eq!(&b[24..28], &3u32.to_le_bytes());
        assert_eq!(&b[28..32], &9u32.to_le_bytes());
        use log_arg_offset as o;
        let at = |off: u32| &b[off as usize..off as usize + 4];
        assert_eq!(
            &b[o::BUF as usize..8],
            &0x1122_3344_5566_7788u64.to_le_bytes()
        );
        assert_eq!(at(o::SLOTS), &7u32.to_le_bytes());
        assert_eq!(at(o::DUMMY), &0u32.to_le_bytes());
        assert_eq!(
            at(o::FLAGS),
            &kernels::layout::WS_LOG_FLAG_TRACED.to_le_bytes()
        );
        assert_eq!(at(o::SHARED_OFFSET), &48u32.to_le_bytes());
        assert_eq!(at(o::SITES), &3u32.to_le_bytes());
        assert_eq!(at(o::N_WARPS), &9u32.to_le_bytes());
        let every_8th = LogShape {
            access_period: AccessPeriod::new(8).unwrap(),
            ..shape
        };
        let flags =
            kernels::layout::WS_LOG_FLAG_TRACED | 1 << kernels::layout::WS_LOG_FLAG_STEP_SHIFT;
        assert_eq!(&log_arg(0, &every_8th, 48)[16..20], &flags.to_le_bytes());
    }

    #[test]
    fn traced_warps_are_timed_and_the_rest_follow_the_selection() {
        let probe = |trace: &str, time: &str| Probe {
            mode: ProbeMode::Fence,
            trace_warps: trace.parse().unwrap(),
            time_warps: time.parse().unwrap(),
            access_period: AccessPeriod::ALL,
            slots_per_warp: 4,
            sites: Vec::new(),
        };
        let s = probe("1,2", "every:4").log_shape(9);
        assert_eq!(s.untimed, vec![3, 5, 6, 7]);
        assert_eq!(s.timed_warps(), 5);
        assert!(probe("none", "all").log_shape(9).untimed.is_empty());
        assert_eq!(probe("none", "none").log_shape(3).untimed, vec![0, 1, 2]);
    }

    #[test]
    fn exactly_one_log_argument() {
        let one = ProbedArg::Value(Arg::U32(1));
        assert_eq!(
            single_log_arg("k", &[one.clone(), ProbedArg::Log]).unwrap(),
            1
        );
        assert!(single_log_arg("k", &[one]).is_err());
        assert!(single_log_arg("k", &[ProbedArg::Log, ProbedArg::Log]).is_err());
    }
}
