//! The CLOG2 reader: streams the records of a file ([`Clog2Reader`]) or reads it whole
//! ([`Clog2Log`]). Behind the `clog2-read` feature: gpu-check reads its export back, and tests
//! check our files field by field and against the genuine MPE-written files in
//! `tests/fixtures/`, and a round trip proves no record is lost; users read CLOG2 files with
//! Jumpshot.
//!
//! ```no_run
//! let log = export::Clog2Log::read_path(std::path::Path::new("trace.clog2")).unwrap();
//! println!("{} records, {} ranks", log.records.len(), log.preamble.max_comm_world_size);
//! ```

use super::clog2::*;
use crate::error::ExportError;
use std::io::Read;
use std::path::Path;

/// The largest block the reader accepts (it allocates one block).
const MAX_BLOCK_BYTES: u32 = 64 << 20;

impl Preamble {
    /// Parses the 1024 preamble bytes (the Java reader's rule: NUL-separated, empty strings
    /// skipped, each trimmed for numbers).
    pub fn decode(bytes: &[u8]) -> Result<Preamble, ExportError> {
        let bad = |what: String| ExportError::parse(FORMAT, "preamble", what);
        let tokens: Vec<String> = bytes
            .split(|&b| b == 0)
            .filter(|t| !t.is_empty())
            .map(|t| String::from_utf8_lossy(t).into_owned())
            .collect();
        if tokens.len() < 33 {
            return Err(bad(format!("{} strings, expected 33", tokens.len())));
        }
        if tokens[0] != CLOG2_VERSION {
            return Err(bad(format!(
                "version {:?}, expected {CLOG2_VERSION:?}",
                tokens[0]
            )));
        }
        let mut values = Vec::with_capacity(14);
        for (k, title) in TITLES.iter().enumerate() {
            let (t, v) = (&tokens[1 + 2 * k], &tokens[2 + 2 * k]);
            if t != title {
                return Err(bad(format!(
                    "string {} is {t:?}, expected {title:?}",
                    1 + 2 * k
                )));
            }
            values.push(v.as_str());
        }
        if tokens[29] != "commtable_fptr=" {
            return Err(bad(format!(
                "expected \"commtable_fptr=\", found {:?}",
                tokens[29]
            )));
        }
        let num = |s: &str| -> Result<i64, ExportError> {
            s.trim()
                .parse::<i64>()
                .map_err(|_| bad(format!("{s:?} is not a decimal number")))
        };
        let int = |k: usize| -> Result<i32, ExportError> {
            let v = num(values[k])?;
            i32::try_from(v).map_err(|_| bad(format!("{}{v} out of range", TITLES[k])))
        };
        let (g, giga, r) = (num(&tokens[30])?, num(&tokens[31])?, num(&tokens[32])?);
        let fptr = g
            .checked_mul(giga)
            .and_then(|x| x.checked_add(r))
            .and_then(|x| u64::try_from(x).ok())
            .ok_or_else(|| bad(format!("commtable_fptr {g} * {giga} + {r} out of range")))?;
        let block_size = u32::try_from(int(2)?)
            .ok()
            .filter(|&b| b >= 160 && b.is_multiple_of(8))
            .ok_or_else(|| bad(format!("block_size {} invalid", values[2])))?;
        // The reader holds one block in memory: a damaged size must not allocate gigabytes.
        // MPE writes 64 KiB blocks; 64 MiB leaves room for any real file.
        if block_size > MAX_BLOCK_BYTES {
            return Err(bad(format!(
                "block_size {block_size} is over the {MAX_BLOCK_BYTES}-byte limit"
            )));
        }
        Ok(Preamble {
            version: tokens[0].clone(),
            is_big_endian: values[0] == "TRUE ",
            is_finalized: values[1] == "TRUE ",
            block_size,
            num_buffered_blocks: int(3)?,
            max_comm_world_size: int(4)?,
            max_thread_count: int(5)?,
            known_event_id_start: int(6)?,
            user_event_id_start: int(7)?,
            known_solo_event_id_start: int(8)?,
            user_solo_event_id_start: int(9)?,
            known_state_id_count: int(10)?,
            user_state_id_count: int(11)?,
            known_solo_event_id_count: int(12)?,
            user_solo_event_id_count: int(13)?,
            commtable_fptr: fptr,
            tokens,
        })
    }
}

