//! OTF2 archives read back by the OTF2 library's own readers, its C tool `otf2-print` and its
//! Python module (`otf2.reader.open`, through `otf2_dump.py`): every record is exactly one Enter
//! and one Leave of its site's region at its aligned clocks with its access time as a metric,
//! locations are the mapping's lines, timestamps rise per location, and dropped records show as
//! measurement off/on. Where the library or a reader is missing the tests say so and skip, and
//! fail under CI (`scripts/test` installs them).

use crate::peak_heap_bytes;
use export::{
    ExportError, ExportOptions, ExportSummary, Format, SyntheticTrace, TimelineMapping,
    TraceSource, export,
};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use trace::{
    Cycles, Dim3, LaunchInfo, ProbeMode, Record, RecordKind, Region, SiteInfo, SmId, Trace,
    TraceReader, WarpTrace,
};

/// The interpreter Debian's python3-otf2 installs the module for.
const PYTHON: &str = "/usr/bin/python3";

fn dump_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/integration/otf2_dump.py")
}

/// Skips the calling test with `why`, or fails it under CI, where every prerequisite is
/// installed.
fn skip(test: &str, why: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test} cannot run under CI: {why}");
    }
    eprintln!("SKIPPED {test}: {why}");
}

/// Why the readers cannot run here, if they cannot.
fn missing_readers() -> Option<String> {
    let print = Command::new("otf2-print").arg("--version").output();
    if !print.is_ok_and(|o| o.status.success()) {
        return Some("otf2-print is not installed (apt-get install otf2-tools)".into());
    }
    let py = Command::new(PYTHON).args(["-c", "import otf2"]).output();
    if !py.is_ok_and(|o| o.status.success()) {
        return Some(format!(
            "the otf2 module is not installed for {PYTHON} (apt-get install python3-otf2)"
        ));
    }
    None
}

/// Exports `src` to `dir/otf2`, or says why it cannot here: the library or a reader missing.
fn exported<S: TraceSource + ?Sized>(
    test: &str,
    src: &S,
    opts: &ExportOptions,
    dir: &Path,
) -> Option<(PathBuf, ExportSummary)> {
    if let Some(why) = missing_readers() {
        skip(test, &why);
        return None;
    }
    let out = dir.join(Format::Otf2.default_file_name());
    match export(src, Format::Otf2, &out, opts) {
        Ok(s) => Some((out, s)),
        Err(e @ ExportError::Otf2Missing { .. }) => {
            skip(test, &e.to_string());
            None
        }
        Err(e) => panic!("OTF2 export failed: {e}"),
    }
}

#[derive(Debug, Deserialize)]
struct Dump {
    clock: Clock,
    locations: Vec<Location>,
    regions: Vec<RegionDef>,
    events: Vec<Event>,
}

#[derive(Debug, Deserialize)]
struct Clock {
    resolution: u64,
    offset: u64,
    length: u64,
}

/// OTF2's numbers of the enumerations the dump holds.
const CPU_THREAD: u8 = 1;
const ACCELERATOR_STREAM: u8 = 2;
const PROCESS: u8 = 1;
const ACCELERATOR: u8 = 2;
const MEASUREMENT_ON: u8 = 1;
const MEASUREMENT_OFF: u8 = 2;

