//! CSV for spreadsheets and dataframes: one row per record ([`write_records_csv`]) and one row
//! per warp ([`write_warps_csv`]), written with the `csv` crate (RFC 4180 quoting, `\n` line
//! ends, a header row). Rows come in trace order (warp by warp, each warp's records in log
//! order), not sorted by time.
//!
//! Column meanings are documented on [`write_records_csv`] and [`write_warps_csv`].
//!
//! ```
//! use trace::{Dim3, LaunchInfo, Trace};
//! let t = Trace { launch: LaunchInfo::new("k", Dim3::new(1, 1, 1), Dim3::new(32, 1, 1)), warps: vec![] };
//! let mut out = Vec::new();
//! export::write_records_csv(&t, &mut out).unwrap();
//! assert!(out.starts_with(b"launch,block_x,block_y,block_z,warp,"));
//! ```

use crate::error::ExportError;
use crate::options::ExportSummary;
use crate::source::TraceSource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};

/// One row of the records CSV: one timed access of one warp. Its columns are the Parquet
/// file's too (`trace::RECORD_COLUMNS`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RecordRow {
    /// Index of the kernel launch within the run.
    pub launch: u32,
    /// The warp's block index along x (`%ctaid.x`).
    pub block_x: u32,
    /// The warp's block index along y (`%ctaid.y`).
    pub block_y: u32,
    /// The warp's block index along z (`%ctaid.z`).
    pub block_z: u32,
    /// Warp index within the block (thread linear index ÷ 32).
    pub warp: u32,
    /// Warp index in the grid: block linear index × warps per block + `warp`.
    pub global_warp: u32,
    /// The SM the warp ran on (`%smid`).
    pub sm: u32,
    /// The warp's hardware slot on that SM (`%warpid`).
    pub hw_warp: u32,
    /// The load site's id (the `WS_LOAD` number).
    pub site: u16,
    /// The site's name from the launch (CSV: empty, Parquet: `site N`, where the launch does
    /// not declare it).
    pub site_name: String,
    /// The memory the site reads: `global`, `texture`, `constant` or `readonly` (empty where
    /// undeclared).
    pub region: String,
    /// The record's position among the warp's records (0, 1, …; dropped ones counted).
    pub seq: u32,
    /// Raw SM clock before the access, in cycles.
    pub start: u64,
    /// Raw SM clock after the access, in cycles.
    pub end: u64,
    /// `end − start` in cycles; where the clock wrapped (`end < start`) empty in the CSV and 0
    /// in Parquet.
    pub duration: Option<u64>,
    /// Probe mode: `off`, `naive`, `fence`, `dummy` or `auto`.
    pub mode: String,
    /// `true` when `end < start` (the 32-bit clock wrapped or the SM clock was reset).
    pub wrapped: bool,
}

/// One row of the warps CSV: one warp's access-time statistics. A warp with no valid record has
/// empty statistics; for the `summary` record kind they come from the per-site summaries (count,
/// sum, min, max) over all sites.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WarpRow {
    /// Index of the kernel launch within the run.
    pub launch: u32,
    /// The warp's block index along x (`%ctaid.x`).
    pub block_x: u32,
    /// The warp's block index along y (`%ctaid.y`).
    pub block_y: u32,
    /// The warp's block index along z (`%ctaid.z`).
    pub block_z: u32,
    /// Warp index within the block (thread linear index ÷ 32).
    pub warp: u32,
    /// Warp index in the grid: block linear index × warps per block + `warp`.
    pub global_warp: u32,
    /// The SM the warp ran on (`%smid`).
    pub sm: u32,
    /// The warp's hardware slot on that SM (`%warpid`).
    pub hw_warp: u32,
    /// Records with a valid duration (wrapped ones excluded).
    pub count: u64,
    /// Mean access time, in cycles.
    pub mean: Option<f64>,
    /// Shortest access, in cycles.
    pub min: Option<u64>,
    /// Longest access, in cycles.
    pub max: Option<u64>,
    /// **Population** variance of the access time (divided by `count`, not `count − 1`), in
    /// cycles²; empty for the `summary` record kind, which keeps no sum of squares.
    pub variance: Option<f64>,
    /// Clock at `WS_KERNEL_BEGIN`.
    pub begin: u64,
    /// Clock at `WS_KERNEL_END`.
    pub end: u64,
    /// `end − begin` in cycles (0 if the clock went backwards).
    pub lifetime: u64,
    /// Records the log had no room for.
    pub dropped: u32,
    /// Records with a wrapped clock (not in `count`, `mean`, …).
    pub wrapped: u64,
}