/// Field reader honouring the file's byte order.
struct Dec<'b> {
    buf: &'b [u8],
    pos: usize,
    big: bool,
}

impl Dec<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        a.copy_from_slice(&self.buf[self.pos..self.pos + N]);
        self.pos += N;
        a
    }
    fn i32(&mut self) -> i32 {
        let a = self.take::<4>();
        if self.big {
            i32::from_be_bytes(a)
        } else {
            i32::from_le_bytes(a)
        }
    }
    fn f64(&mut self) -> f64 {
        let a = self.take::<8>();
        if self.big {
            f64::from_be_bytes(a)
        } else {
            f64::from_le_bytes(a)
        }
    }
    fn str(&mut self, n: usize) -> String {
        let field = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        let end = field.iter().position(|&b| b == 0).unwrap_or(n);
        String::from_utf8_lossy(&field[..end]).into_owned()
    }
    fn uuid(&mut self) -> Uuid {
        Uuid {
            rand: self.i32(),
            time: self.f64(),
            name: self.take::<20>(),
        }
    }
}

/// Decodes the record at the start of `buf` (which holds at least its header); `None` when the
/// body does not fit in `buf`.
fn decode_record(buf: &[u8], big: bool) -> Result<Option<(RecHeader, RecBody, usize)>, String> {
    if buf.len() < HEADER_BYTES {
        return Ok(None);
    }
    let mut d = Dec { buf, pos: 0, big };
    let h = RecHeader {
        time: d.f64(),
        icomm: d.i32(),
        rank: d.i32(),
        thread: d.i32(),
    };
    let rt = d.i32();
    let body_len = usize::try_from(rt)
        .ok()
        .and_then(|r| BODY_BYTES.get(r))
        .copied()
        .ok_or_else(|| format!("unknown rectype {rt}"))?;
    if buf.len() < HEADER_BYTES + body_len {
        return Ok(None);
    }
    let body = match rt {
        rectype::ENDLOG => RecBody::EndLog,
        rectype::ENDBLOCK => RecBody::EndBlock,
        rectype::STATEDEF => {
            let (state_id, start_etype, final_etype) = (d.i32(), d.i32(), d.i32());
            d.pos += 4;
            RecBody::StateDef {
                state_id,
                start_etype,
                final_etype,
                color: d.str(24),
                name: d.str(32),
                format: d.str(40),
            }
        }
        rectype::EVENTDEF => {
            let etype = d.i32();
            d.pos += 4;
            RecBody::EventDef {
                etype,
                color: d.str(24),
                name: d.str(32),
                format: d.str(40),
            }
        }
        rectype::CONSTDEF => RecBody::ConstDef {
            etype: d.i32(),
            value: d.i32(),
            name: d.str(32),
        },
        rectype::BAREEVT => RecBody::Bare { etype: d.i32() },
        rectype::CARGOEVT => {
            let etype = d.i32();
            d.pos += 4;
            RecBody::Cargo {
                etype,
                bytes: d.take::<32>(),
            }
        }
        rectype::MSGEVT => RecBody::Msg {
            etype: d.i32(),
            icomm: d.i32(),
            rank: d.i32(),
            tag: d.i32(),
            size: d.i32(),
        },
        rectype::COLLEVT => RecBody::Coll {
            etype: d.i32(),
            root: d.i32(),
            size: d.i32(),
        },
        rectype::COMMEVT => RecBody::Comm {
            etype: d.i32(),
            icomm: d.i32(),
            rank: d.i32(),
            wrank: d.i32(),
            gcomm: d.uuid(),
        },
        rectype::SRCLOC => RecBody::SrcLoc {
            id: d.i32(),
            lineno: d.i32(),
            filename: d.str(40),
        },
        _ => RecBody::TimeShift { shift: d.f64() },
    };
    Ok(Some((h, body, HEADER_BYTES + body_len)))
}

