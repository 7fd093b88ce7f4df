//! Step 2 (and the corpus half of step 4): the corpus kernels (`kernels/corpus`, the contracts in
//! its README) on the device against CPU references written here, and, on a GPU, the same
//! launches on the emulator: the outputs must be byte-identical (functional parity).
//!
//! Why references here and not the emulator's tests': those live in a test target, which a
//! release binary cannot call. Each reference is the README's contract, integer data wherever a
//! float result depends on the order of operations, so every check is exact.

use super::Rng;
use anyhow::{Context, Result};
use device::{Arg, DevBuf, Device, LaunchConfig, ModuleId};
use serde::Serialize;
use trace::Dim3;

/// A launch harness for one corpus file on one device.
pub struct Run<'a> {
    dev: &'a mut dyn Device,
    module: ModuleId,
    kernel: &'static kernels::CorpusKernel,
    /// Kernel time of every launch so far (CUDA events, or simulated cycles ÷ clock).
    pub kernel_ms: f64,
    pub launches: u32,
}

impl<'a> Run<'a> {
    pub fn new(dev: &'a mut dyn Device, file: &str) -> Result<Self> {
        let kernel = kernels::find_corpus(file)
            .with_context(|| format!("corpus kernel {file} is not embedded"))?;
        let module = dev.load(kernel.ptx, None)?;
        Ok(Run {
            dev,
            module,
            kernel,
            kernel_ms: 0.0,
            launches: 0,
        })
    }

    fn bytes(&mut self, data: &[u8]) -> Result<DevBuf> {
        let b = self.dev.alloc(data.len() as u64)?;
        self.dev.upload(&b, data)?;
        Ok(b)
    }

    fn u32s(&mut self, v: &[u32]) -> Result<DevBuf> {
        self.bytes(&v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>())
    }

    fn f32s(&mut self, v: &[f32]) -> Result<DevBuf> {
        self.bytes(&v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>())
    }

    fn zeros(&mut self, bytes: usize) -> Result<DevBuf> {
        self.bytes(&vec![0u8; bytes])
    }

    fn launch(&mut self, entry: &str, grid: [u32; 3], block: [u32; 3], args: &[Arg]) -> Result<()> {
        let regs = self
            .kernel
            .entries
            .iter()
            .find(|e| e.name == entry)
            .map_or(32, |e| e.registers);
        let cfg = LaunchConfig {
            grid: Dim3::new(grid[0], grid[1], grid[2]),
            block: Dim3::new(block[0], block[1], block[2]),
            dynamic_shared_bytes: 0,
            regs_per_thread: regs,
        };
        let o = self
            .dev
            .launch(self.module, entry, &cfg, args)
            .with_context(|| format!("launching {entry}"))?;
        self.kernel_ms += o.kernel_ms;
        self.launches += 1;
        Ok(())
    }

    fn get(&mut self, b: DevBuf) -> Result<Vec<u8>> {
        let mut out = vec![0u8; b.bytes as usize];
        self.dev.download(&b, &mut out)?;
        Ok(out)
    }
}

fn as_u32(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn as_f32(b: &[u8]) -> Vec<f32> {
    as_u32(b).into_iter().map(f32::from_bits).collect()
}

/// The first index where `got` and `want` differ, in words.
fn compare<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!(
            "{what}: {} values, {} expected",
            got.len(),
            want.len()
        ));
    }
    let bad = got.iter().zip(want).filter(|(g, w)| g != w).count();
    let first = got.iter().zip(want).position(|(g, w)| g != w)?;
    Some(format!(
        "{what}: {bad} of {} values differ; first at {first}: {:?}, expected {:?}",
        got.len(),
        got[first],
        want[first]
    ))
}

/// What a case produced: its output bytes (for parity) and the reference check.
pub struct CaseOut {
    pub output: Vec<u8>,
    pub mismatch: Option<String>,
}

/// A corpus case: the file, its entries, and the function that runs and checks it (`big`: the
/// size used for timing in the calibration).
pub struct Case {
    pub file: &'static str,
    pub entries: &'static str,
    pub run: fn(&mut Run, bool) -> Result<CaseOut>,
}

