//! Integration tests of the emulator: the kernel corpus against CPU references, determinism,
//! error reporting and timing semantics.

mod breadth;
mod common;
mod compat;
mod corpus;
mod coverage;
mod dispatch;
mod division;
mod errors;
mod golden;
mod issue;
mod micro;
mod mutate;
mod probes;
mod timing;
