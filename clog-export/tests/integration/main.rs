//! The crate's one integration-test binary.

mod clog2_fixtures;
