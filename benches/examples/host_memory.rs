//! The host's memory latency by working-set size, with 4 KiB pages and with 2 MiB ones:
//! `cargo run --release -p warpscope-benches --example host_memory [MIB ...]` (default 1 2 4 6 8
//! 12 16 32 64). Each size is read as one random cycle through its 64-byte lines, each read
//! waiting for the one before, so a read's time is the latency of wherever its line and its
//! page's translation are. Why: the emulator's state per SM and its cache arrays are read at
//! random, and on a VM without hardware counters this is what says at which size they leave
//! the host's caches and its TLB reach (docs/PERFORMANCE.md). The 2 MiB column needs
//! transparent huge pages (`madvise` or `always`); the probe prints how much memory the process
//! then held in huge pages (`AnonHugePages`), since the kernel may decline.

use memmap2::{Advice, MmapMut};
use std::process::ExitCode;
use std::time::Instant;

const LINE: usize = 64;
const HUGE: usize = 2 << 20;
/// Reads timed per measurement: enough that the timer's resolution and the caches' warming
/// at the start are a small part. (The pages are faulted in while the cycle is written.)
const READS: usize = 4_000_000;
/// The largest working set asked for, 64 GiB: its lines are numbered in 32 bits.
const MAX_MIB: usize = 64 << 10;

fn main() -> ExitCode {
    let sizes: Result<Vec<usize>, _> = std::env::args().skip(1).map(|a| a.parse()).collect();
    let sizes = match sizes {
        Ok(s) if s.iter().all(|&m| (1..=MAX_MIB).contains(&m)) => s,
        _ => {
            eprintln!(
                "host_memory: each argument must be a size in MiB, a whole number from 1 to {MAX_MIB}"
            );
            return ExitCode::FAILURE;
        }
    };
    let sizes = if sizes.is_empty() {
        vec![1, 2, 4, 6, 8, 12, 16, 32, 64]
    } else {
        sizes
    };
    println!("| working set | 4 KiB pages | 2 MiB pages | huge pages held with 2 MiB |");
    println!("|--|--|--|--|");
    for mib in sizes {
        let small = match chase(mib << 20, Advice::NoHugePage) {
            Ok((ns, _)) => ns,
            Err(e) => return fail(mib, &e),
        };
        let (huge, granted) = match chase(mib << 20, Advice::HugePage) {
            Ok(r) => r,
            Err(e) => return fail(mib, &e),
        };
        println!(
            "| {mib} MiB | {small:.1} ns | {huge:.1} ns | {} MiB |",
            granted >> 20
        );
    }
    ExitCode::SUCCESS
}

fn fail(mib: usize, e: &std::io::Error) -> ExitCode {
    eprintln!("host_memory: {mib} MiB: {e}");
    ExitCode::FAILURE
}

/// Nanoseconds per dependent read over `bytes` mapped with `advice`, and the bytes of the
/// process then in huge pages.
fn chase(bytes: usize, advice: Advice) -> std::io::Result<(f64, u64)> {
    // One huge page more than asked, so that the buffer can start on a huge page's boundary.
    let mut map = MmapMut::map_anon(bytes + HUGE)?;
    map.advise(advice)?;
    let skip = map.as_ptr().align_offset(HUGE);
    let buf = &mut map[skip..skip + bytes];
    let lines = bytes / LINE;
    // Sattolo's shuffle: one cycle through every line, in an order the prefetchers cannot follow.
    let mut order: Vec<u32> = (0..lines as u32).collect();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for i in (1..lines).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        order.swap(i, (state % i as u64) as usize);
    }
    for (i, &line) in order.iter().enumerate() {
        let next = order[(i + 1) % lines] as usize * LINE;
        let at = line as usize * LINE;
        buf[at..at + 8].copy_from_slice(&(next as u64).to_le_bytes());
    }
    let granted = huge_bytes();
    let mut at = 0usize;
    let start = Instant::now();
    for _ in 0..READS {
        let word: [u8; 8] = buf[at..at + 8].try_into().expect("a word");
        at = u64::from_le_bytes(word) as usize;
    }
    let ns = start.elapsed().as_secs_f64() * 1e9 / READS as f64;
    std::hint::black_box(at);
    Ok((ns, granted))
}

/// `AnonHugePages` of this process (`/proc/self/smaps_rollup`), 0 where it cannot be read.
fn huge_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/smaps_rollup")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("AnonHugePages:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}
