//! A deterministic synthetic trace generated on the fly, for scale tests, benchmarks and the
//! `big` example: it implements [`TraceSource`] without holding any record in memory, so an
//! export of 10⁸ records measures the writer alone.
//!
//! Shape (GPU-like, so that the CLOG2 merge sees a realistic number of live warps): `sms` SMs
//! × `slots` warp slots run `waves` warps one after another; each warp logs
//! `records_per_warp` accesses back to back, alternating between two declared sites, with
//! pseudo-random durations (200–999 cycles, SplitMix64 of the record's position). Blocks hold 4
//! warps (128 threads). Every `dropped_every`-th warp reports 3 dropped records (0 = none).

use crate::error::ExportError;
use crate::source::{RecordStream, TraceSource};
use trace::{
    Cycles, Dim3, LaunchInfo, ProbeMode, Record, RecordKind, Region, SiteInfo, SiteSummary, SmId,
    TraceWriter, WarpTrace,
};

/// Parameters of a synthetic trace (see the module docs).
#[derive(Debug, Clone)]
pub struct SyntheticTrace {
    launch: LaunchInfo,
    pub sms: u32,
    pub slots: u32,
    pub waves: u32,
    pub records_per_warp: u32,
    pub dropped_every: u32,
}

const WARPS_PER_BLOCK: u32 = 4;
/// Longest access plus gap: a wave lasts at most this many cycles per record.
const MAX_STEP: u64 = 1100;

fn mix(mut z: u64) -> u64 {
    // SplitMix64 finaliser: cheap, deterministic, well spread.
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl SyntheticTrace {
    pub fn new(sms: u32, slots: u32, waves: u32, records_per_warp: u32) -> Self {
        let warps = sms as u64 * slots as u64 * waves as u64;
        let blocks = warps.div_ceil(WARPS_PER_BLOCK as u64) as u32;
        let launch = LaunchInfo::new(
            "synthetic",
            Dim3::new(blocks.max(1), 1, 1),
            Dim3::new(128, 1, 1),
        )
        .with_probe(ProbeMode::Auto, RecordKind::Trace)
        .with_sites(vec![
            SiteInfo::new(0, "tex3D(volume)", Region::Texture),
            SiteInfo::new(1, "d_output[i]", Region::Global),
        ])
        .with_clock(1400.0)
        .with_backend("emu", "synthetic");
        SyntheticTrace {
            launch,
            sms,
            slots,
            waves,
            records_per_warp,
            dropped_every: 0,
        }
    }

    pub fn with_dropped_every(mut self, n: u32) -> Self {
        self.dropped_every = n;
        self
    }

    fn header(&self, i: usize) -> Result<WarpTrace, ExportError> {
        let n = self.warp_count();
        if i >= n {
            return Err(ExportError::parse(
                "synthetic trace",
                format!("warp {i}"),
                format!("out of range ({n} warps)"),
            ));
        }
        let g = i as u32;
        let slot = g % self.slots;
        let sm = (g / self.slots) % self.sms;
        let wave = g / (self.slots * self.sms);
        let mut w = WarpTrace::new(
            [g / WARPS_PER_BLOCK, 0, 0],
            g % WARPS_PER_BLOCK,
            g,
            SmId(sm),
        );
        w.hw_warp = slot;
        let wave_cycles = self.records_per_warp as u64 * MAX_STEP + 1000;
        // Each SM's clock has its own offset, as on hardware; the exporters align them.
        w.begin =
            Cycles(1_000_000 * (sm as u64 + 1) + wave as u64 * wave_cycles + (mix(g as u64) % 50));
        w.end = Cycles(w.begin.0 + self.records_per_warp as u64 * MAX_STEP + 100);
        if self.dropped_every > 0 && g.is_multiple_of(self.dropped_every) {
            w.dropped = 3;
        }
        Ok(w)
    }

    /// Writes the whole trace to a `trace.wst` store, one warp in memory at a time.
    pub fn write_store(&self, path: &std::path::Path) -> Result<(), ExportError> {
        let mut out = TraceWriter::create(path, &self.launch)?;
        for i in 0..self.warp_count() {
            let (mut w, records) = self.open_warp(i, 0)?;
            w.records = records.collect::<Result<_, _>>()?;
            out.write_warp(&w)?;
        }
        Ok(out.finish()?)
    }
}

impl TraceSource for SyntheticTrace {
    fn launch(&self) -> &LaunchInfo {
        &self.launch
    }

    fn warp_count(&self) -> usize {
        self.sms as usize * self.slots as usize * self.waves as usize
    }

    fn record_count(&self) -> u64 {
        self.warp_count() as u64 * self.records_per_warp as u64
    }

    fn open_warp(
        &self,
        i: usize,
        _buffer_bytes: usize,
    ) -> Result<(WarpTrace, RecordStream<'_>), ExportError> {
        let w = self.header(i)?;
        let mut t = w.begin.0 + 20;
        let seed = (i as u64) << 32;
        let records = (0..self.records_per_warp).map(move |k| {
            let r = mix(seed | k as u64);
            let start = t + r % 100;
            let end = start + 200 + (r >> 8) % 800;
            t = end;
            Ok(Record {
                site: (k % 2) as u16,
                seq: k,
                start: Cycles(start),
                end: Cycles(end),
            })
        });
        Ok((w, Box::new(records)))
    }

    fn summaries(&self, _i: usize) -> Result<Vec<SiteSummary>, ExportError> {
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warps_are_in_order_and_within_their_lifetime() {
        let s = SyntheticTrace::new(2, 3, 2, 50).with_dropped_every(5);
        assert_eq!(s.warp_count(), 12);
        for i in 0..s.warp_count() {
            let (w, recs) = s.open_warp(i, 0).unwrap();
            let recs: Vec<Record> = recs.collect::<Result<_, _>>().unwrap();
            assert_eq!(recs.len(), 50);
            assert!(
                recs.iter()
                    .all(|r| r.start >= w.begin && r.end <= w.end && !r.wrapped())
            );
            assert!(recs.windows(2).all(|p| p[0].end <= p[1].start));
            assert_eq!(w.dropped, if i % 5 == 0 { 3 } else { 0 });
        }
        assert!(s.open_warp(12, 0).is_err());
    }
}
