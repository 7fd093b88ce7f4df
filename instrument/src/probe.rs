//! Probed launches: allocate and initialise the log buffer, choose where the probes buffer their
//! records (shared memory unless that would lower the resident blocks per SM — the measurement must
//! not change what it measures), fill in the `ws::Log` argument, launch, download and decode.

use crate::InstrumentError;
use crate::device::{Arg, Device, LaunchConfig, LaunchOutcome, ModuleId};
use crate::log::{LogShape, decode, header_bytes};
use trace::{LaunchInfo, ProbeMode, RecordKind, SiteInfo, Trace};

/// Where the probes keep records during the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Buffering {
    /// Shared memory if it keeps the occupancy of the bare kernel, else global memory.
    #[default]
    Auto,
    Shared,
    Global,
}

impl std::str::FromStr for Buffering {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Buffering::Auto),
            "shared" => Ok(Buffering::Shared),
            "global" => Ok(Buffering::Global),
            _ => Err(format!(
                "unknown buffering {s:?}; expected auto, shared or global"
            )),
        }
    }
}

/// How to probe a launch. `mode` must match the build that was loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub mode: ProbeMode,
    pub kind: RecordKind,
    /// Records each warp can keep; more are counted as dropped.
    pub slots_per_warp: u32,
    pub buffering: Buffering,
    pub sites: Vec<SiteInfo>,
}

/// A probed launch's results.
#[derive(Debug, Clone)]
pub struct ProbedLaunch {
    pub outcome: LaunchOutcome,
    pub trace: Trace,
    /// Whether records were buffered in shared memory.
    pub shared_buffer: bool,
    /// Why that buffering was chosen, in words.
    pub buffering_reason: String,
    /// Resident blocks per SM as launched, and of the same kernel without the log's shared memory.
    pub blocks_per_sm: u32,
    pub blocks_per_sm_without_log: u32,
}

const LOG_ARG_BYTES: usize = 24;

/// The `ws::Log` argument: `{u64 buf; u32 slots; i32 dummy = 0; u32 flags; u32 shared_offset}`.
fn log_arg(buf: u64, slots: u32, shared: bool, shared_offset: u32) -> Vec<u8> {
    let mut b = Vec::with_capacity(LOG_ARG_BYTES);
    b.extend_from_slice(&buf.to_le_bytes());
    b.extend_from_slice(&slots.to_le_bytes());
    b.extend_from_slice(&0i32.to_le_bytes());
    b.extend_from_slice(&(shared as u32 * kernels::layout::WS_LOG_FLAG_SHARED).to_le_bytes());
    b.extend_from_slice(&shared_offset.to_le_bytes());
    b
}

