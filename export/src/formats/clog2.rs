//! The CLOG2 ("CLOG-02.44") byte layout, shared by the writer and the reader, and the reader.
//!
//! Why a reader: tests check our files field by field and against the genuine MPE-written files
//! in `tests/fixtures/`, and a round trip proves no record is lost.
//!
//! The byte layout is documented on [`Clog2Reader`].
//!
//! Main types: [`Clog2Reader`] (streams records), [`Clog2Log`] (a whole file in memory),
//! [`Preamble`], [`RecHeader`], [`RecBody`], [`CommEntry`].
//!
//! ```no_run
//! let log = export::Clog2Log::read_path(std::path::Path::new("trace.clog2")).unwrap();
//! println!("{} records, {} ranks", log.records.len(), log.preamble.max_comm_world_size);
//! ```

use crate::error::ExportError;
use std::io::Read;
use std::path::Path;

pub(crate) const FORMAT: &str = "CLOG2";
/// The version string MPE writes and the Java tools require exactly.
pub const CLOG2_VERSION: &str = "CLOG-02.44";
pub(crate) const PREAMBLE_BYTES: usize = 1024;
pub(crate) const HEADER_BYTES: usize = 24;
pub(crate) const GIGA: u64 = 1 << 30;

/// Record types.
pub mod rectype {
    pub const ENDLOG: i32 = 0;
    pub const ENDBLOCK: i32 = 1;
    pub const STATEDEF: i32 = 2;
    pub const EVENTDEF: i32 = 3;
    pub const CONSTDEF: i32 = 4;
    pub const BAREEVT: i32 = 5;
    pub const CARGOEVT: i32 = 6;
    pub const MSGEVT: i32 = 7;
    pub const COLLEVT: i32 = 8;
    pub const COMMEVT: i32 = 9;
    pub const SRCLOC: i32 = 10;
    pub const TIMESHIFT: i32 = 11;
}

/// The largest block the reader accepts (it allocates one block).
const MAX_BLOCK_BYTES: u32 = 64 << 20;

/// Body length of each rectype (index = rectype).
const BODY_BYTES: [usize; 12] = [0, 0, 112, 104, 40, 8, 40, 24, 16, 48, 48, 8];

/// The preamble's values. `tokens` keeps the 33 strings exactly as read.
#[derive(Debug, Clone, PartialEq)]
pub struct Preamble {
    pub version: String,
    /// True only for the exact value `"TRUE "` (MPE's C reader uses `strcmp(v, "TRUE ")`).
    pub is_big_endian: bool,
    pub is_finalized: bool,
    pub block_size: u32,
    pub num_buffered_blocks: i32,
    pub max_comm_world_size: i32,
    pub max_thread_count: i32,
    pub known_event_id_start: i32,
    pub user_event_id_start: i32,
    pub known_solo_event_id_start: i32,
    pub user_solo_event_id_start: i32,
    pub known_state_id_count: i32,
    pub user_state_id_count: i32,
    pub known_solo_event_id_count: i32,
    pub user_solo_event_id_count: i32,
    pub commtable_fptr: u64,
    pub tokens: Vec<String>,
}

const TITLES: [&str; 14] = [
    "is_big_endian=",
    "is_finalzed=",
    "block_size=",
    "num_buffered_blocks=",
    "max_comm_world_size=",
    "max_thread_count=",
    "known_eventID_start=",
    "user_eventID_start=",
    "known_solo_eventID_start=",
    "user_solo_eventID_start=",
    "known_stateID_count=",
    "user_stateID_count=",
    "known_solo_eventID_count=",
    "user_solo_eventID_count=",
];

