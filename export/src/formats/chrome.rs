//! Chrome Trace Event JSON (the "JSON object" form) for Perfetto and `chrome://tracing`.
//!
//! The layout is documented on [`write_chrome`]; [`read_chrome`] reads it back (tests).

use crate::error::ExportError;
use crate::options::{ExportOptions, ExportSummary, clock_hz};
use crate::source::TraceSource;
use crate::timeline::Layout;
use serde::Serialize;
use std::io::{Read, Write};

const FORMAT: &str = "Chrome trace";

#[derive(Serialize)]
struct Meta<'a> {
    name: &'static str,
    ph: &'static str,
    pid: u64,
    tid: u64,
    args: MetaArgs<'a>,
}

#[derive(Serialize)]
struct MetaArgs<'a> {
    name: &'a str,
}

#[derive(Serialize)]
struct Slice<'a> {
    name: &'a str,
    cat: &'a str,
    ph: &'static str,
    pid: u64,
    tid: u64,
    ts: f64,
    dur: f64,
    args: SliceArgs,
}

/// The `args` of a record's slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SliceArgs {
    pub site: u16,
    pub block: [u32; 3],
    pub warp: u32,
    pub global_warp: u32,
    pub seq: u32,
    /// Raw start clock, cycles.
    pub start: u64,
    /// Raw end clock, cycles.
    pub end: u64,
}

#[derive(Serialize)]
struct Counter {
    name: &'static str,
    ph: &'static str,
    pid: u64,
    ts: f64,
    args: CounterArgs,
}

#[derive(Serialize)]
struct CounterArgs {
    dropped: u32,
}

/// Collects events in a buffer and hands the sink about 64 KiB at a time: serde_json writes
/// many tiny pieces, and a `Vec` takes them far more cheaply than a chain of writers.
struct Out<W: Write> {
    inner: W,
    buf: Vec<u8>,
    bytes: u64,
    first: bool,
}

const CHUNK_BYTES: usize = 1 << 16;

impl<W: Write> Out<W> {
    fn raw(&mut self, bytes: &[u8]) -> Result<(), ExportError> {
        self.buf.extend_from_slice(bytes);
        self.spill(CHUNK_BYTES)
    }

    fn event<T: Serialize>(&mut self, ev: &T) -> Result<(), ExportError> {
        let sep: &[u8] = if self.first { b"\n" } else { b",\n" };
        self.first = false;
        self.buf.extend_from_slice(sep);
        serde_json::to_writer(&mut self.buf, ev)?;
        self.spill(CHUNK_BYTES)
    }

    fn value<T: Serialize>(&mut self, v: &T) -> Result<(), ExportError> {
        serde_json::to_writer(&mut self.buf, v)?;
        self.spill(CHUNK_BYTES)
    }

    /// Writes the buffer out once it holds at least `threshold` bytes.
    fn spill(&mut self, threshold: usize) -> Result<(), ExportError> {
        if self.buf.len() >= threshold {
            self.inner
                .write_all(&self.buf)
                .map_err(ExportError::stream(FORMAT))?;
            self.bytes += self.buf.len() as u64;
            self.buf.clear();
        }
        Ok(())
    }

    fn finish(mut self) -> Result<u64, ExportError> {
        self.spill(0)?;
        self.inner.flush().map_err(ExportError::stream(FORMAT))?;
        Ok(self.bytes)
    }
}

/// The pid stride S: 1000, or the next power of ten above `max_rank + 1`.
fn pid_stride(max_rank: u64) -> u64 {
    let mut s = 1000u64;
    while s <= max_rank + 1 {
        s = s.saturating_mul(10);
    }
    s
}

/// `ns` nanoseconds plus a quarter, in microseconds: a reader that multiplies by 1000 and then
/// truncates gets `ns`, and so does one that rounds. Exact decimal nanoseconds would not do:
/// 12.345 µs is 12344.999… ns in binary, and truncating readers would then make back-to-back
/// accesses overlap by 1 ns, which Perfetto drops ("slice_drop_overlapping_complete_event").
fn quarter_ns_in_us(ns: u64) -> f64 {
    (ns as f64 + 0.25) / 1000.0
}

