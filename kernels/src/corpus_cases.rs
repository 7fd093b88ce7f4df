//! The corpus kernels' test cases, each stated once: its inputs (deterministic, from a seed), its
//! launches described neutrally (buffers by index, scalars by value) and the CPU reference that
//! gives the outputs it must produce — the contracts of `kernels/corpus/README.md` as data.
//!
//! Why here: the emulator's tests drive `emulator::Emulator` directly, and the GPU check drives
//! any `device::Device`; neither crate can call the other, but both can read this one. Each has a
//! small runner that uploads [`CaseRun::buffers`], makes the [`CaseRun::launches`] and reads the
//! [`CaseRun::outputs`] back, and [`CaseRun::mismatches`] judges what came back, so no
//! reference is written twice.
//!
//! Inputs are integer-valued wherever a float result would depend on the order of operations
//! (matmul, jacobi_2d), so most outputs must match exactly; the two cases whose floats cannot be
//! exact (the FMA-contracted `stencil_1d`, the `.approx` instructions of `fastmath`) name their
//! tolerance per value ([`Near`]).
//!
//! ```
//! use kernels::corpus_cases::{CaseSize, find};
//! let case = find("collatz").expect("a case");
//! let run = case.prepare(CaseSize::Check);
//! assert_eq!(run.launches[0].entry, "collatz");
//! // Nothing read back yet: every output is missing.
//! assert!(!run.mismatches(&[]).is_empty());
//! ```

use CaseArg::{Buf, F32, I32, U32};
use std::fmt;

/// One corpus case: which file it runs, which of its entries, and how to build its run.
pub struct CorpusCase {
    /// The case's name (unique; the entry's name where the case runs one entry).
    pub name: &'static str,
    /// The corpus file (`kernels/corpus/{file}.cu`, [`crate::find_corpus`]).
    pub file: &'static str,
    /// The entries the case launches, in launch order.
    pub entries: &'static [&'static str],
    build: fn(CaseSize) -> CaseRun,
}

impl CorpusCase {
    /// The case's buffers, launches and expected outputs at `size`.
    pub fn prepare(&self, size: CaseSize) -> CaseRun {
        (self.build)(size)
    }
}

impl fmt::Debug for CorpusCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CorpusCase")
            .field("name", &self.name)
            .field("file", &self.file)
            .field("entries", &self.entries)
            .finish_non_exhaustive()
    }
}

/// How large a case's inputs are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseSize {
    /// Small: seconds on the emulator, every path of the kernel taken (partial blocks, borders).
    Check,
    /// Large enough for a kernel time on a GPU to mean something (megabytes moved). Cases the GPU
    /// check does not time keep their check size.
    Timing,
}

/// A case ready to run: device buffers, launches, and what the outputs must hold.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseRun {
    /// The device buffers, by index: their initial bytes (an output starts as zeros).
    pub buffers: Vec<Vec<u8>>,
    /// The launches, in order.
    pub launches: Vec<CaseLaunch>,
    /// The buffers to read back after the last launch, in order, and what each must hold.
    pub outputs: Vec<Output>,
}

impl CaseRun {
    /// What differs from the reference; `read[k]` holds the bytes read back from the buffer of
    /// `outputs[k]`. Empty when every output matches.
    pub fn mismatches(&self, read: &[Vec<u8>]) -> Vec<Mismatch> {
        self.outputs
            .iter()
            .enumerate()
            .filter_map(|(k, o)| match read.get(k) {
                Some(bytes) => o.check(bytes),
                None => Some(Mismatch::Length {
                    what: o.what,
                    bytes: 0,
                    values: o.expect.len(),
                }),
            })
            .collect()
    }
}

/// One kernel launch of a case.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseLaunch {
    pub entry: &'static str,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub args: Vec<CaseArg>,
}

/// A kernel argument: the device address of a buffer of [`CaseRun::buffers`], or a scalar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CaseArg {
    Buf(usize),
    I32(i32),
    U32(u32),
    F32(f32),
}

/// One buffer to read back and what it must hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// What the values are, for a mismatch's message.
    pub what: &'static str,
    /// Index into [`CaseRun::buffers`].
    pub buffer: usize,
    pub expect: Expected,
}

