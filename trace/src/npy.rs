//! `.npy` arrays (NumPy format 1.0–3.0) of one plain element type, as launch specs read and write
//! buffers. Only what a kernel buffer needs: a little-endian (or byte-sized) scalar dtype, C
//! order (or one dimension), and the raw element bytes.
//!
//! Hand-written rather than npyz: npyz multiplies the shape without overflow checks (a header
//! such as `'shape': (2**40, 2**40)` panics in a debug build) and trusts the data length, and a
//! spec's input is untrusted. The header is a short Python dict literal; parsing its three keys
//! is less code than guarding a library around it. Every error names the file and byte offset.

use crate::TraceError;
use std::path::Path;

const MAGIC: &[u8; 6] = b"\x93NUMPY";

fn bad(path: &Path, offset: usize, what: impl Into<String>) -> TraceError {
    TraceError::Npy {
        path: path.to_path_buf(),
        offset: offset as u64,
        what: what.into(),
    }
}

/// The header's three keys.
#[derive(Debug, PartialEq)]
struct Header {
    descr: String,
    fortran_order: bool,
    shape: Vec<u64>,
}

/// Checks `bytes` (the whole file `path`) is an array of dtype `descr` (e.g. `<u4`, `|u1`) with
/// elements of `elem_bytes` bytes, and returns its data bytes: exactly shape × `elem_bytes`, no
/// more and no less. `=` (native order) is read as `<`.
pub fn parse_npy<'a>(
    path: &Path,
    bytes: &'a [u8],
    descr: &str,
    elem_bytes: usize,
) -> Result<&'a [u8], TraceError> {
    if bytes.len() < 10 || &bytes[0..6] != MAGIC {
        return Err(bad(path, 0, "not a .npy file (no \\x93NUMPY magic)"));
    }
    let (len_bytes, start) = match bytes[6] {
        1 => (2, 10),
        2 | 3 => (4, 12),
        v => return Err(bad(path, 6, format!("unknown .npy format version {v}"))),
    };
    if bytes.len() < start {
        return Err(bad(path, 8, "file ends inside the header length"));
    }
    let header_len = if len_bytes == 2 {
        u16::from_le_bytes([bytes[8], bytes[9]]) as usize
    } else {
        u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize
    };
    let data_start = start
        .checked_add(header_len)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| {
            bad(
                path,
                8,
                format!(
                    "header length {header_len} runs past the end of the file ({} bytes)",
                    bytes.len()
                ),
            )
        })?;
    let h = parse_header(&bytes[start..data_start])
        .map_err(|(at, what)| bad(path, start + at, what))?;
    let found = h.descr.replace('=', "<");
    if found != descr {
        return Err(bad(
            path,
            start,
            format!("holds dtype {found}, expected {descr} (convert it with numpy's astype)"),
        ));
    }
    if h.fortran_order && h.shape.iter().filter(|&&d| d > 1).count() > 1 {
        return Err(bad(path, start, "Fortran-ordered arrays are not supported"));
    }
    let shape = format!("{:?}", h.shape);
    let needed = h
        .shape
        .iter()
        .try_fold(elem_bytes as u64, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| {
            bad(
                path,
                start,
                format!("shape {shape} overflows a 64-bit size"),
            )
        })?;
    let data = &bytes[data_start..];
    let have = data.len() as u64;
    if have < needed {
        return Err(bad(
            path,
            bytes.len(),
            format!(
                "data ends early: shape {shape} of {descr} needs {needed} bytes, the file has {have}"
            ),
        ));
    }
    if have > needed {
        return Err(bad(
            path,
            data_start + needed as usize,
            format!(
                "{} bytes after the data of shape {shape} (a damaged or mislabelled file)",
                have - needed
            ),
        ));
    }
    Ok(data)
}

