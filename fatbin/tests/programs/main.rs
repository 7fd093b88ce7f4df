//! This crate against real programs that nvcc builds at test time, with cuobjdump as the oracle,
//! and the parser fuzzed with truncations and bit flips of real images.

mod builds;
mod fuzz;
mod oracle;
mod tools;