pub const CASES: &[Case] = &[
    Case {
        file: "reduce_shared",
        entries: "reduce_shared",
        run: reduce_shared,
    },
    Case {
        file: "reduce_shuffle",
        entries: "reduce_shuffle",
        run: reduce_shuffle,
    },
    Case {
        file: "scan",
        entries: "scan_hillis_steele, scan_blelloch",
        run: scans,
    },
    Case {
        file: "histogram_global",
        entries: "histogram_global",
        run: histogram,
    },
    Case {
        file: "histogram_shared",
        entries: "histogram_shared",
        run: histogram,
    },
    Case {
        file: "transpose",
        entries: "transpose",
        run: transpose,
    },
    Case {
        file: "stencil",
        entries: "jacobi_2d",
        run: jacobi,
    },
    Case {
        file: "matmul",
        entries: "matmul",
        run: matmul,
    },
    Case {
        file: "bitonic",
        entries: "bitonic_sort",
        run: bitonic,
    },
    Case {
        file: "collatz",
        entries: "collatz",
        run: collatz,
    },
    Case {
        file: "ldg",
        entries: "saxpy_ldg, gather_ldg",
        run: ldg,
    },
];

/// The corpus files the calibration times at their `big` size.
pub const CALIBRATION: [&str; 4] = ["matmul", "reduce_shuffle", "transpose", "stencil"];

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

/// Runs `case` on `dev`; on a GPU also on `emu` for parity.
pub fn check(case: &Case, dev: &mut dyn Device, emu: Option<&mut dyn Device>) -> Result<CorpusRow> {
    let mut run = Run::new(dev, case.file)?;
    let out = (case.run)(&mut run, false)?;
    let kernel_ms = run.kernel_ms;
    let mut problem = out.mismatch.clone();
    let matches_emulator = match emu {
        Some(e) => {
            let mut erun = Run::new(e, case.file)?;
            let eout = (case.run)(&mut erun, false)?;
            let same = eout.output == out.output;
            if !same && problem.is_none() {
                problem = Some(format!(
                    "output differs from the emulator's ({} bytes)",
                    out.output.len()
                ));
            }
            Some(same)
        }
        None => None,
    };
    Ok(CorpusRow {
        file: case.file.into(),
        entries: case.entries.into(),
        matches_reference: out.mismatch.is_none(),
        matches_emulator,
        kernel_ms,
        problem,
    })
}

/// Kernel milliseconds of `case` at its big size (checked against the reference too). On a GPU
/// the best of three runs, each timed on a second launch of its freshly loaded module, so that no
/// one-time cost of a first launch (lazy loading of the kernel, say) can count as kernel time (on
/// the H200 the warm launch measured the same as the first). The emulator is deterministic and
/// has no such cost: one run.
pub fn timed(case: &Case, dev: &mut dyn Device) -> Result<(f64, Option<String>)> {
    let gpu = dev.backend() == device::Backend::Gpu;
    let repeats = if gpu { 3 } else { 1 };
    let mut best = f64::INFINITY;
    let mut mismatch = None;
    for _ in 0..repeats {
        let mut run = Run::new(dev, case.file)?;
        if gpu {
            (case.run)(&mut run, true)?;
            run.kernel_ms = 0.0;
        }
        let out = (case.run)(&mut run, true)?;
        mismatch = mismatch.or(out.mismatch);
        best = best.min(run.kernel_ms);
    }
    Ok((best, mismatch))
}

fn reduce_shared(r: &mut Run, big: bool) -> Result<CaseOut> {
    let n: usize = if big { 1 << 22 } else { 5000 };
    let b = 128usize;
    let mut rng = Rng(1);
    let input: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
    let blocks = n.div_ceil(2 * b);
    let (i, o) = (r.u32s(&input)?, r.zeros(blocks * 4)?);
    let args = [Arg::Buf(i), Arg::Buf(o), Arg::I32(n as i32)];
    r.launch(
        "reduce_shared",
        [blocks as u32, 1, 1],
        [b as u32, 1, 1],
        &args,
    )?;
    let output = r.get(o)?;
    let want: Vec<u32> = input
        .chunks(2 * b)
        .map(|c| c.iter().fold(0u32, |s, v| s.wrapping_add(*v)))
        .collect();
    let mismatch = compare("partial sums", &as_u32(&output), &want);
    Ok(CaseOut { output, mismatch })
}