/// Streams the records of a CLOG2 file block by block (one block in memory), then reads the
/// comm table. ENDBLOCK and ENDLOG records are returned too, so a caller can check them.
///
/// # Layout (MPICH MPE2 `clog_preamble.c`, `clog_record.h`, `clog_commset.c`; see
/// `shared/specs/clog2.md` in the project notes)
/// ```text
/// offset 0                    preamble, 1024 bytes: 33 NUL-terminated ASCII strings
///                             "CLOG-02.44" then title/value pairs ("is_big_endian=" "TRUE " …,
///                             note the trailing space and the "is_finalzed=" spelling), then
///                             "commtable_fptr=" G "1073741824" R; zero fill
/// offset 1024 + k·block_size  block k: records packed back to back, closed by ENDBLOCK
///                             (rectype 1), the last by ENDLOG (rectype 0); zero padded
/// offset commtable_fptr       i32 count, count × (char[32] UUID, i32 local_ID, i32 kind)
/// ```
/// Every number is big-endian (`is_big_endian=TRUE `; the reader also accepts `FALSE`, as MPE's
/// C reader does). A record is a 24-byte header (f64 time in seconds, i32 icomm, i32 rank,
/// i32 thread, i32 rectype) and a body whose length the rectype fixes:
///
/// | rectype | record | body | layout |
/// |--|--|--|--|
/// | 0/1 | ENDLOG/ENDBLOCK | 0 | — |
/// | 2 | STATEDEF | 112 | i32 stateID, startetype, finaletype, pad; `char[24]` color, `char[32]` name, `char[40]` format |
/// | 3 | EVENTDEF | 104 | i32 etype, pad; `char[24]` color, `char[32]` name, `char[40]` format |
/// | 4 | CONSTDEF | 40 | i32 etype, value; `char[32]` name |
/// | 5 | BAREEVT | 8 | i32 etype, pad |
/// | 6 | CARGOEVT | 40 | i32 etype, pad; 32 payload bytes (big-endian values the def's format reads) |
/// | 7 | MSGEVT | 24 | i32 etype (-101 send, -102 recv), icomm, rank, tag, size, pad |
/// | 8 | COLLEVT | 16 | i32 etype, root, size, pad |
/// | 9 | COMMEVT | 48 | i32 etype, icomm, rank, wrank; UUID (i32 rand, f64 time, `char[20]` name) |
/// | 10 | SRCLOC | 48 | i32 id, lineno; `char[40]` filename |
/// | 11 | TIMESHIFT | 8 | f64 shift |
pub struct Clog2Reader<R: Read> {
    input: R,
    preamble: Preamble,
    block: Vec<u8>,
    pos: usize,
    /// Bytes consumed from the file so far.
    offset: u64,
    done: bool,
}

impl<R: Read> Clog2Reader<R> {
    pub fn new(mut input: R) -> Result<Self, ExportError> {
        let mut pre = [0u8; PREAMBLE_BYTES];
        input.read_exact(&mut pre).map_err(|_| {
            ExportError::parse(FORMAT, "byte 0", "file shorter than the 1024-byte preamble")
        })?;
        let preamble = Preamble::decode(&pre)?;
        let block = vec![0u8; preamble.block_size as usize];
        Ok(Clog2Reader {
            input,
            pos: block.len(),
            block,
            preamble,
            offset: PREAMBLE_BYTES as u64,
            done: false,
        })
    }

    pub fn preamble(&self) -> &Preamble {
        &self.preamble
    }

