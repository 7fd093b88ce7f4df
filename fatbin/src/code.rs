//! What a piece of code in a fatbin is: its kind and its version. Kept apart from the image's
//! layout so that the errors and the PTX reader can name them without reading the image.

use std::fmt;

/// What an entry's payload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// PTX text (a virtual architecture, `compute_XX`).
    Ptx,
    /// An ELF cubin: SASS for one `sm_XX`.
    Elf,
    /// NVVM IR for link-time optimisation (`code=lto_XX`), obfuscated.
    Nvvm,
    /// A kind not seen from nvcc 13; its payload is still delimited.
    Other(u16),
}

impl EntryKind {
    pub(crate) fn from_raw(raw: u16) -> Self {
        match raw {
            1 => Self::Ptx,
            2 => Self::Elf,
            8 => Self::Nvvm,
            other => Self::Other(other),
        }
    }
}

impl fmt::Display for EntryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ptx => f.write_str("PTX"),
            Self::Elf => f.write_str("ELF"),
            Self::Nvvm => f.write_str("NVVM IR"),
            Self::Other(k) => write!(f, "kind {k:#x}"),
        }
    }
}

/// A code version: the PTX ISA version for PTX, the cubin ABI version for ELF.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}