use trace::RECORD_COLUMNS;
const WARP_COLUMNS: [&str; 18] = [
    "launch",
    "block_x",
    "block_y",
    "block_z",
    "warp",
    "global_warp",
    "sm",
    "hw_warp",
    "count",
    "mean",
    "min",
    "max",
    "variance",
    "begin",
    "end",
    "lifetime",
    "dropped",
    "wrapped",
];

/// Counts bytes passing through, for the summary.
struct Counted<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn csv_writer<W: Write>(out: W) -> csv::Writer<Counted<W>> {
    csv::WriterBuilder::new()
        .has_headers(false)
        .buffer_capacity(1 << 16)
        .from_writer(Counted {
            inner: out,
            bytes: 0,
        })
}

fn finish<W: Write>(w: csv::Writer<Counted<W>>) -> Result<u64, ExportError> {
    let counted = w.into_inner().map_err(|e| ExportError::Stream {
        format: "CSV",
        source: e.into_error(),
    })?;
    Ok(counted.bytes)
}

/// One CSV field of a multi-field record as the csv crate quotes it (RFC 4180: quoted when it
/// holds a comma, quote or line break; empty stays empty).
fn escaped(field: &str) -> Result<Vec<u8>, ExportError> {
    if field.is_empty() {
        // Alone on its record the csv crate would write `""`; inside a row it writes nothing.
        return Ok(Vec::new());
    }
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    w.write_record([field])?;
    let mut v = w.into_inner().map_err(|e| ExportError::Stream {
        format: "CSV",
        source: e.into_error(),
    })?;
    v.pop();
    Ok(v)
}

/// Appends `v` in decimal. Hand-written (no itoa in the workspace) because formatting numbers is
/// most of the records CSV's work: 13 per row, 10⁸ rows.
fn push_u64(buf: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[i..]);
}

/// Writes one row per record.
///
/// Why rows are assembled by hand: going through the csv crate's writer for every field runs
/// at about a million rows per second, too slow for 10⁸ records. The only fields that could
/// need quoting are the site name, the region and the mode; they are quoted once per site by
/// the csv crate, and the rest of a row is numbers and `true`/`false`. The output
/// is byte-identical to what the csv crate writes (tests read it back with the csv crate).
///
/// The columns are [`RecordRow`]'s fields, each documented there.
pub fn write_records_csv<S, W>(src: &S, mut out: W) -> Result<ExportSummary, ExportError>
where
    S: TraceSource + ?Sized,
    W: Write,
{
    const CHUNK: usize = 1 << 16;
    let launch = src.launch();
    let mut buf = Vec::with_capacity(CHUNK + 4096);
    buf.extend_from_slice(RECORD_COLUMNS.join(",").as_bytes());
    buf.push(b'\n');
    let mode = escaped(launch.mode.name())?;
    // ",site_name,region," per declared site; an undeclared site leaves both empty.
    let mut site_text = std::collections::BTreeMap::new();
    for s in &launch.sites {
        let mut t = vec![b','];
        t.extend(escaped(&s.name)?);
        t.push(b',');
        t.extend(escaped(s.region.name())?);
        t.push(b',');
        site_text.insert(s.id, t);
    }
    let undeclared = b",,,".to_vec();
    let mut summary = ExportSummary::default();
    let mut prefix = Vec::with_capacity(128);
    for i in 0..src.warp_count() {
        let (h, records) = src.open_warp(i, 1 << 16)?;
        summary.warps += 1;
        summary.dropped += h.dropped as u64;
        prefix.clear();
        for v in [
            launch.launch,
            h.block[0],
            h.block[1],
            h.block[2],
            h.warp,
            h.global_warp,
            h.sm.0,
            h.hw_warp,
        ] {
            push_u64(&mut prefix, v as u64);
            prefix.push(b',');
        }
        for rec in records {
            let rec = rec?;
            let wrapped = rec.wrapped();
            summary.records += 1;
            summary.wrapped += wrapped as u64;
            buf.extend_from_slice(&prefix);
            push_u64(&mut buf, rec.site as u64);
            buf.extend_from_slice(site_text.get(&rec.site).unwrap_or(&undeclared));
            push_u64(&mut buf, rec.seq as u64);
            buf.push(b',');
            push_u64(&mut buf, rec.start.0);
            buf.push(b',');
            push_u64(&mut buf, rec.end.0);
            buf.push(b',');
            if !wrapped {
                push_u64(&mut buf, rec.duration().0);
            }
            buf.push(b',');
            buf.extend_from_slice(&mode);
            buf.extend_from_slice(if wrapped { b",true\n" } else { b",false\n" });
            if buf.len() >= CHUNK {
                out.write_all(&buf).map_err(ExportError::stream("CSV"))?;
                summary.bytes += buf.len() as u64;
                buf.clear();
            }
        }
    }
    out.write_all(&buf).map_err(ExportError::stream("CSV"))?;
    out.flush().map_err(ExportError::stream("CSV"))?;
    summary.bytes += buf.len() as u64;
    Ok(summary)
}