/// The values an output must hold (little-endian words, the whole buffer).
#[derive(Debug, Clone, PartialEq)]
pub enum Expected {
    /// Exactly these words.
    U32(Vec<u32>),
    /// Exactly these floats (`==`: the two zeros are equal).
    F32(Vec<f32>),
    /// Floats, each within its tolerance.
    Near(Vec<Near>),
}

impl Expected {
    /// The number of values.
    pub fn len(&self) -> usize {
        match self {
            Expected::U32(v) => v.len(),
            Expected::F32(v) => v.len(),
            Expected::Near(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A float the kernel computes in an order (or with an approximation) the reference does not
/// reproduce bit for bit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Near {
    pub want: f64,
    pub within: Tolerance,
    /// A value also accepted as it is: the result of another order of operations the contract
    /// allows (`stencil_1d` without FMA contraction).
    pub or_exactly: Option<f32>,
}

impl Near {
    /// Whether `got` is close enough.
    pub fn accepts(&self, got: f32) -> bool {
        let diff = (f64::from(got) - self.want).abs();
        let close = match self.within {
            Tolerance::Absolute(t) => diff <= t,
            Tolerance::Relative(t) => diff / self.want.abs().max(1e-30) <= t,
        };
        close || self.or_exactly == Some(got)
    }
}

impl fmt::Display for Near {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.within {
            Tolerance::Absolute(t) => write!(f, "{} ± {t:e}", self.want)?,
            Tolerance::Relative(t) => write!(f, "{} ± {t:e} relative", self.want)?,
        }
        match self.or_exactly {
            Some(v) => write!(f, " (or exactly {v:?})"),
            None => Ok(()),
        }
    }
}

/// How far a float may be from its reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    /// `|got − want| ≤ t`.
    Absolute(f64),
    /// `|got − want| / max(|want|, 1e-30) ≤ t`.
    Relative(f64),
}

/// How an output differs from its reference.
#[derive(Debug, Clone, PartialEq)]
pub enum Mismatch {
    /// The bytes read back are not the expected number of words.
    Length {
        what: &'static str,
        bytes: usize,
        values: usize,
    },
    /// Some values differ; the first of them, as text.
    Values {
        what: &'static str,
        differing: usize,
        of: usize,
        first: usize,
        got: String,
        want: String,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Length {
                what,
                bytes,
                values,
            } => write!(
                f,
                "{what}: {bytes} bytes read back, {values} values expected"
            ),
            Mismatch::Values {
                what,
                differing,
                of,
                first,
                got,
                want,
            } => write!(
                f,
                "{what}: {differing} of {of} values differ; first at {first}: {got}, expected {want}"
            ),
        }
    }
}

impl Output {
    /// How `bytes` (the buffer read back) differ from the expected values, if they do.
    pub fn check(&self, bytes: &[u8]) -> Option<Mismatch> {
        let words: Vec<u32> = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if !bytes.len().is_multiple_of(4) || words.len() != self.expect.len() {
            return Some(Mismatch::Length {
                what: self.what,
                bytes: bytes.len(),
                values: self.expect.len(),
            });
        }
        let floats = || words.iter().map(|w| f32::from_bits(*w)).collect::<Vec<_>>();
        let debug = |w: &dyn fmt::Debug| format!("{w:?}");
        match &self.expect {
            Expected::U32(want) => {
                first_difference(self.what, &words, want, |g, w| g == w, |w| debug(w))
            }
            Expected::F32(want) => {
                first_difference(self.what, &floats(), want, |g, w| g == w, |w| debug(w))
            }
            Expected::Near(want) => first_difference(
                self.what,
                &floats(),
                want,
                |g, w| w.accepts(*g),
                ToString::to_string,
            ),
        }
    }
}

/// The count and first index of the values `ok` rejects (`got` and `want` of equal length).
fn first_difference<G: fmt::Debug, W>(
    what: &'static str,
    got: &[G],
    want: &[W],
    ok: impl Fn(&G, &W) -> bool,
    show: impl Fn(&W) -> String,
) -> Option<Mismatch> {
    let bad = |(g, w): &(&G, &W)| !ok(g, w);
    let first = got.iter().zip(want).position(|p| bad(&p))?;
    Some(Mismatch::Values {
        what,
        differing: got.iter().zip(want).filter(bad).count(),
        of: got.len(),
        first,
        got: format!("{:?}", got[first]),
        want: show(&want[first]),
    })
}