impl Preamble {
    /// The 1024 preamble bytes, as MPE's `CLOG_Preamble_write` lays them out.
    pub fn encode(&self) -> Result<[u8; PREAMBLE_BYTES], ExportError> {
        let flag = |b: bool| if b { "TRUE " } else { "FALSE" };
        let values = [
            flag(self.is_big_endian).to_string(),
            flag(self.is_finalized).to_string(),
            self.block_size.to_string(),
            self.num_buffered_blocks.to_string(),
            self.max_comm_world_size.to_string(),
            self.max_thread_count.to_string(),
            self.known_event_id_start.to_string(),
            self.user_event_id_start.to_string(),
            self.known_solo_event_id_start.to_string(),
            self.user_solo_event_id_start.to_string(),
            self.known_state_id_count.to_string(),
            self.user_state_id_count.to_string(),
            self.known_solo_event_id_count.to_string(),
            self.user_solo_event_id_count.to_string(),
        ];
        let mut out = [0u8; PREAMBLE_BYTES];
        let mut p = 0;
        let mut put = |s: &str| -> Result<(), ExportError> {
            let end = p + s.len() + 1;
            if end > PREAMBLE_BYTES {
                return Err(ExportError::TooLarge {
                    format: FORMAT,
                    what: "preamble bytes",
                    value: end as u64,
                    max: PREAMBLE_BYTES as u64,
                });
            }
            out[p..end - 1].copy_from_slice(s.as_bytes());
            p = end;
            Ok(())
        };
        put(&self.version)?;
        for (title, value) in TITLES.iter().zip(&values) {
            put(title)?;
            put(value)?;
        }
        put("commtable_fptr=")?;
        put(&(self.commtable_fptr / GIGA).to_string())?;
        put(&GIGA.to_string())?;
        put(&(self.commtable_fptr % GIGA).to_string())?;
        Ok(out)
    }

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

/// The 24-byte record header.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecHeader {
    /// Seconds.
    pub time: f64,
    pub icomm: i32,
    pub rank: i32,
    pub thread: i32,
}

/// A communicator's global ID (`CLOG_Uuid_t`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Uuid {
    pub rand: i32,
    pub time: f64,
    pub name: [u8; 20],
}

/// A record body, by rectype. Strings are the bytes up to the first NUL.
#[derive(Debug, Clone, PartialEq)]
pub enum RecBody {
    EndLog,
    EndBlock,
    StateDef {
        state_id: i32,
        start_etype: i32,
        final_etype: i32,
        color: String,
        name: String,
        format: String,
    },
    EventDef {
        etype: i32,
        color: String,
        name: String,
        format: String,
    },
    ConstDef {
        etype: i32,
        value: i32,
        name: String,
    },
    Bare {
        etype: i32,
    },
    Cargo {
        etype: i32,
        bytes: [u8; 32],
    },
    Msg {
        etype: i32,
        icomm: i32,
        rank: i32,
        tag: i32,
        size: i32,
    },
    Coll {
        etype: i32,
        root: i32,
        size: i32,
    },
    Comm {
        etype: i32,
        icomm: i32,
        rank: i32,
        wrank: i32,
        gcomm: Uuid,
    },
    SrcLoc {
        id: i32,
        lineno: i32,
        filename: String,
    },
    TimeShift {
        shift: f64,
    },
}

impl RecBody {
    pub fn rectype(&self) -> i32 {
        use rectype::*;
        match self {
            RecBody::EndLog => ENDLOG,
            RecBody::EndBlock => ENDBLOCK,
            RecBody::StateDef { .. } => STATEDEF,
            RecBody::EventDef { .. } => EVENTDEF,
            RecBody::ConstDef { .. } => CONSTDEF,
            RecBody::Bare { .. } => BAREEVT,
            RecBody::Cargo { .. } => CARGOEVT,
            RecBody::Msg { .. } => MSGEVT,
            RecBody::Coll { .. } => COLLEVT,
            RecBody::Comm { .. } => COMMEVT,
            RecBody::SrcLoc { .. } => SRCLOC,
            RecBody::TimeShift { .. } => TIMESHIFT,
        }
    }

    /// Header plus body bytes.
    pub fn record_bytes(&self) -> usize {
        HEADER_BYTES + BODY_BYTES[self.rectype() as usize]
    }
}

