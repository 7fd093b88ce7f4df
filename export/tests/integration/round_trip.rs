//! Write → our reader preserves every record, in every format; the CLOG2 structure follows
//! the spec (COMMEVTs first, definitions before use, time order, balanced states).

use export::{
    Clog2Log, ExportOptions, Format, RecBody, SyntheticTrace, TimelineMapping, TraceSource, export,
    read_chrome, read_records_csv, read_warps_csv, write_chrome, write_clog2, write_records_csv,
};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Cursor;
use trace::{
    Cycles, Dim3, LaunchInfo, ProbeMode, Record, RecordKind, Region, SiteInfo, SmId, Trace,
    TraceReader, WarpTrace,
};

/// Every `(global_warp, record)` of a source, sorted.
fn all_records<S: TraceSource + ?Sized>(src: &S) -> Vec<(u32, Record)> {
    let mut out = Vec::new();
    for i in 0..src.warp_count() {
        let (h, recs) = src.open_warp(i, 4096).unwrap();
        for r in recs {
            out.push((h.global_warp, r.unwrap()));
        }
    }
    out.sort_by_key(|(g, r)| (*g, r.seq, r.start, r.end, r.site));
    out
}

/// Checks what clog2TOslog2 relies on; returns the number of dropped-record solo events.
fn check_clog2_structure(log: &Clog2Log) -> u64 {
    let p = &log.preamble;
    assert_eq!(log.records.last().map(|r| &r.1), Some(&RecBody::EndLog));
    assert_eq!(log.comm_table.len(), 1);
    assert_eq!((log.comm_table[0].local_id, log.comm_table[0].kind), (0, 1));
    let mut ranks_created = BTreeSet::new();
    let mut defined = BTreeSet::new();
    let mut pairs = BTreeMap::new(); // start etype → end etype
    let mut open: BTreeMap<(i32, i32, i32), i64> = BTreeMap::new();
    let mut last_time = f64::NEG_INFINITY;
    let mut dropped_events = 0;
    for (i, (h, body)) in log.records.iter().enumerate() {
        if matches!(body, RecBody::EndBlock | RecBody::EndLog) {
            continue;
        }
        assert!(
            h.time >= last_time,
            "record {i}: time {} after {last_time}",
            h.time
        );
        last_time = h.time;
        assert_eq!(h.icomm, 0);
        assert!(h.rank < p.max_comm_world_size && h.thread < p.max_thread_count);
        match body {
            RecBody::Comm {
                etype: 0,
                rank,
                wrank,
                icomm: 0,
                ..
            } => {
                assert_eq!((rank, wrank), (&h.rank, &h.rank));
                ranks_created.insert(h.rank);
            }
            RecBody::StateDef {
                start_etype,
                final_etype,
                color,
                ..
            } => {
                assert!(!color.is_empty(), "an empty colour crashes clog2TOslog2");
                defined.insert(*start_etype);
                defined.insert(*final_etype);
                pairs.insert(*start_etype, *final_etype);
            }
            RecBody::EventDef { etype, .. } => {
                defined.insert(*etype);
            }
            RecBody::Bare { etype } | RecBody::Cargo { etype, .. } => {
                assert!(
                    defined.contains(etype),
                    "record {i}: etype {etype} used before its def"
                );
                assert!(
                    ranks_created.contains(&h.rank),
                    "record {i}: rank {} has no COMMEVT",
                    h.rank
                );
                if *etype == export::DROPPED_ETYPE {
                    dropped_events += 1;
                } else if let Some(&end) = pairs.get(etype) {
                    *open.entry((h.rank, h.thread, end)).or_default() += 1;
                } else {
                    let n = open.entry((h.rank, h.thread, *etype)).or_default();
                    *n -= 1;
                    assert!(*n >= 0, "record {i}: state end with no open start");
                }
            }
            other => panic!("record {i}: unexpected {other:?}"),
        }
    }
    assert!(
        open.values().all(|&n| n == 0),
        "unbalanced states: {open:?}"
    );
    dropped_events
}

fn store_of(src: &SyntheticTrace, dir: &std::path::Path) -> TraceReader {
    let path = dir.join(trace::TRACE_FILE_NAME);
    src.write_store(&path).unwrap();
    TraceReader::open(&path).unwrap()
}