fn reduce_shuffle(r: &mut Run, big: bool) -> Result<CaseOut> {
    let n: usize = if big { 1 << 22 } else { 10_000 };
    let mut rng = Rng(2);
    let input: Vec<u32> = (0..n)
        .map(|_| (rng.next_u64() as i32 >> 8) as u32)
        .collect();
    let (i, t) = (r.u32s(&input)?, r.zeros(4)?);
    let grid = if big { 264 } else { 8 };
    let args = [Arg::Buf(i), Arg::Buf(t), Arg::I32(n as i32)];
    r.launch("reduce_shuffle", [grid, 1, 1], [256, 1, 1], &args)?;
    let output = r.get(t)?;
    let want = input.iter().fold(0u32, |s, v| s.wrapping_add(*v));
    let mismatch = compare("total", &as_u32(&output), &[want]);
    Ok(CaseOut { output, mismatch })
}

fn scans(r: &mut Run, _big: bool) -> Result<CaseOut> {
    let (n, b) = (1000usize, 256usize);
    let mut rng = Rng(3);
    let input: Vec<u32> = (0..n).map(|_| rng.below(1000) as u32).collect();
    let i = r.u32s(&input)?;
    let (inc, exc) = (r.zeros(n * 4)?, r.zeros(n * 4)?);
    let grid = [n.div_ceil(b) as u32, 1, 1];
    for (entry, o) in [("scan_hillis_steele", inc), ("scan_blelloch", exc)] {
        let args = [Arg::Buf(i), Arg::Buf(o), Arg::I32(n as i32)];
        r.launch(entry, grid, [b as u32, 1, 1], &args)?;
    }
    let mut output = r.get(inc)?;
    output.extend(r.get(exc)?);
    let (mut want_inc, mut want_exc) = (Vec::new(), Vec::new());
    for c in input.chunks(b) {
        let mut acc = 0u32;
        for v in c {
            want_exc.push(acc);
            acc = acc.wrapping_add(*v);
            want_inc.push(acc);
        }
    }
    want_inc.extend(want_exc);
    let mismatch = compare("inclusive then exclusive scan", &as_u32(&output), &want_inc);
    Ok(CaseOut { output, mismatch })
}

fn histogram(r: &mut Run, _big: bool) -> Result<CaseOut> {
    let n = 20_000usize;
    let mut rng = Rng(4);
    let data: Vec<u8> = (0..n).map(|_| (rng.below(256) as u8) & 0xF7).collect();
    let (d, h) = (r.bytes(&data)?, r.zeros(1024)?);
    let entry = r.kernel.name;
    let args = [Arg::Buf(d), Arg::Buf(h), Arg::I32(n as i32)];
    r.launch(entry, [16, 1, 1], [256, 1, 1], &args)?;
    let output = r.get(h)?;
    let mut want = [0u32; 256];
    for v in &data {
        want[*v as usize] += 1;
    }
    let mismatch = compare("histogram", &as_u32(&output), &want);
    Ok(CaseOut { output, mismatch })
}

fn transpose(r: &mut Run, big: bool) -> Result<CaseOut> {
    let (w, h) = if big {
        (2048usize, 2048usize)
    } else {
        (70, 45)
    };
    let input: Vec<f32> = (0..w * h).map(|i| (i % 65536) as f32 * 0.5).collect();
    let (i, o) = (r.f32s(&input)?, r.zeros(w * h * 4)?);
    let grid = [(w as u32).div_ceil(32), (h as u32).div_ceil(32), 1];
    let args = [
        Arg::Buf(i),
        Arg::Buf(o),
        Arg::I32(w as i32),
        Arg::I32(h as i32),
    ];
    r.launch("transpose", grid, [32, 8, 1], &args)?;
    let output = r.get(o)?;
    let mut want = vec![0f32; w * h];
    for y in 0..h {
        for x in 0..w {
            want[x * h + y] = input[y * w + x];
        }
    }
    let mismatch = compare("transpose", &as_f32(&output), &want);
    Ok(CaseOut { output, mismatch })
}