    /// The next record, or `None` after ENDLOG.
    pub fn next_record(&mut self) -> Result<Option<(RecHeader, RecBody)>, ExportError> {
        if self.done {
            return Ok(None);
        }
        if self.pos >= self.block.len() {
            self.input.read_exact(&mut self.block).map_err(|_| {
                ExportError::parse(
                    FORMAT,
                    format!("byte {}", self.offset),
                    "file ends inside a block (no ENDLOG)",
                )
            })?;
            self.offset += self.block.len() as u64;
            self.pos = 0;
        }
        let block_start = self.offset - self.block.len() as u64;
        let at = block_start + self.pos as u64;
        let decoded = decode_record(&self.block[self.pos..], self.preamble.is_big_endian)
            .map_err(|what| ExportError::parse(FORMAT, format!("byte {at}"), what))?;
        let Some((h, body, len)) = decoded else {
            return Err(ExportError::parse(
                FORMAT,
                format!("byte {at}"),
                "record crosses the block end",
            ));
        };
        match body {
            RecBody::EndBlock => self.pos = self.block.len(),
            RecBody::EndLog => self.done = true,
            _ => self.pos += len,
        }
        Ok(Some((h, body)))
    }

    /// Reads the comm table (call after the last record).
    pub fn comm_table(mut self) -> Result<Vec<CommEntry>, ExportError> {
        let fptr = self.preamble.commtable_fptr;
        if fptr < self.offset {
            return Err(ExportError::parse(
                FORMAT,
                format!("byte {fptr}"),
                format!(
                    "commtable_fptr points inside the blocks (they end at {})",
                    self.offset
                ),
            ));
        }
        let gap = fptr - self.offset;
        std::io::copy(&mut (&mut self.input).take(gap), &mut std::io::sink())
            .map_err(ExportError::stream(FORMAT))?;
        let bad = |what: &str| ExportError::parse(FORMAT, format!("byte {fptr}"), what.to_string());
        let mut count = [0u8; 4];
        self.input
            .read_exact(&mut count)
            .map_err(|_| bad("comm table missing"))?;
        let big = self.preamble.is_big_endian;
        let n = Dec {
            buf: &count,
            pos: 0,
            big,
        }
        .i32();
        let n = usize::try_from(n).map_err(|_| bad("negative comm table count"))?;
        let mut out = Vec::with_capacity(n.min(1 << 16));
        let mut row = [0u8; 40];
        for _ in 0..n {
            self.input
                .read_exact(&mut row)
                .map_err(|_| bad("comm table shorter than its count"))?;
            let mut d = Dec {
                buf: &row,
                pos: 0,
                big,
            };
            out.push(CommEntry {
                gcomm: d.uuid(),
                local_id: d.i32(),
                kind: d.i32(),
            });
        }
        Ok(out)
    }
}

/// A whole CLOG2 file in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Clog2Log {
    pub preamble: Preamble,
    /// Every record in file order, ENDBLOCK and ENDLOG included.
    pub records: Vec<(RecHeader, RecBody)>,
    pub comm_table: Vec<CommEntry>,
}

impl Clog2Log {
    pub fn read<R: Read>(input: R) -> Result<Clog2Log, ExportError> {
        let mut r = Clog2Reader::new(input)?;
        let mut records = Vec::new();
        while let Some(rec) = r.next_record()? {
            records.push(rec);
        }
        let preamble = r.preamble().clone();
        let comm_table = r.comm_table()?;
        Ok(Clog2Log {
            preamble,
            records,
            comm_table,
        })
    }

