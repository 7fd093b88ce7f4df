//! Step 2 (and the corpus half of step 4): corpus kernels (`kernels/corpus`) on the device
//! against their CPU references, and, on a GPU, the same launches on the emulator: the outputs
//! must be byte-identical (functional parity).
//!
//! The cases — inputs, launches, references — are `kernels::corpus_cases`, which the emulator's
//! tests run too; this is the runner that puts a case on any [`Device`]. The check runs eleven of
//! them, all with exact outputs (every float the contract fixes bit for bit), so a device's bytes
//! and the emulator's can be compared; the others (`stencil_1d` and `fastmath`, whose floats are
//! only near their references, `vote` and `bitops`) run in the emulator's tests alone.

use crate::error::CheckError;
use device::{Arg, DevBuf, Device, LaunchConfig, ModuleId};
use kernels::CorpusKernel;
use kernels::corpus_cases::{self, CaseArg, CaseRun, CaseSize, CorpusCase, Mismatch};
use serde::Serialize;
use trace::Dim3;

/// The corpus cases the check runs, in the order of its table.
const CHECKED: [&str; 11] = [
    "reduce_shared",
    "reduce_shuffle",
    "scan",
    "histogram_global",
    "histogram_shared",
    "transpose",
    "jacobi_2d",
    "matmul",
    "bitonic",
    "collatz",
    "ldg",
];

/// The cases the calibration times at their timing size.
const CALIBRATION: [&str; 4] = ["matmul", "reduce_shuffle", "transpose", "jacobi_2d"];

fn named(names: &'static [&'static str]) -> impl Iterator<Item = &'static CorpusCase> {
    names.iter().filter_map(|n| corpus_cases::find(n))
}

/// The cases of step 2.
pub fn cases() -> impl Iterator<Item = &'static CorpusCase> {
    named(&CHECKED)
}

/// The cases step 4 times.
pub fn calibration_cases() -> impl Iterator<Item = &'static CorpusCase> {
    named(&CALIBRATION)
}

/// One corpus case's result in `gpu-results.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CorpusRow {
    pub file: String,
    pub entries: String,
    pub matches_reference: bool,
    /// On a GPU: the output bytes equal the emulator's for the same launches (None on the emulator).
    pub matches_emulator: Option<bool>,
    pub kernel_ms: f64,
    pub problem: Option<String>,
}

/// A corpus file loaded on one device.
struct Loaded<'a> {
    dev: &'a mut dyn Device,
    module: ModuleId,
    kernel: &'static CorpusKernel,
}

/// What one run of a case gave: each output's bytes, and the kernel time of its launches (CUDA
/// events, or simulated cycles ÷ clock).
struct Ran {
    outputs: Vec<Vec<u8>>,
    kernel_ms: f64,
}

impl<'a> Loaded<'a> {
    fn new(dev: &'a mut dyn Device, file: &str) -> Result<Self, CheckError> {
        let kernel = kernels::find_corpus(file).ok_or_else(|| CheckError::NotEmbedded {
            what: format!("corpus kernel {file}"),
        })?;
        let module = dev.load(kernel.ptx, None)?;
        Ok(Loaded {
            dev,
            module,
            kernel,
        })
    }

    /// Uploads the case's buffers, makes its launches, reads its outputs back and frees the
    /// buffers.
    fn run(&mut self, run: &CaseRun) -> Result<Ran, CheckError> {
        let mut bufs: Vec<DevBuf> = Vec::with_capacity(run.buffers.len());
        for data in &run.buffers {
            let b = self.dev.alloc(data.len() as u64)?;
            self.dev.upload(&b, data)?;
            bufs.push(b);
        }
        let mut kernel_ms = 0.0;
        for l in &run.launches {
            let args: Vec<Arg> = l
                .args
                .iter()
                .map(|a| match *a {
                    CaseArg::Buf(i) => Arg::Buf(bufs[i]),
                    CaseArg::I32(v) => Arg::I32(v),
                    CaseArg::U32(v) => Arg::U32(v),
                    CaseArg::F32(v) => Arg::F32(v),
                })
                .collect();
            let regs = self
                .kernel
                .entries
                .iter()
                .find(|e| e.name == l.entry)
                .map_or(32, |e| e.registers_for(self.dev.register_target()));
            let cfg = LaunchConfig {
                grid: Dim3::new(l.grid[0], l.grid[1], l.grid[2]),
                block: Dim3::new(l.block[0], l.block[1], l.block[2]),
                dynamic_shared_bytes: 0,
                regs_per_thread: regs,
            };
            let o = self
                .dev
                .launch(self.module, l.entry, &cfg, &args)
                .map_err(|source| CheckError::Launch {
                    entry: l.entry.into(),
                    source,
                })?;
            kernel_ms += o.kernel_ms;
        }
        let mut outputs = Vec::with_capacity(run.outputs.len());
        for o in &run.outputs {
            let b = bufs[o.buffer];
            let mut bytes = vec![0u8; b.bytes as usize];
            self.dev.download(&b, &mut bytes)?;
            outputs.push(bytes);
        }
        for b in &bufs {
            self.dev.free(b)?;
        }
        Ok(Ran { outputs, kernel_ms })
    }
}