/// Reads `path` with [`parse_npy`], returning a copy of its data bytes.
pub fn read_npy(path: &Path, descr: &str, elem_bytes: usize) -> Result<Vec<u8>, TraceError> {
    let bytes = std::fs::read(path).map_err(|e| TraceError::io(path, e))?;
    parse_npy(path, &bytes, descr, elem_bytes).map(<[u8]>::to_vec)
}

/// Writes `data` (little-endian elements of `elem_bytes` bytes) as a 1-D `.npy` of dtype
/// `descr`, atomically.
pub fn write_npy(
    path: &Path,
    descr: &str,
    elem_bytes: usize,
    data: &[u8],
) -> Result<(), TraceError> {
    let n = data.len() / elem_bytes.max(1);
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({n},), }}");
    // Header padded with spaces and a newline to a multiple of 64 bytes (npy format 1.0).
    let unpadded = 10 + dict.len() + 1;
    let padded = unpadded.next_multiple_of(64);
    let mut out = Vec::with_capacity(padded + data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&((padded - 10) as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(padded - 1, b' ');
    out.push(b'\n');
    out.extend_from_slice(data);
    crate::write_bytes_atomic(path, &out)
}

/// A cursor over the header text; errors are (offset within the header, what).
struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
}

type PResult<T> = Result<T, (usize, String)>;

impl Lexer<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.i).copied()
    }

    fn expect(&mut self, c: u8) -> PResult<()> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err((self.i, format!("expected {:?} in the header", c as char)))
        }
    }

    fn string(&mut self) -> PResult<String> {
        let q = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return Err((self.i, "expected a quoted string in the header".into())),
        };
        let start = self.i + 1;
        let len = self.s[start..]
            .iter()
            .position(|&c| c == q)
            .ok_or((self.i, "unterminated string in the header".to_string()))?;
        self.i = start + len + 1;
        String::from_utf8(self.s[start..start + len].to_vec())
            .map_err(|_| (start, "header string is not UTF-8".to_string()))
    }

    fn word(&mut self) -> &[u8] {
        self.skip_ws();
        let start = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
        {
            self.i += 1;
        }
        &self.s[start..self.i]
    }

    fn shape(&mut self) -> PResult<Vec<u64>> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            if self.peek() == Some(b')') {
                self.i += 1;
                return Ok(dims);
            }
            if dims.len() == 32 {
                return Err((self.i, "more than 32 dimensions".into()));
            }
            let at = self.i;
            let w = self.word();
            let w = w.strip_suffix(b"L").unwrap_or(w);
            let d = std::str::from_utf8(w)
                .ok()
                .and_then(|t| t.parse::<u64>().ok())
                .ok_or((at, "shape entry is not a non-negative integer".to_string()))?;
            dims.push(d);
            if self.peek() == Some(b',') {
                self.i += 1;
            } else if self.peek() != Some(b')') {
                return Err((self.i, "expected ',' or ')' in the shape".into()));
            }
        }
    }
}