/// Deterministic pseudo-random numbers (SplitMix64): the same inputs on every machine.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0; the modulo bias is irrelevant for test data).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// Every case, in the order of the corpus README's table. Not here: `fp16.cu` (its reference
/// needs IEEE half-precision rounding, which this crate does not have) and `texture.cu` (texture
/// objects are the emulator's and the device's own types); the emulator's tests check both, and
/// `roofline.cu` is the roofline study's.
pub fn cases() -> &'static [CorpusCase] {
    CASES
}

/// The case named `name`.
pub fn find(name: &str) -> Option<&'static CorpusCase> {
    CASES.iter().find(|c| c.name == name)
}

static CASES: &[CorpusCase] = &[
    CorpusCase {
        name: "reduce_shared",
        file: "reduce_shared",
        entries: &["reduce_shared"],
        build: reduce_shared,
    },
    CorpusCase {
        name: "reduce_shuffle",
        file: "reduce_shuffle",
        entries: &["reduce_shuffle"],
        build: reduce_shuffle,
    },
    CorpusCase {
        name: "scan",
        file: "scan",
        entries: &["scan_hillis_steele", "scan_blelloch"],
        build: scans,
    },
    CorpusCase {
        name: "histogram_global",
        file: "histogram_global",
        entries: &["histogram_global"],
        build: |_| histogram("histogram_global"),
    },
    CorpusCase {
        name: "histogram_shared",
        file: "histogram_shared",
        entries: &["histogram_shared"],
        build: |_| histogram("histogram_shared"),
    },
    CorpusCase {
        name: "transpose",
        file: "transpose",
        entries: &["transpose"],
        build: transpose,
    },
    CorpusCase {
        name: "stencil_1d",
        file: "stencil",
        entries: &["stencil_1d"],
        build: stencil_1d,
    },
    CorpusCase {
        name: "jacobi_2d",
        file: "stencil",
        entries: &["jacobi_2d"],
        build: jacobi_2d,
    },
    CorpusCase {
        name: "matmul",
        file: "matmul",
        entries: &["matmul"],
        build: matmul,
    },
    CorpusCase {
        name: "bitonic",
        file: "bitonic",
        entries: &["bitonic_sort"],
        build: bitonic,
    },
    CorpusCase {
        name: "collatz",
        file: "collatz",
        entries: &["collatz"],
        build: collatz,
    },
    CorpusCase {
        name: "ldg",
        file: "ldg",
        entries: &["saxpy_ldg", "gather_ldg"],
        build: ldg,
    },
    CorpusCase {
        name: "vote",
        file: "vote",
        entries: &["vote"],
        build: vote,
    },
    CorpusCase {
        name: "bitops",
        file: "bitops",
        entries: &["bitops"],
        build: bitops,
    },
    CorpusCase {
        name: "fastmath",
        file: "fastmath",
        entries: &["fastmath"],
        build: fastmath,
    },
];

fn u32_bytes(v: impl IntoIterator<Item = u32>) -> Vec<u8> {
    v.into_iter().flat_map(u32::to_le_bytes).collect()
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    u32_bytes(v.iter().map(|x| x.to_bits()))
}

/// A one-dimensional launch of `blocks` blocks of `b` threads.
fn line(blocks: usize, b: usize) -> ([u32; 3], [u32; 3]) {
    ([blocks as u32, 1, 1], [b as u32, 1, 1])
}

fn launch(
    entry: &'static str,
    (grid, block): ([u32; 3], [u32; 3]),
    args: Vec<CaseArg>,
) -> CaseLaunch {
    CaseLaunch {
        entry,
        grid,
        block,
        args,
    }
}

fn output(what: &'static str, buffer: usize, expect: Expected) -> Output {
    Output {
        what,
        buffer,
        expect,
    }
}

