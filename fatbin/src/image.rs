//! The fatbin image: NVIDIA's container of PTX, cubins and LTO IR for several GPU architectures.
//!
//! What nvcc embeds in a program (`.nv_fatbin`), writes with `nvcc -fatbin`, and what
//! `cuModuleLoadData`, `cuModuleLoadFatBinary`, `cuLibraryLoadData` and cudart's
//! `__cudaRegisterFatBinary` (through its wrapper, [`crate::wrapper`]) receive. All integers are
//! little-endian.
//!
//! What is known and how. NVIDIA documents neither this layout nor the magic (only the wrapper
//! and the section names, in `fatbinary_section.h`). The layout below is inferred from nvcc
//! 13.0's output (`fatbinary`'s options varied one at a time) and confirmed by NVIDIA's
//! `cuobjdump` 13.2, which prints each entry's header (`arch`, `code version`, `host`,
//! `compile_size`, `has debug info`, `compressed`, `identifier`, `ptxasOptions`) and extracts
//! each payload (`-xptx`, `-xelf`): the tests (`tests/programs/`) build programs with nvcc and
//! require cuobjdump's lists, printed headers and extracted payloads to equal this module's, for
//! every entry. Seen but of unknown meaning, and not interpreted: the u16 at 0x02, the u64 at
//! 0x30, flag 0x1000000 and the binary options of sm_100+ cubins (kept as bytes). NVVM IR
//! entries were seen by hand only (`code=lto_90`): cuobjdump cannot show them.
//!
//! # Header (16 bytes)
//!
//! | offset | type | field |
//! |--|--|--|
//! | 0x00 | u32 | magic `0xBA55ED50` |
//! | 0x04 | u16 | version, 1 in every image seen |
//! | 0x06 | u16 | header length, 0x10 in every image seen; the entries start there |
//! | 0x08 | u64 | length of the entries after the header |
//!
//! So an image is `header length + entries length` bytes long: [`image_len`] computes it from
//! the first 16 bytes, which is how a caller holding only a pointer (the wrapper's `data`,
//! `cuModuleLoadFatBinary`'s argument) learns how much to read. Images follow each other in an
//! ELF section without padding in every file seen (each length is a multiple of 8).
//!
//! # Entry
//!
//! Entries follow each other to the end of the image: an entry header, then its payload. The
//! header's first 0x40 bytes are fixed; the strings it points to (identifier, options) follow
//! them inside the header, which is why its length varies (0x40..0x80 seen). Offsets in the
//! table are from the entry's start.
//!
//! | offset | type | field |
//! |--|--|--|
//! | 0x00 | u16 | kind: 1 PTX, 2 ELF (cubin), 8 NVVM IR (LTO, `-gencode code=lto_90`; cuobjdump: "nvvm code") |
//! | 0x02 | u16 | 0x0101 in every entry seen; meaning unknown, not read |
//! | 0x04 | u32 | header length; the payload starts there |
//! | 0x08 | u64 | stored payload length: a multiple of 8, zero padding included; the next entry follows |
//! | 0x10 | u32 | compressed length (bytes of the compressed stream at the payload's start); 0 when stored |
//! | 0x14 | u32 | offset of the options descriptor (u32 offset, u32 length of the options bytes); 0: none |
//! | 0x18 | u16 | code version, minor |
//! | 0x1a | u16 | code version, major: the PTX ISA (9.0 for nvcc 13) for PTX, the cubin ABI (1.8) for ELF |
//! | 0x1c | u32 | arch number: 75 for sm_75 / compute_75 |
//! | 0x20 | u32 | offset of the identifier (the source file name, `-G` builds and `fatbinary --ident`); 0: none |
//! | 0x24 | u32 | identifier length, without a terminating NUL |
//! | 0x28 | u64 | flags, below |
//! | 0x30 | u64 | NVVM entries: nonzero with flag 0x10000 (cuobjdump: cannot deobfuscate without the key); 0 otherwise; not read |
//! | 0x38 | u64 | uncompressed length; 0 when stored |
//!
//! The options are ptxas options for PTX (`--compile-only` in `-rdc` objects, cuobjdump's
//! `ptxasOptions`), NVVM options for LTO IR (`nvvmOptions`), and, for cubins of sm_100 and
//! later, a few bytes that are not text (16 and 36 seen) and that cuobjdump does not print (kept
//! as bytes, meaning unknown).
//!
//! Flags ([`EntryFlags`]) and what each was seen with:
//!
//! | bit | meaning | evidence |
//! |--|--|--|
//! | 0x1 | 64-bit code | cuobjdump `compile_size = 64bit`; every nvcc 13 entry |
//! | 0x2 | debug info | nvcc `-G`, `fatbinary -g`; cuobjdump `has debug info` |
//! | 0x10 | host Linux | cuobjdump `host = linux` |
//! | 0x2000 | LZ4-compressed | `--compress-mode=speed`; payload is one LZ4 *block* (no frame) |
//! | 0x8000 | ZSTD-compressed | the default and `--compress-mode=size`/`balance`; payload is a ZSTD frame |
//! | 0x10000 | obfuscated (NVVM IR) | `code=lto_90` entries; cuobjdump cannot show them |
//! | 0x100000 | arch suffix `a` | `sm_90a`, `compute_100a` |
//! | 0x200000 | arch suffix `f` | `compute_100f` |
//! | 0x1000000 | set on every sm_100+ cubin (which has the binary options), on no other entry | meaning unknown |
//!
//! What nvcc 13 compresses: PTX always (unless `--compress-mode=none` / `--no-compress`); cubins
//! only with `-G`, in relocatable (`-rdc`) objects, or with `--compress-mode=size`. A
//! decompressed payload's length equals the stated uncompressed length, which is checked. The
//! payload of a PTX entry is its text followed by a NUL (and, when stored, zero padding).