/// Launches `kernel` with probes and decodes its log. Exactly one argument must be [`Arg::Log`].
pub fn launch_probed(
    dev: &mut dyn Device,
    module: ModuleId,
    kernel: &str,
    cfg: &LaunchConfig,
    args: &[Arg],
    probe: &Probe,
) -> Result<ProbedLaunch, InstrumentError> {
    let log_index = single_log_arg(kernel, args)?;
    let mut launch = LaunchInfo::new(kernel, cfg.grid, cfg.block)
        .with_probe(probe.mode, probe.kind)
        .with_sites(probe.sites.clone())
        .with_clock(dev.clock_mhz())
        .with_backend(dev.backend().name(), dev.name());
    let wpb = launch.warps_per_block();
    let bare_blocks = dev.occupancy(module, kernel, cfg)?;
    if probe.mode == ProbeMode::Off {
        let mut args = args.to_vec();
        args[log_index] = Arg::Bytes(log_arg(0, 0, false, 0));
        let outcome = dev.launch(module, kernel, cfg, &args)?;
        launch.shared_buffer = false;
        return Ok(ProbedLaunch {
            outcome,
            trace: Trace {
                launch,
                warps: Vec::new(),
            },
            shared_buffer: false,
            buffering_reason: "probes off".into(),
            blocks_per_sm: bare_blocks,
            blocks_per_sm_without_log: bare_blocks,
        });
    }
    let shape = LogShape {
        kind: probe.kind,
        slots_per_warp: probe.slots_per_warp,
        n_warps: cfg.grid.volume() * wpb as u64,
    };
    if shape.n_warps > u32::MAX as u64 {
        return Err(InstrumentError::Launch {
            what: format!("kernel {kernel:?}"),
            reason: format!("{} warps exceed the log's 32-bit warp index", shape.n_warps),
        });
    }
    let total = shape.total_bytes();
    let free = dev.free_memory_bytes();
    if total > free {
        return Err(InstrumentError::OutOfMemory {
            what: format!(
                "the probe log ({} warps × {} slots); lower --slots or use --kind summary",
                shape.n_warps, probe.slots_per_warp
            ),
            needed_bytes: total,
            available_bytes: free,
        });
    }
    let shared_offset = cfg.dynamic_shared_bytes.next_multiple_of(16);
    let log_shared = shape.shared_bytes_per_block(wpb);
    let with_log = LaunchConfig {
        dynamic_shared_bytes: shared_offset
            .saturating_add(u32::try_from(log_shared).unwrap_or(u32::MAX)),
        ..*cfg
    };
    let shared_blocks = dev.occupancy(module, kernel, &with_log).unwrap_or(0);
    let (shared, reason) = match probe.buffering {
        Buffering::Shared if shared_blocks == 0 => {
            return Err(InstrumentError::Launch {
                what: format!("kernel {kernel:?} with the log in shared memory"),
                reason: format!(
                    "{log_shared} bytes of shared memory per block for the log do not fit; use --buffering global or fewer --slots"
                ),
            });
        }
        Buffering::Shared => (true, "shared memory (requested)".to_string()),
        Buffering::Global => (false, "global memory (requested)".to_string()),
        Buffering::Auto if shared_blocks >= bare_blocks && shared_blocks > 0 => (
            true,
            format!("shared memory: {log_shared} B/block keeps {bare_blocks} blocks/SM"),
        ),
        Buffering::Auto => (
            false,
            format!(
                "global memory: {log_shared} B/block of shared log would lower residency from {bare_blocks} to {shared_blocks} blocks/SM"
            ),
        ),
    };
    let run_cfg = if shared { with_log } else { *cfg };
    let buf = dev.alloc(total)?;
    let mut init = vec![0u8; total as usize];
    init[..kernels::layout::WS_LOG_HEADER_BYTES as usize]
        .copy_from_slice(&header_bytes(probe.mode, &shape));
    dev.upload(&buf, &init)?;
    let mut args = args.to_vec();
    args[log_index] = Arg::Bytes(log_arg(
        buf.addr,
        probe.slots_per_warp,
        shared,
        shared_offset,
    ));
    let launched = dev
        .launch(module, kernel, &run_cfg, &args)
        .and_then(|outcome| dev.download(&buf, &mut init).map(|_| outcome));
    // The log is freed on every path: timing N frames must not leak N logs.
    dev.free(&buf)?;
    let outcome = launched?;
    launch.shared_buffer = shared;
    launch.slots_per_warp = probe.slots_per_warp;
    let trace = decode(&init, &launch, &shape)?;
    Ok(ProbedLaunch {
        outcome,
        trace,
        shared_buffer: shared,
        buffering_reason: reason,
        blocks_per_sm: if shared { shared_blocks } else { bare_blocks },
        blocks_per_sm_without_log: bare_blocks,
    })
}

fn single_log_arg(kernel: &str, args: &[Arg]) -> Result<usize, InstrumentError> {
    let logs: Vec<usize> = args
        .iter()
        .enumerate()
        .filter(|(_, a)| matches!(a, Arg::Log))
        .map(|(i, _)| i)
        .collect();
    match logs.as_slice() {
        [i] => Ok(*i),
        _ => Err(InstrumentError::Arg {
            kernel: kernel.into(),
            index: logs.get(1).copied().unwrap_or(args.len()),
            what: format!(
                "a probed launch needs exactly one ws::Log argument (Arg::Log), found {}",
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
        let b = log_arg(0x1122_3344_5566_7788, 7, true, 48);
        assert_eq!(b.len(), LOG_ARG_BYTES);
        assert_eq!(&b[0..8], &0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(&b[8..12], &7u32.to_le_bytes());
        assert_eq!(&b[12..16], &0i32.to_le_bytes(), "dummy is always 0");
        assert_eq!(&b[20..24], &48u32.to_le_bytes());
    }

    #[test]
    fn exactly_one_log_argument() {
        assert_eq!(single_log_arg("k", &[Arg::U32(1), Arg::Log]).unwrap(), 1);
        assert!(single_log_arg("k", &[Arg::U32(1)]).is_err());
        assert!(single_log_arg("k", &[Arg::Log, Arg::Log]).is_err());
    }
}
