//! OTF2, the Open Trace Format 2 of Score-P, Scalasca and TAU, which Vampir reads: a launch as an
//! OTF2 archive written through the reference library, OTF2 3 (loaded at run time, `ffi.rs`).
//!
//! # The archive
//! ```text
//! DIR/traces.otf2        anchor file (open this in Vampir)
//! DIR/traces.def         global definitions
//! DIR/traces/N.evt       location N's events
//! DIR/traces/N.def       location N's local definitions (empty; readers expect the file)
//! ```
//! # What it holds
//! * **System tree**: `host` (class `machine`) with the device (class `accelerator`, named after
//!   the launch's device or backend) below it.
//! * **Location groups and locations** follow the [`crate::TimelineMapping`]: by default one
//!   accelerator location group per SM (`SM 3`) with one accelerator-stream location per warp
//!   slot (`warp slot 5`), so the warps an SM runs one after another share a line; with
//!   `BlockWarp` one group per block (`block 17`, the linear block index) and one location per
//!   warp of the block (`warp 2`). Locations are numbered in (rank, thread) order from 0. OTF2 3
//!   requires an accelerator group to name the process that created it, so the archive also has
//!   a process group `host` with one CPU-thread location, `host thread (not traced)`, the last
//!   location, which holds no events.
//! * **Time**: one tick per SM clock cycle, timer resolution = the launch's clock in Hz
//!   (`clock_mhz` · 10⁶, rounded); a tick is cycles since the SM's earliest kernel-begin clock,
//!   because SM clocks are not synchronised (the alignment the CLOG2 and Chrome exports use,
//!   `timeline.rs`). Timestamps rise per location, as OTF2 requires.
//! * **Regions** (paradigm CUDA): the kernel (role function), entered at each warp's kernel
//!   begin and left at its end; then one region per site (role code), named by its site name (the
//!   source line; `site N` if the name is empty), described by its memory region (`texture`, …);
//!   a record whose site the launch does not declare gets a region `site N` described as
//!   undeclared.
//! * **Events per warp**, on its location: Enter(kernel) with attributes `block x`, `block y`,
//!   `block z`, `warp` (in its block), `global warp` and `probe mode`; per record one
//!   Enter(site) at its start and one Leave(site) at its end, preceded by a Metric `access time`
//!   (cycles, end − start, absolute at that point; recorded at the leave of every record whose
//!   clock did not wrap); where the warp's log was full, MeasurementOnOff(off) after its last
//!   record, with attribute `dropped records` (how many), and MeasurementOnOff(on) at its kernel
//!   end; Leave(kernel).
//! * **Corrected records**: a record whose clock wrapped (end < start) is drawn with length 0; one
//!   that starts before the previous event of its warp (or a warp that begins before the
//!   previous warp on its location ended) is drawn later, keeping its length, so that time
//!   never goes backwards. Their Enter carries `clock` = `wrapped` or `reordered` and the raw
//!   clocks `start` and `end`, so every record survives exactly.
//!
//! # Determinism
//! The same trace gives the same files byte for byte, but for the trace identifier in the anchor
//! file: the library draws one for each archive, to tell archives apart, and offers no way to
//! set it.
//!
//! # Memory
//! Locations are written one after another, each from its warps in start order, and each
//! location's event writer is closed before the next opens: OTF2 buffers events per open writer
//! (up to its 128 MiB pool, flushed to the file when full), so one open writer bounds the
//! memory, whatever the number of locations.

mod ffi;
mod write;

pub use write::{ARCHIVE_NAME, write_otf2};