/// Writes `src` as Chrome Trace Event JSON.
///
/// # Layout
/// ```text
/// {"traceEvents":[
///   {"name":"process_name","ph":"M","pid":P,"tid":0,"args":{"name":"launch 0 k · SM 3"}}, …
///   {"name":"thread_name","ph":"M","pid":P,"tid":T,"args":{"name":"warp slot 5"}}, …
///   {"name":SITE,"cat":REGION,"ph":"X","pid":P,"tid":T,"ts":µs,"dur":µs,
///    "args":{"site":…,"block":[x,y,z],"warp":…,"global_warp":…,"seq":…,"start":…,"end":…}}, …
///   {"name":"dropped records","ph":"C","pid":P,"ts":µs,"args":{"dropped":N}}, …
/// ],"displayTimeUnit":"ns","otherData":{…launch, totals…}}
/// ```
/// * One complete (`"X"`) event per record, so Perfetto's slice count equals the record count.
/// * pid = launch·S + rank + 1 and tid = thread + 1, where (rank, thread) is the
///   [`crate::TimelineMapping`] (default rank = SM, thread = warp slot) and S = 1000, or the
///   next power of ten above the largest rank + 1. Neither is ever 0 (Perfetto reserves pid 0
///   and tid 0 for the system).
/// * ts = (start − the SM's earliest kernel-begin clock) / clock_mhz and dur = (end − start) /
///   clock_mhz, in microseconds (the format's unit), rounded to whole nanoseconds (start and end
///   separately, so back-to-back accesses never overlap) and written as ns + ¼ so that readers
///   that truncate and readers that round both get those nanoseconds. `start`/`end` in args
///   are the raw cycles, so nothing is lost to floating point.
/// * A record with a wrapped clock (end < start) gets dur 0 and category `wrapped`; a warp with
///   dropped records gets a `"C"` counter sample "dropped records" at its kernel end (counters
///   are not slices, so the slice count stays the record count). Totals go in `otherData`.
/// * Events come warp by warp (trace order), not sorted: the format does not need it.
///
/// Every string goes through serde_json, so site and kernel names are escaped properly.
pub fn write_chrome<S, W>(
    src: &S,
    out: W,
    opts: &ExportOptions,
) -> Result<ExportSummary, ExportError>
where
    S: TraceSource + ?Sized,
    W: Write,
{
    let launch = src.launch();
    let mhz = clock_hz(launch)? / 1e6;
    let mapping = opts.mapping();
    let layout = Layout::scan(src, mapping)?;
    let max_rank = layout.lines.iter().map(|l| l.0).max().unwrap_or(0);
    let stride = pid_stride(max_rank);
    let pid = |rank: u64| launch.launch as u64 * stride + rank + 1;
    let mut out = Out {
        inner: out,
        buf: Vec::with_capacity(CHUNK_BYTES + 4096),
        bytes: 0,
        first: true,
    };
    out.raw(b"{\"traceEvents\":[")?;

    let (rank_word, thread_word) = (mapping.rank_word(), mapping.thread_word());
    let mut last_rank = None;
    for &(rank, thread) in &layout.lines {
        if last_rank != Some(rank) {
            last_rank = Some(rank);
            let name = format!(
                "launch {} {} · {rank_word} {rank}",
                launch.launch, launch.kernel
            );
            out.event(&Meta {
                name: "process_name",
                ph: "M",
                pid: pid(rank),
                tid: 0,
                args: MetaArgs { name: &name },
            })?;
        }
        let name = format!("{thread_word} {thread}");
        out.event(&Meta {
            name: "thread_name",
            ph: "M",
            pid: pid(rank),
            tid: thread + 1,
            args: MetaArgs { name: &name },
        })?;
    }

    let mut summary = ExportSummary {
        warps: layout.warps,
        dropped: layout.dropped,
        ..Default::default()
    };
    let mut undeclared = String::new();
    for i in 0..src.warp_count() {
        let (h, records) = src.open_warp(i, 1 << 16)?;
        let (rank, thread) = mapping.line(launch, &h);
        let base = layout.base(h.sm.0);
        let ns = |cycles: u64| (cycles.saturating_sub(base) as f64 * 1000.0 / mhz).round() as u64;
        for rec in records {
            let rec = rec?;
            let wrapped = rec.wrapped();
            let (name, cat) = match launch.site(rec.site) {
                Some(s) => (s.name.as_str(), s.region.name()),
                None => {
                    undeclared.clear();
                    use std::fmt::Write as _;
                    let _ = write!(undeclared, "site {}", rec.site);
                    (undeclared.as_str(), "undeclared")
                }
            };
            summary.records += 1;
            summary.wrapped += wrapped as u64;
            let start_ns = ns(rec.start.0);
            let end_ns = if wrapped { start_ns } else { ns(rec.end.0) };
            out.event(&Slice {
                name,
                cat: if wrapped { "wrapped" } else { cat },
                ph: "X",
                pid: pid(rank),
                tid: thread + 1,
                ts: quarter_ns_in_us(start_ns),
                dur: quarter_ns_in_us(end_ns - start_ns),
                args: SliceArgs {
                    site: rec.site,
                    block: h.block,
                    warp: h.warp,
                    global_warp: h.global_warp,
                    seq: rec.seq,
                    start: rec.start.0,
                    end: rec.end.0,
                },
            })?;
        }
        if h.dropped > 0 {
            out.event(&Counter {
                name: "dropped records",
                ph: "C",
                pid: pid(rank),
                ts: quarter_ns_in_us(ns(h.end.0)),
                args: CounterArgs { dropped: h.dropped },
            })?;
        }
    }
    let other = serde_json::json!({
        "kernel": launch.kernel,
        "launch": launch.launch,
        "mode": launch.mode.name(),
        "clock_mhz": launch.clock_mhz,
        "backend": launch.backend,
        "device": launch.device,
        "records": summary.records,
        "dropped_records": summary.dropped,
        "wrapped_records": summary.wrapped,
        "time_origin": "each SM's earliest kernel-begin clock",
    });
    out.raw(b"\n],\"displayTimeUnit\":\"ns\",\"otherData\":")?;
    out.value(&other)?;
    out.raw(b"}\n")?;
    summary.bytes = out.finish()?;
    Ok(summary)
}