use std::borrow::Cow;

use crate::arch::{Arch, ArchVariant};
use crate::bytes::{Fields, span};
use crate::code::{EntryKind, Version};
use crate::compress::{self, Compression};
use crate::error::FatbinError;

/// First four bytes of a fatbin image.
pub const FATBIN_MAGIC: u32 = 0xBA55_ED50;
/// The only header version seen (and parsed).
pub const FATBIN_VERSION: u16 = 1;
/// Length of the image header.
pub const HEADER_LEN: usize = 16;
/// Length of an entry header's fixed part.
pub const ENTRY_HEADER_LEN: usize = 0x40;

/// The length of the fatbin image whose first bytes are `header` (at least [`HEADER_LEN`] of
/// them): header length plus entries length, after checking magic and version.
pub fn image_len(header: &[u8]) -> Result<usize, FatbinError> {
    Header::parse(header).map(|h| h.image_len)
}

struct Header {
    header_len: usize,
    image_len: usize,
}

impl Header {
    fn parse(bytes: &[u8]) -> Result<Self, FatbinError> {
        let f = Fields::new(bytes, 0, HEADER_LEN, "fatbin header")?;
        let magic = f.u32(0)?;
        if magic != FATBIN_MAGIC {
            return Err(FatbinError::BadMagic {
                what: "fatbin image",
                expected: FATBIN_MAGIC,
                found: magic,
            });
        }
        let version = f.u16(4)?;
        if version != FATBIN_VERSION {
            return Err(FatbinError::UnsupportedVersion {
                what: "fatbin image",
                version: u32::from(version),
            });
        }
        let header_len = f.u16(6)?;
        let body_len = f.u64(8)?;
        let header_len = usize::from(header_len);
        if header_len < HEADER_LEN {
            return Err(FatbinError::HeaderTooShort {
                what: "fatbin header",
                offset: 0,
                len: header_len as u64,
                min: HEADER_LEN as u64,
            });
        }
        let image_len = usize::try_from(body_len)
            .ok()
            .and_then(|b| b.checked_add(header_len))
            .ok_or(FatbinError::TooLarge {
                what: "fatbin image",
                len: body_len,
            })?;
        Ok(Self {
            header_len,
            image_len,
        })
    }
}