fn reduce_shared(size: CaseSize) -> CaseRun {
    let n: usize = match size {
        CaseSize::Check => 5000,
        CaseSize::Timing => 1 << 22,
    };
    let b = 128usize;
    let mut rng = Rng(1);
    let input: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
    let blocks = n.div_ceil(2 * b);
    let want = input
        .chunks(2 * b)
        .map(|c| c.iter().fold(0u32, |s, v| s.wrapping_add(*v)))
        .collect();
    CaseRun {
        buffers: vec![u32_bytes(input), vec![0; blocks * 4]],
        launches: vec![launch(
            "reduce_shared",
            line(blocks, b),
            vec![Buf(0), Buf(1), I32(n as i32)],
        )],
        outputs: vec![output("partial sums", 1, Expected::U32(want))],
    }
}

fn reduce_shuffle(size: CaseSize) -> CaseRun {
    let (n, blocks): (usize, usize) = match size {
        CaseSize::Check => (10_000, 8),
        CaseSize::Timing => (1 << 22, 264),
    };
    let mut rng = Rng(2);
    let input: Vec<u32> = (0..n)
        .map(|_| (rng.next_u64() as i32 >> 8) as u32)
        .collect();
    let want = input.iter().fold(0u32, |s, v| s.wrapping_add(*v));
    CaseRun {
        buffers: vec![u32_bytes(input), vec![0; 4]],
        launches: vec![launch(
            "reduce_shuffle",
            line(blocks, 256),
            vec![Buf(0), Buf(1), I32(n as i32)],
        )],
        outputs: vec![output("total", 1, Expected::U32(vec![want]))],
    }
}

fn scans(_: CaseSize) -> CaseRun {
    let (n, b) = (1000usize, 256usize);
    let mut rng = Rng(3);
    let input: Vec<u32> = (0..n).map(|_| rng.below(1000) as u32).collect();
    let (mut inclusive, mut exclusive) = (Vec::new(), Vec::new());
    for c in input.chunks(b) {
        let mut acc = 0u32;
        for v in c {
            exclusive.push(acc);
            acc = acc.wrapping_add(*v);
            inclusive.push(acc);
        }
    }
    let geometry = line(n.div_ceil(b), b);
    CaseRun {
        buffers: vec![u32_bytes(input), vec![0; n * 4], vec![0; n * 4]],
        launches: vec![
            launch(
                "scan_hillis_steele",
                geometry,
                vec![Buf(0), Buf(1), I32(n as i32)],
            ),
            launch(
                "scan_blelloch",
                geometry,
                vec![Buf(0), Buf(2), I32(n as i32)],
            ),
        ],
        outputs: vec![
            output("inclusive scan", 1, Expected::U32(inclusive)),
            output("exclusive scan", 2, Expected::U32(exclusive)),
        ],
    }
}

/// `histogram_global` and `histogram_shared` share their contract. Bit 3 of every value is
/// cleared, so half the bins must stay empty.
fn histogram(entry: &'static str) -> CaseRun {
    let n = 20_000usize;
    let mut rng = Rng(4);
    let data: Vec<u8> = (0..n).map(|_| (rng.below(256) as u8) & 0xF7).collect();
    let mut want = vec![0u32; 256];
    for v in &data {
        want[usize::from(*v)] += 1;
    }
    CaseRun {
        buffers: vec![data, vec![0; 256 * 4]],
        launches: vec![launch(
            entry,
            line(16, 256),
            vec![Buf(0), Buf(1), I32(n as i32)],
        )],
        outputs: vec![output("histogram", 1, Expected::U32(want))],
    }
}

fn transpose(size: CaseSize) -> CaseRun {
    let (w, h) = match size {
        CaseSize::Check => (70usize, 45usize),
        CaseSize::Timing => (2048, 2048),
    };
    let input: Vec<f32> = (0..w * h).map(|i| (i % 65536) as f32 * 0.5).collect();
    let mut want = vec![0f32; w * h];
    for y in 0..h {
        for x in 0..w {
            want[x * h + y] = input[y * w + x];
        }
    }
    CaseRun {
        buffers: vec![f32_bytes(&input), vec![0; w * h * 4]],
        launches: vec![launch(
            "transpose",
            (
                [(w as u32).div_ceil(32), (h as u32).div_ceil(32), 1],
                [32, 8, 1],
            ),
            vec![Buf(0), Buf(1), I32(w as i32), I32(h as i32)],
        )],
        outputs: vec![output("transpose", 1, Expected::F32(want))],
    }
}