/// Running count, mean and sum of squared deviations (Welford), for a stable variance.
#[derive(Default)]
struct Stats {
    n: u64,
    mean: f64,
    m2: f64,
    min: Option<u64>,
    max: Option<u64>,
}

impl Stats {
    fn add(&mut self, x: u64) {
        self.n += 1;
        let d = x as f64 - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x as f64 - self.mean);
        self.min = Some(self.min.map_or(x, |m| m.min(x)));
        self.max = Some(self.max.map_or(x, |m| m.max(x)));
    }
}

/// Writes one row per warp with access-time statistics.
///
/// The columns are [`WarpRow`]'s fields, each documented there.
pub fn write_warps_csv<S, W>(src: &S, out: W) -> Result<ExportSummary, ExportError>
where
    S: TraceSource + ?Sized,
    W: Write,
{
    let launch = src.launch();
    let mut w = csv_writer(out);
    w.write_record(WARP_COLUMNS)?;
    let mut summary = ExportSummary::default();
    for i in 0..src.warp_count() {
        let (h, records) = src.open_warp(i, 1 << 16)?;
        let mut stats = Stats::default();
        let mut wrapped = 0u64;
        for rec in records {
            let rec = rec?;
            if rec.wrapped() {
                wrapped += 1;
            } else {
                stats.add(rec.duration().0);
            }
            summary.records += 1;
        }
        let (count, mean, min, max, variance) = if stats.n > 0 || wrapped > 0 {
            let var = (stats.n > 0).then(|| stats.m2 / stats.n as f64);
            (
                stats.n,
                (stats.n > 0).then_some(stats.mean),
                stats.min,
                stats.max,
                var,
            )
        } else {
            // The `summary` record kind: totals over sites, no variance.
            let sums = src.summaries(i)?;
            let count: u64 = sums.iter().map(|s| s.count).sum();
            let total: u64 = sums.iter().map(|s| s.sum.0).sum();
            let live = sums.iter().filter(|s| s.count > 0);
            let min = live.clone().map(|s| s.min.0).min();
            let max = live.map(|s| s.max.0).max();
            (
                count,
                (count > 0).then(|| total as f64 / count as f64),
                min,
                max,
                None,
            )
        };
        summary.warps += 1;
        summary.dropped += h.dropped as u64;
        summary.wrapped += wrapped;
        w.serialize(WarpRow {
            launch: launch.launch,
            block_x: h.block[0],
            block_y: h.block[1],
            block_z: h.block[2],
            warp: h.warp,
            global_warp: h.global_warp,
            sm: h.sm.0,
            hw_warp: h.hw_warp,
            count,
            mean,
            min,
            max,
            variance,
            begin: h.begin.0,
            end: h.end.0,
            lifetime: h.lifetime().0,
            dropped: h.dropped,
            wrapped,
        })?;
    }
    summary.bytes = finish(w)?;
    Ok(summary)
}