/// A parsed fatbin image: its entries, borrowing their bytes from the input.
#[derive(Clone, Debug)]
pub struct Fatbin<'a> {
    entries: Vec<Entry<'a>>,
    bytes: &'a [u8],
}

impl<'a> Fatbin<'a> {
    /// Parses the image at the start of `bytes`; bytes after its stated length are not read.
    /// Errors when `bytes` is shorter than the image or any entry does not fit its container.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, FatbinError> {
        let header = Header::parse(bytes)?;
        let image = bytes
            .get(..header.image_len)
            .ok_or(FatbinError::Truncated {
                what: "fatbin image",
                offset: 0,
                needed: header.image_len as u64,
                available: bytes.len() as u64,
            })?;
        let mut entries = Vec::new();
        let mut at = header.header_len;
        while at < image.len() {
            let (entry, next) = Entry::parse(image, at)?;
            entries.push(entry);
            at = next;
        }
        Ok(Self {
            entries,
            bytes: image,
        })
    }

    /// The entries in image order.
    pub fn entries(&self) -> &[Entry<'a>] {
        &self.entries
    }

    /// The image's bytes (its stated length).
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

/// An entry's flags word (table in the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EntryFlags(pub u64);

impl EntryFlags {
    pub const BITS_64: u64 = 0x1;
    pub const DEBUG: u64 = 0x2;
    pub const HOST_LINUX: u64 = 0x10;
    pub const LZ4: u64 = 0x2000;
    pub const ZSTD: u64 = 0x8000;
    pub const OBFUSCATED: u64 = 0x1_0000;
    pub const ARCH_SPECIFIC: u64 = 0x10_0000;
    pub const ARCH_FAMILY: u64 = 0x20_0000;

    /// Whether every bit of `mask` is set.
    pub fn has(self, mask: u64) -> bool {
        self.0 & mask == mask
    }
}

/// One entry of a fatbin image.
#[derive(Clone, Debug)]
pub struct Entry<'a> {
    /// Offset of the entry's header in the image.
    pub offset: usize,
    pub kind: EntryKind,
    /// The architecture: SASS `sm_XX` for ELF, virtual `compute_XX` for PTX.
    pub arch: Arch,
    pub code_version: Version,
    pub flags: EntryFlags,
    /// How the payload is compressed; `None`: stored as is.
    pub compression: Option<Compression>,
    /// The stated uncompressed length (0 for stored payloads).
    pub uncompressed_len: u64,
    /// The identifier (source file name) where the header has one.
    pub identifier: Option<&'a [u8]>,
    /// The options bytes (ptxas options for PTX, nvvm options for NVVM IR, binary for sm_100+
    /// cubins) where the header has them.
    pub options: Option<&'a [u8]>,
    /// The payload as stored: the compressed stream, or the code itself with its padding.
    pub stored: &'a [u8],
}

