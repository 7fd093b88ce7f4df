//! The on-disk trace store, `trace.wst`: one launch's warps and records, written as the log buffer
//! is decoded and read back in a streaming fashion, so that exporters and the analysis handle 10⁸
//! records without holding them in memory, and can open one warp at a time (random access) for a
//! time-ordered merge across warps.
//!
//! # Layout, format 2 (all numbers little-endian)
//! ```text
//! offset 0   : magic "WSTRACE\0" (8 bytes), u32 version = 2, u32 reserved = 0
//! offset 16  : u64 n = length of the launch JSON (at most 16 MiB), n bytes of JSON (a LaunchInfo),
//!              u64 checksum of bytes 0 .. 24 + n
//! then, once per warp, in the order written (a "warp block"):
//!   warp header, 56 bytes: u32 block.x, block.y, block.z, warp, global_warp, sm, hw_warp,
//!                          dropped; u64 begin, end; u32 n_records, n_summaries
//!   n_records × 24 bytes : u16 site, u16 0, u32 seq, u64 start, u64 end
//!   n_summaries × 40 bytes: u16 site, u16 0, u32 0, u64 count, sum, min, max
//!   u64 checksum of the warp block's bytes before it
//! footer:
//!   n_warps × u64: byte offset of each warp header (the index)
//!   u64 n_warps, u64 total_records, u64 offset of the index,
//!   u64 checksum of the index and these three numbers, magic "WSTREND\0"
//! ```
//! Checksums are XXH3-64 (`xxhash-rust`). Format 1 had no checksums; it is refused with a message
//! asking for the launch to be re-run.
//!
//! [`TraceReader::open`] trusts nothing: it checks every length against the file size before
//! allocating, walks the warp headers to check that the index points at each warp block in turn
//! and that the blocks tile the data exactly, and that the footer's record total is the sum of the
//! warps'. Reading a warp checks its checksum and that every record's site is one the launch
//! declared (when it declares any). Every failure is a [`TraceError`] naming the file and offset.
//!
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
use xxhash_rust::xxh3::{Xxh3, xxh3_64};

/// The file name of a run's trace inside its run folder.
pub const TRACE_FILE_NAME: &str = "trace.wst";

const MAGIC: &[u8; 8] = b"WSTRACE\0";
const END_MAGIC: &[u8; 8] = b"WSTREND\0";
/// The format this build writes and reads.
pub const TRACE_FORMAT_VERSION: u32 = 2;
const HEAD_BYTES: u64 = 24;
const CHECKSUM_BYTES: u64 = 8;
const WARP_HEADER_BYTES: usize = 56;
const RECORD_BYTES: usize = 24;
const SUMMARY_BYTES: usize = 40;
/// n_warps, total_records, index offset, checksum, end magic.
const FOOTER_BYTES: u64 = 40;
/// A launch description is a few KiB; a larger length field is corruption, refused before
/// allocating.
const MAX_JSON_BYTES: u64 = 16 << 20;

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
        crate::atomic::check_output(path)?;
        let tmp = temp_path(path);
        let json = serde_json::to_vec(launch).map_err(|source| TraceError::Json {
            path: path.to_path_buf(),
            source,
        })?;
        let file = File::create(&tmp).map_err(|e| TraceError::io(&tmp, e))?;
        let mut w = TraceWriter {
            path: path.to_path_buf(),
            tmp,
            out: BufWriter::with_capacity(1 << 16, file),
            offset: 0,
            index: Vec::new(),
            total_records: 0,
        };
        let mut head = Vec::with_capacity(32 + json.len());
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&TRACE_FORMAT_VERSION.to_le_bytes());
        head.extend_from_slice(&0u32.to_le_bytes());
        head.extend_from_slice(&(json.len() as u64).to_le_bytes());
        head.extend_from_slice(&json);
        let sum = xxh3_64(&head);
        head.extend_from_slice(&sum.to_le_bytes());
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
        let too_many = |what: &str, n: usize| TraceError::Corrupt {
            path: self.path.clone(),
            offset: self.offset,
            what: format!(
                "warp {} has {n} {what}, more than a u32 counts",
                w.global_warp
            ),
        };
        let n_rec =
            u32::try_from(w.records.len()).map_err(|_| too_many("records", w.records.len()))?;
        let n_sum = u32::try_from(w.summaries.len())
            .map_err(|_| too_many("summaries", w.summaries.len()))?;
        self.index.push(self.offset);
        let mut buf = Vec::with_capacity(
            WARP_HEADER_BYTES
                + w.records.len() * RECORD_BYTES
                + w.summaries.len() * SUMMARY_BYTES
                + CHECKSUM_BYTES as usize,
        );
        for v in [
            w.block[0],
            w.block[1],
            w.block[2],
            w.warp,
            w.global_warp,
            w.sm.0,
            w.hw_warp,
            w.dropped,
        ] {
            buf.extend_from_slice(&v.to_le_bytes());
        }
        buf.extend_from_slice(&w.begin.0.to_le_bytes());
        buf.extend_from_slice(&w.end.0.to_le_bytes());
        buf.extend_from_slice(&n_rec.to_le_bytes());
        buf.extend_from_slice(&n_sum.to_le_bytes());
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
        let sum = xxh3_64(&buf);
        buf.extend_from_slice(&sum.to_le_bytes());
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
        let sum = xxh3_64(&foot);
        foot.extend_from_slice(&sum.to_le_bytes());
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

