//! Deterministic mutation fuzzing of the two readers of untrusted bytes in this crate, on stable
//! Rust: `trace.wst` ([`TraceReader`], every warp read both ways) and `.npy` ([`parse_npy`]).
//! Each input is a valid file with bit flips, a truncation, appended bytes or an edited length
//! field; for `trace.wst`, half of the edits also recompute the checksums, so that the checks
//! behind them (counts, offsets, the index, the sites) are reached too. Every input must give
//! `Ok` or an error naming the file — a panic fails the test — and a mutation left unsealed
//! must always be an error.
//!
//! `fuzz_quick` (a few thousand inputs) runs with the tests; `fuzz_million` is ignored:
//! `WS_FUZZ_INPUTS=1000000 cargo test -p warpscope-trace --test fuzz -- --ignored --nocapture`.
//! With `WS_FUZZ_SEED_DIR=DIR` the quick test also writes the valid seeds that the cargo-fuzz
//! targets (emulator/fuzz) start from.

use std::path::Path;
use std::time::Instant;
use trace::{
    Cycles, Dim3, LaunchInfo, ProbeMode, Record, RecordKind, Region, SiteInfo, SiteSummary, SmId,
    Trace, TraceReader, TraceWriter, WarpTrace, parse_npy, write_npy,
};
use xxhash_rust::xxh3::xxh3_64;

/// splitmix64: a fixed stream, so that input `i` of seed `s` is the same on every machine and
/// any finding is reproduced by its number.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn sample_trace() -> Trace {
    let launch = LaunchInfo::new("k", Dim3::new(2, 1, 1), Dim3::new(64, 1, 1))
        .with_probe(ProbeMode::Fence, RecordKind::Trace)
        .with_sites(vec![
            SiteInfo::new(0, "a[i]", Region::Global),
            SiteInfo::new(1, "tex", Region::Texture),
        ]);
    let warps = (0..4u32)
        .map(|g| {
            let mut w = WarpTrace::new([g / 2, 0, 0], g % 2, g, SmId(g % 2));
            w.begin = Cycles(10 * u64::from(g));
            w.end = Cycles(5000 + u64::from(g));
            w.records = (0..g * 2 + 1)
                .map(|k| Record {
                    site: (k % 2) as u16,
                    seq: k,
                    start: Cycles(100 + u64::from(k) * 50),
                    end: Cycles(140 + u64::from(k) * 50),
                })
                .collect();
            if g == 1 {
                w.summaries.push(SiteSummary {
                    site: 1,
                    count: 2,
                    sum: Cycles(80),
                    min: Cycles(30),
                    max: Cycles(50),
                });
            }
            w
        })
        .collect();
    Trace { launch, warps }
}

/// Where the valid file's structure lies, to aim length edits and to reseal checksums.
struct Layout {
    json_end: usize,
    /// (start, end) of each warp block, its checksum in the last 8 bytes.
    blocks: Vec<(usize, usize)>,
    index_start: usize,
}

fn layout(bytes: &[u8]) -> Layout {
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap()) as usize;
    let len = bytes.len();
    let n_warps = u64_at(len - 40);
    let index_start = u64_at(len - 24);
    let blocks: Vec<(usize, usize)> = (0..n_warps)
        .map(|i| {
            let s = u64_at(index_start + 8 * i);
            let e = if i + 1 < n_warps {
                u64_at(index_start + 8 * (i + 1))
            } else {
                index_start
            };
            (s, e)
        })
        .collect();
    Layout {
        json_end: 24 + u64_at(16),
        blocks,
        index_start,
    }
}

/// Recomputes the checksums at the valid file's positions, where they still fit.
fn reseal(b: &mut [u8], l: &Layout) {
    let put = |b: &mut [u8], at: usize, from: usize| {
        if at + 8 <= b.len() && from <= at {
            let h = xxh3_64(&b[from..at]);
            b[at..at + 8].copy_from_slice(&h.to_le_bytes());
        }
    };
    put(b, l.json_end, 0);
    for &(s, e) in &l.blocks {
        put(b, e.saturating_sub(8), s);
    }
    if b.len() >= 16 {
        let len = b.len();
        put(b, len - 16, l.index_start.min(len - 16));
    }
}