fn jacobi(r: &mut Run, big: bool) -> Result<CaseOut> {
    let (w, h) = if big {
        (1024usize, 1024usize)
    } else {
        (50, 37)
    };
    let mut rng = Rng(5);
    let grid_in: Vec<f32> = (0..w * h).map(|_| rng.below(1000) as f32).collect();
    let (i, o) = (r.f32s(&grid_in)?, r.zeros(w * h * 4)?);
    let grid = [(w as u32).div_ceil(16), (h as u32).div_ceil(16), 1];
    let args = [
        Arg::Buf(i),
        Arg::Buf(o),
        Arg::I32(w as i32),
        Arg::I32(h as i32),
    ];
    r.launch("jacobi_2d", grid, [16, 16, 1], &args)?;
    let output = r.get(o)?;
    let mut want = grid_in.clone();
    for y in 1..h.saturating_sub(1) {
        for x in 1..w.saturating_sub(1) {
            let k = y * w + x;
            want[k] = 0.25f32 * (grid_in[k - 1] + grid_in[k + 1] + grid_in[k - w] + grid_in[k + w]);
        }
    }
    let mismatch = compare("jacobi_2d", &as_f32(&output), &want);
    Ok(CaseOut { output, mismatch })
}

fn matmul(r: &mut Run, big: bool) -> Result<CaseOut> {
    let (m, n, k) = if big { (256, 256, 256) } else { (40, 33, 50) };
    let mut rng = Rng(6);
    // Small integers: every partial sum is exact in f32, whatever the FMA contraction.
    let a: Vec<f32> = (0..m * k).map(|_| rng.below(17) as f32 - 8.0).collect();
    let b: Vec<f32> = (0..k * n).map(|_| rng.below(17) as f32 - 8.0).collect();
    let (da, db, dc) = (r.f32s(&a)?, r.f32s(&b)?, r.zeros(m * n * 4)?);
    let grid = [(n as u32).div_ceil(16), (m as u32).div_ceil(16), 1];
    let args = [
        Arg::Buf(da),
        Arg::Buf(db),
        Arg::Buf(dc),
        Arg::I32(m as i32),
        Arg::I32(n as i32),
        Arg::I32(k as i32),
    ];
    r.launch("matmul", grid, [16, 16, 1], &args)?;
    let output = r.get(dc)?;
    let mut want = vec![0f32; m * n];
    for row in 0..m {
        for col in 0..n {
            want[row * n + col] = (0..k).map(|t| a[row * k + t] * b[t * n + col]).sum();
        }
    }
    let mismatch = compare("C", &as_f32(&output), &want);
    Ok(CaseOut { output, mismatch })
}

fn bitonic(r: &mut Run, _big: bool) -> Result<CaseOut> {
    let (n, b) = (1000usize, 256usize);
    let mut rng = Rng(7);
    let data: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
    let d = r.u32s(&data)?;
    let args = [Arg::Buf(d), Arg::I32(n as i32)];
    r.launch(
        "bitonic_sort",
        [n.div_ceil(b) as u32, 1, 1],
        [b as u32, 1, 1],
        &args,
    )?;
    let output = r.get(d)?;
    let mut want = Vec::with_capacity(n);
    for c in data.chunks(b) {
        let mut s = c.to_vec();
        s.sort_unstable();
        want.extend(s);
    }
    let mismatch = compare("sorted segments", &as_u32(&output), &want);
    Ok(CaseOut { output, mismatch })
}

