//! Timing semantics the paper's method relies on.