#[derive(Debug, Deserialize)]
struct Location {
    #[serde(rename = "ref")]
    id: u64,
    name: String,
    #[serde(rename = "type")]
    kind: u8,
    events: u64,
    group: String,
    group_type: u8,
    creator: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RegionDef {
    name: String,
    description: String,
}

#[derive(Debug, Deserialize)]
struct Event {
    loc: u64,
    kind: String,
    time: u64,
    region: Option<String>,
    metric: Option<Vec<String>>,
    values: Option<Vec<u64>>,
    mode: Option<u8>,
    #[serde(default)]
    attrs: BTreeMap<String, serde_json::Value>,
}

fn python_dump(archive: &Path) -> Dump {
    let anchor = archive.join("traces.otf2");
    let out = Command::new(PYTHON)
        .arg(dump_script())
        .arg(&anchor)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "otf2_dump.py failed ({:?}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Events of each kind that `otf2-print` lists (its first column; an event's attributes follow
/// on a line of their own), after checking that it read the archive without a complaint.
fn otf2_print_counts(archive: &Path) -> BTreeMap<String, u64> {
    let out = Command::new("otf2-print")
        .arg(archive.join("traces.otf2"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.trim().is_empty(),
        "otf2-print ({:?}):\n{stderr}",
        out.status
    );
    let mut counts = BTreeMap::new();
    let text = String::from_utf8_lossy(&out.stdout);
    let events = text
        .lines()
        .skip_while(|l| !l.starts_with("Event "))
        .skip(2);
    for line in events {
        match line.split_whitespace().next() {
            Some("ADDITIONAL") | None => {}
            Some(kind) => *counts.entry(kind.to_string()).or_insert(0) += 1,
        }
    }
    counts
}

/// One access as the archive holds it: its region's Enter and Leave, the metric before the
/// Leave, and the Enter's attributes.
#[derive(Debug)]
struct Access {
    region: String,
    enter: u64,
    leave: u64,
    metric: Option<u64>,
    attrs: BTreeMap<String, serde_json::Value>,
}

/// What the archive holds for one warp: its location, its accesses in order, and its
/// measurement off/on.
#[derive(Debug, Default)]
struct GotWarp {
    location: (String, String),
    kernel_attrs: BTreeMap<String, serde_json::Value>,
    accesses: Vec<Access>,
    /// `(time, dropped records)` of the measurement-off event, and whether it was turned on
    /// again.
    off: Option<(u64, u64)>,
    on_again: bool,
}

/// Reads back `archive` with both readers and checks it against `src`; returns the Python
/// reader's dump for further checks.
fn check_archive<S: TraceSource + ?Sized>(
    src: &S,
    mapping: TimelineMapping,
    archive: &Path,
    summary: &ExportSummary,
) -> Dump {
    let launch = src.launch();
    let dump = python_dump(archive);
    assert_eq!(
        dump.clock.resolution,
        (launch.clock_mhz * 1e6).round() as u64
    );
    assert_eq!(dump.clock.offset, 0);

    // The source, warp by warp, with each SM's clock origin.
    let mut warps = Vec::new();
    let mut base: BTreeMap<u32, u64> = BTreeMap::new();
    for i in 0..src.warp_count() {
        let (h, recs) = src.open_warp(i, 4096).unwrap();
        let recs: Vec<Record> = recs.collect::<Result<_, _>>().unwrap();
        let b = base.entry(h.sm.0).or_insert(h.begin.0);
        *b = (*b).min(h.begin.0);
        warps.push((h, recs));
    }

    // Locations: the mapping's lines, in accelerator groups created by the host process.
    let by_id: BTreeMap<u64, &Location> = dump.locations.iter().map(|l| (l.id, l)).collect();
    let mut want_lines: Vec<(String, String)> = warps
        .iter()
        .map(|(h, _)| {
            let (rank, thread) = mapping.line(launch, h);
            (
                format!("{} {rank}", mapping.rank_word()),
                format!("{} {thread}", mapping.thread_word()),
            )
        })
        .collect();
    want_lines.sort();
    want_lines.dedup();
    let mut got_lines: Vec<(String, String)> = Vec::new();
    for l in &dump.locations {
        if l.group == "host" {
            assert_eq!((l.kind, l.group_type, l.events), (CPU_THREAD, PROCESS, 0));
        } else {
            assert_eq!(
                (l.kind, l.group_type, l.creator.as_deref()),
                (ACCELERATOR_STREAM, ACCELERATOR, Some("host"))
            );
            got_lines.push((l.group.clone(), l.name.clone()));
        }
    }
    got_lines.sort();
    assert_eq!(got_lines, want_lines);

    // Each location's events: as many as its definition says, in non-decreasing time, and
    // nested kernel → accesses.
    let kernel = launch.kernel.as_str();
    let mut per_location: BTreeMap<u64, Vec<&Event>> = BTreeMap::new();
    for e in &dump.events {
        per_location.entry(e.loc).or_default().push(e);
    }
    let mut got: BTreeMap<u64, GotWarp> = BTreeMap::new();
    let mut last_time_seen = 0;
    for (loc, events) in &per_location {
        let l = by_id[loc];
        assert_eq!(events.len() as u64, l.events, "{} {}", l.group, l.name);
        assert!(
            events.windows(2).all(|p| p[0].time <= p[1].time),
            "time goes backwards on {} {}",
            l.group,
            l.name
        );
        last_time_seen = last_time_seen.max(events.last().map_or(0, |e| e.time));
        let mut current: Option<u64> = None;
        let mut metric = None;
        let mut open: Option<(String, u64, BTreeMap<String, serde_json::Value>)> = None;
        for e in events {
            match (e.kind.as_str(), e.region.as_deref()) {
                ("Enter", Some(r)) if r == kernel && current.is_none() => {
                    let g = e.attrs["global warp"].as_u64().unwrap();
                    assert_eq!(e.attrs["probe mode"], launch.mode.name());
                    let w = got.entry(g).or_default();
                    w.location = (l.group.clone(), l.name.clone());
                    w.kernel_attrs = e.attrs.clone();
                    current = Some(g);
                }
                ("Leave", Some(r)) if r == kernel => {
                    assert!(open.is_none(), "kernel left inside an access");
                    current = None;
                }
                ("Enter", Some(r)) => {
                    assert!(current.is_some() && open.is_none(), "{e:?}");
                    open = Some((r.to_string(), e.time, e.attrs.clone()));
                }
                ("Metric", None) => {
                    assert_eq!(e.metric.as_deref(), Some(&["access time".to_string()][..]));
                    metric = e.values.as_ref().map(|v| v[0]);
                    assert_eq!(e.values.as_ref().map(Vec::len), Some(1));
                }
                ("Leave", Some(r)) => {
                    let (region, enter, attrs) = open.take().expect("leave without enter");
                    assert_eq!(region, r);
                    let w = got.get_mut(&current.unwrap()).unwrap();
                    w.accesses.push(Access {
                        region,
                        enter,
                        leave: e.time,
                        metric: metric.take(),
                        attrs,
                    });
                }
                ("MeasurementOnOff", None) => {
                    let w = got.get_mut(&current.unwrap()).unwrap();
                    match e.mode {
                        Some(MEASUREMENT_OFF) => {
                            let n = e.attrs["dropped records"].as_u64().unwrap();
                            w.off = Some((e.time, n));
                        }
                        Some(MEASUREMENT_ON) => w.on_again = true,
                        other => panic!("measurement mode {other:?}"),
                    }
                }
                other => panic!("unexpected event {other:?}: {e:?}"),
            }
        }
        assert!(current.is_none() && open.is_none());
    }
    assert!(dump.clock.length >= last_time_seen);

    // Every warp: on its line, every record one access of its site's region at its clocks.
    let site_name = |site: u16| {
        launch
            .site(site)
            .map(|s| s.name.clone())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| format!("site {site}"))
    };
    let mut records = 0;
    for (h, recs) in &warps {
        let w = &got[&(h.global_warp as u64)];
        let (rank, thread) = mapping.line(launch, h);
        assert_eq!(
            w.location,
            (
                format!("{} {rank}", mapping.rank_word()),
                format!("{} {thread}", mapping.thread_word())
            )
        );
        assert_eq!(w.kernel_attrs["block x"], h.block[0]);
        assert_eq!(w.kernel_attrs["warp"], h.warp);
        assert_eq!(w.accesses.len(), recs.len(), "warp {}", h.global_warp);
        let b = base[&h.sm.0];
        for (rec, a) in recs.iter().zip(&w.accesses) {
            assert_eq!(a.region, site_name(rec.site));
            let (attrs, length) = (&a.attrs, a.leave - a.enter);
            match attrs.get("clock") {
                None => {
                    assert_eq!((a.enter, a.leave), (rec.start.0 - b, rec.end.0 - b));
                    assert_eq!(a.metric, Some(rec.duration().0));
                }
                Some(why) => {
                    assert_eq!(
                        why,
                        if rec.wrapped() {
                            "wrapped"
                        } else {
                            "reordered"
                        }
                    );
                    assert_eq!(
                        (&attrs["start"], &attrs["end"]),
                        (&rec.start.0.into(), &rec.end.0.into())
                    );
                    if rec.wrapped() {
                        assert_eq!((a.metric, length), (None, 0));
                    } else {
                        let d = rec.duration().0;
                        assert_eq!((a.metric, length), (Some(d), d));
                    }
                }
            }
        }
        if h.dropped > 0 {
            assert_eq!(w.off.map(|o| o.1), Some(h.dropped as u64));
            assert!(w.on_again);
        } else {
            assert!(w.off.is_none() && !w.on_again);
        }
        records += recs.len() as u64;
    }
    assert_eq!(summary.records, records);
    let dropped_warps = warps.iter().filter(|(h, _)| h.dropped > 0).count() as u64;
    assert_eq!(
        summary.dropped,
        warps.iter().map(|(h, _)| h.dropped as u64).sum::<u64>()
    );

    // The C reader sees the same events.
    let counts = otf2_print_counts(archive);
    let n = warps.len() as u64;
    let count = |k: &str| counts.get(k).copied().unwrap_or(0);
    assert_eq!(count("ENTER"), records + n, "{counts:?}");
    assert_eq!(count("LEAVE"), records + n, "{counts:?}");
    assert_eq!(count("METRIC"), records - summary.wrapped, "{counts:?}");
    assert_eq!(count("MEASUREMENT_ON_OFF"), 2 * dropped_warps, "{counts:?}");
    assert_eq!(
        counts.values().sum::<u64>(),
        dump.events.len() as u64,
        "{counts:?}"
    );
    dump
}

#[test]
fn a_stored_trace_reads_back_record_for_record_in_both_mappings() {
    let test = "a_stored_trace_reads_back_record_for_record_in_both_mappings";
    let dir = tempfile::tempdir().unwrap();
    let synth = SyntheticTrace::new(3, 4, 3, 25).with_dropped_every(7);
    let store = dir.path().join(trace::TRACE_FILE_NAME);
    synth.write_store(&store).unwrap();
    let reader = TraceReader::open(&store).unwrap();
    for mapping in [TimelineMapping::SmSlot, TimelineMapping::BlockWarp] {
        let opts = ExportOptions::default().with_mapping(mapping);
        let Some((archive, s)) = exported(test, &reader, &opts, dir.path()) else {
            return;
        };
        assert_eq!((s.records, s.wrapped, s.reordered), (3 * 4 * 3 * 25, 0, 0));
        let dump = check_archive(&reader, mapping, &archive, &s);
        let names: Vec<&str> = dump.regions.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["synthetic", "tex3D(volume)", "d_output[i]"]);
        assert_eq!(dump.regions[1].description, "texture");
        let slots = dump.locations.iter().filter(|l| l.group != "host").count();
        let want = match mapping {
            TimelineMapping::SmSlot => 3 * 4,
            TimelineMapping::BlockWarp => 3 * 4 * 3,
        };
        assert_eq!(slots, want);
        assert!(s.bytes > 0);
    }
}

/// A warp with a reordered, a wrapped and an undeclared-site record and a full log, and a
/// second warp on the same slot that begins before the first ended.
fn awkward() -> Trace {
    let launch = LaunchInfo::new("k", Dim3::new(2, 1, 1), Dim3::new(32, 1, 1))
        .with_probe(ProbeMode::Fence, RecordKind::Trace)
        .with_sites(vec![
            SiteInfo::new(0, "a.cu:10", Region::Global),
            SiteInfo::new(1, "", Region::Texture),
        ])
        .with_clock(1000.0);
    let rec = |site, seq, start, end| Record {
        site,
        seq,
        start: Cycles(start),
        end: Cycles(end),
    };
    let mut first = WarpTrace::new([0, 0, 0], 0, 0, SmId(2));
    first.begin = Cycles(5000);
    first.end = Cycles(5400);
    first.dropped = 4;
    first.records = vec![
        rec(0, 0, 5010, 5100),
        rec(1, 1, 5050, 5080),
        rec(0, 2, 5200, 5150),
        rec(9, 3, 5300, 5350),
    ];
    let mut second = WarpTrace::new([1, 0, 0], 0, 1, SmId(2));
    second.begin = Cycles(5300);
    second.end = Cycles(5600);
    second.records = vec![rec(1, 0, 5310, 5390)];
    Trace {
        launch,
        warps: vec![first, second],
    }
}

#[test]
fn corrected_records_are_marked_and_time_still_rises() {
    let test = "corrected_records_are_marked_and_time_still_rises";
    let dir = tempfile::tempdir().unwrap();
    let t = awkward();
    let Some((archive, s)) = exported(test, &t, &ExportOptions::default(), dir.path()) else {
        return;
    };
    // The backwards record and the whole second warp are moved; one clock wrapped.
    assert_eq!((s.records, s.wrapped, s.reordered, s.dropped), (5, 1, 2, 4));
    let dump = check_archive(&t, TimelineMapping::SmSlot, &archive, &s);
    let names: Vec<(&str, &str)> = dump
        .regions
        .iter()
        .map(|r| (r.name.as_str(), r.description.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("k", "the kernel: a warp's kernel begin to its kernel end"),
            ("a.cu:10", "global"),
            ("site 1", "texture"),
            ("site 9", "a site the launch does not declare"),
        ]
    );
    // Both warps share SM 2's slot 0; the second begins where the first ended (aligned 400).
    let kernels: Vec<u64> = dump
        .events
        .iter()
        .filter(|e| e.region.as_deref() == Some("k"))
        .map(|e| e.time)
        .collect();
    assert_eq!(kernels, [0, 400, 400, 700]);
}

#[test]
fn an_emulator_run_reads_back_record_for_record() {
    let test = "an_emulator_run_reads_back_record_for_record";
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/emu_render.wst");
    let reader = TraceReader::open(&fixture).unwrap();
    assert_eq!(reader.launch().backend, "emu");
    let dir = tempfile::tempdir().unwrap();
    let Some((archive, s)) = exported(test, &reader, &ExportOptions::default(), dir.path()) else {
        return;
    };
    assert!(s.records > 0);
    let dump = check_archive(&reader, TimelineMapping::SmSlot, &archive, &s);
    for site in &reader.launch().sites {
        assert!(dump.regions.iter().any(|r| r.name == site.name), "{site:?}");
    }
}

/// Every file of `archive`, by its path inside it.
fn files(archive: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![archive.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let rel = path.strip_prefix(archive).unwrap().to_path_buf();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// The anchor file as `otf2-print -A` shows it, without the trace identifier.
fn anchor_without_id(archive: &Path) -> String {
    let out = Command::new("otf2-print")
        .arg("-A")
        .arg(archive.join("traces.otf2"))
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with("Trace identifier"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_same_trace_gives_the_same_archive_but_for_its_identifier() {
    let test = "the_same_trace_gives_the_same_archive_but_for_its_identifier";
    let synth = SyntheticTrace::new(2, 3, 2, 20).with_dropped_every(5);
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let opts = ExportOptions::default();
    let (Some((first, _)), Some((second, _))) = (
        exported(test, &synth, &opts, a.path()),
        exported(test, &synth, &opts, b.path()),
    ) else {
        return;
    };
    let (mut x, mut y) = (files(&first), files(&second));
    assert_eq!(x.keys().collect::<Vec<_>>(), y.keys().collect::<Vec<_>>());
    // The library draws a trace identifier for each archive, to tell archives apart; it lives
    // in the anchor file. Everything else is byte for byte the same.
    let anchor = PathBuf::from("traces.otf2");
    assert_eq!(
        x.remove(&anchor).map(|v| v.len()),
        y.remove(&anchor).map(|v| v.len())
    );
    assert_eq!(x, y);
    assert_eq!(anchor_without_id(&first), anchor_without_id(&second));
}

#[test]
fn a_million_records_keep_the_writers_heap_small() {
    let test = "a_million_records_keep_the_writers_heap_small";
    // 16 SMs × 32 slots × 2 waves × 1000 records = 1 024 000 records.
    let synth = SyntheticTrace::new(16, 32, 2, 1000).with_dropped_every(100);
    let dir = tempfile::tempdir().unwrap();
    let (result, peak) =
        peak_heap_bytes(|| exported(test, &synth, &ExportOptions::default(), dir.path()));
    let Some((_, s)) = result else {
        return;
    };
    assert_eq!(s.records, synth.record_count());
    // Enter, metric and leave per record: tens of MB on disk. OTF2's own buffer is C memory
    // (one location's at a time); the Rust side holds definitions and one warp's reader.
    assert!(s.bytes > 20 * s.records, "{} bytes", s.bytes);
    assert!(peak < 8 << 20, "OTF2 writer peaked at {peak} heap bytes");
}