/// The mismatches in words, one sentence each; None when there are none.
fn problem(mismatches: &[Mismatch]) -> Option<String> {
    (!mismatches.is_empty()).then(|| {
        mismatches
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// Runs `case` on `dev`; on a GPU also on `emu` for parity.
pub fn check(
    case: &CorpusCase,
    dev: &mut dyn Device,
    emu: Option<&mut dyn Device>,
) -> Result<CorpusRow, CheckError> {
    let run = case.prepare(CaseSize::Check);
    let ran = Loaded::new(dev, case.file)?.run(&run)?;
    let mismatch = problem(&run.mismatches(&ran.outputs));
    let mut problem = mismatch.clone();
    let matches_emulator = match emu {
        Some(e) => {
            let theirs = Loaded::new(e, case.file)?.run(&run)?;
            let same = theirs.outputs == ran.outputs;
            if !same && problem.is_none() {
                problem = Some(format!(
                    "output differs from the emulator's ({} bytes)",
                    ran.outputs.iter().map(Vec::len).sum::<usize>()
                ));
            }
            Some(same)
        }
        None => None,
    };
    Ok(CorpusRow {
        file: case.file.into(),
        entries: case.entries.join(", "),
        matches_reference: mismatch.is_none(),
        matches_emulator,
        kernel_ms: ran.kernel_ms,
        problem,
    })
}

/// Kernel milliseconds of `case` at its timing size (checked against the reference too). On a
/// GPU the best of three runs, each timed on a second launch of its freshly loaded module, so
/// that no one-time cost of a first launch (lazy loading of the kernel, say) can count as kernel
/// time (on the H200 the warm launch measured the same as the first). The emulator is
/// deterministic and has no such cost: one run.
pub fn timed(case: &CorpusCase, dev: &mut dyn Device) -> Result<(f64, Option<String>), CheckError> {
    let gpu = dev.backend() == device::Backend::Gpu;
    let repeats = if gpu { 3 } else { 1 };
    let run = case.prepare(CaseSize::Timing);
    let mut best = f64::INFINITY;
    let mut mismatch = None;
    for _ in 0..repeats {
        let mut loaded = Loaded::new(dev, case.file)?;
        if gpu {
            loaded.run(&run)?;
        }
        let ran = loaded.run(&run)?;
        mismatch = mismatch.or_else(|| problem(&run.mismatches(&ran.outputs)));
        best = best.min(ran.kernel_ms);
    }
    Ok((best, mismatch))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels::corpus_cases::{CaseLaunch, Expected, Output};

    #[test]
    fn every_listed_case_exists() {
        assert_eq!(cases().count(), CHECKED.len());
        assert_eq!(calibration_cases().count(), CALIBRATION.len());
        assert!(calibration_cases().all(|c| CHECKED.contains(&c.name)));
    }

    /// Every case passes its reference on the emulator, and the harness reads back what the
    /// kernel wrote (a histogram of 20 000 zeros puts them all in bin 0).
    #[test]
    fn every_case_matches_its_reference_on_the_emulator() {
        let cfg = emulator::GpuConfig::preset("h100").unwrap();
        for case in cases() {
            let mut dev = device::EmuDevice::new(cfg.clone());
            let row = check(case, &mut dev, None).unwrap();
            assert!(row.matches_reference, "{}: {:?}", case.file, row.problem);
            assert!(row.kernel_ms > 0.0, "{}", case.file);
        }
        let zeros = CaseRun {
            buffers: vec![vec![0; 20_000], vec![0; 1024]],
            launches: vec![CaseLaunch {
                entry: "histogram_global",
                grid: [16, 1, 1],
                block: [256, 1, 1],
                args: vec![CaseArg::Buf(0), CaseArg::Buf(1), CaseArg::I32(20_000)],
            }],
            outputs: vec![Output {
                what: "histogram",
                buffer: 1,
                expect: Expected::U32([20_000].into_iter().chain([0; 255]).collect()),
            }],
        };
        let mut dev = device::EmuDevice::new(cfg);
        let ran = Loaded::new(&mut dev, "histogram_global")
            .unwrap()
            .run(&zeros)
            .unwrap();
        assert_eq!(&ran.outputs[0][..4], &20_000u32.to_le_bytes(), "bin 0");
        assert_eq!(zeros.mismatches(&ran.outputs), []);
    }

    /// The check's timing run on the emulator: one run, a positive time, the reference met.
    #[test]
    fn a_timed_case_meets_its_reference() {
        let cfg = emulator::GpuConfig::preset("h100").unwrap();
        let mut dev = device::EmuDevice::new(cfg);
        let case = corpus_cases::find("reduce_shuffle").unwrap();
        let (ms, mismatch) = timed(case, &mut dev).unwrap();
        assert!(ms > 0.0);
        assert_eq!(mismatch, None);
    }
}
