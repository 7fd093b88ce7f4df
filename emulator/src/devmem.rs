//! The emulated device's flat global address space: checked allocations, so any guest access
//! outside an allocation is a fault instead of silent corruption.
//!
//! Layout: allocations are bump-allocated from `GLOBAL_BASE` (4 GiB, so null and small integers
//! never alias memory), 256-byte aligned, with at least 256 unmapped bytes between neighbours so
//! that running off the end of a buffer faults. Generic addresses of shared and local memory live
//! in two windows far above any allocation (`SHARED_WINDOW`, `LOCAL_WINDOW`), as `cvta` produces
//! them.
//!
//! ```ignore
//! let mut m = DeviceMemory::default();
//! let a = m.alloc(16)?;
//! m.write(a, &[1, 2, 3])?;
//! assert!(m.slice(a + 16, 1).is_none()); // past the end: unmapped
//! ```

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::EmuError;

pub(crate) const GLOBAL_BASE: u64 = 1 << 32;
/// Generic address of kernel-parameter offset 0 (`cvta.param`).
pub(crate) const PARAM_WINDOW: u64 = 0x7D00_0000_0000;
/// Generic address of shared-memory offset 0.
pub(crate) const SHARED_WINDOW: u64 = 0x7E00_0000_0000;
/// Generic address of local-memory offset 0 (per thread).
pub(crate) const LOCAL_WINDOW: u64 = 0x7F00_0000_0000;
pub(crate) const WINDOW_BYTES: u64 = 1 << 32;

struct Alloc {
    base: u64,
    data: Vec<u8>,
}

/// Checked, sparse device memory.
#[derive(Default)]
pub(crate) struct DeviceMemory {
    allocs: Vec<Alloc>,
    next: u64,
    /// Index of the allocation hit last: consecutive accesses almost always hit the same one.
    /// Atomic only so that SMs running in parallel may share the memory for reading; which
    /// index it holds never changes a result.
    last: AtomicUsize,
}

impl DeviceMemory {
    /// Allocates `bytes` zeroed bytes; returns the device address (256-aligned).
    pub(crate) fn alloc(&mut self, bytes: u64) -> Result<u64, EmuError> {
        self.alloc_aligned(bytes, 256)
    }

    /// Allocates `bytes` zeroed bytes at a multiple of `align` (a power of two ≥ 256), as the
    /// driver aligns a block-linear cudaArray to its block size.
    pub(crate) fn alloc_aligned(&mut self, bytes: u64, align: u64) -> Result<u64, EmuError> {
        let next = if self.next == 0 {
            GLOBAL_BASE
        } else {
            self.next
        };
        let base = next.next_multiple_of(align.max(256));
        let len = usize::try_from(bytes).map_err(|_| EmuError::Memory {
            addr: base,
            what: format!("allocation of {bytes} bytes is too large"),
        })?;
        if base.saturating_add(bytes) >= PARAM_WINDOW {
            return Err(EmuError::Memory {
                addr: base,
                what: "device address space exhausted".into(),
            });
        }
        let mut data = Vec::new();
        data.try_reserve_exact(len).map_err(|_| EmuError::Memory {
            addr: base,
            what: format!("cannot allocate {bytes} bytes"),
        })?;
        data.resize(len, 0);
        self.allocs.push(Alloc { base, data });
        self.next = (base + bytes.max(1) + 256).div_ceil(256) * 256;
        Ok(base)
    }

    /// Frees the allocation that starts at `addr`. Addresses are never reused (the allocator only
    /// bumps), so a later access through a stale pointer faults instead of reading new data.
    pub(crate) fn free(&mut self, addr: u64) -> Result<(), EmuError> {
        let i = self
            .allocs
            .iter()
            .position(|a| a.base == addr)
            .ok_or_else(|| EmuError::Memory {
                addr,
                what: "free of an address that is not the start of a live allocation".into(),
            })?;
        self.allocs.remove(i);
        self.last.store(0, Ordering::Relaxed);
        Ok(())
    }

    fn find(&self, addr: u64, len: u64) -> Option<(usize, usize)> {
        let hit = |i: usize| -> Option<(usize, usize)> {
            let a = self.allocs.get(i)?;
            let off = addr.checked_sub(a.base)?;
            (off.checked_add(len)? <= a.data.len() as u64).then_some((i, off as usize))
        };
        if let Some(r) = hit(self.last.load(Ordering::Relaxed)) {
            return Some(r);
        }
        let i = self
            .allocs
            .partition_point(|a| a.base <= addr)
            .checked_sub(1)?;
        let r = hit(i)?;
        self.last.store(i, Ordering::Relaxed);
        Some(r)
    }

