//! The CLOG2 writer: one launch → one finalized, merged CLOG2 file that Jumpshot's
//! `clog2TOslog2` converts.
//!
//! The file layout and the choices made (timelines, states, payloads) are documented on
//! [`write_clog2`].

use crate::error::ExportError;
use crate::formats::clog2::{
    CLOG2_VERSION, CommEntry, FORMAT, HEADER_BYTES, PREAMBLE_BYTES, Preamble, RecBody, RecHeader,
    Uuid, encode_record,
};
#[cfg(feature = "clog2-read")]
use crate::formats::clog2_read::Clog2Log;
use crate::formats::site_label;
use crate::options::{ExportOptions, ExportSummary, clock_hz};
use crate::source::TraceSource;
use crate::timeline::{Ev, Layout, Merge, TimedEvent};
use std::io::{Seek, SeekFrom, Write};
#[cfg(feature = "clog2-read")]
use trace::Cycles;
use trace::Record;

/// The format of an access state (Jumpshot reads the cargo with it).
pub const ACCESS_FORMAT: &str = "site %d seq %d start %l end %l warp %d";
/// The format of the `other` (warp lifetime) state.
pub const LIFETIME_FORMAT: &str = "block (%d,%d,%d) warp %d gwarp %d";
/// Solo event id of "dropped records".
pub const DROPPED_ETYPE: i32 = 5000;

const USER_STATE_ID: i32 = 300;
const USER_EVENT_ID: i32 = 600;
const PALETTE: [&str; 10] = [
    "steel blue",
    "orange",
    "forest green",
    "magenta",
    "gold",
    "cyan",
    "brown",
    "slate blue",
    "turquoise",
    "violet red",
];
/// The WORLD communicator's ID: fixed, so the same trace gives the same bytes.
const WORLD: Uuid = Uuid {
    rand: 0x7773_6331,
    time: 0.0,
    name: *b"warpscope\0\0\0\0\0\0\0\0\0\0\0",
};

/// State indices after the declared sites.
struct States {
    sites: Vec<(u16, String)>,
}

impl States {
    fn unknown(&self) -> i32 {
        self.sites.len() as i32
    }
    fn anomaly(&self) -> i32 {
        self.sites.len() as i32 + 1
    }
    fn other(&self) -> i32 {
        self.sites.len() as i32 + 2
    }
    fn count(&self) -> i32 {
        self.sites.len() as i32 + 3
    }
    fn of_site(&self, site: u16) -> i32 {
        // Declared sites are few (one per WS_LOAD in the kernel): a scan is cheap.
        self.sites
            .iter()
            .position(|(id, _)| *id == site)
            .map_or(self.unknown(), |k| k as i32)
    }
    fn start(k: i32) -> i32 {
        USER_EVENT_ID + 2 * k
    }
    fn end(k: i32) -> i32 {
        USER_EVENT_ID + 2 * k + 1
    }
}

/// Packs records into blocks of `block_size` bytes and writes each full block.
struct Blocks<W: Write> {
    out: W,
    block: Vec<u8>,
    pos: usize,
    blocks: u64,
}

impl<W: Write> Blocks<W> {
    fn push(&mut self, h: &RecHeader, body: &RecBody) -> Result<(), ExportError> {
        let len = body.record_bytes();
        if self.pos + len + HEADER_BYTES >= self.block.len() {
            let end_block = RecHeader {
                icomm: 0,
                thread: 0,
                ..*h
            };
            self.close(&end_block, &RecBody::EndBlock)?;
        }
        self.pos += encode_record(h, body, &mut self.block[self.pos..]);
        Ok(())
    }

    fn close(&mut self, h: &RecHeader, terminator: &RecBody) -> Result<(), ExportError> {
        self.pos += encode_record(h, terminator, &mut self.block[self.pos..]);
        // Zero the rest: a reused buffer would otherwise leave stale bytes (harmless to
        // readers, but the output must be deterministic).
        self.block[self.pos..].fill(0);
        self.out
            .write_all(&self.block)
            .map_err(ExportError::stream(FORMAT))?;
        self.blocks += 1;
        self.pos = 0;
        Ok(())
    }
}

