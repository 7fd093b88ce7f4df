//! Decompressing fatbin payloads, bounded by their stated length.
//!
//! nvcc 13 compresses with ZSTD (one frame, its content size stated in the frame header too) or,
//! with `--compress-mode=speed`, LZ4 (one raw block, no frame: the first payload bytes are a
//! block token, not the frame magic `04 22 4D 18`). Both decoders write into a buffer of the
//! entry's stated uncompressed length and fail if the data would overflow it.
//!
//! The stated length is checked before that buffer is made, so a corrupted header cannot ask
//! for more memory than its compressed bytes could expand to: an LZ4 block yields at most 255
//! bytes per input byte (a match's length grows by at most 255 per extension byte, and takes at
//! least 3 bytes of token and offset), and a ZSTD block at most 32768 (a block regenerates at
//! most 128 KiB and takes at least 4 bytes: a 3-byte block header and one RLE byte).

use std::fmt;

/// How an entry's payload is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    /// A ZSTD frame (flag 0x8000).
    Zstd,
    /// An LZ4 block (flag 0x2000).
    Lz4,
}

impl Compression {
    /// The most output bytes one input byte can make (module docs).
    fn max_ratio(self) -> u64 {
        match self {
            Self::Zstd => 32_768,
            Self::Lz4 => 255,
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Zstd => "ZSTD",
            Self::Lz4 => "LZ4",
        })
    }
}

/// Why a payload did not decompress.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecompressProblem {
    #[error(
        "stated uncompressed length {stated} is more than {compressed} compressed bytes can expand to ({max_ratio}x)"
    )]
    Implausible {
        stated: u64,
        compressed: u64,
        max_ratio: u64,
    },
    #[error("the ZSTD frame states {frame} bytes, the entry header {stated}")]
    FrameLength { stated: u64, frame: u64 },
    #[error("corrupt data: {0}")]
    Corrupt(String),
    #[error("decompressed to {actual} bytes, the header states {stated}")]
    Length { stated: u64, actual: u64 },
}

/// Decompresses `data` with `algorithm` into exactly `stated` bytes.
pub(crate) fn decompress(
    algorithm: Compression,
    data: &[u8],
    stated: u64,
) -> Result<Vec<u8>, DecompressProblem> {
    let compressed = data.len() as u64;
    let max_ratio = algorithm.max_ratio();
    let implausible = DecompressProblem::Implausible {
        stated,
        compressed,
        max_ratio,
    };
    if stated > compressed.saturating_mul(max_ratio) {
        return Err(implausible);
    }
    let capacity = usize::try_from(stated).map_err(|_| implausible)?;
    let out = match algorithm {
        Compression::Zstd => {
            if let Ok(Some(frame)) = zstd::zstd_safe::get_frame_content_size(data)
                && frame != stated
            {
                return Err(DecompressProblem::FrameLength { stated, frame });
            }
            zstd::bulk::decompress(data, capacity)
                .map_err(|e| DecompressProblem::Corrupt(e.to_string()))?
        }
        Compression::Lz4 => {
            let mut out = vec![0; capacity];
            let n = lz4_flex::block::decompress_into(data, &mut out)
                .map_err(|e| DecompressProblem::Corrupt(e.to_string()))?;
            out.truncate(n);
            out
        }
    };
    if out.len() as u64 != stated {
        return Err(DecompressProblem::Length {
            stated,
            actual: out.len() as u64,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stated_length_beyond_the_ratio_is_refused_before_decoding() {
        let e = decompress(Compression::Lz4, &[0; 4], 4 * 255 + 1).unwrap_err();
        assert_eq!(
            e,
            DecompressProblem::Implausible {
                stated: 1021,
                compressed: 4,
                max_ratio: 255
            }
        );
        let e = decompress(Compression::Zstd, &[0; 4], u64::MAX).unwrap_err();
        assert!(matches!(e, DecompressProblem::Implausible { .. }), "{e}");
    }

    #[test]
    fn lz4_blocks_decode_to_exactly_the_stated_length() {
        // A literal-only block: token 0x50 (5 literals), then the literals.
        let block = b"\x50hello";
        assert_eq!(decompress(Compression::Lz4, block, 5).unwrap(), b"hello");
        let short = decompress(Compression::Lz4, block, 6).unwrap_err();
        assert_eq!(
            short,
            DecompressProblem::Length {
                stated: 6,
                actual: 5
            }
        );
        assert!(matches!(
            decompress(Compression::Lz4, block, 4),
            Err(DecompressProblem::Corrupt(_))
        ));
    }

    #[test]
    fn zstd_frames_are_checked_against_their_own_content_size() {
        let frame = zstd::bulk::compress(b"hello hello hello", 3).unwrap();
        assert_eq!(
            decompress(Compression::Zstd, &frame, 17).unwrap(),
            b"hello hello hello"
        );
        assert_eq!(
            decompress(Compression::Zstd, &frame, 16).unwrap_err(),
            DecompressProblem::FrameLength {
                stated: 16,
                frame: 17
            }
        );
        assert!(matches!(
            decompress(Compression::Zstd, b"not zstd at all", 10),
            Err(DecompressProblem::Corrupt(_))
        ));
    }
}