    /// The `len` bytes at `addr`, if they lie inside one allocation.
    pub(crate) fn slice(&self, addr: u64, len: usize) -> Option<&[u8]> {
        let (i, off) = self.find(addr, len as u64)?;
        Some(&self.allocs[i].data[off..off + len])
    }

    pub(crate) fn slice_mut(&mut self, addr: u64, len: usize) -> Option<&mut [u8]> {
        let (i, off) = self.find(addr, len as u64)?;
        Some(&mut self.allocs[i].data[off..off + len])
    }

    pub(crate) fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), EmuError> {
        match self.slice_mut(addr, data.len()) {
            Some(s) => {
                s.copy_from_slice(data);
                Ok(())
            }
            None => Err(EmuError::Memory {
                addr,
                what: format!("write of {} bytes outside any allocation", data.len()),
            }),
        }
    }

    pub(crate) fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), EmuError> {
        match self.slice(addr, out.len()) {
            Some(s) => {
                out.copy_from_slice(s);
                Ok(())
            }
            None => Err(EmuError::Memory {
                addr,
                what: format!("read of {} bytes outside any allocation", out.len()),
            }),
        }
    }
}

/// Little-endian value of the first (up to) 8 bytes of `src`; fixed-size copies for 1, 2, 4 and
/// 8 bytes, so no `memcpy` call per lane.
#[inline]
pub(crate) fn le_bytes(src: &[u8]) -> u64 {
    match *src {
        [a] => a as u64,
        [a, b] => u16::from_le_bytes([a, b]) as u64,
        [a, b, c, d] => u32::from_le_bytes([a, b, c, d]) as u64,
        [a, b, c, d, e, f, g, h] => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
        _ => {
            let mut buf = [0u8; 8];
            let n = src.len().min(8);
            buf[..n].copy_from_slice(&src[..n]);
            u64::from_le_bytes(buf)
        }
    }
}

/// A global-memory write an SM made during a round: applied to device memory between rounds,
/// in global (issue cycle, SM, sequence) order, so that SMs running in parallel never write the
/// shared memory and every thread count gives the same bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Write {
    /// Issue cycle, and the SM's L2 request count at issue: with the SM index, the order key.
    pub now: u64,
    pub seq: u64,
    pub addr: u64,
    pub what: WriteKind,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum WriteKind {
    /// `len` (1–8) bytes of `value`, little-endian.
    Store { len: u8, value: u64 },
    /// One lane of an atomic: its new value is computed from the memory as the earlier writes
    /// left it, and the old value, when wanted, goes to register `reg` of lane `lane` of the
    /// SM's warp slot `warp` (masked to the type's width).
    Atomic {
        op: crate::ir::AtomOp,
        ty: crate::ir::Ty,
        line: u32,
        p: u64,
        q: u64,
        ret: Option<(u32, u32, u8)>,
    },
}

/// One SM's writes not yet applied, and what its own loads must see of them.
///
/// Semantics this gives (documented in ARCHITECTURE.md): an SM reads its own stores at once;
/// another SM's stores and every atomic's result become visible between rounds. CUDA promises
/// no more to threads of different blocks without a fence-and-flag protocol, which still works
/// (the flag's value arrives a round later).
#[derive(Debug, Clone, Default)]
pub(crate) struct WriteLog {
    writes: VecDeque<Write>,
    /// Pending stores, and the byte range they cover: loads outside it skip the log.
    stores: usize,
    lo: u64,
    hi: u64,
}

impl WriteLog {
    /// A store of `len` bytes of which `value` gives the first 8 (a register holds 8; the rest
    /// of a wider element is left as it was, as the direct path does).
    pub(crate) fn store(&mut self, now: u64, seq: u64, addr: u64, len: usize, value: u64) {
        let len = len.min(8);
        self.stores += 1;
        if self.lo >= self.hi {
            (self.lo, self.hi) = (addr, addr + len as u64);
        } else {
            self.lo = self.lo.min(addr);
            self.hi = self.hi.max(addr + len as u64);
        }
        self.writes.push_back(Write {
            now,
            seq,
            addr,
            what: WriteKind::Store {
                len: len as u8,
                value,
            },
        });
    }

    pub(crate) fn atomic(&mut self, now: u64, seq: u64, addr: u64, what: WriteKind) {
        self.writes.push_back(Write {
            now,
            seq,
            addr,
            what,
        });
    }

