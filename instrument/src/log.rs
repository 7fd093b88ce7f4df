//! The probe log buffer: its layout (defined once, in `kernels/warpscope.cuh`, and reaching Rust
//! as `kernels::layout`), the header the host writes before a launch, and the decoder that turns
//! the bytes the kernel wrote into `trace` records, with checks.
//!
//! # Layout (little-endian; see `kernels/warpscope.cuh` for the authoritative definition)
//! ```text
//! header (64 bytes, written by the host): u32 magic, version, mode, kind, slots_per_warp,
//!        n_warps, record_bytes, warp_header_bytes, max_sites; zeros
//! warp area i at header + i·(warp_header_bytes + body), i = linear block · warps/block + warp:
//!   u64 begin, u64 end, u32 smid, u32 %warpid, u32 count (kept + dropped), u32 flags (bit0: END ran)
//!   trace kind  : slots × {u64 start, u32 duration, u32 site}
//!   summary kind: max_sites × {u32 count, u32 min, u32 max, u32 pad, u64 sum}
//! ```

use crate::InstrumentError;
use kernels::layout as L;
use trace::{Cycles, LaunchInfo, Record, RecordKind, SiteSummary, SmId, Trace, WarpTrace};

/// Sizes of one launch's log, derived from the layout constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogShape {
    pub kind: RecordKind,
    pub slots_per_warp: u32,
    pub n_warps: u64,
}

impl LogShape {
    /// Bytes of one warp's records (trace) or per-site statistics (summary).
    pub fn body_bytes(&self) -> u64 {
        match self.kind {
            RecordKind::Trace => self.slots_per_warp as u64 * L::WS_RECORD_BYTES as u64,
            RecordKind::Summary => L::WS_MAX_SITES as u64 * L::WS_SUMMARY_BYTES as u64,
        }
    }

    pub fn warp_area_bytes(&self) -> u64 {
        L::WS_WARP_HEADER_BYTES as u64 + self.body_bytes()
    }

    /// The whole global buffer.
    pub fn total_bytes(&self) -> u64 {
        L::WS_LOG_HEADER_BYTES as u64 + self.n_warps * self.warp_area_bytes()
    }

    /// Dynamic shared memory the probes need per block when buffering in shared memory.
    pub fn shared_bytes_per_block(&self, warps_per_block: u32) -> u64 {
        warps_per_block as u64 * self.body_bytes()
    }
}

