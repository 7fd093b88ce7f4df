//! The crate's one error type: every way a parse, load or launch can fail, with its context as data.
//!
//! Why: a fault in a guest kernel (bad address, unsupported PTX, deadlock, runaway loop) must reach
//! the caller as a value naming the kernel, PC, source line, block and warp, never as a panic.

use thiserror::Error;

/// Everything the emulator can report instead of a result.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum EmuError {
    /// The PTX text is malformed; `line`/`col` are 1-based positions in the PTX source.
    #[error("PTX parse error at {line}:{col}: {msg}")]
    Parse { line: u32, col: u32, msg: String },
    /// A kernel whose PTX did not parse or decode (a statement the emulator cannot read, an
    /// unknown symbol). The module's other kernels still load and run; this one is refused when
    /// launched. `text` is the offending PTX line as written.
    #[error("kernel {kernel} cannot run: PTX line {line}:{col} `{text}`: {what}")]
    Unusable {
        kernel: String,
        line: u32,
        col: u32,
        text: String,
        what: String,
    },
    /// Well-formed PTX that uses a feature the emulator does not implement.
    #[error("unsupported PTX at line {line}: {what}")]
    Unsupported { line: u32, what: String },
    /// A guest thread did something illegal (out-of-bounds or misaligned access, trap, ...).
    #[error(
        "fault in kernel {kernel} at pc {pc} (PTX line {line}), block {block:?}, warp {warp}, thread {thread}: {what}"
    )]
    Fault {
        kernel: String,
        pc: u32,
        line: u32,
        block: [u32; 3],
        warp: u32,
        thread: u32,
        what: String,
    },
    /// Every live warp of a block waits at a barrier that can never complete.
    #[error(
        "deadlock in kernel {kernel}: block {block:?} waits at a barrier (pc {pc}, PTX line {line}) that cannot complete"
    )]
    Deadlock {
        kernel: String,
        block: [u32; 3],
        pc: u32,
        line: u32,
    },
    /// The launch executed more warp instructions than `LaunchParams::max_warp_instructions`:
    /// a runaway loop, or a kernel larger than the budget allows. Names where one warp was.
    #[error(
        "kernel {kernel} ran past its budget of {limit} warp instructions; block {block:?} warp {warp} was at pc {pc} (PTX line {line})"
    )]
    Budget {
        kernel: String,
        limit: u64,
        block: [u32; 3],
        warp: u32,
        pc: u32,
        line: u32,
    },
    /// The launch was still running at the wall-clock deadline of its [`crate::Watch`].
    #[error(
        "kernel {kernel} was still running at its time limit after {executed} warp instructions; block {block:?} warp {warp} was at pc {pc} (PTX line {line})"
    )]
    TimeLimit {
        kernel: String,
        executed: u64,
        block: [u32; 3],
        warp: u32,
        pc: u32,
        line: u32,
    },
    /// The launch arguments or configuration do not match the kernel.
    #[error("bad launch of {kernel}: {what}")]
    Args { kernel: String, what: String },
    /// A host-side access to device memory outside any allocation, or an allocation failure.
    #[error("device memory error at address {addr:#x}: {what}")]
    Memory { addr: u64, what: String },
    /// A name (kernel, symbol, texture, module) that does not exist.
    #[error("unknown {kind} '{name}'")]
    NotFound { kind: &'static str, name: String },
    /// The engine broke one of its own invariants: a bug in the emulator, not in the kernel.
    #[error("emulator internal error: {what}")]
    Internal { what: String },
}