/// One complete event read back from a Chrome trace.
#[derive(Debug, Clone, PartialEq)]
pub struct ChromeSlice {
    pub name: String,
    pub cat: String,
    pub pid: u64,
    pub tid: u64,
    /// Microseconds.
    pub ts: f64,
    pub dur: f64,
    pub args: SliceArgs,
}

/// What [`read_chrome`] returns: the slices, the metadata names and the dropped counters.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChromeTrace {
    pub slices: Vec<ChromeSlice>,
    /// `(pid, tid, name)` of every process_name (tid 0) and thread_name event.
    pub names: Vec<(u64, u64, String)>,
    /// `(pid, dropped)` of every "dropped records" counter sample.
    pub dropped: Vec<(u64, u32)>,
    pub other_data: serde_json::Value,
}

/// Reads a Chrome trace written by [`write_chrome`] (tests; the whole file in memory).
pub fn read_chrome<R: Read>(input: R) -> Result<ChromeTrace, ExportError> {
    #[derive(serde::Deserialize)]
    struct File {
        #[serde(rename = "traceEvents")]
        events: Vec<serde_json::Value>,
        #[serde(rename = "otherData", default)]
        other: serde_json::Value,
    }
    let file: File = serde_json::from_reader(input)?;
    let mut t = ChromeTrace {
        other_data: file.other,
        ..Default::default()
    };
    for (i, ev) in file.events.into_iter().enumerate() {
        let bad = |what: &str| ExportError::parse(FORMAT, format!("event {i}"), what.to_string());
        let str_of = |k: &str| ev.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let u64_of = |k: &str| ev.get(k).and_then(|v| v.as_u64());
        let ph = str_of("ph").ok_or_else(|| bad("no ph"))?;
        let pid = u64_of("pid").ok_or_else(|| bad("no pid"))?;
        match ph.as_str() {
            "X" => t.slices.push(ChromeSlice {
                name: str_of("name").ok_or_else(|| bad("no name"))?,
                cat: str_of("cat").unwrap_or_default(),
                pid,
                tid: u64_of("tid").ok_or_else(|| bad("no tid"))?,
                ts: ev
                    .get("ts")
                    .and_then(|v| v.as_f64())
                    .ok_or_else(|| bad("no ts"))?,
                dur: ev
                    .get("dur")
                    .and_then(|v| v.as_f64())
                    .ok_or_else(|| bad("no dur"))?,
                args: serde_json::from_value(ev.get("args").cloned().unwrap_or_default())?,
            }),
            "M" => {
                let name = ev
                    .pointer("/args/name")
                    .and_then(|v| v.as_str())
                    .ok_or_else(|| bad("no args.name"))?;
                t.names
                    .push((pid, u64_of("tid").unwrap_or(0), name.to_string()));
            }
            "C" => {
                let n = ev
                    .pointer("/args/dropped")
                    .and_then(|v| v.as_u64())
                    .ok_or_else(|| bad("no args.dropped"))?;
                t.dropped.push((
                    pid,
                    u32::try_from(n).map_err(|_| bad("dropped out of range"))?,
                ));
            }
            other => return Err(bad(&format!("unexpected ph {other:?}"))),
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::{Cycles, Dim3, LaunchInfo, Record, Region, SiteInfo, SmId, Trace, WarpTrace};

    fn trace() -> Trace {
        let mut launch = LaunchInfo::new("ker\"nel", Dim3::new(2, 1, 1), Dim3::new(32, 1, 1))
            .with_sites(vec![SiteInfo::new(0, "tex\\1", Region::Texture)])
            .with_clock(2000.0);
        launch.launch = 2;
        let mut warps = Vec::new();
        for g in 0..2u32 {
            let mut w = WarpTrace::new([g, 0, 0], 0, g, SmId(4 + g));
            w.hw_warp = 3;
            w.begin = Cycles(10_000 * (g as u64 + 1));
            w.end = w.begin + Cycles(4000);
            w.dropped = g;
            w.records = vec![
                Record {
                    site: 0,
                    seq: 0,
                    start: w.begin + Cycles(200),
                    end: w.begin + Cycles(600),
                },
                Record {
                    site: 9,
                    seq: 1,
                    start: w.begin + Cycles(700),
                    end: w.begin + Cycles(100),
                },
            ];
            warps.push(w);
        }
        Trace { launch, warps }
    }

    #[test]
    fn slices_carry_aligned_microseconds_and_exact_cycles() {
        let t = trace();
        let mut out = Vec::new();
        let s = write_chrome(&t, &mut out, &ExportOptions::default()).unwrap();
        assert_eq!(s.bytes, out.len() as u64);
        let back = read_chrome(&out[..]).unwrap();
        assert_eq!(back.slices.len(), 4);
        let a = &back.slices[0];
        assert_eq!((a.name.as_str(), a.cat.as_str()), ("tex\\1", "texture"));
        // launch 2, SM 4: pid = 2·1000 + 4 + 1; slot 3 → tid 4; 200 cycles at 2000 MHz = 0.1 µs.
        assert_eq!((a.pid, a.tid), (2005, 4));
        assert_eq!(
            ((a.ts * 1000.0) as u64, (a.dur * 1000.0).round() as u64),
            (100, 200)
        );
        let w = &back.slices[1];
        assert_eq!(
            (w.cat.as_str(), (w.dur * 1000.0) as u64, w.name.as_str()),
            ("wrapped", 0, "site 9")
        );
        // The second warp is on SM 5: aligned to its own begin, so the same ts.
        assert_eq!((back.slices[2].ts * 1000.0) as u64, 100);
        assert_eq!(back.slices[2].args.start, 20_200);
        assert_eq!(back.dropped, vec![(2006, 1)]);
        assert!(
            back.names
                .contains(&(2005, 0, "launch 2 ker\"nel · SM 4".into()))
        );
        assert!(back.names.contains(&(2006, 4, "warp slot 3".into())));
        assert!(back.names.iter().all(|n| n.0 != 0));
        assert!(back.slices.iter().all(|s| s.pid != 0 && s.tid != 0));
        assert_eq!(back.other_data["wrapped_records"], 2);
    }

    #[test]
    fn quarter_nanoseconds_survive_truncation_and_rounding() {
        for ns in [0u64, 1, 12_345, 999_999_999, 123_456_789_012] {
            let us = quarter_ns_in_us(ns);
            assert_eq!((us * 1000.0) as u64, ns);
            assert_eq!((us * 1000.0).round() as u64, ns);
        }
    }

    #[test]
    fn pid_stride_leaves_room_for_every_rank() {
        assert_eq!(pid_stride(0), 1000);
        assert_eq!(pid_stride(998), 1000);
        assert_eq!(pid_stride(999), 10_000);
        assert_eq!(pid_stride(123_456), 1_000_000);
    }
}