/// nvcc may contract the weighted sum into FMAs: the reference is the FMA chain (k ascending),
/// within 1e-5 × max(|value|, 1), and the plain sum of products is accepted as it is.
fn stencil_1d(_: CaseSize) -> CaseRun {
    let n = 3000usize;
    let mut rng = Rng(10);
    let input: Vec<f32> = (0..n)
        .map(|_| (rng.below(1 << 20) as f32) / 1024.0)
        .collect();
    let weights = [1.0f32, 2.0, 3.0, 4.0, 3.0, 2.0, 1.0].map(|v| v / 16.0);
    let at = |j: usize, k: i64| input[(j as i64 + k).clamp(0, n as i64 - 1) as usize];
    let want = (0..n)
        .map(|j| {
            let (mut fused, mut plain) = (0.0f32, 0.0f32);
            for k in -3i64..=3 {
                let w = weights[(k + 3) as usize];
                fused = w.mul_add(at(j, k), fused);
                plain += w * at(j, k);
            }
            Near {
                want: f64::from(fused),
                within: Tolerance::Absolute(f64::from(1e-5 * fused.abs().max(1.0))),
                or_exactly: Some(plain),
            }
        })
        .collect();
    CaseRun {
        buffers: vec![f32_bytes(&input), vec![0; n * 4]],
        launches: vec![launch(
            "stencil_1d",
            line(n.div_ceil(256), 256),
            vec![Buf(0), Buf(1), I32(n as i32)],
        )],
        outputs: vec![output("stencil_1d", 1, Expected::Near(want))],
    }
}

fn jacobi_2d(size: CaseSize) -> CaseRun {
    let (w, h) = match size {
        CaseSize::Check => (50usize, 37usize),
        CaseSize::Timing => (1024, 1024),
    };
    let mut rng = Rng(5);
    let grid: Vec<f32> = (0..w * h).map(|_| rng.below(1000) as f32).collect();
    let mut want = grid.clone();
    for y in 1..h.saturating_sub(1) {
        for x in 1..w.saturating_sub(1) {
            let k = y * w + x;
            want[k] = 0.25f32 * (grid[k - 1] + grid[k + 1] + grid[k - w] + grid[k + w]);
        }
    }
    CaseRun {
        buffers: vec![f32_bytes(&grid), vec![0; w * h * 4]],
        launches: vec![launch(
            "jacobi_2d",
            (
                [(w as u32).div_ceil(16), (h as u32).div_ceil(16), 1],
                [16, 16, 1],
            ),
            vec![Buf(0), Buf(1), I32(w as i32), I32(h as i32)],
        )],
        outputs: vec![output("jacobi_2d", 1, Expected::F32(want))],
    }
}

fn matmul(size: CaseSize) -> CaseRun {
    let (m, n, k) = match size {
        CaseSize::Check => (40usize, 33usize, 50usize),
        CaseSize::Timing => (256, 256, 256),
    };
    let mut rng = Rng(6);
    // Small integers: every partial sum is exact in f32, whatever the FMA contraction.
    let a: Vec<f32> = (0..m * k).map(|_| rng.below(17) as f32 - 8.0).collect();
    let b: Vec<f32> = (0..k * n).map(|_| rng.below(17) as f32 - 8.0).collect();
    let mut want = vec![0f32; m * n];
    for row in 0..m {
        for col in 0..n {
            want[row * n + col] = (0..k).map(|t| a[row * k + t] * b[t * n + col]).sum();
        }
    }
    CaseRun {
        buffers: vec![f32_bytes(&a), f32_bytes(&b), vec![0; m * n * 4]],
        launches: vec![launch(
            "matmul",
            (
                [(n as u32).div_ceil(16), (m as u32).div_ceil(16), 1],
                [16, 16, 1],
            ),
            vec![
                Buf(0),
                Buf(1),
                Buf(2),
                I32(m as i32),
                I32(n as i32),
                I32(k as i32),
            ],
        )],
        outputs: vec![output("C", 2, Expected::F32(want))],
    }
}