fn fits_i32(what: &'static str, v: u64) -> Result<i32, ExportError> {
    i32::try_from(v).map_err(|_| ExportError::TooLarge {
        format: FORMAT,
        what,
        value: v,
        max: i32::MAX as u64,
    })
}

fn access_cargo(rec: &Record, global_warp: u32) -> [u8; 32] {
    let mut b = [0u8; 32];
    b[0..4].copy_from_slice(&(rec.site as i32).to_be_bytes());
    b[4..8].copy_from_slice(&rec.seq.to_be_bytes());
    b[8..16].copy_from_slice(&rec.start.0.to_be_bytes());
    b[16..24].copy_from_slice(&rec.end.0.to_be_bytes());
    b[24..28].copy_from_slice(&global_warp.to_be_bytes());
    b
}

/// Writes `src` as CLOG2 to `out` (which must start empty at its current position; the
/// preamble is rewritten there at the end). Returns what was written.
///
/// # What the file holds
/// * **Timelines**: by default rank = SM and thread = hardware warp slot
///   ([`crate::TimelineMapping::SmSlot`]); [`crate::TimelineMapping::BlockWarp`] gives rank = linear block
///   index, thread = warp in block. `max_comm_world_size` = largest rank + 1,
///   `max_thread_count` = largest thread + 1. One COMMEVT (WORLD_CREATE, icomm 0) per rank in
///   use, before anything else; the comm table holds the one WORLD row (local ID 0, intra).
/// * **Time**: seconds = (clock − the SM's earliest kernel-begin clock) / (clock_mhz · 10⁶). SM
///   clocks are not synchronised, so each SM is aligned by its first kernel begin.
/// * **States** (stateID 300+k, events 600+2k / 601+2k, MPE's user numbering): one per declared
///   site k (named after the site), then `unknown site` (records whose site the launch does not
///   declare), `wrapped/reordered clock` (records whose end clock is before their start, drawn
///   with length 0, or that start before the warp's previous event and are drawn later so time
///   never goes backwards on a line), then `other`: the warp's whole lifetime, kernel begin to
///   kernel end. We chose the whole span (not the gaps between accesses) because it costs two
///   events per warp instead of two per record, and Jumpshot draws the access states nested
///   inside it, so the gaps show anyway.
/// * **Payloads** (CARGOEVT on each state's start event, big-endian, shown by Jumpshot through
///   the STATEDEF's format): an access carries `i32 site, i32 seq, i64 start, i64 end (raw
///   cycles), i32 global warp` ([`ACCESS_FORMAT`]), so every record survives exactly; `other`
///   carries `i32 block x, y, z, warp, global warp`.
/// * **Dropped records**: solo event 5000 `dropped records` (payload `i64 n`) after the warp's
///   last logged record.
/// * **Order**: COMMEVTs, then definitions (time 0), then all events in non-decreasing time
///   across timelines (k-way merge, see `timeline.rs`), blocks of `block_size` bytes closed by
///   ENDBLOCK (MPE's rule: a record of length L at offset p starts a new block when
///   p + L + 24 ≥ block_size), the last by ENDLOG, then the comm table.
///
/// Memory: one block buffer plus one read buffer per warp whose lifetime overlaps the merge
/// clock (up to [`ExportOptions::max_open_warp_files`] of them, so a high-occupancy trace does
/// not run out of file handles; warps overlapping beyond that are held in memory whole). The
/// preamble's `commtable_fptr` is known only at the end, so the writer needs `Seek`
/// to rewrite the first 1024 bytes.
pub fn write_clog2<S, W>(
    src: &S,
    out: W,
    opts: &ExportOptions,
) -> Result<ExportSummary, ExportError>
where
    S: TraceSource + ?Sized,
    W: Write + Seek,
{
    opts.validate()?;
    let launch = src.launch();
    let hz = clock_hz(launch)?;
    let seconds = |cycles: u64| cycles as f64 / hz;
    let layout = Layout::scan(src, opts.mapping())?;
    let max_rank = layout.lines.iter().map(|l| l.0).max().unwrap_or(0);
    let max_thread = layout.lines.iter().map(|l| l.1).max().unwrap_or(0);
    let world_size = fits_i32("max_comm_world_size (largest rank + 1)", max_rank + 1)?;
    let thread_count = fits_i32("max_thread_count (largest thread + 1)", max_thread + 1)?;

    let states = States {
        sites: launch.sites.iter().map(|s| (s.id, site_label(s))).collect(),
    };

    let mut out = out;
    let origin = out.stream_position().map_err(ExportError::stream(FORMAT))?;
    out.write_all(&[0u8; PREAMBLE_BYTES])
        .map_err(ExportError::stream(FORMAT))?;
    let mut blocks = Blocks {
        out,
        block: vec![0u8; opts.clog2_block_bytes() as usize],
        pos: 0,
        blocks: 0,
    };

    // Timelines first: clog2TOslog2 builds its rows only from COMMEVTs.
    let mut ranks: Vec<u64> = layout.lines.iter().map(|l| l.0).collect();
    ranks.dedup();
    let def_rank = ranks.first().copied().unwrap_or(0) as i32;
    for &r in &ranks {
        let r = r as i32;
        let h = RecHeader {
            time: 0.0,
            icomm: 0,
            rank: r,
            thread: 0,
        };
        blocks.push(
            &h,
            &RecBody::Comm {
                etype: 0,
                icomm: 0,
                rank: r,
                wrank: r,
                gcomm: WORLD,
            },
        )?;
    }
    let def_header = RecHeader {
        time: 0.0,
        icomm: 0,
        rank: def_rank,
        thread: 0,
    };
    let mut defs: Vec<(String, &str, &str)> = states
        .sites
        .iter()
        .enumerate()
        .map(|(k, (_, name))| (name.clone(), PALETTE[k % PALETTE.len()], ACCESS_FORMAT))
        .collect();
    defs.push(("unknown site".into(), "gray", ACCESS_FORMAT));
    defs.push(("wrapped/reordered clock".into(), "yellow", ACCESS_FORMAT));
    defs.push(("other".into(), "light gray", LIFETIME_FORMAT));
    for (k, (name, color, format)) in defs.into_iter().enumerate() {
        let k = k as i32;
        blocks.push(
            &def_header,
            &RecBody::StateDef {
                state_id: USER_STATE_ID + k,
                start_etype: States::start(k),
                final_etype: States::end(k),
                color: color.into(),
                name,
                format: format.into(),
            },
        )?;
    }
    blocks.push(
        &def_header,
        &RecBody::EventDef {
            etype: DROPPED_ETYPE,
            color: "red".into(),
            name: "dropped records".into(),
            format: "%l records dropped (log full)".into(),
        },
    )?;

    let mut summary = ExportSummary {
        warps: layout.warps,
        dropped: layout.dropped,
        ..Default::default()
    };
    let mut merge = Merge::new(
        src,
        &layout,
        opts.mapping(),
        opts.cursor_buffer_bytes(),
        opts.max_open_warp_files(),
    );
    while let Some(TimedEvent {
        cycles,
        rank,
        thread,
        header,
        ev,
        ..
    }) = merge.next_event()?
    {
        let h = RecHeader {
            time: seconds(cycles),
            icomm: 0,
            rank: rank as i32,
            thread: thread as i32,
        };
        let body = match ev {
            Ev::LifeBegin => {
                let mut bytes = [0u8; 32];
                let words = [
                    header.block[0],
                    header.block[1],
                    header.block[2],
                    header.warp,
                    header.global_warp,
                ];
                for (i, w) in words.iter().enumerate() {
                    bytes[4 * i..4 * i + 4].copy_from_slice(&w.to_be_bytes());
                }
                RecBody::Cargo {
                    etype: States::start(states.other()),
                    bytes,
                }
            }
            Ev::LifeEnd => RecBody::Bare {
                etype: States::end(states.other()),
            },
            Ev::AccessBegin { rec, anomaly } => {
                summary.records += 1;
                summary.wrapped += rec.wrapped() as u64;
                summary.reordered += (anomaly && !rec.wrapped()) as u64;
                let k = if anomaly {
                    states.anomaly()
                } else {
                    states.of_site(rec.site)
                };
                RecBody::Cargo {
                    etype: States::start(k),
                    bytes: access_cargo(&rec, header.global_warp),
                }
            }
            Ev::AccessEnd { rec, anomaly } => {
                let k = if anomaly {
                    states.anomaly()
                } else {
                    states.of_site(rec.site)
                };
                RecBody::Bare {
                    etype: States::end(k),
                }
            }
            Ev::Dropped { n } => {
                let mut bytes = [0u8; 32];
                bytes[..8].copy_from_slice(&(n as i64).to_be_bytes());
                RecBody::Cargo {
                    etype: DROPPED_ETYPE,
                    bytes,
                }
            }
        };
        blocks.push(&h, &body)?;
    }
    let end_log = RecHeader {
        time: 1.0e8,
        icomm: 0,
        rank: 0,
        thread: 0,
    };
    blocks.close(&end_log, &RecBody::EndLog)?;

    let block_bytes = opts.clog2_block_bytes() as u64;
    let commtable_fptr = PREAMBLE_BYTES as u64 + blocks.blocks * block_bytes;
    let mut table = [0u8; 44];
    let mut e = crate::formats::clog2::Enc {
        buf: &mut table,
        pos: 0,
    };
    e.i32(1);
    let world = CommEntry {
        gcomm: WORLD,
        local_id: 0,
        kind: 1,
    };
    e.uuid(&world.gcomm);
    e.i32(world.local_id);
    e.i32(world.kind);
    let mut out = blocks.out;
    out.write_all(&table).map_err(ExportError::stream(FORMAT))?;

    let preamble = Preamble {
        version: CLOG2_VERSION.into(),
        is_big_endian: true,
        is_finalized: true,
        block_size: opts.clog2_block_bytes(),
        num_buffered_blocks: 128,
        max_comm_world_size: world_size,
        max_thread_count: thread_count,
        known_event_id_start: 0,
        user_event_id_start: USER_EVENT_ID,
        known_solo_event_id_start: -10,
        user_solo_event_id_start: DROPPED_ETYPE,
        known_state_id_count: 300,
        user_state_id_count: states.count(),
        known_solo_event_id_count: 0,
        user_solo_event_id_count: 1,
        commtable_fptr,
        tokens: Vec::new(),
    };
    let end = commtable_fptr + table.len() as u64;
    out.seek(SeekFrom::Start(origin))
        .map_err(ExportError::stream(FORMAT))?;
    out.write_all(&preamble.encode()?)
        .map_err(ExportError::stream(FORMAT))?;
    out.seek(SeekFrom::Start(origin + end))
        .map_err(ExportError::stream(FORMAT))?;
    out.flush().map_err(ExportError::stream(FORMAT))?;
    summary.bytes = end;
    Ok(summary)
}

