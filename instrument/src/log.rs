//! The probe log buffer: its layout (defined once, in `kernels/warpscope.cuh`, and reaching Rust
//! as `kernels::layout`), the bytes the host writes before a launch, and the decoder that turns
//! the bytes the kernel wrote into `trace` records, with checks.
//!
//! # Layout (little-endian; see `kernels/warpscope.cuh` for the authoritative definition)
//! ```text
//! header (64 bytes, written by the host): u32 magic, version, mode, kind, slots, n_warps,
//!        record_bytes, warp_header_bytes, sites, n_traced; zeros
//! warp area i at header + i·(warp_header_bytes + sites·16), i = linear block · warps/block + warp:
//!   u64 begin, u64 end, u32 smid, u32 %warpid, u32 count (trace records attempted),
//!   u32 flags (bit0: END ran), u32 trace (host: trace area index or 0xFFFFFFFF), u32 dropped_sites,
//!   u32 untimed (host: 1 = the warp takes the bare path and times nothing)
//!   sites × {u32 count, u32 min, u32 max, u32 sum (mod 2^32)}
//! trace area t after the warp areas: slots × {u32 start (clock low word), u32 duration, u32 site, 0}
//! ```

use crate::InstrumentError;
use crate::layout::HEADER;
use crate::selection::AccessPeriod;
use kernels::layout as L;
use trace::{Cycles, LaunchInfo, Record, RecordKind, SiteSummary, SmId, Trace, WarpTrace};

/// Sizes of one launch's log, derived from the layout constants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogShape {
    /// Summary statistics entries per warp (site ids `0..sites`).
    pub sites: u32,
    /// Records each traced warp can keep.
    pub slots_per_warp: u32,
    pub n_warps: u64,
    /// Traced warps, ascending (index = trace area).
    pub traced: Vec<u32>,
    /// Warps that take the bare path and time nothing, ascending; never a traced warp.
    pub untimed: Vec<u32>,
    /// Which of its accesses a timed warp times.
    pub access_period: AccessPeriod,
}

impl LogShape {
    pub fn warp_area_bytes(&self) -> u64 {
        L::WS_WARP_HEADER_BYTES as u64 + self.sites as u64 * L::WS_SUMMARY_SITE_BYTES as u64
    }

    fn trace_area_bytes(&self) -> u64 {
        self.slots_per_warp as u64 * L::WS_RECORD_BYTES as u64
    }

    fn traces_offset(&self) -> u64 {
        L::WS_LOG_HEADER_BYTES as u64 + self.n_warps * self.warp_area_bytes()
    }

    /// The whole global buffer.
    pub fn total_bytes(&self) -> u64 {
        self.traces_offset() + self.traced.len() as u64 * self.trace_area_bytes()
    }

    /// Dynamic shared memory the probes' per-warp state needs per block.
    pub fn shared_bytes_per_block(&self, warps_per_block: u32) -> u64 {
        warps_per_block as u64 * self.warp_area_bytes()
    }

    /// Warps that time their accesses.
    pub fn timed_warps(&self) -> u64 {
        self.n_warps - self.untimed.len() as u64
    }

    /// Whether the launch needs a sampled build (`-DWS_SAMPLED=1`, or `instrument --sampled`).
    pub fn sampled(&self) -> bool {
        !self.untimed.is_empty() || !self.access_period.is_all()
    }

    /// What the launch keeps: every warp traced, or statistics (and maybe some traced warps).
    pub fn kind(&self) -> RecordKind {
        if self.n_warps > 0 && self.traced.len() as u64 == self.n_warps {
            RecordKind::Trace
        } else {
            RecordKind::Summary
        }
    }
}