fn bitonic(_: CaseSize) -> CaseRun {
    let (n, b) = (1000usize, 256usize);
    let mut rng = Rng(7);
    let data: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
    let mut want = Vec::with_capacity(n);
    for c in data.chunks(b) {
        let mut s = c.to_vec();
        s.sort_unstable();
        want.extend(s);
    }
    CaseRun {
        buffers: vec![u32_bytes(data)],
        launches: vec![launch(
            "bitonic_sort",
            line(n.div_ceil(b), b),
            vec![Buf(0), I32(n as i32)],
        )],
        outputs: vec![output("sorted segments", 0, Expected::U32(want))],
    }
}

fn collatz(_: CaseSize) -> CaseRun {
    let n = 777usize;
    let max_steps = 500u32;
    let start: Vec<u32> = (1..=n as u32).collect();
    let want = start
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
    CaseRun {
        buffers: vec![u32_bytes(start), vec![0; n * 4]],
        launches: vec![launch(
            "collatz",
            line(n.div_ceil(128), 128),
            vec![Buf(0), Buf(1), I32(n as i32), U32(max_steps)],
        )],
        outputs: vec![output("steps", 1, Expected::U32(want))],
    }
}

fn ldg(_: CaseSize) -> CaseRun {
    let n = 1000usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
    let y: Vec<f32> = (0..n).map(|i| 1000.0 - i as f32).collect();
    let m = 37u32;
    let idx: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let table: Vec<u32> = (0..m).map(|i| i * i + 7).collect();
    let saxpy = (0..n).map(|i| 1.5f32.mul_add(x[i], y[i])).collect();
    let gather = idx.iter().map(|i| table[(i % m) as usize]).collect();
    let geometry = line(n.div_ceil(256), 256);
    CaseRun {
        buffers: vec![
            f32_bytes(&x),
            f32_bytes(&y),
            vec![0; n * 4],
            u32_bytes(idx),
            u32_bytes(table),
            vec![0; n * 4],
        ],
        launches: vec![
            launch(
                "saxpy_ldg",
                geometry,
                vec![Buf(0), Buf(1), Buf(2), F32(1.5), I32(n as i32)],
            ),
            launch(
                "gather_ldg",
                geometry,
                vec![Buf(3), Buf(4), Buf(5), I32(m as i32), I32(n as i32)],
            ),
        ],
        outputs: vec![
            output("saxpy_ldg", 2, Expected::F32(saxpy)),
            output("gather_ldg", 5, Expected::U32(gather)),
        ],
    }
}

/// 320 threads over 300 values: the last warp votes partly past `n`; warp 1 is all positive.
fn vote(_: CaseSize) -> CaseRun {
    let n = 300usize;
    let mut rng = Rng(8);
    let mut input: Vec<i32> = (0..n).map(|_| rng.below(7) as i32 - 2).collect();
    input[32..64].iter_mut().for_each(|v| *v = 5);
    let warps = 320 / 32;
    let (mut ballots, mut counts, mut flags) = (Vec::new(), Vec::new(), Vec::new());
    for w in 0..warps {
        let v = |l: usize| input.get(32 * w + l).copied().unwrap_or(0);
        let ballot = (0..32).fold(0u32, |b, l| b | (u32::from(v(l) > 0) << l));
        ballots.push(ballot);
        counts.push(ballot.count_ones());
        flags.push(
            u32::from(ballot == u32::MAX)
                | (u32::from(ballot != 0) << 1)
                | (((v(0) & 1) as u32) << 2),
        );
    }
    CaseRun {
        buffers: vec![
            u32_bytes(input.iter().map(|v| *v as u32)),
            vec![0; warps * 4],
            vec![0; warps * 4],
            vec![0; warps * 4],
        ],
        launches: vec![launch(
            "vote",
            line(5, 64),
            vec![Buf(0), Buf(1), Buf(2), Buf(3), I32(n as i32)],
        )],
        outputs: vec![
            output("ballot", 1, Expected::U32(ballots)),
            output("count", 2, Expected::U32(counts)),
            output("flags", 3, Expected::U32(flags)),
        ],
    }
}