/// Offsets of length and count fields, for targeted edits: (offset, width in bytes).
fn length_fields(l: &Layout, len: usize) -> Vec<(usize, usize)> {
    let mut f = vec![(16, 8), (len - 40, 8), (len - 32, 8), (len - 24, 8)];
    for (i, &(s, _)) in l.blocks.iter().enumerate() {
        f.push((s + 48, 4));
        f.push((s + 52, 4));
        f.push((l.index_start + 8 * i, 8));
        f.push((s + 56, 2)); // the first record's site
    }
    f
}

fn interesting(rng: &mut Rng, old: u64, width: usize) -> u64 {
    let max = if width == 8 {
        u64::MAX
    } else {
        (1u64 << (8 * width)) - 1
    };
    match rng.below(8) {
        0 => 0,
        1 => max,
        2 => old.wrapping_add(1) & max,
        3 => old.wrapping_sub(1) & max,
        4 => old.wrapping_add(24) & max,
        5 => 999 & max,
        6 => max / 2,
        _ => rng.next() & max,
    }
}

/// One mutation of `valid`; returns the bytes and whether checksums were resealed.
fn mutate_trace(rng: &mut Rng, valid: &[u8], l: &Layout) -> (Vec<u8>, bool) {
    let mut b = valid.to_vec();
    match rng.below(4) {
        0 => {
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
        }
        1 => b.truncate(rng.below(b.len())),
        2 => {
            let n = 1 + rng.below(64);
            for _ in 0..n {
                b.push(rng.next() as u8);
            }
        }
        _ => {
            let fields = length_fields(l, b.len());
            let (at, w) = fields[rng.below(fields.len())];
            let mut old = [0u8; 8];
            old[..w].copy_from_slice(&b[at..at + w]);
            let v = interesting(rng, u64::from_le_bytes(old), w);
            b[at..at + w].copy_from_slice(&v.to_le_bytes()[..w]);
        }
    }
    let sealed = rng.below(2) == 0;
    if sealed {
        reseal(&mut b, l);
    }
    (b, sealed)
}

/// Reads everything in the file, both ways; the first error, if any.
fn read_all(path: &Path) -> Result<u64, trace::TraceError> {
    let r = TraceReader::open(path)?;
    let mut n = 0u64;
    for w in r.warps()? {
        n += w?.records.len() as u64;
    }
    for i in 0..r.warp_count() {
        let mut c = r.cursor(i, 64)?;
        while c.next_record()?.is_some() {}
        c.summaries()?;
        r.read_warp(i)?;
    }
    Ok(n)
}

struct Findings {
    inputs: u64,
    ok: u64,
    errors: u64,
}

fn fuzz_trace(n: u64, seed: u64, dir: &Path) -> Findings {
    let path = dir.join("trace.wst");
    TraceWriter::write_all(&path, &sample_trace()).unwrap();
    let valid = std::fs::read(&path).unwrap();
    assert_eq!(
        read_all(&path).unwrap(),
        16,
        "the unmutated sample reads whole"
    );
    let l = layout(&valid);
    let mut rng = Rng(seed);
    let mut f = Findings {
        inputs: 0,
        ok: 0,
        errors: 0,
    };
    for i in 0..n {
        let (bytes, sealed) = mutate_trace(&mut rng, &valid, &l);
        std::fs::write(&path, &bytes).unwrap();
        f.inputs += 1;
        match read_all(&path) {
            Ok(_) => {
                // Only a resealed edit of a value (not a structure) may still read.
                assert!(
                    sealed || bytes == valid,
                    "input {i} (seed {seed}): a damaged, unsealed file was read as valid"
                );
                f.ok += 1;
            }
            Err(e) => {
                let msg = trace::error_chain(&e);
                assert!(
                    msg.contains("trace.wst"),
                    "input {i}: error does not name the file: {msg}"
                );
                f.errors += 1;
            }
        }
    }
    f
}