fn collatz(r: &mut Run, _big: bool) -> Result<CaseOut> {
    let n = 777usize;
    let max_steps = 500u32;
    let start: Vec<u32> = (1..=n as u32).collect();
    let (s, o) = (r.u32s(&start)?, r.zeros(n * 4)?);
    let args = [
        Arg::Buf(s),
        Arg::Buf(o),
        Arg::I32(n as i32),
        Arg::U32(max_steps),
    ];
    r.launch(
        "collatz",
        [n.div_ceil(128) as u32, 1, 1],
        [128, 1, 1],
        &args,
    )?;
    let output = r.get(o)?;
    let want: Vec<u32> = start
        .iter()
        .map(|&x0| {
            let (mut x, mut steps) = (x0, 0u32);
            while x != 1 && steps < max_steps {
                x = if x % 2 == 0 {
                    x / 2
                } else {
                    x.wrapping_mul(3).wrapping_add(1)
                };
                steps += 1;
            }
            steps
        })
        .collect();
    let mismatch = compare("steps", &as_u32(&output), &want);
    Ok(CaseOut { output, mismatch })
}

fn ldg(r: &mut Run, _big: bool) -> Result<CaseOut> {
    let n = 1000usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
    let y: Vec<f32> = (0..n).map(|i| 1000.0 - i as f32).collect();
    let (dx, dy, o) = (r.f32s(&x)?, r.f32s(&y)?, r.zeros(n * 4)?);
    let grid = [n.div_ceil(256) as u32, 1, 1];
    let args = [
        Arg::Buf(dx),
        Arg::Buf(dy),
        Arg::Buf(o),
        Arg::F32(1.5),
        Arg::I32(n as i32),
    ];
    r.launch("saxpy_ldg", grid, [256, 1, 1], &args)?;
    let m = 37u32;
    let idx: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let table: Vec<u32> = (0..m).map(|i| i * i + 7).collect();
    let (di, dt, o2) = (r.u32s(&idx)?, r.u32s(&table)?, r.zeros(n * 4)?);
    let args = [
        Arg::Buf(di),
        Arg::Buf(dt),
        Arg::Buf(o2),
        Arg::I32(m as i32),
        Arg::I32(n as i32),
    ];
    r.launch("gather_ldg", grid, [256, 1, 1], &args)?;
    let mut output = r.get(o)?;
    let gathered = r.get(o2)?;
    let want_saxpy: Vec<f32> = (0..n).map(|i| 1.5f32.mul_add(x[i], y[i])).collect();
    let want_gather: Vec<u32> = idx.iter().map(|i| table[(i % m) as usize]).collect();
    let mismatch = compare("saxpy_ldg", &as_f32(&output), &want_saxpy)
        .or_else(|| compare("gather_ldg", &as_u32(&gathered), &want_gather));
    output.extend(gathered);
    Ok(CaseOut { output, mismatch })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_names_the_first_difference() {
        assert_eq!(compare("x", &[1, 2, 3], &[1, 2, 3]), None);
        let e = compare("x", &[1, 9, 3, 8], &[1, 2, 3, 4]).unwrap();
        assert!(e.contains("2 of 4") && e.contains("first at 1"), "{e}");
        assert!(compare("x", &[1], &[1, 2]).unwrap().contains("expected"));
    }

    /// Every case passes its reference on the emulator, and the harness reads back what the
    /// kernel wrote (a histogram of 20 000 zeros puts them all in bin 0).
    #[test]
    fn every_case_matches_its_reference_on_the_emulator() {
        let cfg = emulator::GpuConfig::preset("h100").unwrap();
        for case in CASES {
            let mut dev = device::EmuDevice::new(cfg.clone());
            let row = check(case, &mut dev, None).unwrap();
            assert!(row.matches_reference, "{}: {:?}", case.file, row.problem);
            assert!(row.kernel_ms > 0.0, "{}", case.file);
        }
        let mut dev = device::EmuDevice::new(cfg);
        let mut run = Run::new(&mut dev, "histogram_global").unwrap();
        let d = run.zeros(20_000).unwrap();
        let h = run.zeros(1024).unwrap();
        let args = [Arg::Buf(d), Arg::Buf(h), Arg::I32(20_000)];
        run.launch("histogram_global", [16, 1, 1], [256, 1, 1], &args)
            .unwrap();
        let got = as_u32(&run.get(h).unwrap());
        assert_eq!(got[0], 20_000, "all zeros land in bin 0");
    }
}
