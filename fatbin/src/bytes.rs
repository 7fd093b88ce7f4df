//! Bounds-checked little-endian reads: every length and offset in a fatbin comes from its input.

use crate::error::FatbinError;

/// `len` bytes of `bytes` at `at`, or a `Truncated` error naming `what`.
pub(crate) fn span<'b>(
    bytes: &'b [u8],
    at: usize,
    len: u64,
    what: &'static str,
) -> Result<&'b [u8], FatbinError> {
    usize::try_from(len)
        .ok()
        .and_then(|l| at.checked_add(l))
        .and_then(|end| bytes.get(at..end))
        .ok_or(FatbinError::Truncated {
            what,
            offset: at as u64,
            needed: len,
            available: bytes.len().saturating_sub(at) as u64,
        })
}

/// Little-endian fields of a fixed-length structure, read after checking it is all there.
pub(crate) struct Fields<'b> {
    bytes: &'b [u8],
    what: &'static str,
}

impl<'b> Fields<'b> {
    pub(crate) fn new(
        bytes: &'b [u8],
        at: usize,
        len: usize,
        what: &'static str,
    ) -> Result<Self, FatbinError> {
        Ok(Self {
            bytes: span(bytes, at, len as u64, what)?,
            what,
        })
    }

    fn array<const N: usize>(&self, at: usize) -> Result<[u8; N], FatbinError> {
        let mut out = [0; N];
        out.copy_from_slice(span(self.bytes, at, N as u64, self.what)?);
        Ok(out)
    }

    pub(crate) fn u16(&self, at: usize) -> Result<u16, FatbinError> {
        self.array(at).map(u16::from_le_bytes)
    }

    pub(crate) fn u32(&self, at: usize) -> Result<u32, FatbinError> {
        self.array(at).map(u32::from_le_bytes)
    }

    pub(crate) fn u64(&self, at: usize) -> Result<u64, FatbinError> {
        self.array(at).map(u64::from_le_bytes)
    }
}