/// The site ids a launch declared, for checking records as they are read. `None` when the launch
/// declares no sites (a producer that does not name them); then any id is accepted.
#[derive(Clone)]
struct SiteSet(Option<Vec<u16>>);

impl SiteSet {
    fn of(launch: &LaunchInfo) -> Self {
        if launch.sites.is_empty() {
            return SiteSet(None);
        }
        let mut ids: Vec<u16> = launch.sites.iter().map(|s| s.id).collect();
        ids.sort_unstable();
        ids.dedup();
        SiteSet(Some(ids))
    }

    fn check(&self, site: u16, path: &Path, offset: u64) -> Result<(), TraceError> {
        match &self.0 {
            Some(ids) if ids.binary_search(&site).is_err() => Err(TraceError::Corrupt {
                path: path.to_path_buf(),
                offset,
                what: format!(
                    "site {site} is not one the launch declared ({} sites)",
                    ids.len()
                ),
            }),
            _ => Ok(()),
        }
    }
}

/// Reads a trace file: the launch, the warp index, and warps one at a time.
pub struct TraceReader {
    path: PathBuf,
    launch: LaunchInfo,
    sites: SiteSet,
    index: Vec<u64>,
    total_records: u64,
    index_offset: u64,
}

fn corrupt(path: &Path, offset: u64, what: impl Into<String>) -> TraceError {
    TraceError::Corrupt {
        path: path.to_path_buf(),
        offset,
        what: what.into(),
    }
}

/// Bytes of a warp block with these counts (header, records, summaries, checksum); u64 so that
/// no count read from a file can overflow it.
fn block_bytes(n_rec: u32, n_sum: u32) -> u64 {
    WARP_HEADER_BYTES as u64
        + u64::from(n_rec) * RECORD_BYTES as u64
        + u64::from(n_sum) * SUMMARY_BYTES as u64
        + CHECKSUM_BYTES
}