/// One comm-table row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CommEntry {
    pub gcomm: Uuid,
    pub local_id: i32,
    /// -1 unknown, 0 inter, 1 intra, 2 local, 3 remote.
    pub kind: i32,
}

/// Big-endian (or little-endian) field writer over a fixed buffer.
pub(crate) struct Enc<'b> {
    pub buf: &'b mut [u8],
    pub pos: usize,
}

impl Enc<'_> {
    pub fn i32(&mut self, v: i32) {
        self.buf[self.pos..self.pos + 4].copy_from_slice(&v.to_be_bytes());
        self.pos += 4;
    }
    pub fn f64(&mut self, v: f64) {
        self.buf[self.pos..self.pos + 8].copy_from_slice(&v.to_be_bytes());
        self.pos += 8;
    }
    /// A char[n] field: at most n-1 bytes, then NUL padding (MPE: strncpy, byte n-1 forced to 0).
    pub fn str(&mut self, s: &str, n: usize) {
        let b = s.as_bytes();
        let len = b.len().min(n - 1);
        self.buf[self.pos..self.pos + len].copy_from_slice(&b[..len]);
        self.buf[self.pos + len..self.pos + n].fill(0);
        self.pos += n;
    }
    pub fn bytes(&mut self, b: &[u8]) {
        self.buf[self.pos..self.pos + b.len()].copy_from_slice(b);
        self.pos += b.len();
    }
    pub fn uuid(&mut self, u: &Uuid) {
        self.i32(u.rand);
        self.f64(u.time);
        self.bytes(&u.name);
    }
}

/// Encodes a whole record into `buf` (at least its `record_bytes`); returns its length.
pub(crate) fn encode_record(h: &RecHeader, body: &RecBody, buf: &mut [u8]) -> usize {
    let len = body.record_bytes();
    let mut e = Enc {
        buf: &mut buf[..len],
        pos: 0,
    };
    e.f64(h.time);
    e.i32(h.icomm);
    e.i32(h.rank);
    e.i32(h.thread);
    e.i32(body.rectype());
    match body {
        RecBody::EndLog | RecBody::EndBlock => {}
        RecBody::StateDef {
            state_id,
            start_etype,
            final_etype,
            color,
            name,
            format,
        } => {
            e.i32(*state_id);
            e.i32(*start_etype);
            e.i32(*final_etype);
            e.i32(0);
            e.str(color, 24);
            e.str(name, 32);
            e.str(format, 40);
        }
        RecBody::EventDef {
            etype,
            color,
            name,
            format,
        } => {
            e.i32(*etype);
            e.i32(0);
            e.str(color, 24);
            e.str(name, 32);
            e.str(format, 40);
        }
        RecBody::ConstDef { etype, value, name } => {
            e.i32(*etype);
            e.i32(*value);
            e.str(name, 32);
        }
        RecBody::Bare { etype } => {
            e.i32(*etype);
            e.i32(0);
        }
        RecBody::Cargo { etype, bytes } => {
            e.i32(*etype);
            e.i32(0);
            e.bytes(bytes);
        }
        RecBody::Msg {
            etype,
            icomm,
            rank,
            tag,
            size,
        } => {
            for v in [*etype, *icomm, *rank, *tag, *size, 0] {
                e.i32(v);
            }
        }
        RecBody::Coll { etype, root, size } => {
            for v in [*etype, *root, *size, 0] {
                e.i32(v);
            }
        }
        RecBody::Comm {
            etype,
            icomm,
            rank,
            wrank,
            gcomm,
        } => {
            for v in [*etype, *icomm, *rank, *wrank] {
                e.i32(v);
            }
            e.uuid(gcomm);
        }
        RecBody::SrcLoc {
            id,
            lineno,
            filename,
        } => {
            e.i32(*id);
            e.i32(*lineno);
            e.str(filename, 40);
        }
        RecBody::TimeShift { shift } => e.f64(*shift),
    }
    len
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