impl<'a> Entry<'a> {
    /// Parses the entry at `at` of `image`; returns it and where the next one starts.
    fn parse(image: &'a [u8], at: usize) -> Result<(Self, usize), FatbinError> {
        let f = Fields::new(image, at, ENTRY_HEADER_LEN, "entry header")?;
        let kind = EntryKind::from_raw(f.u16(0x00)?);
        let header_len = f.u32(0x04)?;
        let stored_len = f.u64(0x08)?;
        let compressed_len = f.u32(0x10)?;
        let options_at = f.u32(0x14)?;
        let code_version = Version {
            minor: u32::from(f.u16(0x18)?),
            major: u32::from(f.u16(0x1a)?),
        };
        let arch_number = f.u32(0x1c)?;
        let identifier_at = f.u32(0x20)?;
        let identifier_len = f.u32(0x24)?;
        let flags = EntryFlags(f.u64(0x28)?);
        let uncompressed_len = f.u64(0x38)?;

        if (header_len as usize) < ENTRY_HEADER_LEN {
            return Err(FatbinError::HeaderTooShort {
                what: "entry header",
                offset: at as u64,
                len: u64::from(header_len),
                min: ENTRY_HEADER_LEN as u64,
            });
        }
        let header = span(image, at, u64::from(header_len), "entry header")?;
        let payload_at = at + header.len();
        let stored = span(image, payload_at, stored_len, "entry payload")?;
        let next = payload_at + stored.len();

        let within_header = |field: &'static str, off: u32, len: u32| {
            span(header, off as usize, u64::from(len), field).map_err(|_| {
                FatbinError::OutsideHeader {
                    field,
                    entry: at as u64,
                    offset: u64::from(off),
                    len: u64::from(len),
                    header_len: u64::from(header_len),
                }
            })
        };
        let identifier = if identifier_at == 0 && identifier_len == 0 {
            None
        } else {
            Some(within_header("identifier", identifier_at, identifier_len)?)
        };
        let options = if options_at == 0 {
            None
        } else {
            let desc = within_header("options descriptor", options_at, 8)?;
            let d = Fields::new(desc, 0, 8, "options descriptor")?;
            Some(within_header("options", d.u32(0)?, d.u32(4)?)?)
        };

        let variant = match (
            flags.has(EntryFlags::ARCH_SPECIFIC),
            flags.has(EntryFlags::ARCH_FAMILY),
        ) {
            (false, false) => ArchVariant::Plain,
            (true, false) => ArchVariant::Specific,
            (false, true) => ArchVariant::Family,
            (true, true) => {
                return Err(FatbinError::ConflictingFlags {
                    entry: at as u64,
                    flags: flags.0,
                    what: "both arch suffixes `a` and `f`",
                });
            }
        };
        let compression = match (flags.has(EntryFlags::LZ4), flags.has(EntryFlags::ZSTD)) {
            (false, false) => None,
            (true, false) => Some(Compression::Lz4),
            (false, true) => Some(Compression::Zstd),
            (true, true) => {
                return Err(FatbinError::ConflictingFlags {
                    entry: at as u64,
                    flags: flags.0,
                    what: "both LZ4 and ZSTD compression",
                });
            }
        };
        let stored = match compression {
            Some(_) => stored
                .get(..compressed_len as usize)
                .ok_or(FatbinError::Truncated {
                    what: "compressed payload",
                    offset: payload_at as u64,
                    needed: u64::from(compressed_len),
                    available: stored.len() as u64,
                })?,
            None if compressed_len != 0 || uncompressed_len != 0 => {
                return Err(FatbinError::UnknownCompression {
                    entry: at as u64,
                    flags: flags.0,
                });
            }
            None => stored,
        };