/// The buffer the host uploads before a launch: the header, and per warp its trace area index,
/// whether it is untimed, and `min = u32::MAX` per site (the kernel initialises its shared copy
/// again).
pub fn initial_log(mode: trace::ProbeMode, shape: &LogShape) -> Vec<u8> {
    let mut b = vec![0u8; shape.total_bytes() as usize];
    for (off, _, v) in header_fields(mode, shape) {
        b[off as usize..off as usize + 4].copy_from_slice(&v.to_le_bytes());
    }
    let area = shape.warp_area_bytes() as usize;
    let mut next_traced = shape.traced.iter().copied().enumerate().peekable();
    for w in 0..shape.n_warps as usize {
        let base = L::WS_LOG_HEADER_BYTES as usize + w * area;
        let t = match next_traced.peek() {
            Some(&(t, tw)) if tw as usize == w => {
                next_traced.next();
                t as u32
            }
            _ => L::WS_NOT_TRACED,
        };
        put32(&mut b, base + L::WS_WH_TRACE_OFFSET as usize, t);
        if shape.untimed.binary_search(&(w as u32)).is_ok() {
            put32(
                &mut b,
                base + L::WS_WH_UNTIMED_OFFSET as usize,
                L::WS_WARP_UNTIMED,
            );
        }
        for s in 0..shape.sites as usize {
            let r = base + L::WS_WARP_HEADER_BYTES as usize + s * L::WS_SUMMARY_SITE_BYTES as usize;
            put32(&mut b, r + L::WS_SUM_MIN_OFFSET as usize, u32::MAX);
        }
    }
    b
}

/// (offset, name, value) of every header word, in [`HEADER`]'s order; the decoder checks the
/// same list.
fn header_fields(
    mode: trace::ProbeMode,
    shape: &LogShape,
) -> impl Iterator<Item = (u32, &'static str, u32)> {
    let values = [
        L::WS_LOG_MAGIC,
        L::WS_LOG_VERSION,
        mode.ws_mode(),
        shape.kind() as u32,
        shape.slots_per_warp,
        shape.n_warps as u32,
        L::WS_RECORD_BYTES,
        L::WS_WARP_HEADER_BYTES,
        shape.sites,
        shape.traced.len() as u32,
    ];
    (HEADER.fields.iter())
        .zip(values)
        .map(|(f, v)| (f.offset, f.name, v))
}

fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u32_at(b, off) as u64 | (u32_at(b, off + 4) as u64) << 32
}

/// The 64-bit clock of a 32-bit reading `lo` taken at or after the 64-bit `begin`: the warp's
/// begin clock and every probe clock are the same counter, and a warp runs under 2³² cycles.
fn widen(begin: u64, lo: u32) -> u64 {
    begin.wrapping_add(u64::from(lo.wrapping_sub(begin as u32)))
}

/// The 32-bit sum widened to the one value consistent with `count` accesses between `min` and
/// `max` cycles each, or `None` when that range spans 2³² or more (then it is ambiguous).
fn widen_sum(sum: u32, count: u64, min: u64, max: u64) -> Option<u64> {
    let lo = count.checked_mul(min)?;
    let hi = count.checked_mul(max)?;
    if hi - lo >= 1 << 32 {
        return None;
    }
    let k = lo.saturating_sub(u64::from(sum)).div_ceil(1 << 32);
    let v = u64::from(sum) + (k << 32);
    (lo..=hi).contains(&v).then_some(v)
}

