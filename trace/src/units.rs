//! Newtypes that carry their unit in the name, so a cycle count is never mixed up with an index.

use serde::{Deserialize, Serialize};

/// A count of SM clock cycles (the unit of `%clock64`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Cycles(pub u64);

impl Cycles {
    /// `self - earlier`, or zero when `earlier` is later (a clock that went backwards).
    pub fn saturating_since(self, earlier: Cycles) -> Cycles {
        Cycles(self.0.saturating_sub(earlier.0))
    }

    /// Seconds at a clock rate given in MHz.
    pub fn to_seconds(self, clock_mhz: f64) -> f64 {
        self.0 as f64 / (clock_mhz * 1e6)
    }
}

impl std::ops::Add for Cycles {
    type Output = Cycles;
    fn add(self, rhs: Cycles) -> Cycles {
        Cycles(self.0 + rhs.0)
    }
}

impl std::fmt::Display for Cycles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} cycles", self.0)
    }
}

/// A streaming multiprocessor's index (`%smid`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct SmId(pub u32);

impl std::fmt::Display for SmId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SM{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_to_seconds_and_saturation() {
        assert_eq!(Cycles(1_401_000).to_seconds(1401.0), 1e-3);
        assert_eq!(Cycles(5).saturating_since(Cycles(9)), Cycles(0));
        assert_eq!(Cycles(9).saturating_since(Cycles(5)), Cycles(4));
    }
}