fn read_rows<R: Read, T: serde::de::DeserializeOwned>(
    input: R,
    columns: &[&str],
) -> Result<Vec<T>, ExportError> {
    let mut r = csv::Reader::from_reader(input);
    let header = r.headers()?.clone();
    if header.iter().ne(columns.iter().copied()) {
        return Err(ExportError::parse(
            "CSV",
            "line 1",
            format!(
                "header {:?}, expected {columns:?}",
                header.iter().collect::<Vec<_>>()
            ),
        ));
    }
    r.deserialize()
        .map(|row| row.map_err(ExportError::from))
        .collect()
}

/// Reads a records CSV back (tests, small files: all rows in memory).
pub fn read_records_csv<R: Read>(input: R) -> Result<Vec<RecordRow>, ExportError> {
    read_rows(input, &RECORD_COLUMNS)
}

/// Reads a warps CSV back.
pub fn read_warps_csv<R: Read>(input: R) -> Result<Vec<WarpRow>, ExportError> {
    read_rows(input, &WARP_COLUMNS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::{
        Cycles, Dim3, LaunchInfo, ProbeMode, Record, RecordKind, Region, SiteInfo, SiteSummary,
        SmId, Trace, WarpTrace,
    };

    fn rec(seq: u32, start: u64, end: u64) -> Record {
        Record {
            site: (seq % 2) as u16,
            seq,
            start: Cycles(start),
            end: Cycles(end),
        }
    }

    fn trace() -> Trace {
        let launch = LaunchInfo::new("k", Dim3::new(1, 1, 1), Dim3::new(64, 1, 1))
            .with_probe(ProbeMode::Auto, RecordKind::Trace)
            .with_sites(vec![SiteInfo::new(0, "a, \"quoted\"", Region::Texture)]);
        let mut w0 = WarpTrace::new([0, 0, 0], 0, 0, SmId(2));
        w0.begin = Cycles(5);
        w0.end = Cycles(500);
        w0.dropped = 3;
        // Durations 10, 20, 30 and one wrapped record.
        w0.records = vec![
            rec(0, 10, 20),
            rec(1, 30, 50),
            rec(2, 60, 90),
            rec(3, 100, 7),
        ];
        let w1 = WarpTrace::new([0, 0, 0], 1, 1, SmId(2));
        Trace {
            launch,
            warps: vec![w0, w1],
        }
    }

    #[test]
    fn records_round_trip_with_quoting_and_wrap_marked() {
        let t = trace();
        let mut out = Vec::new();
        let s = write_records_csv(&t, &mut out).unwrap();
        assert_eq!(
            (s.records, s.wrapped, s.dropped, s.bytes),
            (4, 1, 3, out.len() as u64)
        );
        let rows = read_records_csv(&out[..]).unwrap();
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0].site_name, "a, \"quoted\"");
        assert_eq!(rows[0].region, "texture");
        assert_eq!(rows[1].site_name, "", "site 1 is not declared");
        assert_eq!(rows[2].duration, Some(30));
        assert_eq!((rows[3].duration, rows[3].wrapped), (None, true));
        let back: Vec<(u16, u32, u64, u64)> = rows
            .iter()
            .map(|r| (r.site, r.seq, r.start, r.end))
            .collect();
        let want: Vec<(u16, u32, u64, u64)> = t.warps[0]
            .records
            .iter()
            .map(|r| (r.site, r.seq, r.start.0, r.end.0))
            .collect();
        assert_eq!(back, want);
    }

    #[test]
    fn warp_stats_are_population_statistics() {
        let t = trace();
        let mut out = Vec::new();
        write_warps_csv(&t, &mut out).unwrap();
        let rows = read_warps_csv(&out[..]).unwrap();
        assert_eq!(rows.len(), 2);
        let r = &rows[0];
        // Durations 10, 20, 30: mean 20, population variance (100 + 0 + 100) / 3.
        assert_eq!(
            (r.count, r.min, r.max, r.wrapped, r.dropped),
            (3, Some(10), Some(30), 1, 3)
        );
        assert!((r.mean.unwrap() - 20.0).abs() < 1e-12);
        assert!((r.variance.unwrap() - 200.0 / 3.0).abs() < 1e-9);
        assert_eq!((r.begin, r.end, r.lifetime), (5, 500, 495));
        assert_eq!(
            (rows[1].count, rows[1].mean, rows[1].variance),
            (0, None, None)
        );
    }

    #[test]
    fn summary_kind_uses_site_summaries() {
        let mut t = trace();
        t.launch.kind = RecordKind::Summary;
        let w = &mut t.warps[1];
        w.summaries = vec![
            SiteSummary {
                site: 0,
                count: 2,
                sum: Cycles(30),
                min: Cycles(10),
                max: Cycles(20),
            },
            SiteSummary {
                site: 1,
                count: 1,
                sum: Cycles(90),
                min: Cycles(90),
                max: Cycles(90),
            },
        ];
        let mut out = Vec::new();
        write_warps_csv(&t, &mut out).unwrap();
        let r = &read_warps_csv(&out[..]).unwrap()[1];
        assert_eq!(
            (r.count, r.min, r.max, r.variance),
            (3, Some(10), Some(90), None)
        );
        assert!((r.mean.unwrap() - 40.0).abs() < 1e-12);
    }

    #[test]
    fn hand_assembled_rows_match_the_csv_crate_byte_for_byte() {
        let mut t = trace();
        t.launch.sites.push(SiteInfo::new(1, "", Region::Global));
        t.launch
            .sites
            .push(SiteInfo::new(3, "multi\nline", Region::Constant));
        t.warps[1].records = vec![
            rec(0, 0, u64::MAX),
            Record {
                site: 3,
                ..rec(5, 9, 9)
            },
        ];
        let mut ours = Vec::new();
        write_records_csv(&t, &mut ours).unwrap();
        let mut theirs = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(Vec::new());
        theirs.write_record(RECORD_COLUMNS).unwrap();
        for w in &t.warps {
            for r in &w.records {
                let site = t.launch.site(r.site);
                theirs
                    .serialize(RecordRow {
                        launch: t.launch.launch,
                        block_x: w.block[0],
                        block_y: w.block[1],
                        block_z: w.block[2],
                        warp: w.warp,
                        global_warp: w.global_warp,
                        sm: w.sm.0,
                        hw_warp: w.hw_warp,
                        site: r.site,
                        site_name: site.map_or(String::new(), |s| s.name.clone()),
                        region: site.map_or(String::new(), |s| s.region.name().into()),
                        seq: r.seq,
                        start: r.start.0,
                        end: r.end.0,
                        duration: (!r.wrapped()).then(|| r.duration().0),
                        mode: t.launch.mode.name().into(),
                        wrapped: r.wrapped(),
                    })
                    .unwrap();
            }
        }
        let theirs = theirs.into_inner().unwrap();
        // The csv crate writes an empty text field as nothing; we write `""` (the same value to
        // every CSV reader). Compare after parsing, and bytes where no name is empty.
        assert_eq!(
            read_records_csv(&ours[..]).unwrap(),
            read_records_csv(&theirs[..]).unwrap()
        );
        let ours_text = String::from_utf8(ours).unwrap().replace(",\"\",", ",,");
        assert_eq!(ours_text, String::from_utf8(theirs).unwrap());
    }

    #[test]
    fn decimal_digits_are_right_at_the_edges() {
        for v in [0u64, 9, 10, 99, 100, 12_345, u32::MAX as u64, u64::MAX] {
            let mut b = Vec::new();
            push_u64(&mut b, v);
            assert_eq!(String::from_utf8(b).unwrap(), v.to_string());
        }
    }

    #[test]
    fn empty_trace_still_has_a_header_and_bad_header_is_refused() {
        let mut t = trace();
        t.warps.clear();
        let mut out = Vec::new();
        write_records_csv(&t, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            RECORD_COLUMNS.join(",") + "\n"
        );
        assert!(read_records_csv(&b"a,b\n1,2\n"[..]).is_err());
    }
}
