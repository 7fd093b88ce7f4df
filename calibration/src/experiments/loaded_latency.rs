//! `loaded-latency.cu` on the emulator: one thread's chase of DRAM misses while blocks on every SM
//! read in the background.

use std::path::Path;

use device::{Arg, DevBuf};
use emulator::GpuConfig;

use super::{Experiment, sattolo_order};
use crate::error::CalibrationError;
use crate::table::LoadedBackground;

/// The experiment's sizes: its background buffer in 32-byte sectors, its chase's lines and their
/// stride in 32-bit words, and the chase's steps per launch.
const BUF_SECTORS: u64 = 1 << 27;
const CHASE_LINES: u32 = 1 << 16;
const LINE_STRIDE: u64 = 16384 / 4;
const STEPS: u32 = 1024;
const BLOCK: u32 = 256;
/// `struct Result`: bytes, first_ns, last_ns, chase_cycles, chase_ns (8 bytes each), done; and
/// where `chase_cycles` lies in it.
const RESULT_BYTES: u64 = 48;
const CHASE_CYCLES_AT: u64 = 24;

pub(crate) struct LoadedLatencyRig {
    exp: Experiment,
    buf: DevBuf,
    next: DevBuf,
    out: DevBuf,
    sink: DevBuf,
    start: u32,
    sms: u32,
}

impl LoadedLatencyRig {
    /// Loads the experiment and writes the links of its chase's first launch, as `main` does:
    /// one random cycle through the lines (Sattolo's shuffle with `main`'s seed), of which a
    /// launch visits `STEPS` lines. The background's buffer stays zeros where `main` fills it:
    /// the kernel's timing and result do not depend on the values it reads.
    pub(crate) fn new(root: &Path, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let mut exp = Experiment::load(root, "loaded-latency.cu", cfg)?;
        let buf = exp.alloc(BUF_SECTORS * 32)?;
        let next = exp.alloc(u64::from(CHASE_LINES) * LINE_STRIDE * 4)?;
        let out = exp.alloc(RESULT_BYTES)?;
        let sink = exp.alloc(8)?;
        let order = sattolo_order(CHASE_LINES);
        let mut link = vec![0u32; CHASE_LINES as usize];
        for (i, &line) in order.iter().enumerate() {
            link[line as usize] = order[(i + 1) % order.len()];
        }
        // Only the lines the chase reads need their links.
        let start = order[0];
        let mut line = start;
        for _ in 0..STEPS {
            let at = DevBuf {
                addr: next.addr + u64::from(line) * LINE_STRIDE * 4,
                bytes: 4,
            };
            exp.upload(&at, &link[line as usize].to_le_bytes())?;
            line = link[line as usize];
        }
        Ok(LoadedLatencyRig {
            exp,
            buf,
            next,
            out,
            sink,
            start,
            sms: cfg.sm.count,
        })
    }

    /// SM cycles per chase step with `blocks_per_sm` background blocks per SM reading
    /// `background`, one launch from an empty L2 (`main` evicts it with a 256 MiB memset and
    /// takes the median of three launches, each on lines none before it touched; the emulator
    /// gives every launch on the same lines the same cycles).
    pub(crate) fn step(
        &mut self,
        background: LoadedBackground,
        blocks_per_sm: u32,
    ) -> Result<f64, CalibrationError> {
        let mut init = [0u8; RESULT_BYTES as usize];
        init[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        self.exp.upload(&self.out, &init)?;
        self.exp.dev.flush_l2();
        let args = [
            Arg::Buf(self.buf),
            Arg::Buf(self.next),
            Arg::U32(self.start),
            Arg::I32(background.kind()),
            Arg::Buf(self.out),
            Arg::Buf(self.sink),
        ];
        self.exp
            .launch("loaded", 1 + blocks_per_sm * self.sms, BLOCK, &args)?;
        let chase_cycles = DevBuf {
            addr: self.out.addr + CHASE_CYCLES_AT,
            bytes: 8,
        };
        let cycles = self.exp.read_i64(&chase_cycles)?;
        if cycles <= 0 {
            return Err(CalibrationError::Result {
                what: "loaded-latency.cu".into(),
                reason: "the chase's cycles read zero".into(),
            });
        }
        Ok(cycles as f64 / f64::from(STEPS))
    }
}
