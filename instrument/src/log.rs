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
            RecordKind::Summary => L::WS_MAX_SITES as u64 * L::WS_SUMMARY_SITE_BYTES as u64,
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
        warps_per_block as u64 * (L::WS_SHARED_WARP_HEADER_BYTES as u64 + self.body_bytes())
    }
}

/// The 64-byte header the host writes at the start of the log buffer.
pub fn header_bytes(mode: trace::ProbeMode, shape: &LogShape) -> Vec<u8> {
    let mut h = vec![0u8; L::WS_LOG_HEADER_BYTES as usize];
    for (off, _, v) in header_fields(mode, shape) {
        h[off as usize..off as usize + 4].copy_from_slice(&v.to_le_bytes());
    }
    h
}

/// (offset, name, value) of every header word; the decoder checks the same list.
fn header_fields(mode: trace::ProbeMode, shape: &LogShape) -> [(u32, &'static str, u32); 9] {
    [
        (L::WS_HDR_MAGIC_OFFSET, "magic", L::WS_LOG_MAGIC),
        (L::WS_HDR_VERSION_OFFSET, "version", L::WS_LOG_VERSION),
        (L::WS_HDR_MODE_OFFSET, "mode", mode.ws_mode()),
        (L::WS_HDR_KIND_OFFSET, "kind", shape.kind as u32),
        (
            L::WS_HDR_SLOTS_OFFSET,
            "slots_per_warp",
            shape.slots_per_warp,
        ),
        (L::WS_HDR_N_WARPS_OFFSET, "n_warps", shape.n_warps as u32),
        (
            L::WS_HDR_RECORD_BYTES_OFFSET,
            "record_bytes",
            L::WS_RECORD_BYTES,
        ),
        (
            L::WS_HDR_WARP_HEADER_BYTES_OFFSET,
            "warp_header_bytes",
            L::WS_WARP_HEADER_BYTES,
        ),
        (L::WS_HDR_MAX_SITES_OFFSET, "max_sites", L::WS_MAX_SITES),
    ]
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
        return Err(bad(
            0,
            format!("buffer of {} bytes is shorter than the header", buf.len()),
        ));
    }
    for (off, name, want) in header_fields(launch.mode, shape) {
        let got = u32_at(buf, off as usize);
        if got != want {
            return Err(bad(
                off as usize,
                format!(
                    "header field {name} is {got:#x}, expected {want:#x} (not a warpscope log, or overwritten by the kernel)"
                ),
            ));
        }
    }
    if (buf.len() as u64) < shape.total_bytes() {
        return Err(bad(
            buf.len(),
            format!(
                "truncated: {} bytes, the layout needs {}",
                buf.len(),
                shape.total_bytes()
            ),
        ));
    }
    let wpb = launch.warps_per_block().max(1);
    let grid = launch.grid;
    let area = shape.warp_area_bytes() as usize;
    let mut warps = Vec::with_capacity(shape.n_warps as usize);
    for i in 0..shape.n_warps as usize {
        let base = header + i * area;
        let flags = u32_at(buf, base + L::WS_WH_FLAGS_OFFSET as usize);
        if flags & L::WS_WARP_FLAG_END == 0 {
            return Err(bad(
                base + L::WS_WH_FLAGS_OFFSET as usize,
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
        let mut w = WarpTrace::new(
            block,
            i as u32 % wpb,
            i as u32,
            SmId(u32_at(buf, base + L::WS_WH_SMID_OFFSET as usize)),
        );
        w.begin = Cycles(u64_at(buf, base + L::WS_WH_BEGIN_OFFSET as usize));
        w.end = Cycles(u64_at(buf, base + L::WS_WH_END_OFFSET as usize));
        w.hw_warp = u32_at(buf, base + L::WS_WH_WARPID_OFFSET as usize);
        let count = u32_at(buf, base + L::WS_WH_COUNT_OFFSET as usize);
        let body = base + L::WS_WARP_HEADER_BYTES as usize;
        match shape.kind {
            RecordKind::Trace => {
                let kept = count.min(shape.slots_per_warp);
                w.dropped = count - kept;
                for k in 0..kept as usize {
                    let r = body + k * L::WS_RECORD_BYTES as usize;
                    let start = u64_at(buf, r + L::WS_REC_START_OFFSET as usize);
                    let site = u32_at(buf, r + L::WS_REC_SITE_OFFSET as usize);
                    if launch.site(site as u16).is_none() || site > u16::MAX as u32 {
                        return Err(bad(
                            r + L::WS_REC_SITE_OFFSET as usize,
                            format!("warp {i} record {k} names undeclared site {site}"),
                        ));
                    }
                    w.records.push(Record {
                        site: site as u16,
                        seq: k as u32,
                        start: Cycles(start),
                        end: Cycles(
                            start + u32_at(buf, r + L::WS_REC_DURATION_OFFSET as usize) as u64,
                        ),
                    });
                }
            }
            RecordKind::Summary => {
                for s in 0..L::WS_MAX_SITES as usize {
                    let r = body + s * L::WS_SUMMARY_SITE_BYTES as usize;
                    let n = u32_at(buf, r + L::WS_SUM_COUNT_OFFSET as usize);
                    if n == 0 {
                        continue;
                    }
                    if launch.site(s as u16).is_none() {
                        return Err(bad(
                            r,
                            format!("warp {i} has statistics for undeclared site {s}"),
                        ));
                    }
                    w.summaries.push(SiteSummary {
                        site: s as u16,
                        count: n as u64,
                        min: Cycles(u32_at(buf, r + L::WS_SUM_MIN_OFFSET as usize) as u64),
                        max: Cycles(u32_at(buf, r + L::WS_SUM_MAX_OFFSET as usize) as u64),
                        sum: Cycles(u64_at(buf, r + L::WS_SUM_SUM_OFFSET as usize)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use trace::{Dim3, ProbeMode, Region, SiteInfo};

    fn launch() -> LaunchInfo {
        LaunchInfo::new("k", Dim3::new(2, 1, 1), Dim3::new(64, 1, 1))
            .with_probe(ProbeMode::Fence, RecordKind::Trace)
            .with_sites(vec![
                SiteInfo::new(0, "a", Region::Global),
                SiteInfo::new(1, "b", Region::Texture),
            ])
    }

    fn put32(b: &mut [u8], off: usize, v: u32) {
        b[off..off + 4].copy_from_slice(&v.to_le_bytes());
    }

    /// A log as the kernel would leave it: warp i has `counts[i]` records (site i % 2).
    fn log(shape: &LogShape, counts: &[u32]) -> Vec<u8> {
        let mut b = vec![0u8; shape.total_bytes() as usize];
        b[..64].copy_from_slice(&header_bytes(ProbeMode::Fence, shape));
        let area = shape.warp_area_bytes() as usize;
        for (i, &n) in counts.iter().enumerate() {
            let base = 64 + i * area;
            b[base..base + 8].copy_from_slice(&(1000 * i as u64).to_le_bytes());
            b[base + 8..base + 16].copy_from_slice(&(1000 * i as u64 + 900).to_le_bytes());
            put32(&mut b, base + 16, i as u32 % 3);
            put32(&mut b, base + 20, 5 + i as u32);
            put32(&mut b, base + 24, n);
            put32(&mut b, base + 28, L::WS_WARP_FLAG_END);
            for k in 0..n.min(shape.slots_per_warp) as usize {
                let r = base + 32 + k * 16;
                b[r..r + 8].copy_from_slice(&(1000 * i as u64 + 10 * k as u64).to_le_bytes());
                put32(&mut b, r + 8, 7 + k as u32);
                put32(&mut b, r + 12, i as u32 % 2);
            }
        }
        b
    }

    #[test]
    fn decodes_records_blocks_and_dropped_counts() {
        let shape = LogShape {
            kind: RecordKind::Trace,
            slots_per_warp: 3,
            n_warps: 4,
        };
        let t = decode(&log(&shape, &[2, 3, 5, 0]), &launch(), &shape).unwrap();
        assert_eq!(t.warps.len(), 4);
        assert_eq!(t.warps[2].block, [1, 0, 0]);
        assert_eq!(t.warps[2].warp, 0);
        assert_eq!(t.warps[3].warp, 1);
        assert_eq!(t.warps[2].records.len(), 3);
        assert_eq!(t.warps[2].dropped, 2);
        assert_eq!(t.dropped_count(), 2);
        let r = t.warps[1].records[2];
        assert_eq!((r.site, r.seq, r.start.0, r.end.0), (1, 2, 1020, 1029));
        assert_eq!(t.warps[1].sm, SmId(1));
        assert_eq!(t.warps[1].hw_warp, 6);
        assert_eq!(t.warps[1].lifetime(), Cycles(900));
    }

    #[test]
    fn rejects_bad_logs_with_reasons() {
        let shape = LogShape {
            kind: RecordKind::Trace,
            slots_per_warp: 3,
            n_warps: 4,
        };
        let good = log(&shape, &[1, 1, 1, 1]);
        let mut bad_magic = good.clone();
        bad_magic[0] ^= 0xff;
        let mut not_ended = good.clone();
        put32(
            &mut not_ended,
            64 + 2 * shape.warp_area_bytes() as usize + 28,
            0,
        );
        let mut bad_site = good.clone();
        put32(&mut bad_site, 64 + 32 + 12, 9);
        let cases: [(&[u8], &str); 4] = [
            (&bad_magic, "magic"),
            (&good[..good.len() - 1], "truncated"),
            (&not_ended, "warp 2 never reached WS_KERNEL_END"),
            (&bad_site, "undeclared site 9"),
        ];
        for (buf, want) in cases {
            let e = decode(buf, &launch(), &shape).unwrap_err().to_string();
            assert!(e.contains(want), "{e:?} should contain {want:?}");
        }
    }

    #[test]
    fn sizes_follow_the_header_constants() {
        let t = LogShape {
            kind: RecordKind::Trace,
            slots_per_warp: 10,
            n_warps: 3,
        };
        assert_eq!(t.total_bytes(), 64 + 3 * (32 + 160));
        assert_eq!(t.shared_bytes_per_block(4), 4 * (16 + 160));
        let s = LogShape {
            kind: RecordKind::Summary,
            slots_per_warp: 10,
            n_warps: 1,
        };
        assert_eq!(s.body_bytes(), 16 * 24);
    }
}
