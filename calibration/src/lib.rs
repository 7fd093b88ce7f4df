//! The silicon calibration suite: silicon, not the model's own cycles, is the reference for the
//! emulator. One table (`docs/calibration/calibration.toml`, [`Table`]) holds the committed
//! measurements of H100 and H200 GPUs (each row's number, the raw record under `docs/gpu/` and
//! the line that prints it) with the emulator preset's value for the same quantity beside it
//! and the tolerance they must agree within, or the reason they do not (a known gap: a finding).
//!
//! The model's values are computed, never typed: [`recompute`] runs each row's measurement on
//! the emulator — the GPU check's microbenchmarks and corpus (`check`), the standalone
//! experiments of `docs/gpu` compiled with the project's nvcc, and the study's paper-scale
//! frames (`study`) — and `cargo run -p warpscope-calibration --example calibrate -- --write`
//! records them and writes `docs/validation.md` ([`page::render`]). The crate's tests recompute
//! every cheap row and fail when the table is not true of the code.
//!
//! Each row has a [`Verdict`]: it agrees within its tolerance, or it is a known gap (outside,
//! with the reason in `gap`: a finding about the model), or, for an expensive row whose value
//! the program has not recorded yet, it is not computed (shown so on the page; the tests accept
//! it, since they never compute such a row). Anything else fails the tests, as does a tolerance
//! wider than the same row's on the merge base: a disagreement is recorded as a gap, never
//! hidden by a wider tolerance.
//!
//! Why a crate of its own: computing a row needs the GPU check's microbenchmarks and the study,
//! so the code sits above `check`; and nothing depends on it, so the table's definition, the
//! program that fills it and the page stay together without a lower crate knowing of them.
//!
//! ```
//! use calibration::{Table, Tolerance};
//! let text = r#"
//! [[row]]
//! id = "l1"
//! quantity = "L1 hit latency"
//! unit = "cycles"
//! gpu = "H100"
//! silicon = 34.1
//! source = { file = "h100-2026-11-27-ncu.md", line = 76, at = "step 3" }
//! preset = "h100"
//! measure = { kind = "micro", case = "chase_l1", mode = "fence" }
//! model = 34.0625
//! tolerance = { relative = 0.1 }
//! "#;
//! let t = Table::parse(text, "calibration.toml".as_ref()).unwrap();
//! assert_eq!(t.row[0].verdict(), calibration::Verdict::Agrees);
//! assert!(Tolerance::Absolute(1.0).admits(34.1, 34.0625));
//! ```

mod error;
mod experiments;
mod model;
pub mod page;
pub mod source;
mod table;

pub use error::CalibrationError;
pub use model::{Options, recompute};
pub use table::{
    Closing, DramPattern, Extreme, FenceAccess, Gpu, MODEL_DIGITS, Measure, PaperShape, PaperView,
    RECORDS_DIR, Row, SharedOp, Source, TABLE_PATH, Table, Tolerance, Tolerances, Unit, Verdict,
    Widened, num, round_model,
};