/// One access recovered from a CLOG2 file this crate wrote.
#[cfg(feature = "clog2-read")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clog2Access {
    pub global_warp: u32,
    pub rank: i32,
    pub thread: i32,
    pub record: Record,
    /// Drawn in the `wrapped/reordered clock` state.
    pub anomaly: bool,
}

#[cfg(feature = "clog2-read")]
impl Clog2Log {
    /// The records of a file written by [`write_clog2`], from the payloads of the access
    /// states' start events, in file order.
    pub fn accesses(&self) -> Vec<Clog2Access> {
        let mut access_starts = std::collections::BTreeMap::new();
        for (_, body) in &self.records {
            if let RecBody::StateDef {
                start_etype,
                format,
                name,
                ..
            } = body
                && format == ACCESS_FORMAT
            {
                access_starts.insert(*start_etype, name == "wrapped/reordered clock");
            }
        }
        let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        let be64 = |b: &[u8]| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[..8]);
            u64::from_be_bytes(a)
        };
        self.records
            .iter()
            .filter_map(|(h, body)| match body {
                RecBody::Cargo { etype, bytes } => {
                    access_starts.get(etype).map(|&anomaly| Clog2Access {
                        global_warp: be32(&bytes[24..]),
                        rank: h.rank,
                        thread: h.thread,
                        record: Record {
                            site: be32(bytes) as u16,
                            seq: be32(&bytes[4..]),
                            start: Cycles(be64(&bytes[8..])),
                            end: Cycles(be64(&bytes[16..])),
                        },
                        anomaly,
                    })
                }
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use trace::{
        Dim3, LaunchInfo, ProbeMode, RecordKind, Region, SiteInfo, SmId, Trace, WarpTrace,
    };

    fn small() -> Trace {
        let launch = LaunchInfo::new("k", Dim3::new(2, 1, 1), Dim3::new(64, 1, 1))
            .with_probe(ProbeMode::Fence, RecordKind::Trace)
            .with_sites(vec![
                SiteInfo::new(0, "tex", Region::Texture),
                SiteInfo::new(1, "", Region::Global),
            ])
            .with_clock(1000.0);
        let mut warps = Vec::new();
        for g in 0..4u32 {
            let mut w = WarpTrace::new([g / 2, 0, 0], g % 2, g, SmId(g / 2));
            w.hw_warp = g % 2;
            w.begin = Cycles(1000 * (g as u64 / 2) + g as u64);
            w.end = w.begin + Cycles(500);
            w.dropped = if g == 3 { 2 } else { 0 };
            w.records = (0..5u32)
                .map(|k| Record {
                    site: (k % 3) as u16,
                    seq: k,
                    start: w.begin + Cycles(10 + 50 * k as u64),
                    end: w.begin + Cycles(40 + 50 * k as u64),
                })
                .collect();
            warps.push(w);
        }
        Trace { launch, warps }
    }

    #[test]
    fn block_packing_follows_mpe_rule_and_time_is_sorted() {
        let t = small();
        let opts = ExportOptions::default().with_clog2_block_bytes(256);
        let mut buf = Cursor::new(Vec::new());
        let s = write_clog2(&t, &mut buf, &opts).unwrap();
        let bytes = buf.into_inner();
        assert_eq!(s.bytes, bytes.len() as u64);
        assert_eq!((bytes.len() - 1024 - 44) % 256, 0);
        let log = Clog2Log::read(&bytes[..]).unwrap();
        assert_eq!(log.preamble.commtable_fptr, bytes.len() as u64 - 44);
        assert_eq!(log.preamble.max_comm_world_size, 2);
        assert_eq!(log.preamble.max_thread_count, 2);
        assert_eq!(log.preamble.user_state_id_count, 5);
        let blocks = log
            .records
            .iter()
            .filter(|r| r.1 == RecBody::EndBlock)
            .count();
        assert_eq!(blocks + 1, (bytes.len() - 1024 - 44) / 256);
        assert_eq!(log.records.last().unwrap().1, RecBody::EndLog);
        let times: Vec<f64> = log
            .records
            .iter()
            .filter(|(_, b)| !matches!(b, RecBody::EndBlock | RecBody::EndLog))
            .map(|(h, _)| h.time)
            .collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        // An empty site name gets a readable one.
        assert!(
            log.records
                .iter()
                .any(|(_, b)| matches!(b, RecBody::StateDef { name, .. } if name == "site 1"))
        );
        assert_eq!(s.records, 20);
        assert_eq!(s.dropped, 2);
        let mut got: Vec<(u32, Record)> = log
            .accesses()
            .iter()
            .map(|a| (a.global_warp, a.record))
            .collect();
        got.sort_by_key(|(g, r)| (*g, r.seq));
        let want: Vec<(u32, Record)> = t
            .warps
            .iter()
            .flat_map(|w| w.records.iter().map(move |r| (w.global_warp, *r)))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn output_is_deterministic() {
        let t = small();
        let write = || {
            let mut buf = Cursor::new(Vec::new());
            write_clog2(&t, &mut buf, &ExportOptions::default()).unwrap();
            buf.into_inner()
        };
        assert_eq!(write(), write());
    }

    #[test]
    fn bad_clock_is_refused() {
        let mut t = small();
        t.launch.clock_mhz = 0.0;
        let e = write_clog2(&t, Cursor::new(Vec::new()), &ExportOptions::default()).unwrap_err();
        assert!(matches!(e, ExportError::BadClock { .. }), "{e}");
    }
}
