//! The on-disk trace store, `trace.wst`: one launch's warps and records, written as the log buffer
//! is decoded and read back in a streaming fashion, so that exporters and the analysis handle 10⁸
//! records without holding them in memory, and can open one warp at a time (random access) for a
//! time-ordered merge across warps.
//!
//! # Layout (all numbers little-endian)
//! ```text
//! offset 0   : magic "WSTRACE\0" (8 bytes), u32 version = 1, u32 reserved = 0
//! offset 16  : u64 n = length of the launch JSON, then n bytes of JSON (a LaunchInfo)
//! then, once per warp, in the order written:
//!   warp header, 56 bytes: u32 block.x, block.y, block.z, warp, global_warp, sm, hw_warp,
//!                          dropped; u64 begin, end; u32 n_records, n_summaries
//!   n_records × 24 bytes : u16 site, u16 0, u32 seq, u64 start, u64 end
//!   n_summaries × 40 bytes: u16 site, u16 0, u32 0, u64 count, sum, min, max
//! footer:
//!   n_warps × u64: byte offset of each warp header (the index)
//!   u64 n_warps, u64 total_records, u64 offset of the index, magic "WSTREND\0"
//! ```
//! The file is written under a temporary name and renamed by [`TraceWriter::finish`], so a
//! crashed run never leaves a `trace.wst` that looks complete. A file without its footer is
//! reported as truncated.

use crate::atomic::temp_path;
use crate::error::TraceError;
use crate::model::{LaunchInfo, Record, SiteSummary, WarpTrace};
use crate::units::{Cycles, SmId};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The file name of a run's trace inside its run folder.
pub const TRACE_FILE_NAME: &str = "trace.wst";

const MAGIC: &[u8; 8] = b"WSTRACE\0";
const END_MAGIC: &[u8; 8] = b"WSTREND\0";
const VERSION: u32 = 1;
const WARP_HEADER_BYTES: usize = 56;
const RECORD_BYTES: usize = 24;
const SUMMARY_BYTES: usize = 40;
const FOOTER_BYTES: u64 = 32;

/// Streams warps into a trace file. Call [`TraceWriter::finish`] to make the file appear.
pub struct TraceWriter {
    path: PathBuf,
    tmp: PathBuf,
    out: BufWriter<File>,
    offset: u64,
    index: Vec<u64>,
    total_records: u64,
}