/// `a[0] = 0` takes the zero paths of clz and ffs.
fn bitops(_: CaseSize) -> CaseRun {
    let n = 300usize;
    let mut rng = Rng(9);
    let mut a: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
    let b: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
    a[0] = 0;
    let mut want = Vec::with_capacity(9 * n);
    let mut funnel = Vec::with_capacity(n);
    for (&x, &y) in a.iter().zip(&b) {
        let wide = u64::from(x) * u64::from(y) + u64::from(y);
        let pair = (u64::from(y) << 32) | u64::from(x);
        let perm = [5u32, 1, 7, 3]
            .iter()
            .enumerate()
            .fold(0u32, |acc, (k, s)| {
                acc | ((((pair >> (s * 8)) & 0xFF) as u32) << (8 * k))
            });
        want.extend([
            x.reverse_bits(),
            x.leading_zeros() + 32 * y.count_ones(),
            if x == 0 { 0 } else { x.trailing_zeros() + 1 },
            (x >> (y & 31)) & 0xFF,
            perm,
            ((u64::from(x) * u64::from(y)) >> 32) as u32,
            wide as u32,
            (wide >> 32) as u32,
            (x & !0xFF00) | ((y & 0xFF) << 8),
        ]);
        funnel.push(((pair << (y & 31)) >> 32) as u32);
    }
    CaseRun {
        buffers: vec![
            u32_bytes(a),
            u32_bytes(b),
            vec![0; n * 9 * 4],
            vec![0; n * 8],
            vec![0; n * 4],
        ],
        launches: vec![launch(
            "bitops",
            line(n.div_ceil(128), 128),
            vec![Buf(0), Buf(1), Buf(2), Buf(3), Buf(4), I32(n as i32)],
        )],
        outputs: vec![
            output("bitops", 2, Expected::U32(want)),
            output("funnel", 4, Expected::U32(funnel)),
        ],
    }
}

