//! `launch-overhead.cu` on the emulator: a grid's own span, from its blocks' earliest start to
//! their latest end on `%globaltimer`, as the blocks fold them into two words.

use std::path::Path;

use device::{Arg, DevBuf};
use emulator::GpuConfig;

use super::Experiment;
use crate::error::CalibrationError;

/// Threads per block, and the most blocks per SM `main` launches (its `out` is that big).
const THREADS: u32 = 128;
const MOST_PER_SM: u64 = 64;

pub(crate) struct LaunchOverheadRig {
    exp: Experiment,
    out: DevBuf,
    span: DevBuf,
    /// The most blocks `out` has room for.
    most: u64,
}

impl LaunchOverheadRig {
    pub(crate) fn new(root: &Path, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let mut exp = Experiment::load(root, "launch-overhead.cu", cfg)?;
        let most = MOST_PER_SM * u64::from(cfg.sm.count);
        let out = exp.alloc(4 * u64::from(THREADS) * most)?;
        let span = exp.alloc(16)?;
        Ok(LaunchOverheadRig {
            exp,
            out,
            span,
            most,
        })
    }

    /// The span of a grid of `blocks` blocks, µs: the second of two launches, each after `main`'s
    /// copy of the span's starting words, as `main` times its launches after warm-ups.
    pub(crate) fn span_us(&mut self, blocks: u32) -> Result<f64, CalibrationError> {
        if u64::from(blocks) > self.most {
            return Err(CalibrationError::Result {
                what: "launch-overhead.cu".into(),
                reason: format!(
                    "its `main` launches at most {MOST_PER_SM} blocks per SM ({}), not {blocks}",
                    self.most
                ),
            });
        }
        let init: Vec<u8> = [u64::MAX, 0].iter().flat_map(|w| w.to_le_bytes()).collect();
        let args = [Arg::Buf(self.out), Arg::Buf(self.span)];
        for _ in 0..2 {
            self.exp.upload(&self.span, &init)?;
            self.exp.launch("blocks", blocks, THREADS, &args)?;
        }
        let bytes = self.exp.download(&self.span)?;
        let word = |i: usize| {
            bytes
                .get(8 * i..8 * i + 8)
                .and_then(|b| b.first_chunk::<8>())
                .map(|b| u64::from_le_bytes(*b))
        };
        match (word(0), word(1)) {
            (Some(start), Some(end)) if end >= start => Ok((end - start) as f64 / 1000.0),
            _ => Err(CalibrationError::Result {
                what: "launch-overhead.cu".into(),
                reason: format!("the span's words do not hold a start before an end: {bytes:?}"),
            }),
        }
    }
}
