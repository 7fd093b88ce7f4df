//! GPU architectures as fatbins and PTX name them, and which PTX a device can JIT-compile.
//!
//! A fatbin entry states its architecture as a number (`75`, `90`, `120`) and two flag bits for
//! the suffixes nvcc 12.x/13 added: `a` (arch-specific: `sm_90a`, `compute_100a`) and `f`
//! (family-specific: `compute_100f`). The same number names SASS (`sm_90`) and virtual
//! architectures (`compute_90`); which one depends on the entry's kind.
//!
//! Compatibility of PTX with a device, as NVIDIA states it (CUDA programming guide, "compute
//! capabilities"; the CUDA 12.9 note "Family-Specific Architecture Features"): plain PTX for
//! `compute_N` JIT-compiles for any device of arch ≥ N; arch-specific PTX (`compute_Na`) only for
//! arch N itself; family-specific PTX (`compute_Nf`) for the devices of N's family (same major,
//! `N / 10`) whose arch is ≥ N, e.g. `compute_100f` for 10.0 and 10.3. Not checked on a GPU here.

use std::fmt;

/// The suffix of an architecture name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArchVariant {
    /// No suffix: `sm_90`, `compute_90`.
    Plain,
    /// `f`: family-specific features, e.g. `compute_100f`.
    Family,
    /// `a`: arch-specific features, e.g. `sm_90a`.
    Specific,
}

/// A GPU architecture: its number (`90` for sm_90 / compute_90, i.e. major × 10 + minor) and
/// suffix. Orders by number, then plain < `f` < `a` (more specific last).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    pub number: u32,
    pub variant: ArchVariant,
}

impl Arch {
    /// A plain architecture (no suffix).
    pub fn plain(number: u32) -> Self {
        Self {
            number,
            variant: ArchVariant::Plain,
        }
    }

    /// Parses `sm_90a`, `compute_75`, `lto_90` (any `<prefix>_<digits>[a|f]`); `None` otherwise.
    pub fn parse(name: &str) -> Option<Self> {
        let (_, rest) = name.split_once('_')?;
        let (digits, variant) = match rest.as_bytes().last()? {
            b'a' => (&rest[..rest.len() - 1], ArchVariant::Specific),
            b'f' => (&rest[..rest.len() - 1], ArchVariant::Family),
            _ => (rest, ArchVariant::Plain),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(Self {
            number: digits.parse().ok()?,
            variant,
        })
    }

    /// The SASS name, e.g. `sm_90a`.
    pub fn sm(self) -> String {
        format!("sm_{self}")
    }

    /// The virtual-architecture name, e.g. `compute_90a`.
    pub fn compute(self) -> String {
        format!("compute_{self}")
    }

    /// Whether PTX for this virtual architecture JIT-compiles for a device of arch `device`
    /// (e.g. `90` for a compute capability 9.0 GPU), by the rules in the module docs.
    pub fn ptx_runs_on(self, device: u32) -> bool {
        match self.variant {
            ArchVariant::Plain => self.number <= device,
            ArchVariant::Specific => self.number == device,
            ArchVariant::Family => self.number <= device && self.number / 10 == device / 10,
        }
    }
}

/// The number and suffix without a prefix: `90a`.
impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let suffix = match self.variant {
            ArchVariant::Plain => "",
            ArchVariant::Family => "f",
            ArchVariant::Specific => "a",
        };
        write!(f, "{}{suffix}", self.number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_print_back() {
        for name in ["sm_75", "sm_90a", "compute_100f", "compute_120"] {
            let a = Arch::parse(name).expect(name);
            let printed = if name.starts_with("sm_") {
                a.sm()
            } else {
                a.compute()
            };
            assert_eq!(printed, name);
        }
        assert_eq!(
            Arch::parse("sm_90a"),
            Some(Arch {
                number: 90,
                variant: ArchVariant::Specific
            })
        );
        for bad in ["sm_", "sm_a", "sm90", "sm_9x", "compute_", "sm_99999999999"] {
            assert_eq!(Arch::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn ptx_compatibility_follows_the_suffix() {
        let plain = Arch::plain(75);
        assert!(plain.ptx_runs_on(75) && plain.ptx_runs_on(120));
        assert!(!plain.ptx_runs_on(70));
        let specific = Arch::parse("compute_90a").expect("parses");
        assert!(specific.ptx_runs_on(90));
        assert!(!specific.ptx_runs_on(100) && !specific.ptx_runs_on(89));
        let family = Arch::parse("compute_100f").expect("parses");
        assert!(family.ptx_runs_on(100) && family.ptx_runs_on(103));
        assert!(!family.ptx_runs_on(120) && !family.ptx_runs_on(90));
    }
}