fn parse_header(text: &[u8]) -> PResult<Header> {
    let mut lx = Lexer { s: text, i: 0 };
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    lx.expect(b'{')?;
    loop {
        if lx.peek() == Some(b'}') {
            break;
        }
        let at = lx.i;
        let key = lx.string()?;
        lx.expect(b':')?;
        match key.as_str() {
            "descr" => {
                if lx.peek() != Some(b'\'') && lx.peek() != Some(b'"') {
                    return Err((lx.i, "structured dtypes are not supported".into()));
                }
                descr = Some(lx.string()?);
            }
            "fortran_order" => {
                let vat = lx.i;
                fortran = Some(match lx.word() {
                    b"True" => true,
                    b"False" => false,
                    _ => return Err((vat, "fortran_order is not True or False".into())),
                });
            }
            "shape" => shape = Some(lx.shape()?),
            other => return Err((at, format!("unexpected header key {other:?}"))),
        }
        match lx.peek() {
            Some(b',') => lx.i += 1,
            Some(b'}') => {}
            _ => return Err((lx.i, "expected ',' or '}' in the header".into())),
        }
    }
    let missing = |k: &str| (0, format!("header has no {k:?} key"));
    Ok(Header {
        descr: descr.ok_or_else(|| missing("descr"))?,
        fortran_order: fortran.ok_or_else(|| missing("fortran_order"))?,
        shape: shape.ok_or_else(|| missing("shape"))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(dir: &Path) -> (std::path::PathBuf, Vec<u8>) {
        let p = dir.join("a.npy");
        let data: Vec<u8> = [1u32, 2, 0xdead_beef]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        write_npy(&p, "<u4", 4, &data).unwrap();
        (p, data)
    }

    #[test]
    fn round_trip_and_npyz_agrees() {
        let dir = tempfile::tempdir().unwrap();
        let (p, data) = sample(dir.path());
        assert_eq!(read_npy(&p, "<u4", 4).unwrap(), data);
        let e = read_npy(&p, "<f4", 4).unwrap_err().to_string();
        assert!(e.contains("<u4") && e.contains("a.npy"), "{e}");
    }

    /// `bytes` with the shape `(3,)` written as `(dims)`, padding spaces taken out so that the
    /// header keeps its length and the data its place.
    fn with_shape(bytes: &[u8], dims: &str) -> Vec<u8> {
        let at = bytes.windows(4).position(|w| w == b"(3,)").unwrap();
        let newline = bytes.iter().position(|&c| c == b'\n').unwrap();
        let grown = dims.len() + 2 - 4;
        let mut out = bytes[..at].to_vec();
        out.extend_from_slice(format!("({dims})").as_bytes());
        out.extend_from_slice(&bytes[at + 4..newline - grown]);
        out.extend_from_slice(&bytes[newline..]);
        out
    }

    #[test]
    fn short_long_and_huge_files_are_errors_naming_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let (p, _) = sample(dir.path());
        let bytes = std::fs::read(&p).unwrap();
        // Data shorter than the header says.
        let e = parse_npy(&p, &bytes[..bytes.len() - 2], "<u4", 4)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("data ends early") && e.contains("needs 12 bytes"),
            "{e}"
        );
        // Four trailing bytes: refused, not read as a shifted array.
        let mut longer = bytes.clone();
        longer.extend_from_slice(&[0; 4]);
        let e = parse_npy(&p, &longer, "<u4", 4).unwrap_err().to_string();
        assert!(
            e.contains("4 bytes after the data") && e.contains(&format!("byte {}", bytes.len())),
            "{e}"
        );
        // A huge length: refused before any allocation.
        let e = parse_npy(&p, &with_shape(&bytes, "99999999999999,"), "<u4", 4)
            .unwrap_err()
            .to_string();
        assert!(e.contains("data ends early"), "{e}");
        let e = parse_npy(&p, &with_shape(&bytes, "4294967296, 4294967296"), "<u4", 4)
            .unwrap_err()
            .to_string();
        assert!(e.contains("overflows"), "{e}");
        // A header length past the end.
        let mut h = bytes.clone();
        h[8] = 0xff;
        h[9] = 0xff;
        assert!(
            parse_npy(&p, &h, "<u4", 4)
                .unwrap_err()
                .to_string()
                .contains("header length")
        );
    }

    #[test]
    fn header_forms_numpy_writes_are_accepted() {
        let h = parse_header(b"{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }   \n")
            .unwrap();
        assert_eq!(h.shape, vec![2, 3]);
        assert_eq!(h.descr, "|u1");
        let h =
            parse_header(b"{\"shape\": (), \"fortran_order\": True, \"descr\": \"<f8\"}").unwrap();
        assert!(h.shape.is_empty() && h.fortran_order);
        assert!(
            parse_header(b"{'descr': [('a', '<u4')], 'fortran_order': False, 'shape': (1,)}")
                .is_err()
        );
        assert!(parse_header(b"{'descr': '<u4', 'shape': (1,)}").is_err());
    }
}