/// Each value within the PTX ISA's bound for its `.approx` instruction (`ex2` grows with the
/// argument's magnitude; `sin`/`cos` absolute 2^-20.5; `rsqrt` relative; `lg2` plus `div` absolute
/// on the sum).
fn fastmath(_: CaseSize) -> CaseRun {
    let n = 400usize;
    let x: Vec<f32> = (0..n).map(|i| (i as f32 - 200.0) * 0.0311).collect();
    let near = |want: f64, within| Near {
        want,
        within,
        or_exactly: None,
    };
    let want = x
        .iter()
        .flat_map(|&xi| {
            let v = f64::from(xi);
            let log_div = (v.abs() + 1.0).ln() + v / 3.0;
            [
                near(v.exp(), Tolerance::Relative(2e-6 * (2.0 + 1.16 * v.abs()))),
                near(v.sin(), Tolerance::Absolute(2f64.powf(-20.5))),
                near(v.cos(), Tolerance::Absolute(2f64.powf(-20.5))),
                near(1.0 / (v.abs() + 1.0).sqrt(), Tolerance::Relative(3e-7)),
                near(log_div, Tolerance::Absolute(1e-5 * log_div.abs().max(1.0))),
            ]
        })
        .collect();
    CaseRun {
        buffers: vec![f32_bytes(&x), vec![0; n * 5 * 4]],
        launches: vec![launch(
            "fastmath",
            line(n.div_ceil(128), 128),
            vec![Buf(0), Buf(1), I32(n as i32)],
        )],
        outputs: vec![output("fastmath", 1, Expected::Near(want))],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rng_is_deterministic_and_bounded() {
        let a: Vec<u64> = (0..8).map(|_| Rng(5).below(10)).collect();
        let mut r = Rng(5);
        assert_eq!(a[0], r.below(10));
        let mut r = Rng(9);
        assert!((0..1000).all(|_| r.below(7) < 7));
    }

    fn words(v: &[u32]) -> Vec<u8> {
        u32_bytes(v.iter().copied())
    }

    #[test]
    fn a_mismatch_names_the_first_difference() {
        let out = output("x", 0, Expected::U32(vec![1, 2, 3, 4]));
        assert_eq!(out.check(&words(&[1, 2, 3, 4])), None);
        let e = out.check(&words(&[1, 9, 3, 8])).unwrap().to_string();
        assert!(e.contains("2 of 4") && e.contains("first at 1"), "{e}");
        let e = out.check(&words(&[1])).unwrap().to_string();
        assert!(e.contains("expected"), "{e}");
        assert!(out.check(&[1, 2, 3, 4, 5]).is_some(), "not whole words");
    }

    #[test]
    fn a_near_value_passes_within_its_tolerance_or_as_the_exact_alternative() {
        let near = Near {
            want: 1.0,
            within: Tolerance::Absolute(1e-3),
            or_exactly: Some(2.0),
        };
        assert!(near.accepts(1.0005) && near.accepts(2.0));
        assert!(!near.accepts(1.01) && !near.accepts(2.0001));
        let rel = Near {
            want: -1000.0,
            within: Tolerance::Relative(1e-3),
            or_exactly: None,
        };
        assert!(rel.accepts(-1000.9) && !rel.accepts(-1001.1));
        let out = output("y", 0, Expected::Near(vec![near, rel]));
        let floats = f32_bytes(&[1.0, -1002.0]);
        let e = out.check(&floats).unwrap().to_string();
        assert!(e.contains("1 of 2") && e.contains("first at 1"), "{e}");
        assert!(e.contains("relative"), "{e}");
    }

    #[test]
    fn missing_outputs_are_mismatches() {
        let run = find("ldg").unwrap().prepare(CaseSize::Check);
        assert_eq!(run.mismatches(&[]).len(), 2);
    }

    /// Every case is runnable as described: its file is embedded with the entries it launches,
    /// every buffer index exists, and every output's size is the buffer's.
    #[test]
    fn every_case_describes_launches_of_its_embedded_file() {
        let mut names: Vec<&str> = cases().iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), cases().len(), "case names are unique");
        for case in cases() {
            let kernel = crate::find_corpus(case.file).expect(case.file);
            for size in [CaseSize::Check, CaseSize::Timing] {
                let run = case.prepare(size);
                let launched: Vec<&str> = run.launches.iter().map(|l| l.entry).collect();
                assert_eq!(launched, case.entries, "{}", case.name);
                for l in &run.launches {
                    assert!(
                        kernel.entries.iter().any(|e| e.name == l.entry),
                        "{}: {} is not in {}",
                        case.name,
                        l.entry,
                        case.file
                    );
                    for a in &l.args {
                        if let Buf(i) = a {
                            assert!(*i < run.buffers.len(), "{}: buffer {i}", case.name);
                        }
                    }
                }
                assert!(!run.outputs.is_empty(), "{}", case.name);
                for o in &run.outputs {
                    assert_eq!(
                        run.buffers[o.buffer].len(),
                        4 * o.expect.len(),
                        "{}: {}",
                        case.name,
                        o.what
                    );
                }
            }
        }
    }

    /// The zero-filled output buffers would pass a reference that expects zeros: no case's
    /// reference is all zeros, so each one can fail.
    #[test]
    fn no_reference_is_what_an_idle_kernel_leaves() {
        for case in cases() {
            let run = case.prepare(CaseSize::Check);
            let untouched: Vec<Vec<u8>> = run
                .outputs
                .iter()
                .map(|o| run.buffers[o.buffer].clone())
                .collect();
            assert!(
                !run.mismatches(&untouched).is_empty(),
                "{}: the initial buffers pass",
                case.name
            );
        }
    }

    #[test]
    fn the_cases_with_a_timing_size_move_more_at_it() {
        for name in [
            "reduce_shared",
            "reduce_shuffle",
            "transpose",
            "jacobi_2d",
            "matmul",
        ] {
            let case = find(name).unwrap();
            let bytes = |s| -> usize { case.prepare(s).buffers.iter().map(Vec::len).sum() };
            assert!(
                bytes(CaseSize::Timing) > 16 * bytes(CaseSize::Check),
                "{name}"
            );
        }
    }
}