#[test]
fn every_format_preserves_every_record_of_a_stored_trace() {
    let dir = tempfile::tempdir().unwrap();
    let synth = SyntheticTrace::new(3, 4, 3, 25).with_dropped_every(7);
    let reader = store_of(&synth, dir.path());
    let want = all_records(&reader);
    assert_eq!(want.len(), 3 * 4 * 3 * 25);
    let dropped_warps = (0..36).filter(|g| g % 7 == 0).count() as u64;
    let opts = ExportOptions::default();
    let path = |f: Format| dir.path().join(f.default_file_name());

    let s = export(&reader, Format::Csv, &path(Format::Csv), &opts).unwrap();
    assert_eq!(
        (s.records, s.dropped),
        (want.len() as u64, 3 * dropped_warps)
    );
    let rows = read_records_csv(std::fs::File::open(path(Format::Csv)).unwrap()).unwrap();
    let mut got: Vec<(u32, Record)> = rows
        .iter()
        .map(|r| {
            let rec = Record {
                site: r.site,
                seq: r.seq,
                start: Cycles(r.start),
                end: Cycles(r.end),
            };
            assert_eq!(r.duration, Some(rec.duration().0));
            assert_eq!(r.mode, "auto");
            (r.global_warp, rec)
        })
        .collect();
    got.sort_by_key(|(g, r)| (*g, r.seq, r.start, r.end, r.site));
    assert_eq!(got, want);

    export(&reader, Format::WarpCsv, &path(Format::WarpCsv), &opts).unwrap();
    let warps = read_warps_csv(std::fs::File::open(path(Format::WarpCsv)).unwrap()).unwrap();
    assert_eq!(warps.len(), 36);
    assert_eq!(
        warps.iter().map(|w| w.count).sum::<u64>(),
        want.len() as u64
    );
    assert_eq!(
        warps.iter().filter(|w| w.dropped == 3).count() as u64,
        dropped_warps
    );

    let cases = [
        (TimelineMapping::SmSlot, 256),
        (TimelineMapping::BlockWarp, 256),
        // Two warps streamed from files, the other overlapping ones loaded whole.
        (TimelineMapping::SmSlot, 2),
    ];
    for (mapping, files) in cases {
        let opts = opts
            .clone()
            .with_mapping(mapping)
            .with_max_open_warp_files(files);
        let s = export(&reader, Format::Clog2, &path(Format::Clog2), &opts).unwrap();
        assert_eq!(
            s.bytes,
            std::fs::metadata(path(Format::Clog2)).unwrap().len()
        );
        let log = Clog2Log::read_path(&path(Format::Clog2)).unwrap();
        assert_eq!(check_clog2_structure(&log), dropped_warps);
        let (ranks, threads) = match mapping {
            TimelineMapping::SmSlot => (3, 4),
            TimelineMapping::BlockWarp => (9, 4),
        };
        assert_eq!(
            (
                log.preamble.max_comm_world_size,
                log.preamble.max_thread_count
            ),
            (ranks, threads)
        );
        let mut got: Vec<(u32, Record)> = log
            .accesses()
            .iter()
            .map(|a| (a.global_warp, a.record))
            .collect();
        got.sort_by_key(|(g, r)| (*g, r.seq, r.start, r.end, r.site));
        assert_eq!(got, want, "{mapping:?}");
        assert!(log.accesses().iter().all(|a| !a.anomaly));
    }

    export(&reader, Format::Chrome, &path(Format::Chrome), &opts).unwrap();
    let chrome = read_chrome(std::fs::File::open(path(Format::Chrome)).unwrap()).unwrap();
    let mut got: Vec<(u32, Record)> = chrome
        .slices
        .iter()
        .map(|s| {
            let a = s.args;
            (
                a.global_warp,
                Record {
                    site: a.site,
                    seq: a.seq,
                    start: Cycles(a.start),
                    end: Cycles(a.end),
                },
            )
        })
        .collect();
    got.sort_by_key(|(g, r)| (*g, r.seq, r.start, r.end, r.site));
    assert_eq!(got, want);
    assert_eq!(chrome.dropped.len() as u64, dropped_warps);
    // No temp file is left behind.
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp-"))
        .collect();
    assert!(leftovers.is_empty());
}

/// A warp spec for proptest: sm, slot, begin, lifetime, dropped, records (site, start offset, duration or wrap).
type WarpSpec = (u32, u32, u64, u64, u32, Vec<(u16, u64, i64)>);