        let entry = Self {
            offset: at,
            kind,
            arch: Arch {
                number: arch_number,
                variant,
            },
            code_version,
            flags,
            compression,
            uncompressed_len,
            identifier,
            options,
            stored,
        };
        Ok((entry, next))
    }

    /// The payload: decompressed (its length checked against the stated one) or as stored, with
    /// its padding (every stored cubin seen is a multiple of 8 long, so has none).
    pub fn payload(&self) -> Result<Cow<'a, [u8]>, FatbinError> {
        match self.compression {
            None => Ok(Cow::Borrowed(self.stored)),
            Some(algorithm) => compress::decompress(algorithm, self.stored, self.uncompressed_len)
                .map(Cow::Owned)
                .map_err(|problem| FatbinError::Decompress {
                    entry: self.offset as u64,
                    algorithm,
                    problem,
                }),
        }
    }

    /// The PTX text of a PTX entry: the payload up to its first NUL.
    pub fn ptx_text(&self) -> Result<String, FatbinError> {
        if self.kind != EntryKind::Ptx {
            return Err(FatbinError::WrongKind {
                entry: self.offset as u64,
                expected: EntryKind::Ptx,
                found: self.kind,
            });
        }
        let payload = self.payload()?;
        let text = payload.split(|&b| b == 0).next().unwrap_or_default();
        String::from_utf8(text.to_vec()).map_err(|e| FatbinError::PtxNotUtf8 {
            entry: self.offset as u64,
            at: e.utf8_error().valid_up_to() as u64,
        })
    }

    /// The identifier as text (lossy: it is a file name).
    pub fn identifier_text(&self) -> Option<Cow<'a, str>> {
        self.identifier.map(String::from_utf8_lossy)
    }

    /// The options as text (lossy; binary for sm_100+ cubins).
    pub fn options_text(&self) -> Option<Cow<'a, str>> {
        self.options.map(String::from_utf8_lossy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{entry, image, ptx_entry, put};

    const PTX: &str = ".version 9.0\n.target sm_75\n.visible .entry k()\n{\n\tret;\n}\n";

    fn parse_err(bytes: &[u8]) -> FatbinError {
        Fatbin::parse(bytes).expect_err("must not parse")
    }

    #[test]
    fn identifier_options_and_suffix_are_read_from_the_header() {
        // A 0x58-byte header: identifier "dbg" at 0x40, options descriptor at 0x48 pointing at
        // "-O3 -v" at 0x50.
        let mut e = ptx_entry(90, 0x11 | EntryFlags::ARCH_SPECIFIC, "sm_90a", &["k"]);
        e.splice(0x40..0x40, [0u8; 0x18]);
        put(&mut e, 0x04, &0x58u32.to_le_bytes());
        put(&mut e, 0x20, &0x40u32.to_le_bytes());
        put(&mut e, 0x24, &3u32.to_le_bytes());
        put(&mut e, 0x40, b"dbg");
        put(&mut e, 0x14, &0x48u32.to_le_bytes());
        put(&mut e, 0x48, &0x50u32.to_le_bytes());
        put(&mut e, 0x4c, &6u32.to_le_bytes());
        put(&mut e, 0x50, b"-O3 -v");
        let img = image(&[e, entry(2, 90, 0x11, b"\x7fELF")]);
        let fb = Fatbin::parse(&img).unwrap();
        let [ptx, elf] = fb.entries() else {
            panic!("two entries")
        };
        assert_eq!(ptx.identifier_text().as_deref(), Some("dbg"));
        assert_eq!(ptx.options_text().as_deref(), Some("-O3 -v"));
        assert_eq!(
            (ptx.arch.compute(), ptx.code_version.major),
            ("compute_90a".into(), 9)
        );
        assert!(ptx.ptx_text().unwrap().contains(".entry k()"));
        assert_eq!(
            (elf.kind, elf.arch.sm(), elf.offset),
            (EntryKind::Elf, "sm_90".into(), 16 + 0x58 + ptx.stored.len())
        );
        assert_eq!((elf.identifier, elf.options), (None, None));
        assert_eq!(elf.payload().unwrap().as_ref(), b"\x7fELF\0\0\0\0");
        assert!(matches!(
            elf.ptx_text(),
            Err(FatbinError::WrongKind {
                found: EntryKind::Elf,
                ..
            })
        ));
    }

    #[test]
    fn compressed_payloads_decompress_to_their_stated_length() {
        let text = format!("{PTX}\0");
        for (flag, data) in [
            (
                EntryFlags::ZSTD,
                zstd::bulk::compress(text.as_bytes(), 3).unwrap(),
            ),
            (EntryFlags::LZ4, lz4_flex::block::compress(text.as_bytes())),
        ] {
            let mut e = entry(1, 75, 0x11 | flag, &data);
            put(&mut e, 0x10, &(data.len() as u32).to_le_bytes());
            put(&mut e, 0x38, &(text.len() as u64).to_le_bytes());
            let img = image(&[e]);
            let fb = Fatbin::parse(&img).unwrap();
            let ptx = &fb.entries()[0];
            assert_eq!(
                ptx.stored.len(),
                data.len(),
                "the padding is not the stream's"
            );
            assert_eq!(ptx.ptx_text().unwrap(), PTX);
        }
    }

    #[test]
    fn image_len_reads_the_header_alone() {
        let img = image(&[ptx_entry(75, 0x11, "sm_75", &["k"])]);
        assert_eq!(image_len(&img[..HEADER_LEN]).unwrap(), img.len());
        let mut longer = img.clone();
        longer.extend_from_slice(b"next image");
        assert_eq!(Fatbin::parse(&longer).unwrap().bytes(), &img[..]);
        assert!(matches!(
            image_len(&img[..HEADER_LEN - 1]),
            Err(FatbinError::Truncated {
                needed: 16,
                available: 15,
                ..
            })
        ));
    }

    #[test]
    fn malformed_headers_are_named_errors() {
        let good = image(&[ptx_entry(75, 0x11, "sm_75", &["k"])]);
        let with = |at: usize, value: &[u8]| {
            let mut b = good.clone();
            put(&mut b, at, value);
            b
        };
        assert!(matches!(
            parse_err(&with(0, &[0; 4])),
            FatbinError::BadMagic { found: 0, .. }
        ));
        assert!(matches!(
            parse_err(&with(4, &2u16.to_le_bytes())),
            FatbinError::UnsupportedVersion { version: 2, .. }
        ));
        assert!(matches!(
            parse_err(&with(6, &8u16.to_le_bytes())),
            FatbinError::HeaderTooShort { len: 8, .. }
        ));
        assert!(matches!(
            parse_err(&good[..good.len() - 1]),
            FatbinError::Truncated {
                what: "fatbin image",
                ..
            }
        ));
        // Entry fields, at 16 + the field's offset.
        assert!(matches!(
            parse_err(&with(16 + 0x04, &0x20u32.to_le_bytes())),
            FatbinError::HeaderTooShort {
                what: "entry header",
                len: 0x20,
                ..
            }
        ));
        assert!(matches!(
            parse_err(&with(16 + 0x24, &0x41u32.to_le_bytes())),
            FatbinError::OutsideHeader {
                field: "identifier",
                ..
            }
        ));
        assert!(matches!(
            parse_err(&with(16 + 0x14, &0x3cu32.to_le_bytes())),
            FatbinError::OutsideHeader {
                field: "options descriptor",
                ..
            }
        ));
        let both = EntryFlags::ARCH_SPECIFIC | EntryFlags::ARCH_FAMILY;
        assert!(matches!(
            parse_err(&with(16 + 0x28, &both.to_le_bytes())),
            FatbinError::ConflictingFlags { .. }
        ));
        let both = EntryFlags::LZ4 | EntryFlags::ZSTD;
        assert!(matches!(
            parse_err(&with(16 + 0x28, &both.to_le_bytes())),
            FatbinError::ConflictingFlags { .. }
        ));
        assert!(matches!(
            parse_err(&with(16 + 0x10, &4u32.to_le_bytes())),
            FatbinError::UnknownCompression { .. }
        ));
        assert!(matches!(
            parse_err(&with(16 + 0x08, &u64::MAX.to_le_bytes())),
            FatbinError::Truncated {
                what: "entry payload",
                ..
            }
        ));
        // A compressed length beyond the stored payload.
        let mut b = with(16 + 0x28, &(0x11 | EntryFlags::ZSTD).to_le_bytes());
        put(&mut b, 16 + 0x10, &0x1000u32.to_le_bytes());
        assert!(matches!(
            parse_err(&b),
            FatbinError::Truncated {
                what: "compressed payload",
                ..
            }
        ));
        // Text that is not UTF-8.
        let b = with(16 + 0x40, &[0xff]);
        let fb = Fatbin::parse(&b).unwrap();
        assert!(matches!(
            fb.entries()[0].ptx_text(),
            Err(FatbinError::PtxNotUtf8 { at: 0, .. })
        ));
    }
}