/// The 64-byte header the host writes at the start of the log buffer.
pub fn header_bytes(mode: trace::ProbeMode, shape: &LogShape) -> Vec<u8> {
    let mut h = vec![0u8; L::WS_LOG_HEADER_BYTES as usize];
    let words = [
        L::WS_LOG_MAGIC,
        L::WS_LOG_VERSION,
        mode.ws_mode(),
        shape.kind as u32,
        shape.slots_per_warp,
        shape.n_warps as u32,
        L::WS_RECORD_BYTES,
        L::WS_WARP_HEADER_BYTES,
        L::WS_MAX_SITES,
    ];
    for (i, w) in words.iter().enumerate() {
        h[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
    }
    h
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u32_at(b, off) as u64 | (u32_at(b, off + 4) as u64) << 32
}

/// Decodes a downloaded log buffer into a [`Trace`]. Checks the magic, version and sizes against
/// what the host wrote, and that every record names a declared site; counts dropped records.
/// Warps that never reached `WS_KERNEL_END` are reported as an error (their records would be
/// incomplete), naming the first such warp.
pub fn decode(buf: &[u8], launch: &LaunchInfo, shape: &LogShape) -> Result<Trace, InstrumentError> {
    let bad = |offset: usize, what: String| InstrumentError::BadLog {
        kernel: launch.kernel.clone(),
        offset,
        what,
    };
    let header = L::WS_LOG_HEADER_BYTES as usize;
    if buf.len() < header {
        return Err(bad(0, format!("buffer of {} bytes is shorter than the header", buf.len())));
    }
    if u32_at(buf, 0) != L::WS_LOG_MAGIC {
        return Err(bad(0, format!("bad magic {:#010x}", u32_at(buf, 0))));
    }
    let checks = [
        (4, "version", L::WS_LOG_VERSION),
        (8, "mode", launch.mode.ws_mode()),
        (12, "kind", shape.kind as u32),
        (16, "slots_per_warp", shape.slots_per_warp),
        (20, "n_warps", shape.n_warps as u32),
        (24, "record_bytes", L::WS_RECORD_BYTES),
        (28, "warp_header_bytes", L::WS_WARP_HEADER_BYTES),
    ];
    for (off, name, want) in checks {
        let got = u32_at(buf, off);
        if got != want {
            return Err(bad(off, format!("header field {name} is {got}, expected {want}")));
        }
    }
    if (buf.len() as u64) < shape.total_bytes() {
        return Err(bad(
            buf.len(),
            format!("truncated: {} bytes, the layout needs {}", buf.len(), shape.total_bytes()),
        ));
    }
    let wpb = launch.warps_per_block().max(1);
    let grid = launch.grid;
    let area = shape.warp_area_bytes() as usize;
    let mut warps = Vec::with_capacity(shape.n_warps as usize);
    for i in 0..shape.n_warps as usize {
        let base = header + i * area;
        let flags = u32_at(buf, base + 28);
        if flags & L::WS_WARP_FLAG_ENDED == 0 {
            return Err(bad(
                base + 28,
                format!(
                    "warp {i} never reached WS_KERNEL_END (every thread must pass it; put it before each return)"
                ),
            ));
        }
        let block_linear = (i as u32) / wpb;
        let block = [
            block_linear % grid.x.max(1),
            (block_linear / grid.x.max(1)) % grid.y.max(1),
            block_linear / (grid.x.max(1) * grid.y.max(1)),
        ];
        let mut w = WarpTrace::new(block, i as u32 % wpb, i as u32, SmId(u32_at(buf, base + 16)));
        w.begin = Cycles(u64_at(buf, base));
        w.end = Cycles(u64_at(buf, base + 8));
        w.hw_warp = u32_at(buf, base + 20);
        let count = u32_at(buf, base + 24);
        let body = base + L::WS_WARP_HEADER_BYTES as usize;
        match shape.kind {
            RecordKind::Trace => {
                let kept = count.min(shape.slots_per_warp);
                w.dropped = count - kept;
                for k in 0..kept as usize {
                    let r = body + k * L::WS_RECORD_BYTES as usize;
                    let start = u64_at(buf, r);
                    let site = u32_at(buf, r + 12);
                    if launch.site(site as u16).is_none() || site > u16::MAX as u32 {
                        return Err(bad(r + 12, format!("warp {i} record {k} names undeclared site {site}")));
                    }
                    w.records.push(Record {
                        site: site as u16,
                        seq: k as u32,
                        start: Cycles(start),
                        end: Cycles(start + u32_at(buf, r + 8) as u64),
                    });
                }
            }
            RecordKind::Summary => {
                for s in 0..L::WS_MAX_SITES as usize {
                    let r = body + s * L::WS_SUMMARY_BYTES as usize;
                    let n = u32_at(buf, r);
                    if n == 0 {
                        continue;
                    }
                    if launch.site(s as u16).is_none() {
                        return Err(bad(r, format!("warp {i} has statistics for undeclared site {s}")));
                    }
                    w.summaries.push(SiteSummary {
                        site: s as u16,
                        count: n as u64,
                        min: Cycles(u32_at(buf, r + 4) as u64),
                        max: Cycles(u32_at(buf, r + 8) as u64),
                        sum: Cycles(u64_at(buf, r + 16)),
                    });
                }
            }
        }
        warps.push(w);
    }
    Ok(Trace {
        launch: launch.clone(),
        warps,
    })
}
