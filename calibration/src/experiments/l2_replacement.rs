//! `l2-replacement.cu` on the emulator: how much of a 4 MiB set the L2 keeps after other data
//! streams through it. No silicon row reads it yet (the GPU has not run it); its test runs the
//! microbenchmark on the model, whose L2 evicts the least recently used line, so that a fault in
//! the experiment shows here and not in a GPU session's minutes.

use std::path::Path;

use device::{Arg, DevBuf};
use emulator::GpuConfig;

use super::{Experiment, sattolo_order};
use crate::error::CalibrationError;

/// `main`'s constants: threads per block, steps of the chase, the set's bytes and line, and
/// the cycles under which a step counts as an L2 hit.
const THREADS: u32 = 256;
const STEPS: usize = 2048;
const SET_BYTES: u64 = 4 << 20;
const LINE: u64 = 128;
const HIT_CYCLES: i64 = 450;

/// What one case's chase read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kept {
    /// The share of its steps under `HIT_CYCLES`.
    pub(crate) hit_fraction: f64,
    pub(crate) mean_step_cycles: f64,
}

pub(crate) struct L2ReplacementRig {
    exp: Experiment,
    set: DevBuf,
    stream: DevBuf,
    sink: DevBuf,
    cycles: DevBuf,
    /// The chase's first word index.
    first: u32,
    l2_bytes: u64,
    blocks: u32,
}

impl L2ReplacementRig {
    pub(crate) fn new(root: &Path, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let mut exp = Experiment::load(root, "l2-replacement.cu", cfg)?;
        let l2_bytes = cfg.l2.size_bytes;
        let blocks = 4 * cfg.sm.count;
        let set = exp.alloc(SET_BYTES)?;
        // `main` fills the stream with ones; what it holds does not matter, so it stays zero.
        let stream = exp.alloc(2 * l2_bytes)?;
        let sink = exp.alloc(4 * u64::from(THREADS) * u64::from(blocks))?;
        let cycles = exp.alloc(8 * STEPS as u64)?;
        // Every 16th line, in a random order closing on itself. `main` shuffles with the C++
        // library's generator; any order over the same lines measures the same.
        let stride = (SET_BYTES / LINE) as usize / STEPS;
        let words_per_line = (LINE / 4) as usize;
        let order: Vec<usize> = sattolo_order(STEPS as u32)
            .into_iter()
            .map(|k| k as usize * stride)
            .collect();
        let mut words = vec![0u32; (SET_BYTES / 4) as usize];
        for k in 0..STEPS {
            words[order[k] * words_per_line] = (order[(k + 1) % STEPS] * words_per_line) as u32;
        }
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        exp.upload(&set, &bytes)?;
        Ok(L2ReplacementRig {
            exp,
            set,
            stream,
            sink,
            cycles,
            first: (order[0] * words_per_line) as u32,
            l2_bytes,
            blocks,
        })
    }

    /// One case: the L2 emptied (`main` writes 512 MB elsewhere), the set read `touches` times,
    /// `eighths` eighths of the L2's size streamed, then the chase. The emulator gives every
    /// round the same cycles, so one round stands for `main`'s median of three.
    pub(crate) fn case(&mut self, touches: u32, eighths: u64) -> Result<Kept, CalibrationError> {
        self.exp.dev.flush_l2();
        let read = |buf: DevBuf, bytes: u64, sink: DevBuf| {
            [Arg::Buf(buf), Arg::U64(bytes / 16), Arg::Buf(sink)]
        };
        for _ in 0..touches {
            let args = read(self.set, SET_BYTES, self.sink);
            self.exp.launch("read_all", self.blocks, THREADS, &args)?;
        }
        let stream_bytes = self.l2_bytes * eighths / 8;
        if stream_bytes > 0 {
            let args = read(self.stream, stream_bytes, self.sink);
            self.exp.launch("read_all", self.blocks, THREADS, &args)?;
        }
        let args = [
            Arg::Buf(self.set),
            Arg::U32(self.first),
            Arg::Buf(self.cycles),
        ];
        self.exp.launch("chase", 1, 1, &args)?;
        let steps = self.exp.download_i64(&self.cycles)?;
        if steps.len() != STEPS || steps.iter().any(|&c| c <= 0) {
            return Err(CalibrationError::Result {
                what: "l2-replacement.cu".into(),
                reason: format!(
                    "the chase did not time {STEPS} steps; it wrote {} words, the first {:?}",
                    steps.len(),
                    steps.iter().take(8).collect::<Vec<_>>()
                ),
            });
        }
        let hits = steps.iter().filter(|&&c| c < HIT_CYCLES).count();
        Ok(Kept {
            hit_fraction: hits as f64 / STEPS as f64,
            mean_step_cycles: steps.iter().sum::<i64>() as f64 / STEPS as f64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::RECORDS_DIR;

    /// On the model's LRU L2 the chase finds the whole set after no stream, and none of it once
    /// two L2s of other data went through: the experiment tells a kept set from a lost one.
    #[test]
    fn the_chase_finds_the_set_kept_and_lost_on_the_models_lru_l2() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        assert!(root.join(RECORDS_DIR).join("l2-replacement.cu").exists());
        let cfg = GpuConfig::preset("h100").unwrap();
        let mut rig = L2ReplacementRig::new(&root, &cfg).unwrap();
        let kept = rig.case(1, 0).unwrap();
        assert!(kept.hit_fraction > 0.99, "{kept:?}");
        assert!(kept.mean_step_cycles < HIT_CYCLES as f64, "{kept:?}");
        let lost = rig.case(1, 16).unwrap();
        assert!(lost.hit_fraction < 0.01, "{lost:?}");
        assert!(lost.mean_step_cycles > HIT_CYCLES as f64, "{lost:?}");
    }
}