/// Decodes a downloaded log buffer into a [`Trace`]: per-site statistics for every warp, records
/// for the traced ones. Checks the magic, version and sizes against what the host wrote, that
/// every record names a declared site, and that an untimed warp timed nothing; counts dropped
/// records. Warps that never reached
/// `WS_KERNEL_END` are reported as an error (their statistics would be incomplete), naming the
/// first such warp.
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
    let traces = shape.traces_offset() as usize;
    let mut warps = Vec::with_capacity(shape.n_warps as usize);
    for i in 0..shape.n_warps as usize {
        let base = header + i * area;
        let at = |off: u32| base + off as usize;
        if u32_at(buf, at(L::WS_WH_FLAGS_OFFSET)) & L::WS_WARP_FLAG_END == 0 {
            return Err(bad(
                at(L::WS_WH_FLAGS_OFFSET),
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
            SmId(u32_at(buf, at(L::WS_WH_SMID_OFFSET))),
        );
        w.begin = Cycles(u64_at(buf, at(L::WS_WH_BEGIN_OFFSET)));
        w.end = Cycles(u64_at(buf, at(L::WS_WH_END_OFFSET)));
        w.hw_warp = u32_at(buf, at(L::WS_WH_WARPID_OFFSET));
        w.dropped = u32_at(buf, at(L::WS_WH_DROPPED_SITES_OFFSET));
        let untimed = shape.untimed.binary_search(&(i as u32)).is_ok();
        // Only a sampled build reads the flag and writes it back, marked as its own; where
        // nothing is sampled the word is not the kernel's to keep.
        if shape.sampled()
            && u32_at(buf, at(L::WS_WH_UNTIMED_OFFSET))
                != (u32::from(untimed) * L::WS_WARP_UNTIMED) | L::WS_WARP_SAMPLED_BUILD
        {
            return Err(bad(
                at(L::WS_WH_UNTIMED_OFFSET),
                format!(
                    "warp {i}'s untimed flag is not the one the host wrote, marked by a sampled build: timing only some warps or some accesses needs the sampled build (-DWS_SAMPLED=1, or instrument --sampled)"
                ),
            ));
        }
        for s in 0..shape.sites as usize {
            let r = base + L::WS_WARP_HEADER_BYTES as usize + s * L::WS_SUMMARY_SITE_BYTES as usize;
            let n = u32_at(buf, r + L::WS_SUM_COUNT_OFFSET as usize);
            if n == 0 {
                continue;
            }
            if untimed {
                return Err(bad(
                    r,
                    format!(
                        "warp {i} was not selected for timing but timed {n} accesses at site {s}"
                    ),
                ));
            }
            if launch.site(s as u16).is_none() {
                return Err(bad(
                    r,
                    format!("warp {i} has statistics for undeclared site {s}"),
                ));
            }
            let min = u32_at(buf, r + L::WS_SUM_MIN_OFFSET as usize) as u64;
            let max = u32_at(buf, r + L::WS_SUM_MAX_OFFSET as usize) as u64;
            let raw = u32_at(buf, r + L::WS_SUM_SUM_OFFSET as usize);
            let sum = widen_sum(raw, n as u64, min, max).ok_or_else(|| {
                bad(
                    r + L::WS_SUM_SUM_OFFSET as usize,
                    format!(
                        "warp {i} site {s}: the 32-bit cycle sum of {n} accesses of {min}..{max} cycles is ambiguous (trace this warp for exact times)"
                    ),
                )
            })?;
            w.summaries.push(SiteSummary {
                site: s as u16,
                count: n as u64,
                min: Cycles(min),
                max: Cycles(max),
                sum: Cycles(sum),
            });
        }
        let t = u32_at(buf, at(L::WS_WH_TRACE_OFFSET));
        if t != L::WS_NOT_TRACED {
            if shape.traced.get(t as usize) != Some(&(i as u32)) {
                return Err(bad(
                    at(L::WS_WH_TRACE_OFFSET),
                    format!("warp {i} names trace area {t}, which the host gave another warp"),
                ));
            }
            let count = u32_at(buf, at(L::WS_WH_COUNT_OFFSET));
            let kept = count.min(shape.slots_per_warp);
            w.dropped += count - kept;
            let body = traces + t as usize * shape.trace_area_bytes() as usize;
            for k in 0..kept as usize {
                let r = body + k * L::WS_RECORD_BYTES as usize;
                let site = u32_at(buf, r + L::WS_REC_SITE_OFFSET as usize);
                if site > u16::MAX as u32 || launch.site(site as u16).is_none() {
                    return Err(bad(
                        r + L::WS_REC_SITE_OFFSET as usize,
                        format!("warp {i} record {k} names undeclared site {site}"),
                    ));
                }
                let start = widen(w.begin.0, u32_at(buf, r + L::WS_REC_START_OFFSET as usize));
                w.records.push(Record {
                    site: site as u16,
                    seq: k as u32,
                    start: Cycles(start),
                    end: Cycles(start + u32_at(buf, r + L::WS_REC_DURATION_OFFSET as usize) as u64),
                });
            }
        }
        warps.push(w);
    }
    Ok(Trace {
        launch: LaunchInfo {
            untimed_warps: shape.untimed.clone(),
            access_period: shape.access_period.get(),
            ..launch.clone()
        },
        warps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::{Dim3, ProbeMode, Region, SiteInfo};

    fn launch() -> LaunchInfo {
        LaunchInfo::new("k", Dim3::new(2, 1, 1), Dim3::new(64, 1, 1))
            .with_probe(ProbeMode::Fence, RecordKind::Summary)
            .with_sites(vec![
                SiteInfo::new(0, "a", Region::Global),
                SiteInfo::new(1, "b", Region::Texture),
            ])
    }

    fn shape(traced: Vec<u32>) -> LogShape {
        LogShape {
            sites: 2,
            slots_per_warp: 3,
            n_warps: 4,
            traced,
            untimed: Vec::new(),
            access_period: AccessPeriod::ALL,
        }
    }

    /// A log as the kernel would leave it: warp i made `counts[i]` accesses at site i % 2, each
    /// of 7 + k cycles starting at begin + 10·k; traced warps also wrote their records.
    fn log(shape: &LogShape, counts: &[u32]) -> Vec<u8> {
        let mut b = initial_log(ProbeMode::Fence, shape);
        let area = shape.warp_area_bytes() as usize;
        for (i, &n) in counts.iter().enumerate() {
            let base = 64 + i * area;
            let begin = (1u64 << 32) - 20 + 1000 * i as u64; // the low word wraps in warp 0
            b[base..base + 8].copy_from_slice(&begin.to_le_bytes());
            b[base + 8..base + 16].copy_from_slice(&(begin + 900).to_le_bytes());
            put32(&mut b, base + 16, i as u32 % 3);
            put32(&mut b, base + 20, 5 + i as u32);
            put32(&mut b, base + 28, L::WS_WARP_FLAG_END);
            let site = i % 2;
            let r = base + 48 + site * 16;
            if n > 0 {
                put32(&mut b, r, n);
                put32(&mut b, r + 4, 7);
                put32(&mut b, r + 8, 7 + n - 1);
                put32(&mut b, r + 12, (0..n).map(|k| 7 + k).sum());
            }
            if let Some(t) = shape.traced.iter().position(|&w| w == i as u32) {
                put32(&mut b, base + 24, n);
                let body = shape.traces_offset() as usize + t * 48;
                for k in 0..n.min(3) as usize {
                    let r = body + k * 16;
                    put32(&mut b, r, (begin + 10 * k as u64) as u32);
                    put32(&mut b, r + 4, 7 + k as u32);
                    put32(&mut b, r + 8, site as u32);
                }
            }
        }
        b
    }

    #[test]
    fn decodes_statistics_records_blocks_and_dropped_counts() {
        let shape = shape(vec![0, 2]);
        let t = decode(&log(&shape, &[2, 3, 5, 0]), &launch(), &shape).unwrap();
        assert_eq!(t.warps.len(), 4);
        assert_eq!(t.warps[2].block, [1, 0, 0]);
        assert_eq!(t.warps[2].warp, 0);
        assert_eq!(t.warps[3].warp, 1);
        // Every warp with accesses has statistics; only traced warps have records.
        assert_eq!(t.warps[1].summaries.len(), 1);
        let s = t.warps[1].summaries[0];
        assert_eq!(
            (s.site, s.count, s.min.0, s.max.0, s.sum.0),
            (1, 3, 7, 9, 24)
        );
        assert!(t.warps[1].records.is_empty());
        assert_eq!(t.warps[2].records.len(), 3);
        assert_eq!(t.warps[2].dropped, 2);
        assert_eq!(t.dropped_count(), 2);
        // Starts are widened against the 64-bit begin clock, across a wrap of the low word.
        let begin = t.warps[0].begin.0;
        let r = t.warps[0].records[1];
        assert_eq!(
            (r.site, r.seq, r.start.0, r.end.0),
            (0, 1, begin + 10, begin + 18)
        );
        assert_eq!(t.warps[1].sm, SmId(1));
        assert_eq!(t.warps[1].hw_warp, 6);
        assert_eq!(t.warps[1].lifetime(), Cycles(900));
        assert!(t.warps[3].summaries.is_empty());
    }

    #[test]
    fn rejects_bad_logs_with_reasons() {
        let shape = shape(vec![0]);
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
        put32(&mut bad_site, shape.traces_offset() as usize + 8, 9);
        let mut stolen = good.clone();
        put32(&mut stolen, 64 + shape.warp_area_bytes() as usize + 32, 0);
        let cases: [(&[u8], &str); 5] = [
            (&bad_magic, "magic"),
            (&good[..good.len() - 1], "truncated"),
            (&not_ended, "warp 2 never reached WS_KERNEL_END"),
            (&bad_site, "undeclared site 9"),
            (&stolen, "warp 1 names trace area 0"),
        ];
        for (buf, want) in cases {
            let e = decode(buf, &launch(), &shape).unwrap_err().to_string();
            assert!(e.contains(want), "{e:?} should contain {want:?}");
        }
    }

    #[test]
    fn sizes_follow_the_header_constants() {
        let t = LogShape {
            sites: 2,
            slots_per_warp: 10,
            n_warps: 3,
            traced: vec![1],
            untimed: Vec::new(),
            access_period: AccessPeriod::ALL,
        };
        assert_eq!(t.total_bytes(), 64 + 3 * (48 + 32) + 160);
        assert_eq!(t.shared_bytes_per_block(4), 4 * (48 + 32));
        assert_eq!(t.kind(), RecordKind::Summary);
        let all = LogShape {
            traced: vec![0, 1, 2],
            ..t
        };
        assert_eq!(all.kind(), RecordKind::Trace);
    }

    #[test]
    fn untimed_warps_are_marked_and_must_time_nothing() {
        let shape = LogShape {
            untimed: vec![1, 3],
            access_period: AccessPeriod::ALL,
            ..shape(vec![0])
        };
        let fresh = initial_log(ProbeMode::Fence, &shape);
        let flag = |w: usize| {
            u32_at(
                &fresh,
                64 + w * shape.warp_area_bytes() as usize + L::WS_WH_UNTIMED_OFFSET as usize,
            )
        };
        assert_eq!((flag(0), flag(1), flag(2), flag(3)), (0, 1, 0, 1));
        assert_eq!(shape.timed_warps(), 2);
        // As the kernel leaves it: END copies the flag back, marked by the sampled build; the
        // untimed warps 1 and 3 made no timed access (warp 3 has none in `log`), warp 1 did in
        // this buffer.
        let mut b = log(&shape, &[2, 0, 5, 0]);
        for w in 0..4 {
            put32(
                &mut b,
                64 + w * shape.warp_area_bytes() as usize + L::WS_WH_UNTIMED_OFFSET as usize,
                u32::from(w % 2 == 1) | L::WS_WARP_SAMPLED_BUILD,
            );
        }
        let t = decode(&b, &launch(), &shape).unwrap();
        assert!(t.warps[1].summaries.is_empty() && t.warps[3].summaries.is_empty());
        assert_eq!(t.warps[2].summaries[0].count, 5);
        let mut timed_anyway = b.clone();
        let r = 64 + shape.warp_area_bytes() as usize + 48 + 16;
        put32(&mut timed_anyway, r, 4);
        let e = decode(&timed_anyway, &launch(), &shape)
            .unwrap_err()
            .to_string();
        assert!(e.contains("warp 1 was not selected for timing"), "{e}");
        let mut lost_flag = b;
        put32(
            &mut lost_flag,
            64 + 3 * shape.warp_area_bytes() as usize + L::WS_WH_UNTIMED_OFFSET as usize,
            0,
        );
        let e = decode(&lost_flag, &launch(), &shape)
            .unwrap_err()
            .to_string();
        assert!(e.contains("warp 3's untimed flag"), "{e}");
    }

    #[test]
    fn sampled_accesses_need_a_build_that_marks_the_flag_and_reach_the_trace() {
        let shape = LogShape {
            access_period: AccessPeriod::new(4).unwrap(),
            ..shape(vec![0])
        };
        assert!(shape.sampled());
        // A build that times everything leaves the word as the host wrote it: refused.
        let b = log(&shape, &[2, 0, 5, 0]);
        let e = decode(&b, &launch(), &shape).unwrap_err().to_string();
        assert!(e.contains("warp 0's untimed flag"), "{e}");
        let mut marked = b;
        for w in 0..4 {
            put32(
                &mut marked,
                64 + w * shape.warp_area_bytes() as usize + L::WS_WH_UNTIMED_OFFSET as usize,
                L::WS_WARP_SAMPLED_BUILD,
            );
        }
        let t = decode(&marked, &launch(), &shape).unwrap();
        assert_eq!(t.launch.access_period, 4);
        assert_eq!(t.warps[2].summaries[0].count, 5);
    }

    #[test]
    fn the_32_bit_sum_widens_when_unambiguous() {
        assert_eq!(widen_sum(24, 3, 7, 9), Some(24));
        // 2 accesses of 3·2^31 cycles: the true sum 3·2^32 is 0 mod 2^32.
        let big = 3u64 << 31;
        assert_eq!(widen_sum(0, 2, big, big), Some(3 << 32));
        assert_eq!(widen_sum(5, 1 << 20, 0, 1 << 12), None, "range spans 2^32");
        assert_eq!(widen(u32::MAX as u64 - 5, 3), u32::MAX as u64 + 4);
    }
}
