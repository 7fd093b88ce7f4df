//! The CLOG2 ("CLOG-02.44") byte layout, shared by the writer (`clog2_write.rs`) and the reader
//! (`clog2_read.rs`, feature `clog2-read`): the preamble, the record header and bodies, the
//! communicator table, and their encoding. The byte layout is documented on the reader.

use crate::error::ExportError;

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

/// Body length of each rectype (index = rectype).
pub(crate) const BODY_BYTES: [usize; 12] = [0, 0, 112, 104, 40, 8, 40, 24, 16, 48, 48, 8];

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

pub(crate) const TITLES: [&str; 14] = [
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
#[cfg_attr(
    not(feature = "clog2-read"),
    allow(
        dead_code,
        reason = "the writer builds some kinds only; the reader decodes all"
    )
)]
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