    /// The first 8 of the `len` bytes at `addr` as this SM sees them (a register holds 8):
    /// device memory under its own pending stores. `None` when the `len` bytes are not inside
    /// one allocation.
    ///
    /// Inlined, with the pending stores' merge apart: whether the compiler inlined the whole
    /// function into the loads followed unrelated changes, and a build that did not spent
    /// 0.4 % more host instructions on the demo frame.
    #[inline]
    pub(crate) fn read(&self, dev: &DeviceMemory, addr: u64, len: usize) -> Option<u64> {
        let src = dev.slice(addr, len)?;
        let v = le_bytes(src);
        let end = addr + len.min(8) as u64;
        if self.clear_of_stores(addr, end) {
            return Some(v);
        }
        Some(self.under_stores(v, addr, end))
    }

    /// Whether no pending store touches the bytes `[addr, end)`: there this SM sees device
    /// memory as it is.
    #[inline]
    pub(crate) fn clear_of_stores(&self, addr: u64, end: u64) -> bool {
        end <= self.lo || addr >= self.hi
    }

    /// `v`, the bytes at `addr..end`, under this SM's pending stores.
    fn under_stores(&self, v: u64, addr: u64, end: u64) -> u64 {
        let mut buf = v.to_le_bytes();
        for w in &self.writes {
            if let WriteKind::Store { len: wl, value } = w.what {
                let (ws, we) = (w.addr, w.addr + u64::from(wl));
                for b in ws.max(addr)..we.min(end) {
                    buf[(b - addr) as usize] = (value >> (8 * (b - ws))) as u8;
                }
            }
        }
        u64::from_le_bytes(buf)
    }

    /// The oldest pending write.
    pub(crate) fn front(&self) -> Option<&Write> {
        self.writes.front()
    }

    /// Takes the oldest pending write (to apply it); the store range is forgotten once no
    /// store is pending.
    pub(crate) fn pop_front(&mut self) -> Option<Write> {
        let w = self.writes.pop_front()?;
        if matches!(w.what, WriteKind::Store { .. }) {
            self.stores -= 1;
            if self.stores == 0 {
                (self.lo, self.hi) = (0, 0);
            }
        }
        Some(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_allocations_start_at_a_multiple_of_the_alignment() {
        let mut m = DeviceMemory::default();
        let a = m.alloc(100).unwrap();
        let b = m.alloc_aligned(10, 1 << 19).unwrap();
        assert_eq!(b % (1 << 19), 0);
        assert!(b > a + 100);
        let c = m.alloc(8).unwrap();
        assert!(c >= b + 10 + 256);
    }

    #[test]
    fn freed_memory_faults_and_is_never_reused() {
        let mut m = DeviceMemory::default();
        let a = m.alloc(64).unwrap();
        let b = m.alloc(64).unwrap();
        m.free(a).unwrap();
        assert!(m.slice(a, 4).is_none(), "stale pointer must fault");
        assert!(m.slice(b, 4).is_some());
        assert!(m.free(a).is_err(), "double free is an error");
        assert!(
            m.free(b + 4).is_err(),
            "free of an interior address is an error"
        );
        let c = m.alloc(64).unwrap();
        assert!(c > b, "addresses are not reused");
    }

    #[test]
    fn an_sm_reads_its_own_pending_stores_over_device_memory() {
        let mut m = DeviceMemory::default();
        let a = m.alloc(32).unwrap();
        m.write(a, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        let mut log = WriteLog::default();
        assert_eq!(log.read(&m, a, 4), Some(0x0403_0201));
        log.store(0, 0, a + 1, 2, 0xBBAA);
        assert_eq!(log.read(&m, a, 4), Some(0x04BB_AA01));
        // a 16-byte element: the register's 8 bytes, never past them
        log.store(1, 0, a + 8, 16, u64::MAX);
        assert_eq!(log.read(&m, a + 8, 16), Some(u64::MAX));
        assert_eq!(log.read(&m, a + 24, 8), Some(0));
        assert_eq!(log.read(&m, a + 30, 4), None, "past the allocation");
        while log.pop_front().is_some() {}
        assert_eq!(
            log.read(&m, a, 4),
            Some(0x0403_0201),
            "applied elsewhere, not here"
        );
    }

    #[test]
    fn allocations_are_aligned_separated_and_checked() {
        let mut m = DeviceMemory::default();
        let a = m.alloc(100).unwrap();
        let b = m.alloc(8).unwrap();
        assert_eq!(a % 256, 0);
        assert_eq!(b % 256, 0);
        assert!(b >= a + 100 + 256);
        m.write(a + 96, &[1, 2, 3, 4]).unwrap();
        assert!(m.write(a + 97, &[1, 2, 3, 4]).is_err());
        assert!(m.slice(a + 100, 1).is_none());
        assert!(m.slice(0, 1).is_none());
        let mut out = [0u8; 4];
        m.read(a + 96, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4]);
        m.write(b, &[9]).unwrap();
        assert_eq!(m.slice(b, 1), Some(&[9u8][..]));
    }
}