impl TraceReader {
    /// Opens `path`, reads its header and index (8 bytes per warp) and checks the file's
    /// structure (see the module documentation).
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        let mut f = File::open(path).map_err(|e| TraceError::io(path, e))?;
        let len = f.metadata().map_err(|e| TraceError::io(path, e))?.len();
        let mut head = [0u8; HEAD_BYTES as usize];
        f.read_exact(&mut head)
            .map_err(|_| corrupt(path, len, "file shorter than the 24-byte header"))?;
        if &head[0..8] != MAGIC {
            let mut found = [0u8; 8];
            found.copy_from_slice(&head[0..8]);
            return Err(TraceError::BadMagic {
                path: path.to_path_buf(),
                found,
            });
        }
        let version = le_u32(&head[8..12]);
        if version < TRACE_FORMAT_VERSION {
            return Err(TraceError::OldFormat {
                path: path.to_path_buf(),
                found: version,
            });
        }
        if version > TRACE_FORMAT_VERSION {
            return Err(TraceError::Version {
                path: path.to_path_buf(),
                found: version,
                supported: TRACE_FORMAT_VERSION,
            });
        }
        let json_len = le_u64(&head[16..24]);
        if json_len > MAX_JSON_BYTES {
            return Err(corrupt(
                path,
                16,
                format!("launch JSON length {json_len} exceeds the {MAX_JSON_BYTES}-byte limit"),
            ));
        }
        let data_start = HEAD_BYTES + json_len + CHECKSUM_BYTES;
        if len < data_start + FOOTER_BYTES {
            return Err(corrupt(
                path,
                len,
                "truncated: no footer (the run was interrupted?)",
            ));
        }
        let mut json = vec![0u8; json_len as usize + CHECKSUM_BYTES as usize];
        f.read_exact(&mut json)
            .map_err(|e| TraceError::io(path, e))?;
        let (json, sum) = json.split_at(json_len as usize);
        let mut h = Xxh3::new();
        h.update(&head);
        h.update(json);
        if h.digest() != le_u64(sum) {
            return Err(corrupt(
                path,
                HEAD_BYTES + json_len,
                "header checksum mismatch (the launch description is damaged)",
            ));
        }
        let launch: LaunchInfo =
            serde_json::from_slice(json).map_err(|source| TraceError::Json {
                path: path.to_path_buf(),
                source,
            })?;
        let mut foot = [0u8; FOOTER_BYTES as usize];
        f.seek(SeekFrom::Start(len - FOOTER_BYTES))
            .and_then(|_| f.read_exact(&mut foot))
            .map_err(|e| TraceError::io(path, e))?;
        if &foot[32..40] != END_MAGIC {
            return Err(corrupt(
                path,
                len - FOOTER_BYTES,
                "truncated: no footer (the run was interrupted?)",
            ));
        }
        let n_warps = le_u64(&foot[0..8]);
        let total_records = le_u64(&foot[8..16]);
        let index_offset = le_u64(&foot[16..24]);
        let index_end = n_warps
            .checked_mul(8)
            .and_then(|b| index_offset.checked_add(b));
        if index_offset < data_start || index_end != Some(len - FOOTER_BYTES) {
            return Err(corrupt(
                path,
                len - FOOTER_BYTES,
                format!(
                    "warp index ({n_warps} warps at byte {index_offset}) does not fit the file"
                ),
            ));
        }
        // Bounded by the file size (checked just above).
        let mut raw = vec![0u8; (n_warps * 8) as usize];
        f.seek(SeekFrom::Start(index_offset))
            .and_then(|_| f.read_exact(&mut raw))
            .map_err(|e| TraceError::io(path, e))?;
        let mut h = Xxh3::new();
        h.update(&raw);
        h.update(&foot[0..24]);
        if h.digest() != le_u64(&foot[24..32]) {
            return Err(corrupt(
                path,
                len - FOOTER_BYTES + 24,
                "footer checksum mismatch (the warp index or the totals are damaged)",
            ));
        }
        let index: Vec<u64> = raw.chunks_exact(8).map(le_u64).collect();
        let sum = walk_blocks(&mut f, path, &index, data_start, index_offset)?;
        if sum != total_records {
            return Err(corrupt(
                path,
                len - FOOTER_BYTES + 8,
                format!("footer says {total_records} records, the warps hold {sum}"),
            ));
        }
        Ok(TraceReader {
            path: path.to_path_buf(),
            sites: SiteSet::of(&launch),
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
            sites: self.sites.clone(),
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
    /// warps in time order with bounded memory. The warp's checksum is checked when its last
    /// record has been read.
    pub fn cursor(&self, i: usize, buffer_bytes: usize) -> Result<RecordCursor, TraceError> {
        let off = *self.index.get(i).ok_or_else(|| {
            corrupt(
                &self.path,
                0,
                format!("warp {i} out of range (trace has {})", self.index.len()),
            )
        })?;
        let mut f = File::open(&self.path).map_err(|e| TraceError::io(&self.path, e))?;
        f.seek(SeekFrom::Start(off))
            .map_err(|e| TraceError::io(&self.path, e))?;
        let mut input = BufReader::with_capacity(buffer_bytes.max(64), f);
        let mut h = [0u8; WARP_HEADER_BYTES];
        input
            .read_exact(&mut h)
            .map_err(|_| truncated(&self.path, off))?;
        let (header, n_rec, n_sum) = decode_warp_header(&h);
        let mut hasher = Xxh3::new();
        hasher.update(&h);
        Ok(RecordCursor {
            path: self.path.clone(),
            sites: self.sites.clone(),
            input,
            header,
            remaining: n_rec,
            n_summaries: n_sum,
            summaries: None,
            hasher,
            pos: off + WARP_HEADER_BYTES as u64,
        })
    }
}

/// Checks that the warp blocks tile `data_start .. index_offset` exactly, in index order, and
/// returns the sum of their record counts. Reads one 56-byte header per warp.
fn walk_blocks(
    f: &mut File,
    path: &Path,
    index: &[u64],
    data_start: u64,
    index_offset: u64,
) -> Result<u64, TraceError> {
    let mut input = BufReader::with_capacity(1 << 12, f);
    input
        .seek(SeekFrom::Start(data_start))
        .map_err(|e| TraceError::io(path, e))?;
    let mut expected = data_start;
    let mut records = 0u64;
    for (i, &off) in index.iter().enumerate() {
        if off != expected {
            return Err(corrupt(
                path,
                off,
                format!(
                    "index entry {i} points at byte {off}, but warp {i} starts at byte {expected}"
                ),
            ));
        }
        let mut h = [0u8; WARP_HEADER_BYTES];
        input.read_exact(&mut h).map_err(|_| truncated(path, off))?;
        let (_, n_rec, n_sum) = decode_warp_header(&h);
        let size = block_bytes(n_rec, n_sum);
        expected = off + size;
        if expected > index_offset {
            return Err(corrupt(
                path,
                off + 48,
                format!(
                    "warp {i} claims {n_rec} records and {n_sum} summaries, more than the file holds"
                ),
            ));
        }
        records += u64::from(n_rec);
        // Relative, so that the buffer is kept when the next header is already in it.
        input
            .seek_relative((size - WARP_HEADER_BYTES as u64) as i64)
            .map_err(|e| TraceError::io(path, e))?;
    }
    if expected != index_offset {
        return Err(corrupt(
            path,
            expected,
            format!(
                "{} bytes between the last warp and the index belong to no warp",
                index_offset - expected
            ),
        ));
    }
    Ok(records)
}

/// Streams one warp's records (see [`TraceReader::cursor`]).
pub struct RecordCursor {
    path: PathBuf,
    sites: SiteSet,
    input: BufReader<File>,
    /// The warp's header fields; `records` and `summaries` are empty here.
    pub header: WarpTrace,
    remaining: u32,
    n_summaries: u32,
    /// Read (and the block's checksum checked) once the last record has been read.
    summaries: Option<Vec<SiteSummary>>,
    hasher: Xxh3,
    pos: u64,
}

impl RecordCursor {
    /// Records not yet read.
    pub fn remaining(&self) -> u32 {
        self.remaining
    }

    pub fn next_record(&mut self) -> Result<Option<Record>, TraceError> {
        if self.remaining == 0 {
            if self.summaries.is_none() {
                self.finish_block()?;
            }
            return Ok(None);
        }
        let mut b = [0u8; RECORD_BYTES];
        self.input
            .read_exact(&mut b)
            .map_err(|_| truncated(&self.path, self.pos))?;
        self.hasher.update(&b);
        let r = decode_record(&b);
        self.sites.check(r.site, &self.path, self.pos)?;
        self.pos += RECORD_BYTES as u64;
        self.remaining -= 1;
        Ok(Some(r))
    }

    /// Reads the summaries and the checksum after the last record.
    fn finish_block(&mut self) -> Result<(), TraceError> {
        let mut out = Vec::with_capacity(self.n_summaries.min(1 << 16) as usize);
        for _ in 0..self.n_summaries {
            let mut b = [0u8; SUMMARY_BYTES];
            self.input
                .read_exact(&mut b)
                .map_err(|_| truncated(&self.path, self.pos))?;
            self.hasher.update(&b);
            let s = decode_summary(&b);
            self.sites.check(s.site, &self.path, self.pos)?;
            self.pos += SUMMARY_BYTES as u64;
            out.push(s);
        }
        let mut b = [0u8; CHECKSUM_BYTES as usize];
        self.input
            .read_exact(&mut b)
            .map_err(|_| truncated(&self.path, self.pos))?;
        if self.hasher.digest() != u64::from_le_bytes(b) {
            return Err(checksum_mismatch(&self.path, self.pos, &self.header));
        }
        self.summaries = Some(out);
        Ok(())
    }

    /// Reads the summaries after the records (skipping records not yet read).
    pub fn summaries(&mut self) -> Result<Vec<SiteSummary>, TraceError> {
        while self.next_record()?.is_some() {}
        Ok(self.summaries.take().unwrap_or_default())
    }
}

/// Iterates warps in file order (see [`TraceReader::warps`]).
pub struct WarpIter {
    path: PathBuf,
    sites: SiteSet,
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
        let r = self.read_one();
        if r.is_err() {
            // One error ends the iteration: what follows a damaged block cannot be located.
            self.pos = self.end;
        }
        Some(r)
    }
}

impl WarpIter {
    fn read_one(&mut self) -> Result<WarpTrace, TraceError> {
        let start = self.pos;
        let mut h = [0u8; WARP_HEADER_BYTES];
        self.input
            .read_exact(&mut h)
            .map_err(|_| truncated(&self.path, start))?;
        let (mut w, n_rec, n_sum) = decode_warp_header(&h);
        let size = block_bytes(n_rec, n_sum);
        if start + size > self.end {
            return Err(truncated(&self.path, start + WARP_HEADER_BYTES as u64));
        }
        // Bounded by the file size (checked just above).
        let mut body = vec![0u8; (size - WARP_HEADER_BYTES as u64) as usize];
        self.input
            .read_exact(&mut body)
            .map_err(|_| truncated(&self.path, start + WARP_HEADER_BYTES as u64))?;
        self.pos = start + size;
        let (data, sum) = body.split_at(body.len() - CHECKSUM_BYTES as usize);
        let mut hasher = Xxh3::new();
        hasher.update(&h);
        hasher.update(data);
        if hasher.digest() != le_u64(sum) {
            return Err(checksum_mismatch(&self.path, self.pos - CHECKSUM_BYTES, &w));
        }
        let (recs, sums) = data.split_at(n_rec as usize * RECORD_BYTES);
        let data_at = start + WARP_HEADER_BYTES as u64;
        w.records = Vec::with_capacity(n_rec as usize);
        for (k, b) in recs.chunks_exact(RECORD_BYTES).enumerate() {
            let r = decode_record(b);
            self.sites
                .check(r.site, &self.path, data_at + (k * RECORD_BYTES) as u64)?;
            w.records.push(r);
        }
        let sums_at = data_at + recs.len() as u64;
        w.summaries = Vec::with_capacity(n_sum as usize);
        for (k, b) in sums.chunks_exact(SUMMARY_BYTES).enumerate() {
            let s = decode_summary(b);
            self.sites
                .check(s.site, &self.path, sums_at + (k * SUMMARY_BYTES) as u64)?;
            w.summaries.push(s);
        }
        Ok(w)
    }
}

fn truncated(path: &Path, offset: u64) -> TraceError {
    corrupt(path, offset, "record data ends early")
}

fn checksum_mismatch(path: &Path, offset: u64, w: &WarpTrace) -> TraceError {
    corrupt(
        path,
        offset,
        format!(
            "checksum mismatch in warp {} (block {:?}, warp {}): its records are damaged",
            w.global_warp, w.block, w.warp
        ),
    )
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

fn decode_warp_header(h: &[u8; WARP_HEADER_BYTES]) -> (WarpTrace, u32, u32) {
    let word = |i: usize| le_u32(&h[i * 4..]);
    let mut w = WarpTrace::new([word(0), word(1), word(2)], word(3), word(4), SmId(word(5)));
    w.hw_warp = word(6);
    w.dropped = word(7);
    w.begin = Cycles(le_u64(&h[32..]));
    w.end = Cycles(le_u64(&h[40..]));
    (w, le_u32(&h[48..]), le_u32(&h[52..]))
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
    use xxhash_rust::xxh3::xxh3_64;

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

    /// A valid two-warp file with declared sites, and where its pieces lie:
    /// (bytes, first block start, second block start, index offset).
    fn two_warps(path: &Path) -> (Vec<u8>, usize, usize, usize) {
        let mut t = sample(&[(0, vec![(0, 5, 5), (1, 9, 3)]), (0, vec![(1, 20, 4)])]);
        t.launch.sites = vec![
            crate::SiteInfo::new(0, "a", crate::Region::Global),
            crate::SiteInfo::new(1, "b", crate::Region::Global),
        ];
        TraceWriter::write_all(path, &t).unwrap();
        let b = std::fs::read(path).unwrap();
        let n = b.len();
        let index = le_u64(&b[n - 24..]) as usize;
        let w0 = le_u64(&b[index..]) as usize;
        let w1 = le_u64(&b[index + 8..]) as usize;
        (b, w0, w1, index)
    }

    /// Recomputes every checksum of a file shaped like [`two_warps`]'s, so that an edit reaches
    /// the structural checks behind them (as a deliberate forgery would).
    fn reseal(b: &mut [u8], w0: usize, w1: usize, index: usize) {
        let n = b.len();
        for (from, to) in [(0, w0 - 8), (w0, w1 - 8), (w1, index - 8), (index, n - 16)] {
            let h = xxh3_64(&b[from..to]);
            b[to..to + 8].copy_from_slice(&h.to_le_bytes());
        }
    }

    fn open_and_read_all(path: &Path) -> Result<(), TraceError> {
        let r = TraceReader::open(path)?;
        for w in r.warps()? {
            w?;
        }
        for i in 0..r.warp_count() {
            r.read_warp(i)?;
        }
        Ok(())
    }

    fn corrupt_message(path: &Path, bytes: &[u8]) -> String {
        std::fs::write(path, bytes).unwrap();
        let e = open_and_read_all(path).expect_err("must be refused");
        let msg = e.to_string();
        assert!(msg.contains("trace.wst") && msg.contains("byte"), "{msg}");
        msg
    }

    #[test]
    fn lengths_counts_sites_and_totals_are_cross_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TRACE_FILE_NAME);
        let (valid, w0, w1, index) = two_warps(&path);
        open_and_read_all(&path).unwrap();
        let n = valid.len();
        let edit = |at: usize, v: &[u8], sealed: bool| {
            let mut b = valid.clone();
            b[at..at + v.len()].copy_from_slice(v);
            if sealed {
                reseal(&mut b, w0, w1, index);
            }
            b
        };
        // json_len = 2^64 - 1: refused before allocating.
        let m = corrupt_message(&path, &edit(16, &u64::MAX.to_le_bytes(), false));
        assert!(m.contains("exceeds"), "{m}");
        // A warp claims u32::MAX records (an abort in the Parquet export before).
        let m = corrupt_message(&path, &edit(w0 + 48, &u32::MAX.to_le_bytes(), true));
        assert!(m.contains("more than the file holds"), "{m}");
        // Phantom records: one more record than written, the rest of the file shifted under it.
        let m = corrupt_message(&path, &edit(w0 + 48, &3u32.to_le_bytes(), true));
        assert!(m.contains("warp 1 starts at byte"), "{m}");
        // An index entry pointing into the middle of a warp.
        let m = corrupt_message(
            &path,
            &edit(index + 8, &((w1 - 24) as u64).to_le_bytes(), true),
        );
        assert!(m.contains("index entry 1"), "{m}");
        // A footer total that disagrees with the warps.
        let m = corrupt_message(&path, &edit(n - 32, &7u64.to_le_bytes(), true));
        assert!(m.contains("footer says 7 records, the warps hold 3"), "{m}");
        // A site the launch did not declare.
        let m = corrupt_message(&path, &edit(w0 + 56, &999u16.to_le_bytes(), true));
        assert!(m.contains("site 999"), "{m}");
        // A flipped record byte without a reseal: the checksum says so.
        let m = corrupt_message(&path, &edit(w1 + 70, &[0xff], false));
        assert!(m.contains("checksum mismatch in warp 1"), "{m}");
    }

    #[test]
    fn every_single_bit_flip_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TRACE_FILE_NAME);
        let (valid, ..) = two_warps(&path);
        for byte in 0..valid.len() {
            let mut b = valid.clone();
            b[byte] ^= 1 << (byte % 8);
            std::fs::write(&path, &b).unwrap();
            assert!(
                open_and_read_all(&path).is_err(),
                "flip at byte {byte} was not detected"
            );
        }
    }

    #[test]
    fn an_older_format_asks_for_a_new_launch() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TRACE_FILE_NAME);
        let (mut b, ..) = two_warps(&path);
        b[8..12].copy_from_slice(&1u32.to_le_bytes());
        std::fs::write(&path, &b).unwrap();
        let e = TraceReader::open(&path).err().unwrap().to_string();
        assert!(
            e.contains("written by an older warpscope (format 1); re-run the launch"),
            "{e}"
        );
        b[8..12].copy_from_slice(&3u32.to_le_bytes());
        std::fs::write(&path, &b).unwrap();
        assert!(matches!(
            TraceReader::open(&path),
            Err(TraceError::Version { found: 3, .. })
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