impl TraceWriter {
    /// Starts `path` (written as a temp file beside it until `finish`).
    pub fn create(path: &Path, launch: &LaunchInfo) -> Result<Self, TraceError> {
        let tmp = temp_path(path);
        let file = File::create(&tmp).map_err(|e| TraceError::io(&tmp, e))?;
        let json = serde_json::to_vec(launch).map_err(|source| TraceError::Json {
            path: path.to_path_buf(),
            source,
        })?;
        let mut w = TraceWriter {
            path: path.to_path_buf(),
            tmp,
            out: BufWriter::with_capacity(1 << 16, file),
            offset: 0,
            index: Vec::new(),
            total_records: 0,
        };
        let mut head = Vec::with_capacity(24 + json.len());
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&VERSION.to_le_bytes());
        head.extend_from_slice(&0u32.to_le_bytes());
        head.extend_from_slice(&(json.len() as u64).to_le_bytes());
        head.extend_from_slice(&json);
        w.put(&head)?;
        Ok(w)
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), TraceError> {
        self.out
            .write_all(bytes)
            .map_err(|e| TraceError::io(&self.tmp, e))?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Appends one warp with its records and summaries.
    pub fn write_warp(&mut self, w: &WarpTrace) -> Result<(), TraceError> {
        self.index.push(self.offset);
        let mut h = [0u8; WARP_HEADER_BYTES];
        let words = [
            w.block[0],
            w.block[1],
            w.block[2],
            w.warp,
            w.global_warp,
            w.sm.0,
            w.hw_warp,
            w.dropped,
        ];
        for (i, v) in words.iter().enumerate() {
            h[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        h[32..40].copy_from_slice(&w.begin.0.to_le_bytes());
        h[40..48].copy_from_slice(&w.end.0.to_le_bytes());
        h[48..52].copy_from_slice(&(w.records.len() as u32).to_le_bytes());
        h[52..56].copy_from_slice(&(w.summaries.len() as u32).to_le_bytes());
        self.put(&h)?;
        let mut buf = Vec::with_capacity(w.records.len() * RECORD_BYTES);
        for r in &w.records {
            buf.extend_from_slice(&r.site.to_le_bytes());
            buf.extend_from_slice(&0u16.to_le_bytes());
            buf.extend_from_slice(&r.seq.to_le_bytes());
            buf.extend_from_slice(&r.start.0.to_le_bytes());
            buf.extend_from_slice(&r.end.0.to_le_bytes());
        }
        for s in &w.summaries {
            buf.extend_from_slice(&s.site.to_le_bytes());
            buf.extend_from_slice(&[0u8; 6]);
            for v in [s.count, s.sum.0, s.min.0, s.max.0] {
                buf.extend_from_slice(&v.to_le_bytes());
            }
        }
        self.put(&buf)?;
        self.total_records += w.records.len() as u64;
        Ok(())
    }

    /// Writes the index and footer, flushes, and renames the file to its final name.
    pub fn finish(mut self) -> Result<(), TraceError> {
        let index_offset = self.offset;
        let mut foot = Vec::with_capacity(self.index.len() * 8 + FOOTER_BYTES as usize);
        for off in &self.index {
            foot.extend_from_slice(&off.to_le_bytes());
        }
        foot.extend_from_slice(&(self.index.len() as u64).to_le_bytes());
        foot.extend_from_slice(&self.total_records.to_le_bytes());
        foot.extend_from_slice(&index_offset.to_le_bytes());
        foot.extend_from_slice(END_MAGIC);
        self.put(&foot)?;
        let file = self
            .out
            .into_inner()
            .map_err(|e| TraceError::io(&self.tmp, e.into_error()))?;
        file.sync_all().map_err(|e| TraceError::io(&self.tmp, e))?;
        std::fs::rename(&self.tmp, &self.path).map_err(|e| TraceError::io(&self.path, e))
    }

    /// Writes a whole in-memory trace to `path`.
    pub fn write_all(path: &Path, trace: &crate::Trace) -> Result<(), TraceError> {
        let mut w = TraceWriter::create(path, &trace.launch)?;
        for warp in &trace.warps {
            w.write_warp(warp)?;
        }
        w.finish()
    }
}

/// Reads a trace file: the launch, the warp index, and warps one at a time.
pub struct TraceReader {
    path: PathBuf,
    launch: LaunchInfo,
    index: Vec<u64>,
    total_records: u64,
    index_offset: u64,
}

impl TraceReader {
    /// Opens `path` and reads its header and index (8 bytes per warp).
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        let mut f = File::open(path).map_err(|e| TraceError::io(path, e))?;
        let len = f.metadata().map_err(|e| TraceError::io(path, e))?.len();
        let corrupt = |offset: u64, what: &str| TraceError::Corrupt {
            path: path.to_path_buf(),
            offset,
            what: what.to_string(),
        };
        let mut head = [0u8; 24];
        f.read_exact(&mut head)
            .map_err(|_| corrupt(0, "file shorter than the 24-byte header"))?;
        if &head[0..8] != MAGIC {
            let mut found = [0u8; 8];
            found.copy_from_slice(&head[0..8]);
            return Err(TraceError::BadMagic {
                path: path.to_path_buf(),
                found,
            });
        }
        let version = u32::from_le_bytes(head[8..12].try_into().unwrap_or_default());
        if version != VERSION {
            return Err(TraceError::Version {
                path: path.to_path_buf(),
                found: version,
                supported: VERSION,
            });
        }
        let json_len = le_u64(&head[16..24]);
        if len < 24 + json_len + FOOTER_BYTES {
            return Err(corrupt(
                len,
                "truncated: no footer (the run was interrupted?)",
            ));
        }
        let mut json = vec![0u8; json_len as usize];
        f.read_exact(&mut json)
            .map_err(|e| TraceError::io(path, e))?;
        let launch: LaunchInfo =
            serde_json::from_slice(&json).map_err(|source| TraceError::Json {
                path: path.to_path_buf(),
                source,
            })?;
        let mut foot = [0u8; FOOTER_BYTES as usize];
        f.seek(SeekFrom::Start(len - FOOTER_BYTES))
            .and_then(|_| f.read_exact(&mut foot))
            .map_err(|e| TraceError::io(path, e))?;
        if &foot[24..32] != END_MAGIC {
            return Err(corrupt(
                len - FOOTER_BYTES,
                "truncated: no footer (the run was interrupted?)",
            ));
        }
        let n_warps = le_u64(&foot[0..8]);
        let total_records = le_u64(&foot[8..16]);
        let index_offset = le_u64(&foot[16..24]);
        if index_offset.checked_add(n_warps.saturating_mul(8)) != Some(len - FOOTER_BYTES) {
            return Err(corrupt(index_offset, "warp index does not fit the file"));
        }
        let mut raw = vec![0u8; (n_warps * 8) as usize];
        f.seek(SeekFrom::Start(index_offset))
            .and_then(|_| f.read_exact(&mut raw))
            .map_err(|e| TraceError::io(path, e))?;
        let index: Vec<u64> = raw.chunks_exact(8).map(le_u64).collect();
        if let Some(bad) = index
            .iter()
            .find(|&&o| o + WARP_HEADER_BYTES as u64 > index_offset)
        {
            return Err(corrupt(*bad, "warp offset points past the data"));
        }
        Ok(TraceReader {
            path: path.to_path_buf(),
            launch,
            index,
            total_records,
            index_offset,
        })
    }

    pub fn launch(&self) -> &LaunchInfo {
        &self.launch
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn warp_count(&self) -> usize {
        self.index.len()
    }

    pub fn record_count(&self) -> u64 {
        self.total_records
    }

    /// Iterates over all warps in file order, one warp in memory at a time.
    pub fn warps(&self) -> Result<WarpIter, TraceError> {
        let mut f = File::open(&self.path).map_err(|e| TraceError::io(&self.path, e))?;
        let start = self.index.first().copied().unwrap_or(self.index_offset);
        f.seek(SeekFrom::Start(start))
            .map_err(|e| TraceError::io(&self.path, e))?;
        Ok(WarpIter {
            path: self.path.clone(),
            input: BufReader::with_capacity(1 << 16, f),
            pos: start,
            end: self.index_offset,
        })
    }

    /// Reads warp number `i` (in file order) with all its records.
    pub fn read_warp(&self, i: usize) -> Result<WarpTrace, TraceError> {
        let mut c = self.cursor(i, 4096)?;
        let mut w = c.header.clone();
        while let Some(r) = c.next_record()? {
            w.records.push(r);
        }
        w.summaries = c.summaries()?;
        Ok(w)
    }

    /// A cursor over warp `i`'s records with a read buffer of `buffer_bytes`, for merging many
    /// warps in time order with bounded memory.
    pub fn cursor(&self, i: usize, buffer_bytes: usize) -> Result<RecordCursor, TraceError> {
        let off = *self.index.get(i).ok_or_else(|| TraceError::Corrupt {
            path: self.path.clone(),
            offset: 0,
            what: format!("warp {i} out of range (trace has {})", self.index.len()),
        })?;
        let mut f = File::open(&self.path).map_err(|e| TraceError::io(&self.path, e))?;
        f.seek(SeekFrom::Start(off))
            .map_err(|e| TraceError::io(&self.path, e))?;
        let mut input = BufReader::with_capacity(buffer_bytes.max(64), f);
        let (header, n_rec, n_sum) = read_warp_header(&mut input, &self.path, off)?;
        Ok(RecordCursor {
            path: self.path.clone(),
            input,
            header,
            remaining: n_rec,
            summaries: n_sum,
            pos: off + WARP_HEADER_BYTES as u64,
        })
    }
}

/// Streams one warp's records (see [`TraceReader::cursor`]).
pub struct RecordCursor {
    path: PathBuf,
    input: BufReader<File>,
    /// The warp's header fields; `records` and `summaries` are empty here.
    pub header: WarpTrace,
    remaining: u32,
    summaries: u32,
    pos: u64,
}

impl RecordCursor {
    /// Records not yet read.
    pub fn remaining(&self) -> u32 {
        self.remaining
    }

    pub fn next_record(&mut self) -> Result<Option<Record>, TraceError> {
        if self.remaining == 0 {
            return Ok(None);
        }
        let mut b = [0u8; RECORD_BYTES];
        self.input
            .read_exact(&mut b)
            .map_err(|_| truncated(&self.path, self.pos))?;
        self.pos += RECORD_BYTES as u64;
        self.remaining -= 1;
        Ok(Some(decode_record(&b)))
    }

    /// Reads the summaries after the records (skipping records not yet read).
    pub fn summaries(&mut self) -> Result<Vec<SiteSummary>, TraceError> {
        while self.next_record()?.is_some() {}
        let mut out = Vec::with_capacity(self.summaries as usize);
        for _ in 0..self.summaries {
            let mut b = [0u8; SUMMARY_BYTES];
            self.input
                .read_exact(&mut b)
                .map_err(|_| truncated(&self.path, self.pos))?;
            self.pos += SUMMARY_BYTES as u64;
            out.push(decode_summary(&b));
        }
        self.summaries = 0;
        Ok(out)
    }
}

/// Iterates warps in file order (see [`TraceReader::warps`]).
pub struct WarpIter {
    path: PathBuf,
    input: BufReader<File>,
    pos: u64,
    end: u64,
}

impl Iterator for WarpIter {
    type Item = Result<WarpTrace, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.end {
            return None;
        }
        Some(self.read_one())
    }
}

impl WarpIter {
    fn read_one(&mut self) -> Result<WarpTrace, TraceError> {
        let (mut w, n_rec, n_sum) = read_warp_header(&mut self.input, &self.path, self.pos)?;
        self.pos += WARP_HEADER_BYTES as u64;
        let mut body = vec![0u8; n_rec as usize * RECORD_BYTES + n_sum as usize * SUMMARY_BYTES];
        self.input
            .read_exact(&mut body)
            .map_err(|_| truncated(&self.path, self.pos))?;
        self.pos += body.len() as u64;
        let (recs, sums) = body.split_at(n_rec as usize * RECORD_BYTES);
        w.records = recs.chunks_exact(RECORD_BYTES).map(decode_record).collect();
        w.summaries = sums
            .chunks_exact(SUMMARY_BYTES)
            .map(decode_summary)
            .collect();
        if self.pos > self.end {
            self.pos = self.end;
            return Err(truncated(&self.path, self.pos));
        }
        Ok(w)
    }
}

fn truncated(path: &Path, offset: u64) -> TraceError {
    TraceError::Corrupt {
        path: path.to_path_buf(),
        offset,
        what: "record data ends early".into(),
    }
}

fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

fn le_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

fn read_warp_header(
    input: &mut impl Read,
    path: &Path,
    offset: u64,
) -> Result<(WarpTrace, u32, u32), TraceError> {
    let mut h = [0u8; WARP_HEADER_BYTES];
    input
        .read_exact(&mut h)
        .map_err(|_| truncated(path, offset))?;
    let word = |i: usize| le_u32(&h[i * 4..]);
    let mut w = WarpTrace::new([word(0), word(1), word(2)], word(3), word(4), SmId(word(5)));
    w.hw_warp = word(6);
    w.dropped = word(7);
    w.begin = Cycles(le_u64(&h[32..]));
    w.end = Cycles(le_u64(&h[40..]));
    Ok((w, le_u32(&h[48..]), le_u32(&h[52..])))
}

fn decode_record(b: &[u8]) -> Record {
    Record {
        site: u16::from_le_bytes([b[0], b[1]]),
        seq: le_u32(&b[4..]),
        start: Cycles(le_u64(&b[8..])),
        end: Cycles(le_u64(&b[16..])),
    }
}

fn decode_summary(b: &[u8]) -> SiteSummary {
    SiteSummary {
        site: u16::from_le_bytes([b[0], b[1]]),
        count: le_u64(&b[8..]),
        sum: Cycles(le_u64(&b[16..])),
        min: Cycles(le_u64(&b[24..])),
        max: Cycles(le_u64(&b[32..])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dim3, ProbeMode, RecordKind, Trace};
    use proptest::prelude::*;

    type WarpSpec = (u32, Vec<(u16, u64, u64)>);

    fn sample(warps: &[WarpSpec]) -> Trace {
        let launch = LaunchInfo::new("k", Dim3::new(4, 1, 1), Dim3::new(64, 1, 1))
            .with_probe(ProbeMode::Fence, RecordKind::Trace);
        let warps = warps
            .iter()
            .enumerate()
            .map(|(i, (dropped, recs))| {
                let mut w = WarpTrace::new(
                    [i as u32 / 2, 0, 0],
                    i as u32 % 2,
                    i as u32,
                    SmId(i as u32 % 3),
                );
                w.dropped = *dropped;
                w.begin = Cycles(i as u64);
                w.end = Cycles(1_000_000 + i as u64);
                w.records = recs
                    .iter()
                    .enumerate()
                    .map(|(k, &(site, start, dur))| Record {
                        site,
                        seq: k as u32,
                        start: Cycles(start),
                        end: Cycles(start + dur),
                    })
                    .collect();
                if i == 0 {
                    w.summaries.push(SiteSummary {
                        site: 1,
                        count: 3,
                        sum: Cycles(30),
                        min: Cycles(5),
                        max: Cycles(20),
                    });
                }
                w
            })
            .collect();
        Trace { launch, warps }
    }

    proptest! {
        #[test]
        fn round_trip_preserves_everything(
            warps in proptest::collection::vec(
                (0u32..5, proptest::collection::vec((0u16..4, 0u64..1 << 40, 0u64..10_000), 0..20)),
                0..12)
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(TRACE_FILE_NAME);
            let t = sample(&warps);
            TraceWriter::write_all(&path, &t).unwrap();
            let r = TraceReader::open(&path).unwrap();
            prop_assert_eq!(r.launch(), &t.launch);
            prop_assert_eq!(r.record_count(), t.record_count());
            let back: Vec<WarpTrace> = r.warps().unwrap().collect::<Result<_, _>>().unwrap();
            prop_assert_eq!(&back, &t.warps);
            for (i, w) in t.warps.iter().enumerate() {
                prop_assert_eq!(&r.read_warp(i).unwrap(), w);
            }
        }
    }

    #[test]
    fn truncated_file_is_reported_not_misread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TRACE_FILE_NAME);
        TraceWriter::write_all(&path, &sample(&[(0, vec![(0, 5, 5); 10])])).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        for cut in [3, 30, bytes.len() - 1, bytes.len() - 40] {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let e = TraceReader::open(&path)
                .err()
                .expect("must fail")
                .to_string();
            assert!(e.contains("trace.wst"), "{e}");
        }
        std::fs::write(&path, b"not a trace at all, not at all, not at all").unwrap();
        assert!(matches!(
            TraceReader::open(&path),
            Err(TraceError::BadMagic { .. })
        ));
    }

    #[test]
    fn unfinished_writer_leaves_no_final_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TRACE_FILE_NAME);
        let t = sample(&[(0, vec![(0, 1, 2)])]);
        let mut w = TraceWriter::create(&path, &t.launch).unwrap();
        w.write_warp(&t.warps[0]).unwrap();
        drop(w);
        assert!(!path.exists());
    }

    #[test]
    fn cursor_streams_one_warp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TRACE_FILE_NAME);
        let t = sample(&[(1, vec![(0, 1, 2), (1, 7, 3)]), (0, vec![(2, 9, 9)])]);
        TraceWriter::write_all(&path, &t).unwrap();
        let r = TraceReader::open(&path).unwrap();
        let mut c = r.cursor(1, 64).unwrap();
        assert_eq!(c.header.global_warp, 1);
        assert_eq!(c.remaining(), 1);
        assert_eq!(c.next_record().unwrap().unwrap().start, Cycles(9));
        assert!(c.next_record().unwrap().is_none());
        assert!(r.cursor(2, 64).is_err());
    }
}
