//! cudart's fatbin wrapper (`__fatBinC_Wrapper_t`): what `__cudaRegisterFatBinary` receives.
//!
//! Defined in CUDA's own `fatbinary_section.h` (shipped with nvcc):
//!
//! ```c
//! #define FATBINC_MAGIC   0x466243B1
//! #define FATBINC_VERSION 1
//! #define FATBINC_LINK_VERSION 2
//! typedef struct {
//!   int magic;
//!   int version;
//!   const unsigned long long* data;
//!   void *filename_or_fatbins;  /* version 1: offline filename,
//!                                * version 2: array of prelinked fatbins */
//! } __fatBinC_Wrapper_t;
//! ```
//!
//! On a 64-bit host that is 24 bytes: u32 magic, u32 version, u64 `data` (the address of the
//! fatbin image, [`crate::image`]), u64 `filename_or_fatbins`. nvcc places one wrapper per image
//! in the ELF section `.nvFatBinSegment` (seen in nvcc 13's output, checked by the tests): a
//! translation unit's is version 1, its `data` pointing into `.nv_fatbin`, or into
//! `__nv_relfatbin` for an `-rdc` unit, and its `filename_or_fatbins` 0. Every linked program and
//! shared library also has one version-2 wrapper, for the device-link step's image (first in
//! `.nv_fatbin`), whose `filename_or_fatbins` is the address of `__cudaPrelinkedFatbins`, an
//! array in `.bss` that cudart fills at run time.
//!
//! The wrapper does not state the image's length: read the image's 16-byte header at `data`
//! and pass it to [`crate::image_len`].

use crate::bytes::Fields;
use crate::error::FatbinError;

/// `FATBINC_MAGIC`.
pub const WRAPPER_MAGIC: u32 = 0x4662_43B1;
/// Length of the wrapper on a 64-bit host.
pub const WRAPPER_LEN: usize = 24;

/// Which wrapper it is (its `version`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WrapperVersion {
    /// `FATBINC_VERSION` (1): one translation unit's image.
    Single,
    /// `FATBINC_LINK_VERSION` (2): a device-linked image and the prelinked images it came from.
    Linked,
}

/// A parsed `__fatBinC_Wrapper_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Wrapper {
    pub version: WrapperVersion,
    /// Address of the fatbin image.
    pub data: u64,
    /// Version 1: address of an offline file name (0 from nvcc 13); version 2: address of the
    /// array of prelinked fatbins.
    pub filename_or_fatbins: u64,
}

impl Wrapper {
    /// Parses the first [`WRAPPER_LEN`] bytes of `bytes` (little-endian, 64-bit host).
    pub fn parse(bytes: &[u8]) -> Result<Self, FatbinError> {
        let f = Fields::new(bytes, 0, WRAPPER_LEN, "fatbin wrapper")?;
        let (magic, version) = (f.u32(0)?, f.u32(4)?);
        let (data, filename_or_fatbins) = (f.u64(8)?, f.u64(16)?);
        if magic != WRAPPER_MAGIC {
            return Err(FatbinError::BadMagic {
                what: "fatbin wrapper",
                expected: WRAPPER_MAGIC,
                found: magic,
            });
        }
        let version = match version {
            1 => WrapperVersion::Single,
            2 => WrapperVersion::Linked,
            other => {
                return Err(FatbinError::UnsupportedVersion {
                    what: "fatbin wrapper",
                    version: other,
                });
            }
        };
        Ok(Self {
            version,
            data,
            filename_or_fatbins,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrapper(magic: u32, version: u32, data: u64, aux: u64) -> Vec<u8> {
        [
            &magic.to_le_bytes()[..],
            &version.to_le_bytes(),
            &data.to_le_bytes(),
            &aux.to_le_bytes(),
        ]
        .concat()
    }

    #[test]
    fn both_versions_parse_and_anything_else_is_refused() {
        let w = Wrapper::parse(&wrapper(WRAPPER_MAGIC, 2, 0x8_fa40, 0xa_a5b0)).unwrap();
        assert_eq!(
            w,
            Wrapper {
                version: WrapperVersion::Linked,
                data: 0x8_fa40,
                filename_or_fatbins: 0xa_a5b0
            }
        );
        let w = Wrapper::parse(&wrapper(WRAPPER_MAGIC, 1, 1 << 40, 0)).unwrap();
        assert_eq!((w.version, w.data), (WrapperVersion::Single, 1 << 40));
        assert!(matches!(
            Wrapper::parse(&wrapper(0xBA55_ED50, 1, 0, 0)),
            Err(FatbinError::BadMagic {
                found: 0xBA55_ED50,
                ..
            })
        ));
        assert!(matches!(
            Wrapper::parse(&wrapper(WRAPPER_MAGIC, 3, 0, 0)),
            Err(FatbinError::UnsupportedVersion { version: 3, .. })
        ));
        assert!(matches!(
            Wrapper::parse(&wrapper(WRAPPER_MAGIC, 1, 0, 0)[..23]),
            Err(FatbinError::Truncated {
                needed: 24,
                available: 23,
                ..
            })
        ));
    }
}