fn trace_of(specs: &[WarpSpec]) -> Trace {
    let launch = LaunchInfo::new(
        "prop",
        Dim3::new(specs.len().max(1) as u32, 1, 1),
        Dim3::new(32, 1, 1),
    )
    .with_probe(ProbeMode::Naive, RecordKind::Trace)
    .with_sites(vec![
        SiteInfo::new(0, "a", Region::Global),
        SiteInfo::new(2, "c", Region::Constant),
    ])
    .with_clock(1005.0);
    let warps = specs
        .iter()
        .enumerate()
        .map(|(g, (sm, slot, begin, life, dropped, recs))| {
            let mut w = WarpTrace::new([g as u32, 0, 0], 0, g as u32, SmId(*sm));
            w.hw_warp = *slot;
            w.begin = Cycles(*begin);
            w.end = Cycles(begin + life);
            w.dropped = *dropped;
            w.records = recs
                .iter()
                .enumerate()
                .map(|(k, &(site, off, dur))| {
                    let start = begin.saturating_add(off).saturating_sub(50);
                    let end = start.saturating_add_signed(dur);
                    Record {
                        site,
                        seq: k as u32,
                        start: Cycles(start),
                        end: Cycles(end),
                    }
                })
                .collect();
            w
        })
        .collect();
    Trace { launch, warps }
}

fn warp_spec() -> impl Strategy<Value = WarpSpec> {
    (
        0u32..3,
        0u32..3,
        0u64..100_000,
        0u64..5_000,
        prop_oneof![3 => Just(0u32), 1 => 1u32..10],
        proptest::collection::vec((0u16..4, 0u64..6_000, -100i64..2_000), 0..12),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_traces_survive_every_format(specs in proptest::collection::vec(warp_spec(), 0..10)) {
        let t = trace_of(&specs);
        let want = all_records(&t);
        let wrapped = want.iter().filter(|(_, r)| r.wrapped()).count() as u64;

        let mut csv = Vec::new();
        let s = write_records_csv(&t, &mut csv).unwrap();
        prop_assert_eq!(s.wrapped, wrapped);
        let rows = read_records_csv(&csv[..]).unwrap();
        let mut got: Vec<(u32, Record)> = rows.iter().map(|r| {
            (r.global_warp, Record { site: r.site, seq: r.seq, start: Cycles(r.start), end: Cycles(r.end) })
        }).collect();
        got.sort_by_key(|(g, r)| (*g, r.seq, r.start, r.end, r.site));
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(rows.iter().filter(|r| r.wrapped && r.duration.is_none()).count() as u64, wrapped);

        // A small block size puts many block boundaries in a small trace.
        let opts = ExportOptions::default().with_clog2_block_bytes(256);
        let mut clog = Cursor::new(Vec::new());
        let s = write_clog2(&t, &mut clog, &opts).unwrap();
        prop_assert_eq!(s.wrapped, wrapped);
        let log = Clog2Log::read(&clog.get_ref()[..]).unwrap();
        let dropped_warps = t.warps.iter().filter(|w| w.dropped > 0).count() as u64;
        prop_assert_eq!(check_clog2_structure(&log), dropped_warps);
        let accesses = log.accesses();
        // Every wrapped or moved record is drawn in the anomaly state, never silently.
        prop_assert_eq!(accesses.iter().filter(|a| a.anomaly).count() as u64, s.wrapped + s.reordered);
        let mut got: Vec<(u32, Record)> = accesses.iter().map(|a| (a.global_warp, a.record)).collect();
        got.sort_by_key(|(g, r)| (*g, r.seq, r.start, r.end, r.site));
        prop_assert_eq!(&got, &want);

        let mut json = Vec::new();
        write_chrome(&t, &mut json, &ExportOptions::default()).unwrap();
        let chrome = read_chrome(&json[..]).unwrap();
        let mut got: Vec<(u32, Record)> = chrome.slices.iter().map(|s| {
            let a = s.args;
            (a.global_warp, Record { site: a.site, seq: a.seq, start: Cycles(a.start), end: Cycles(a.end) })
        }).collect();
        got.sort_by_key(|(g, r)| (*g, r.seq, r.start, r.end, r.site));
        prop_assert_eq!(&got, &want);
        prop_assert!(chrome.slices.iter().all(|s| s.pid > 0 && s.tid > 0 && s.dur >= 0.0 && s.ts >= 0.0));
    }
}
