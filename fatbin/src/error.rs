//! The one error type of the crate. Offsets are in bytes from the start of the image (entries)
//! or of the file (sections), so that a report points at the bytes; a wrapping variant's
//! message leaves its cause to the source chain (print with `{:#}`).

use crate::code::EntryKind;
use crate::compress::{Compression, DecompressProblem};
use crate::cubin::CubinProblem;
use crate::ptx::PtxProblem;

#[derive(Debug, thiserror::Error)]
pub enum FatbinError {
    /// A structure or payload runs past the bytes it must lie in.
    #[error("{what} is truncated: {needed} bytes needed at offset {offset}, {available} there")]
    Truncated {
        what: &'static str,
        offset: u64,
        needed: u64,
        available: u64,
    },
    #[error("{what}: magic {found:#010x}, expected {expected:#010x}")]
    BadMagic {
        what: &'static str,
        expected: u32,
        found: u32,
    },
    #[error("{what}: version {version} is not one this parser knows")]
    UnsupportedVersion { what: &'static str, version: u32 },
    #[error(
        "{what} at offset {offset} states a length of {len} bytes, less than its {min} fixed bytes"
    )]
    HeaderTooShort {
        what: &'static str,
        offset: u64,
        len: u64,
        min: u64,
    },
    #[error("{what} states a length of {len} bytes, more than this machine can address")]
    TooLarge { what: &'static str, len: u64 },
    /// The identifier or options an entry header points to are not inside that header.
    #[error(
        "entry at offset {entry}: its {field} ({len} bytes at {offset}) lies outside its {header_len}-byte header"
    )]
    OutsideHeader {
        field: &'static str,
        entry: u64,
        offset: u64,
        len: u64,
        header_len: u64,
    },
    #[error("entry at offset {entry}: flags {flags:#x} set {what}")]
    ConflictingFlags {
        entry: u64,
        flags: u64,
        what: &'static str,
    },
    /// Compressed or uncompressed lengths without a compression flag this parser knows.
    #[error(
        "entry at offset {entry} states compressed lengths but its flags {flags:#x} name no compression this parser knows (LZ4 0x2000, ZSTD 0x8000)"
    )]
    UnknownCompression { entry: u64, flags: u64 },
    #[error("entry at offset {entry}: {algorithm} payload does not decompress")]
    Decompress {
        entry: u64,
        algorithm: Compression,
        #[source]
        problem: DecompressProblem,
    },
    #[error("entry at offset {entry} is {found}, not {expected}")]
    WrongKind {
        entry: u64,
        expected: EntryKind,
        found: EntryKind,
    },
    #[error("PTX of the entry at offset {entry} is not UTF-8 (byte {at})")]
    PtxNotUtf8 { entry: u64, at: u64 },
    #[error("PTX of the entry at offset {entry}")]
    Ptx {
        entry: u64,
        #[source]
        problem: PtxProblem,
    },
    #[error("cubin of the entry at offset {entry}")]
    Cubin {
        entry: u64,
        #[source]
        problem: CubinProblem,
    },
    /// In the image of this index in the list a [`crate::Program`] was built from.
    #[error("image {image}")]
    InImage {
        image: usize,
        #[source]
        source: Box<FatbinError>,
    },
    #[error("not a readable 64-bit ELF file")]
    Elf(#[source] object::read::Error),
    #[error("ELF section {section}, at file offset {offset}")]
    InSection {
        section: &'static str,
        offset: u64,
        #[source]
        source: Box<FatbinError>,
    },
}
