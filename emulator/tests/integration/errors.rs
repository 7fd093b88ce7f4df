//! Bad input ends a launch with an error value naming where it happened.