    pub fn read_path(path: &Path) -> Result<Clog2Log, ExportError> {
        let f = std::fs::File::open(path).map_err(|source| ExportError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Clog2Log::read(std::io::BufReader::new(f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_preamble() -> Preamble {
        Preamble {
            version: CLOG2_VERSION.into(),
            is_big_endian: true,
            is_finalized: true,
            block_size: 65536,
            num_buffered_blocks: 128,
            max_comm_world_size: 3,
            max_thread_count: 1,
            known_event_id_start: 0,
            user_event_id_start: 600,
            known_solo_event_id_start: -10,
            user_solo_event_id_start: 5000,
            known_state_id_count: 300,
            user_state_id_count: 1,
            known_solo_event_id_count: 0,
            user_solo_event_id_count: 1,
            commtable_fptr: 3 * GIGA + 66560,
            tokens: Vec::new(),
        }
    }

    #[test]
    fn preamble_round_trips_and_keeps_the_trailing_space() {
        let p = sample_preamble();
        let bytes = p.encode().unwrap();
        assert!(bytes.windows(6).any(|w| w == b"TRUE \0"));
        let back = Preamble::decode(&bytes).unwrap();
        assert_eq!(back.tokens.len(), 33);
        assert_eq!(back.tokens[30..], ["3", "1073741824", "66560"]);
        assert_eq!(
            Preamble {
                tokens: Vec::new(),
                ..back
            },
            p
        );
    }

    #[test]
    fn a_huge_block_size_is_refused_before_allocating() {
        let mut p = sample_preamble();
        p.block_size = 2_000_000_000;
        let bytes = p.encode().unwrap();
        let e = Clog2Reader::new(&bytes[..]).err().unwrap().to_string();
        assert!(
            e.contains("block_size 2000000000") && e.contains("limit"),
            "{e}"
        );
    }

    #[test]
    fn true_without_space_is_false() {
        let mut bytes = sample_preamble().encode().unwrap();
        let at = bytes.windows(5).position(|w| w == b"TRUE ").unwrap();
        bytes[at + 4] = b'X';
        assert!(!Preamble::decode(&bytes).unwrap().is_big_endian);
    }

    #[test]
    fn every_record_type_round_trips() {
        let uuid = Uuid {
            rand: -7,
            time: 1.5,
            name: *b"abcdefghijklmnopqrst",
        };
        let bodies = vec![
            RecBody::StateDef {
                state_id: 300,
                start_etype: 600,
                final_etype: 601,
                color: "red".into(),
                name: "x".repeat(40),
                format: "%d".into(),
            },
            RecBody::EventDef {
                etype: 5000,
                color: "green".into(),
                name: "m".into(),
                format: String::new(),
            },
            RecBody::ConstDef {
                etype: -201,
                value: -2,
                name: "ANY".into(),
            },
            RecBody::Bare { etype: 600 },
            RecBody::Cargo {
                etype: 602,
                bytes: [9; 32],
            },
            RecBody::Msg {
                etype: -101,
                icomm: 0,
                rank: 2,
                tag: 7,
                size: 64,
            },
            RecBody::Coll {
                etype: 5,
                root: 1,
                size: 8,
            },
            RecBody::Comm {
                etype: 0,
                icomm: 0,
                rank: 1,
                wrank: 1,
                gcomm: uuid,
            },
            RecBody::SrcLoc {
                id: 1,
                lineno: 42,
                filename: "a.c".into(),
            },
            RecBody::TimeShift { shift: -0.25 },
            RecBody::EndLog,
        ];
        for body in bodies {
            let h = RecHeader {
                time: 0.125,
                icomm: 0,
                rank: 3,
                thread: 1,
            };
            let mut buf = [0u8; 136];
            let n = encode_record(&h, &body, &mut buf);
            assert_eq!(n % 8, 0);
            let (h2, b2, n2) = decode_record(&buf[..n], true).unwrap().unwrap();
            assert_eq!((h2, n2), (h, n));
            let expect = match body {
                // 31 chars at most: byte 31 of char[32] is forced to NUL.
                RecBody::StateDef {
                    name,
                    state_id,
                    start_etype,
                    final_etype,
                    color,
                    format,
                } => RecBody::StateDef {
                    name: name[..31].to_string(),
                    state_id,
                    start_etype,
                    final_etype,
                    color,
                    format,
                },
                other => other,
            };
            assert_eq!(b2, expect);
        }
    }

    #[test]
    fn unknown_rectype_is_an_error() {
        let mut buf = [0u8; 24];
        buf[20..24].copy_from_slice(&12i32.to_be_bytes());
        assert!(decode_record(&buf, true).unwrap_err().contains("12"));
    }
}
