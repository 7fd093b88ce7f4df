//! Cross-crate tests: the `warpscope` binary end to end.
