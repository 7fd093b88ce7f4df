//! Each clock window of a CUDA binary's SASS, with the stall counts ptxas gave its instructions.
//!
//! ```text
//! cargo run --release -p warpscope-kernels --example sass_windows -- FILE [FUNCTION] [--arch N]
//! ```
//!
//! FILE is a cubin, an object or an executable with embedded SASS (read with `cuobjdump -sass
//! -arch sm_N`, N 90 unless `--arch` says otherwise), or `cuobjdump -sass`'s text saved earlier
//! (a `.sass` file, as the GPU bundle's `experiments/run` keeps for `docs/gpu/naive-window.cu`).
//! FUNCTION keeps the functions whose mangled name contains it. A window runs from one read of
//! `SR_CLOCKLO` to the next in a function, so between two probes the code between them is one
//! too. Each window is printed with its instructions' control bits and the sum of the stall
//! counts from the opening read up to the closing one: the cycles the warp's issue takes through
//! the window when no scoreboard wait holds it and no other warp takes its scheduler's slots
//! (`docs/gpu/2026-12-05-naive-windows.md`); and, where it has global loads, how many the warp
//! has in flight each time it first waits for one after issuing more
//! (`docs/gpu/2026-12-06-line-rate.md`).

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

use kernels::tools::{Control, SassInstr, cuobjdump_sass, loads_in_flight_at_waits, parse_sass};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sass_windows: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let (mut file, mut want, mut arch) = (None, String::new(), 90u32);
    while let Some(a) = args.next() {
        if a == "--arch" {
            let v = args.next().ok_or("--arch needs a number, e.g. 90")?;
            arch = v
                .parse()
                .map_err(|_| format!("--arch: not a number: {v}"))?;
        } else if file.is_none() {
            file = Some(a);
        } else {
            want = a;
        }
    }
    let file = file.ok_or("usage: sass_windows FILE [FUNCTION] [--arch N]")?;
    let bytes = std::fs::read(&file).map_err(|e| format!("{file}: {e}"))?;
    let text = if bytes.starts_with(b"\x7fELF") {
        cuobjdump_sass(&bytes, arch).map_err(|e| format!("{file}: {e}"))?
    } else {
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let functions = parse_sass(&text);
    if functions.is_empty() {
        return Err(format!("{file}: no SASS for sm_{arch} in it"));
    }
    let mut out = String::new();
    for f in functions.iter().filter(|f| f.name.contains(&want)) {
        for pair in f.clock_reads().windows(2) {
            let window = &f.instrs[pair[0]..=pair[1]];
            let stalls: u32 = window[..window.len() - 1]
                .iter()
                .map(|i| u32::from(i.ctrl.stall))
                .sum();
            let in_flight = loads_in_flight_at_waits(window);
            let loads = if in_flight.is_empty() {
                String::new()
            } else {
                let counts: Vec<String> = in_flight.iter().map(usize::to_string).collect();
                format!("; LDGs in flight at its waits: {}", counts.join(" "))
            };
            let _ = writeln!(
                out,
                "{} window at {:#06x}: stall counts {stalls}{loads}",
                f.name, window[0].offset
            );
            for i in window {
                let _ = writeln!(
                    out,
                    "  {:#06x}  {}  {}",
                    i.offset,
                    control(&i.ctrl),
                    text_of(i)
                );
            }
        }
    }
    // Written at once, and a reader that stops early (`| head`) is no error.
    match std::io::stdout().lock().write_all(out.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("stdout: {e}")),
        _ => Ok(()),
    }
}

/// The control bits as `S<stall> Y<yield> wb<write barrier> rb<read barrier> wait <mask>`.
fn control(c: &Control) -> String {
    let barrier = |b: Option<u8>| b.map_or("-".to_string(), |b| b.to_string());
    let wait: Vec<String> = (0..6)
        .filter(|k| c.wait_mask >> k & 1 == 1)
        .map(|k| k.to_string())
        .collect();
    let wait = if wait.is_empty() {
        "-".to_string()
    } else {
        wait.join(",")
    };
    format!(
        "S{:<2} Y{} wb{} rb{} wait {wait:<5}",
        c.stall,
        u8::from(c.yield_flag),
        barrier(c.write_barrier),
        barrier(c.read_barrier)
    )
}

/// The instruction as cuobjdump wrote it, predicate first.
fn text_of(i: &SassInstr) -> String {
    let guard = i
        .predicate
        .as_deref()
        .map_or(String::new(), |p| format!("{p} "));
    format!("{guard}{} {}", i.opcode, i.operands.join(", "))
}
