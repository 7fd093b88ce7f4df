//! What the writers read: a [`TraceSource`] is either the on-disk store ([`trace::TraceReader`],
//! streamed) or an in-memory [`trace::Trace`] (tests, small runs). Both expose warps one at a
//! time so that a writer never needs more than the warps it is currently merging.

use crate::error::ExportError;
use trace::{LaunchInfo, Record, SiteSummary, Trace, TraceReader, WarpTrace};

/// A stream over one warp's records, in the order the warp logged them.
pub type RecordStream<'a> = Box<dyn Iterator<Item = Result<Record, ExportError>> + 'a>;

/// A launch whose warps can be opened one at a time (random access by warp index).
pub trait TraceSource {
    fn launch(&self) -> &LaunchInfo;
    fn warp_count(&self) -> usize;
    fn record_count(&self) -> u64;
    /// Warp `i`'s header (its `records` and `summaries` left empty) and a stream over its
    /// records that buffers at most about `buffer_bytes` of input.
    fn open_warp(
        &self,
        i: usize,
        buffer_bytes: usize,
    ) -> Result<(WarpTrace, RecordStream<'_>), ExportError>;
    /// Like [`TraceSource::open_warp`], but reads all of the warp's records first, so that no
    /// file stays open while they are consumed.
    fn load_warp(&self, i: usize) -> Result<(WarpTrace, RecordStream<'_>), ExportError> {
        let (header, stream) = self.open_warp(i, 1 << 16)?;
        let records: Vec<Record> = stream.collect::<Result<_, _>>()?;
        Ok((header, Box::new(records.into_iter().map(Ok))))
    }
    /// Warp `i`'s per-site summaries (the `summary` record kind; empty for `trace`).
    fn summaries(&self, i: usize) -> Result<Vec<SiteSummary>, ExportError>;
}

impl TraceSource for TraceReader {
    fn launch(&self) -> &LaunchInfo {
        TraceReader::launch(self)
    }

    fn warp_count(&self) -> usize {
        TraceReader::warp_count(self)
    }

    fn record_count(&self) -> u64 {
        TraceReader::record_count(self)
    }

    fn open_warp(
        &self,
        i: usize,
        buffer_bytes: usize,
    ) -> Result<(WarpTrace, RecordStream<'_>), ExportError> {
        let mut cursor = self.cursor(i, buffer_bytes)?;
        let header = cursor.header.clone();
        let stream =
            std::iter::from_fn(move || cursor.next_record().map_err(ExportError::from).transpose());
        Ok((header, Box::new(stream)))
    }

    fn summaries(&self, i: usize) -> Result<Vec<SiteSummary>, ExportError> {
        // `read_warp` reads the records too; only called for warps with no records.
        Ok(self.read_warp(i)?.summaries)
    }
}

impl TraceSource for Trace {
    fn launch(&self) -> &LaunchInfo {
        &self.launch
    }

    fn warp_count(&self) -> usize {
        self.warps.len()
    }

    fn record_count(&self) -> u64 {
        Trace::record_count(self)
    }

    fn open_warp(
        &self,
        i: usize,
        _buffer_bytes: usize,
    ) -> Result<(WarpTrace, RecordStream<'_>), ExportError> {
        let w = self.warp(i)?;
        let header = WarpTrace {
            records: Vec::new(),
            summaries: Vec::new(),
            ..*w
        };
        Ok((header, Box::new(w.records.iter().copied().map(Ok))))
    }

    fn summaries(&self, i: usize) -> Result<Vec<SiteSummary>, ExportError> {
        Ok(self.warp(i)?.summaries.clone())
    }
}

trait WarpAt {
    fn warp(&self, i: usize) -> Result<&WarpTrace, ExportError>;
}

impl WarpAt for Trace {
    fn warp(&self, i: usize) -> Result<&WarpTrace, ExportError> {
        self.warps.get(i).ok_or_else(|| {
            ExportError::parse(
                "in-memory trace",
                format!("warp {i}"),
                format!("out of range (trace has {} warps)", self.warps.len()),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::{Cycles, Dim3, SmId, TraceWriter};

    fn two_warps() -> Trace {
        let launch = LaunchInfo::new("k", Dim3::new(1, 1, 1), Dim3::new(64, 1, 1));
        let warps = (0..2u32)
            .map(|i| {
                let mut w = WarpTrace::new([0, 0, 0], i, i, SmId(i));
                w.begin = Cycles(10 * i as u64);
                w.records = (0..3)
                    .map(|k| Record {
                        site: k as u16,
                        seq: k,
                        start: Cycles(100 + k as u64),
                        end: Cycles(200 + k as u64 * i as u64),
                    })
                    .collect();
                w
            })
            .collect();
        Trace { launch, warps }
    }

    #[test]
    fn store_and_memory_sources_agree() {
        let t = two_warps();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.wst");
        TraceWriter::write_all(&path, &t).unwrap();
        let r = TraceReader::open(&path).unwrap();
        for i in 0..2 {
            let (h1, s1) = TraceSource::open_warp(&r, i, 64).unwrap();
            let (h2, s2) = TraceSource::open_warp(&t, i, 64).unwrap();
            assert_eq!(h1, h2);
            assert!(h1.records.is_empty());
            let a: Vec<Record> = s1.collect::<Result<_, _>>().unwrap();
            let b: Vec<Record> = s2.collect::<Result<_, _>>().unwrap();
            assert_eq!(a, t.warps[i].records);
            assert_eq!(a, b);
        }
        assert!(TraceSource::open_warp(&t, 2, 64).is_err());
        assert!(TraceSource::open_warp(&r, 2, 64).is_err());
    }
}