fn sample_npy(dir: &Path) -> Vec<u8> {
    let p = dir.join("seed.npy");
    let data: Vec<u8> = (0..10u32).flat_map(|v| (v * 7).to_le_bytes()).collect();
    write_npy(&p, "<u4", 4, &data).unwrap();
    std::fs::read(&p).unwrap()
}

fn mutate_npy(rng: &mut Rng, valid: &[u8]) -> Vec<u8> {
    let mut b = valid.to_vec();
    match rng.below(5) {
        0 => {
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
        }
        1 => b.truncate(rng.below(b.len())),
        2 => b.extend(std::iter::repeat_n(0u8, 1 + rng.below(8))),
        3 => {
            // The header length field.
            let v = interesting(rng, u64::from(u16::from_le_bytes([b[8], b[9]])), 2);
            b[8..10].copy_from_slice(&(v as u16).to_le_bytes());
        }
        _ => {
            // The shape: another number, in place.
            let at = b.windows(5).position(|w| w == b"(10,)").unwrap();
            let dims = [
                "0",
                "9",
                "11",
                "99999999999999",
                "18446744073709551615",
                "18446744073709551616",
                "4294967296, 4294967296",
                "-1",
                "",
                "10, 0",
                "2, 5",
            ];
            let mut out = b[..at].to_vec();
            out.extend_from_slice(format!("({},)", dims[rng.below(dims.len())]).as_bytes());
            out.extend_from_slice(&b[at + 5..]);
            b = out;
        }
    }
    b
}

fn fuzz_npy(n: u64, seed: u64, dir: &Path) -> Findings {
    let valid = sample_npy(dir);
    let path = dir.join("input.npy");
    assert_eq!(parse_npy(&path, &valid, "<u4", 4).unwrap().len(), 40);
    let mut rng = Rng(seed);
    let mut f = Findings {
        inputs: 0,
        ok: 0,
        errors: 0,
    };
    for i in 0..n {
        let bytes = mutate_npy(&mut rng, &valid);
        f.inputs += 1;
        match parse_npy(&path, &bytes, "<u4", 4) {
            Ok(data) => {
                assert_eq!(data.len() % 4, 0, "input {i}: a partial element");
                assert!(
                    bytes.ends_with(data),
                    "input {i}: data is not the file's tail"
                );
                f.ok += 1;
            }
            Err(e) => {
                let msg = e.to_string();
                assert!(
                    msg.contains("input.npy") && msg.contains("byte"),
                    "input {i}: {msg}"
                );
                f.errors += 1;
            }
        }
    }
    f
}

fn run(n: u64) {
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let t = fuzz_trace(n, 1, dir.path());
    let t_secs = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let p = fuzz_npy(n, 2, dir.path());
    let p_secs = t1.elapsed().as_secs_f64();
    eprintln!(
        "trace.wst: {} inputs in {t_secs:.1} s, {} read, {} refused, 0 panics",
        t.inputs, t.ok, t.errors
    );
    eprintln!(
        ".npy: {} inputs in {p_secs:.1} s, {} read, {} refused, 0 panics",
        p.inputs, p.ok, p.errors
    );
    // The mutations must reach both outcomes, or they test nothing.
    assert!(t.ok > 0 && t.errors > 0 && p.ok > 0 && p.errors > 0);
}

#[test]
fn fuzz_quick() {
    run(3000);
    if let Ok(seeds) = std::env::var("WS_FUZZ_SEED_DIR") {
        let seeds = Path::new(&seeds);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(seeds.join("trace_store")).unwrap();
        std::fs::create_dir_all(seeds.join("npy")).unwrap();
        let p = seeds.join("trace_store").join("valid.wst");
        TraceWriter::write_all(&p, &sample_trace()).unwrap();
        std::fs::write(seeds.join("npy").join("valid.npy"), sample_npy(dir.path())).unwrap();
    }
}

#[test]
#[ignore = "a long run: WS_FUZZ_INPUTS=1000000 cargo test -p warpscope-trace --test fuzz -- --ignored"]
fn fuzz_million() {
    let n = std::env::var("WS_FUZZ_INPUTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    run(n);
}
