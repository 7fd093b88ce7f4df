//! Everything below the SMs: the L2 slices and DRAM, which answer the SMs' requests in global
//! order (mod.rs says when), and the bandwidth queue both are built from.

use super::cache::{self, Cache, Lookup};
use super::{CacheCounters, L2Req, Pend, count, forget_front};
use crate::config::{BankPermutation, CacheConfig, DramOrder, DramRows, GpuConfig, UnitBits};

/// Sub-cycle resolution of bandwidth queues: bytes/cycle need not divide the transfer size.
const TICKS_PER_CYCLE: u64 = 1 << 16;

/// A resource with a bandwidth: each transfer takes the earliest free time from its arrival on.
///
/// Why a calendar and not one "free from" cycle: the L2 answers requests in issue order
/// (mod.rs), but a request is sent later than its instruction issued when its SM's port or
/// MSHRs are backed up, by thousands of cycles on texture-heavy launches. With one "free from"
/// cycle, a request sent at cycle 1,000 but answered after one sent at 8,000 waited for it:
/// 91 % of the L2 requests of a paper-scale 1×128 frame on the h100 preset arrived behind a
/// later-sent one, by 6,900 cycles on average, and the slices' ports, busy 4 % of the time, made
/// the frame several times slower. For requests that arrive in time order the two agree
/// exactly: a new transfer starts where the last one ended or at its arrival.
///
/// The calendar counts the ticks used in each cycle. Transfers arrive at cycle starts and fill
/// free time earliest first, so a cycle's used ticks are always its first ones and the count is
/// its whole state. A cycle-indexed array makes finding a free cycle a short walk; it starts at
/// the first cycle that is neither past (before the floor) nor full, so a backlog of full cycles,
/// however long, takes no room and no walk.
#[derive(Debug, Clone)]
pub(super) struct BandwidthQueue {
    /// Ticks used in each cycle from `base` on, from index `head`; every cycle before `base` is
    /// full or past. A vector with a moving head rather than a `VecDeque`: the walk indexes it
    /// several times per transfer, and the ring's wrap-around arithmetic was a third of it.
    used: Vec<u32>,
    head: usize,
    base: u64,
    /// Where the last transfer's time ended (`extend` adds after it).
    last_end: u64,
    ticks_per_byte: u64,
}

impl BandwidthQueue {
    pub(super) fn new(bytes_per_cycle: f64) -> Self {
        let t = (TICKS_PER_CYCLE as f64 / bytes_per_cycle).round();
        BandwidthQueue {
            used: Vec::new(),
            head: 0,
            base: 0,
            last_end: 0,
            ticks_per_byte: if t.is_finite() && t >= 1.0 {
                t as u64
            } else {
                1
            },
        }
    }

    /// Cycles held from `base` on (tests).
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.used.len() - self.head
    }

    /// Reserves a transfer of `bytes` arriving at `now`; returns the cycle it starts.
    pub(super) fn reserve(&mut self, now: u64, bytes: u64) -> u64 {
        let from = now.saturating_mul(TICKS_PER_CYCLE);
        self.take(from, bytes * self.ticks_per_byte)
            .div_ceil(TICKS_PER_CYCLE)
    }

    /// Keeps the resource busy `cycles` more after the last transfer (atomic serialization).
    fn extend(&mut self, cycles: u64) {
        self.take(self.last_end, cycles * TICKS_PER_CYCLE);
    }

    /// Forgets the time before `cycle`: no transfer will arrive before it any more.
    pub(super) fn forget_before(&mut self, cycle: u64) {
        if cycle > self.base {
            // In one step: the floor moves by many cycles between two visits to a queue.
            let k = usize::try_from(cycle - self.base).map_or(usize::MAX, |k| k);
            self.head = self.head.saturating_add(k).min(self.used.len());
            self.base = cycle;
            self.compact();
        }
    }

    /// Drops the forgotten front (`forget_front`), in steps of at least 1,024 cycles: this
    /// runs at every transfer.
    fn compact(&mut self) {
        if self.head >= 1024 {
            forget_front(&mut self.used, &mut self.head);
        }
    }

    /// Takes `need` ticks of free time from tick `from` on, earliest first (a transfer may fill
    /// the rest of a cycle and go on after busy ones); returns the first tick it takes, or the
    /// first free one when `need` is 0. `from` is a cycle start or the end of the last transfer,
    /// so it is never inside a cycle's used ticks.
    fn take(&mut self, from: u64, mut need: u64) -> u64 {
        let mut c = (from / TICKS_PER_CYCLE).max(self.base);
        let mut k = self.head + (c - self.base) as usize;
        let mut first = None;
        let start = loop {
            let Some(&used) = self.used.get(k) else {
                // Nothing is held from cycle `c` on: the rest is one run of free cycles.
                self.used.resize(k, 0);
                let at = c * TICKS_PER_CYCLE;
                let start = *first.get_or_insert(at);
                if need == 0 {
                    return start;
                }
                let full = need / TICKS_PER_CYCLE;
                self.used
                    .extend(std::iter::repeat_n(TICKS_PER_CYCLE as u32, full as usize));
                let rest = need % TICKS_PER_CYCLE;
                if rest > 0 {
                    self.used.push(rest as u32);
                }
                self.last_end = at + need;
                break start;
            };
            let used = u64::from(used);
            if used < TICKS_PER_CYCLE {
                let at = c * TICKS_PER_CYCLE + used;
                let start = *first.get_or_insert(at);
                if need == 0 {
                    return start;
                }
                let take = need.min(TICKS_PER_CYCLE - used);
                self.used[k] = (used + take) as u32;
                need -= take;
                if need == 0 {
                    self.last_end = at + take;
                    break start;
                }
            }
            c += 1;
            k += 1;
        };
        while self
            .used
            .get(self.head)
            .is_some_and(|&u| u64::from(u) == TICKS_PER_CYCLE)
        {
            self.head += 1;
            self.base += 1;
        }
        self.compact();
        start
    }
}

/// Each line the bytes `[addr, addr + len)` touch (the first byte's when `len` is 0), with the
/// mask of its sectors they touch.
fn line_sectors(
    addr: u64,
    len: u64,
    line_shift: u32,
    sector_shift: u32,
) -> impl Iterator<Item = (u64, u8)> {
    let per_line = line_shift - sector_shift;
    let last = (addr + len.max(1) - 1) >> sector_shift;
    let mut sector = addr >> sector_shift;
    std::iter::from_fn(move || {
        if sector > last {
            return None;
        }
        let line = sector >> per_line;
        let upto = last.min(((line + 1) << per_line) - 1);
        let mask = sector_range(sector, upto, per_line);
        sector = upto + 1;
        Some((line, mask))
    })
}

/// The mask of sectors `first..=last` of one line of `1 << per_line` sectors (at most 8): the
/// bits from `first`'s place to `last`'s.
fn sector_range(first: u64, last: u64, per_line: u32) -> u8 {
    let in_line = (1u64 << per_line) - 1;
    let (lo, hi) = (first & in_line, last & in_line);
    let upto = (1u16 << (hi + 1)) - 1;
    (upto & !((1u16 << lo) - 1)) as u8
}

/// The first sector of each aligned group of `group` sectors (a power of two up to 8) that
/// `mask` touches. ORs in log steps gather each group's bits into its first sector; the first
/// sectors of all groups are `u8::MAX / ones`, `ones` being one group's bits (`0x55` for pairs,
/// `0x11` for fours).
fn touched_groups(mask: u8, group: u32) -> u8 {
    let group = group.clamp(1, 8);
    let mut any = mask;
    let mut step = 1;
    while step < group {
        any |= any >> step;
        step *= 2;
    }
    any & (u8::MAX / (u8::MAX >> (u8::BITS - group)))
}

/// `mask` with every aligned group of `group` sectors (a power of two) it touches filled in:
/// what one DRAM read brings for those sectors.
fn fetch_mask(mask: u8, group: u32) -> u8 {
    // Each touched group's first bit times the group's bits; groups do not overlap, so no
    // product carries into the next.
    touched_groups(mask, group) * (u8::MAX >> (u8::BITS - group.clamp(1, 8)))
}

/// How many fetch blocks of `group` sectors `mask` touches: the reads DRAM makes for it.
fn fetch_blocks(mask: u8, group: u32) -> u64 {
    u64::from(touched_groups(mask, group).count_ones())
}

/// DRAM's banks and their open rows (`dram.rows`). Addresses go to the banks in chunks of
/// `interleave_bytes`, chunk after chunk, so a stripe of `banks × page_bytes` bytes gives each bank
/// one page of its own chunks: the stripe's number is the row a bank must hold open. Within a
/// stripe the chunk-to-bank order is permuted by a hash of the stripe number, so strides of a
/// power of two do not all land in one bank. A bank keeps the rows it served last
/// (`reorder_rows`, most recent first): a read of one of them is one its controller would have
/// gathered with that row's other queued reads. With `open_cycles`, only if the row's last read
/// came at most that long before: reads of a row spread further apart do not wait in the
/// controller's queue together.
#[derive(Debug, Clone)]
struct Rows {
    /// Each bank's `ways` rows (stripes), most recently served first, each with the cycle of
    /// its last read; `u64::MAX` is no row.
    open: Vec<(u64, u64)>,
    ways: usize,
    /// `open_cycles`; `u64::MAX` when unset.
    open_for: u64,
    bank_bits: u32,
    /// Bytes of a chunk, as a shift of the address.
    chunk_shift: u32,
    /// Chunks of one bank in a page, as a shift.
    page_chunk_shift: u32,
    /// The chunk number's shift to the number its banks' permutation is drawn from: the
    /// stripe's (`bank_bits + page_chunk_shift`) or the round's (`bank_bits`).
    permute_shift: u32,
    line_shift: u32,
    sector_shift: u32,
    row_miss_bytes: u64,
}

impl Rows {
    fn new(rows: &DramRows, line_bytes: u32, sector_bytes: u32) -> Rows {
        let chunk = rows.interleave_bytes.unwrap_or(rows.page_bytes).max(1);
        let ways = rows.reorder_rows.unwrap_or(1).max(1) as usize;
        let bank_bits = rows.banks.max(1).trailing_zeros();
        let page_chunk_shift = (rows.page_bytes.max(chunk) / chunk).trailing_zeros();
        Rows {
            open: vec![(u64::MAX, 0); rows.banks.max(1) as usize * ways],
            ways,
            open_for: rows.open_cycles.map_or(u64::MAX, u64::from),
            bank_bits,
            chunk_shift: chunk.trailing_zeros(),
            page_chunk_shift,
            permute_shift: match rows.permute_per {
                None | Some(BankPermutation::Stripe) => bank_bits + page_chunk_shift,
                Some(BankPermutation::Round) => bank_bits,
            },
            line_shift: line_bytes.max(1).trailing_zeros(),
            sector_shift: sector_bytes.max(1).trailing_zeros(),
            row_miss_bytes: u64::from(rows.row_miss_bytes),
        }
    }

    /// The extra DRAM bytes of a read of the sectors `mask` of `line` arriving at cycle `at`: for
    /// each chunk they touch, none when its bank holds the chunk's row open; else the row is
    /// opened and the read pays for it.
    fn read(&mut self, line: u64, mask: u8, at: u64) -> u64 {
        let start = line << self.line_shift;
        if self.chunk_shift >= self.line_shift {
            return self.chunk(start >> self.chunk_shift, at);
        }
        // Validation keeps a chunk at least a sector, so a line holds 2 to 8 chunks here. The
        // chunks are visited in address order, as the banks see them.
        let per = 1u32 << (self.chunk_shift - self.sector_shift);
        let mut firsts = touched_groups(mask, per);
        let mut extra = 0;
        while firsts != 0 {
            let i = u64::from(firsts.trailing_zeros());
            firsts &= firsts - 1;
            extra += self.chunk((start + (i << self.sector_shift)) >> self.chunk_shift, at);
        }
        extra
    }

    /// The row (stripe) and bank of `chunk`.
    fn place(&self, chunk: u64) -> (u64, usize) {
        let row = chunk >> (self.bank_bits + self.page_chunk_shift);
        // A multiplicative hash of the stripe's or the round's number picks its permutation of
        // the banks: XOR with it permutes the chunk's bank bits.
        let h = (chunk >> self.permute_shift).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        (row, ((chunk ^ h) & ((1 << self.bank_bits) - 1)) as usize)
    }

    /// The partition of `line` among `1 << bits`: the top bits of its banks' numbers, the same
    /// for every chunk of the line (validation keeps a line's chunks within one group of
    /// `banks >> bits` consecutive bank numbers, which differ in the low bits alone).
    fn partition(&self, line: u64, bits: u32) -> usize {
        let chunk = (line << self.line_shift) >> self.chunk_shift;
        self.place(chunk).1 >> (self.bank_bits - bits)
    }

    fn chunk(&mut self, chunk: u64, at: u64) -> u64 {
        let (row, bank) = self.place(chunk);
        let rows = &mut self.open[bank * self.ways..][..self.ways];
        // Requests reach the answering in issue order, so a read may arrive before the last
        // one of its row: that counts as together.
        let (served, cost) = match rows.iter().position(|&(r, _)| r == row) {
            Some(i) if at.saturating_sub(rows[i].1) <= self.open_for => (i, 0),
            Some(i) => (i, self.row_miss_bytes),
            None => (self.ways - 1, self.row_miss_bytes),
        };
        let last = if cost == 0 {
            rows[served].1.max(at)
        } else {
            at
        };
        rows[..=served].rotate_right(1);
        rows[0] = (row, last);
        cost
    }
}

/// One L2 slice.
#[derive(Debug, Clone)]
pub(super) struct Slice {
    cache: Cache,
    port: BandwidthQueue,
}

/// Everything below the SMs: the L2 slices and DRAM, in partitions (`dram.partitions`, one
/// by default) that share nothing, as a GPU's memory controllers each own their DRAM channels
/// and the L2 slices in front of them. A line's partition is the top bits of its DRAM banks'
/// numbers (of its slice's number without `dram.rows`); within it, the line's slice is a fold
/// of its number over the partition's slices, and its atomic unit the slice's or the one its
/// address bits pick (`l2.atomic_unit.unit_address_bits`).
/// Independent, the partitions can answer their requests on different threads, each in global
/// order, and give what one thread answering every request in global order gives.
#[derive(Debug, Clone)]
pub(crate) struct Below {
    pub(super) parts: Vec<Part>,
    /// Per partition, an empty vector with room for a round's requests answered apart
    /// (parts.rs), kept from round to round: grown anew each round, the vectors' copies were
    /// over a third of the gathering's host instructions.
    pub(super) asked: Vec<Vec<(u32, L2Req)>>,
    /// Partitions, as a shift.
    part_bits: u32,
    /// Slices across the partitions, as a shift.
    slice_bits: u32,
    /// The banks' layout, when the partition follows it (its open rows are the partitions').
    banks: Option<Rows>,
    pub(super) line_shift: u32,
    pub(super) sector_shift: u32,
}

/// One partition: its L2 slices, their atomic units, and its DRAM channel.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    pub(super) slices: Vec<Slice>,
    /// Slices in the partition, as a shift.
    slice_bits: u32,
    /// When each slice's atomic unit is next free, in hundredths of a cycle.
    atomic_free_centi: Vec<u64>,
    /// The address bits that pick a line's atomic unit (`l2.atomic_unit.unit_address_bits`).
    atomic_unit_bits: Option<UnitBits>,
    line_shift: u32,
    sector_shift: u32,
    /// Sectors the L2 reads from DRAM together (`l2.fetch_bytes`), a power of two.
    fetch_sectors: u32,
    dram: BandwidthQueue,
    /// Every bank's open rows; a partition uses only its own banks.
    dram_rows: Option<Rows>,
    dram_latency: u64,
    /// Whether a read waits for all of the backlog in front of it or a drawn part (`dram.order`).
    order: DramOrder,
    l2: CacheCounters,
    dram_bytes_read: u64,
    dram_bytes_written: u64,
    /// Never holds a token: the L2 only sees answered cycles.
    pend: Pend,
    /// The issue cycle of the request answered last: no later request arrives before it.
    floor: u64,
    /// The latest cycle an atomic was performed at its slice: a launch ends no earlier.
    atomics_done: u64,
}

/// How an L2 line is used by a request from above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum L2Op {
    Read,
    Write,
    /// Read-modify-write at L2: the extra cycles the slice spends on same-word serialization,
    /// or, with an atomic unit, the hundredths of a cycle the request holds it.
    Atomic {
        extra: u64,
        unit_centi: u64,
    },
}

/// The L2's lines as a launch left them: each slice's tags, replacement order and dirty
/// sectors, every sector arrived. A GPU keeps its L2 from one launch to the next; its SMs'
/// caches and every queue start empty.
#[derive(Debug)]
pub(crate) struct L2Lines(Vec<Cache>);

impl L2Lines {
    /// `lines` (a cold L2 without) with the bytes `[addr, addr + len)` written into it, clean
    /// and newest, as an upload the L2 keeps leaves them; `lines` must come from a launch with
    /// the same config, which must be valid.
    pub(crate) fn holding(cfg: &GpuConfig, lines: Option<L2Lines>, addr: u64, len: u64) -> L2Lines {
        let mut below = Below::new(cfg, lines);
        below.hold(addr, len);
        below.into_lines()
    }
}

impl Below {
    /// Writes the bytes `[addr, addr + len)` into the L2, clean and newest, as an upload the L2
    /// keeps leaves them.
    pub(crate) fn hold(&mut self, addr: u64, len: u64) {
        for (line, mask) in line_sectors(addr, len, self.line_shift, self.sector_shift) {
            let k = self.partition_of(line);
            self.parts[k].hold(line, mask);
        }
    }

    /// The L2 this launch leaves for the next one on the same device.
    pub(super) fn into_lines(self) -> L2Lines {
        L2Lines(
            self.parts
                .into_iter()
                .flat_map(|p| p.slices)
                .map(|mut s| {
                    s.cache.arrived();
                    s.cache
                })
                .collect(),
        )
    }

    /// L2 slices holding `lines` (cold without), and idle DRAM queues, for a validated
    /// config; `lines` must come from a launch with the same config.
    pub(super) fn new(cfg: &GpuConfig, lines: Option<L2Lines>) -> Below {
        let slices = cfg.l2.slices.max(1);
        let parts = cfg.memory_partitions();
        let per_part = (slices / parts) as usize;
        let slice_cfg = CacheConfig {
            size_bytes: u32::try_from(cfg.l2.size_bytes / u64::from(slices)).unwrap_or(u32::MAX),
            line_bytes: cfg.l2.line_bytes,
            sector_bytes: cfg.l2.sector_bytes,
            ways: cfg.l2.ways,
            latency_cycles: cfg.l2.latency_cycles,
            replacement: cfg.l2.replacement,
            mshrs: 1,
            miss_line_cycles: None,
        };
        let slice = Slice {
            cache: Cache::new(&slice_cfg),
            port: BandwidthQueue::new(cfg.l2.bandwidth_bytes_per_cycle),
        };
        let mut caches = match lines {
            Some(L2Lines(caches)) if caches.len() == slices as usize => Some(caches.into_iter()),
            _ => None,
        };
        let unit_bits = cfg.l2.atomic_unit.and_then(|u| u.unit_address_bits);
        let rows =
            (cfg.dram.rows.as_ref()).map(|r| Rows::new(r, cfg.l2.line_bytes, cfg.l2.sector_bytes));
        let part = |caches: &mut Option<std::vec::IntoIter<Cache>>| Part {
            slices: (0..per_part)
                .map(|_| Slice {
                    cache: caches
                        .as_mut()
                        .and_then(Iterator::next)
                        .unwrap_or_else(|| slice.cache.clone()),
                    port: slice.port.clone(),
                })
                .collect(),
            slice_bits: per_part.trailing_zeros(),
            atomic_free_centi: vec![0; per_part],
            atomic_unit_bits: unit_bits,
            line_shift: slice.cache.line_shift(),
            sector_shift: slice.cache.sector_shift(),
            fetch_sectors: cfg
                .l2
                .fetch_bytes
                .map_or(1, |f| f / cfg.l2.sector_bytes)
                .max(1),
            dram: BandwidthQueue::new(cfg.dram.bandwidth_bytes_per_cycle / f64::from(parts)),
            dram_rows: rows.clone(),
            dram_latency: u64::from(cfg.dram.latency_cycles),
            order: cfg.dram.order.unwrap_or(DramOrder::Arrival),
            l2: CacheCounters::default(),
            dram_bytes_read: 0,
            dram_bytes_written: 0,
            pend: Pend::default(),
            floor: 0,
            atomics_done: 0,
        };
        Below {
            parts: (0..parts).map(|_| part(&mut caches)).collect(),
            asked: Vec::new(),
            part_bits: parts.trailing_zeros(),
            slice_bits: slices.trailing_zeros(),
            banks: rows.filter(|_| parts > 1),
            line_shift: slice.cache.line_shift(),
            sector_shift: slice.cache.sector_shift(),
        }
    }

    /// The partition holding `line`.
    pub(super) fn partition_of(&self, line: u64) -> usize {
        if self.part_bits == 0 {
            return 0;
        }
        match &self.banks {
            Some(rows) => rows.partition(line, self.part_bits),
            None => fold(line, self.slice_bits) >> (self.slice_bits - self.part_bits),
        }
    }

    /// The slice holding `line`, numbered across the partitions.
    #[cfg(test)]
    pub(super) fn slice_of(&self, line: u64) -> usize {
        let local = self.slice_bits - self.part_bits;
        (self.partition_of(line) << local) | fold(line, local)
    }

    /// The partition answering `r`: its line's (a request stays in one line of the L2, and
    /// validation keeps every SM-level cache's lines within the L2's when there are several).
    pub(crate) fn route(&self, r: &L2Req) -> usize {
        self.partition_of(r.addr >> self.line_shift)
    }

    /// Answers one queued request (see [`Part::answer`]) in its partition.
    pub(crate) fn answer(&mut self, r: &L2Req) -> u64 {
        let k = self.route(r);
        self.parts[k].answer(r)
    }

    /// The partitions.
    pub(crate) fn partitions(&self) -> usize {
        self.parts.len()
    }

    /// Moves the partitions out, to be answered elsewhere ([`Below::put_parts`] returns them).
    pub(super) fn take_parts(&mut self) -> Vec<Part> {
        std::mem::take(&mut self.parts)
    }

    /// Returns the partitions [`Below::take_parts`] took, in their order.
    pub(super) fn put_parts(&mut self, parts: Vec<Part>) {
        self.parts = parts;
    }

    /// The L2's counts and DRAM's bytes read and written, over every partition.
    pub(super) fn counters(&self) -> (CacheCounters, u64, u64) {
        let mut l2 = CacheCounters::default();
        let (mut read, mut written) = (0, 0);
        for p in &self.parts {
            l2.add(&p.l2);
            read += p.dram_bytes_read;
            written += p.dram_bytes_written;
        }
        (l2, read, written)
    }

    /// The latest cycle an atomic was performed: a launch ends no earlier.
    pub(crate) fn atomics_done(&self) -> u64 {
        self.parts.iter().map(|p| p.atomics_done).max().unwrap_or(0)
    }
}

impl Part {
    /// Puts `mask`'s sectors of `line` in its slice, arrived and clean, outside any launch.
    fn hold(&mut self, line: u64, mask: u8) {
        let Part {
            slices,
            slice_bits,
            pend,
            ..
        } = self;
        if let Some(slice) = slices.get_mut(fold(line, *slice_bits)) {
            // What it evicts is in device memory already: nothing to write back.
            slice
                .cache
                .fill(line >> *slice_bits, mask, 0, 0, false, pend);
        }
    }

    /// Serves the bytes `[addr, addr + len)` for a requester that has an L2 hit's data `hit`
    /// cycles after it sends. Returns the cycle the requester has its data (or acknowledgement).
    fn access(&mut self, t: u64, addr: u64, len: u64, hit: u64, op: L2Op) -> u64 {
        let mut done = t + hit;
        for (line, mask) in line_sectors(addr, len, self.line_shift, self.sector_shift) {
            done = done.max(self.line(t, line, mask, hit, op));
        }
        done
    }

    fn line(&mut self, t: u64, line: u64, mask: u8, hit_latency: u64, op: L2Op) -> u64 {
        // The slice within the partition and the line's number in it: unique per line, as the
        // fold is (see `fold`).
        let slice_idx = fold(line, self.slice_bits);
        let local = line >> self.slice_bits;
        let sector_shift = self.sector_shift;
        let sector_bytes = 1u64 << sector_shift;
        let bytes = u64::from(mask.count_ones()) * sector_bytes;
        let miss_latency = hit_latency + self.dram_latency;
        let fetch_sectors = self.fetch_sectors;
        let Part {
            slices,
            dram,
            dram_rows,
            l2,
            dram_bytes_read,
            dram_bytes_written,
            pend,
            floor,
            atomics_done,
            atomic_free_centi,
            atomic_unit_bits,
            slice_bits,
            line_shift,
            order,
            ..
        } = self;
        let Some(slice) = slices.get_mut(slice_idx) else {
            return t + hit_latency;
        };
        slice.port.forget_before(*floor);
        dram.forget_before(*floor);
        // Dirty sectors of an evicted line occupy DRAM bandwidth when they leave.
        let mut evicted = |ev: Option<cache::Evicted>, now: u64, dram: &mut BandwidthQueue| {
            if let Some(ev) = ev {
                if ev.dirty != 0 {
                    let bytes = u64::from(ev.dirty.count_ones()) << sector_shift;
                    dram.reserve(now, bytes);
                    *dram_bytes_written += bytes;
                }
                1
            } else {
                0
            }
        };
        let start = slice.port.reserve(t, bytes);
        let hit_done = start + hit_latency;
        if op == L2Op::Write {
            l2.write_sectors += u64::from(mask.count_ones());
            let ev = slice.cache.fill(local, mask, hit_done, start, true, pend);
            l2.evictions += evicted(ev, start, dram);
            return hit_done;
        }
        if let L2Op::Atomic { extra, .. } = op {
            slice.port.extend(extra);
        }
        let lk = slice.cache.lookup(local, mask, start, pend);
        if op == L2Op::Read {
            count(l2, lk.hit, lk.pending, lk.miss);
        } else {
            l2.write_sectors += u64::from(mask.count_ones());
        }
        let mut done = hit_done;
        if lk.pending != 0 {
            done = done.max(lk.pending_ready);
        }
        if lk.miss != 0 {
            // DRAM brings the fetch block around each missed sector; the sectors of it the
            // slice lacks arrive with the missed ones.
            let fetched = Lookup {
                miss: fetch_mask(lk.miss, fetch_sectors) & !slice.cache.present(&lk),
                ..lk
            };
            let miss_bytes = u64::from(fetched.miss.count_ones()) * sector_bytes;
            if op == L2Op::Read {
                l2.fills += fetch_blocks(fetched.miss, fetch_sectors);
            }
            let row = dram_rows
                .as_mut()
                .map_or(0, |r| r.read(line, fetched.miss, start));
            let mut dram_start = dram.reserve(start, miss_bytes + row);
            if *order != DramOrder::Arrival {
                dram_start = start + drawn_part(*order, dram_start - start, line, start);
            }
            *dram_bytes_read += miss_bytes;
            let ready = dram_start + miss_latency;
            let ev = slice.cache.fill_missed(&fetched, ready, start, pend);
            l2.evictions += evicted(ev, start, dram);
            done = done.max(ready);
        }
        if let L2Op::Atomic { extra, unit_centi } = op {
            done += extra;
            // The line is ready for the next request when this one's operation ends; the next
            // one's wait rounds that down, so that the unit, not the whole cycles of the line's
            // readiness, spaces a queue of requests.
            let mut ready = done;
            let unit = match atomic_unit_bits {
                Some(bits) => unit_of(bits, line << *line_shift),
                None => fold(line, *slice_bits),
            };
            if let Some(free) = atomic_free_centi.get_mut(unit).filter(|_| unit_centi > 0) {
                let begin = (done * 100).max(*free);
                *free = begin + unit_centi;
                ready = *free / 100;
                done = free.div_ceil(100);
            }
            *atomics_done = (*atomics_done).max(done);
            // The read-modify-write result stays dirty in L2.
            let ev = slice.cache.fill(local, mask, ready, start, true, pend);
            l2.evictions += evicted(ev, start, dram);
        }
        done
    }

    /// Answers one queued request: the cycle its sender has the data (or acknowledgement).
    /// Requests come in issue order, so nothing answered later arrives (is sent) before this
    /// one's issue cycle: the queues forget the time before it.
    pub(crate) fn answer(&mut self, r: &L2Req) -> u64 {
        debug_assert!(r.now >= self.floor, "requests are answered in issue order");
        debug_assert!(
            r.sent >= r.now,
            "a request is sent after its instruction issued"
        );
        self.floor = r.now;
        self.access(r.sent, r.addr, r.len, r.hit, r.op)
    }
}

/// The part of a backlog of `wait` cycles a read of `line` arriving at `at` waits for under
/// `order`: from none to all of it, drawn by a hash of both, so the same requests wait the same
/// on any thread count. `shuffled` draws once; `front` the smaller of two draws, from the hash's
/// two halves.
fn drawn_part(order: DramOrder, wait: u64, line: u64, at: u64) -> u64 {
    let mut x = line ^ at.rotate_left(32) ^ 0x9E37_79B9_7F4A_7C15;
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    let draw = match order {
        DramOrder::Arrival => return wait,
        DramOrder::Shuffled => x >> 32,
        DramOrder::Front => (x >> 32).min(x & u64::from(u32::MAX)),
    };
    let part = u128::from(draw) * u128::from(wait + 1);
    u64::try_from(part >> 32).unwrap_or(wait)
}

/// The atomic unit of the line at `addr` within its partition: bit `i` is the parity of the
/// address bits of `bits`'s mask `i`, and the address bits above the highest named fold onto
/// the number as `fold` folds a line's.
fn unit_of(bits: &UnitBits, addr: u64) -> usize {
    let masks = bits.masks();
    let named = masks.iter().enumerate().fold(0, |u, (i, m)| {
        u | ((addr & m).count_ones() as usize & 1) << i
    });
    let above = addr.checked_shr(bits.highest() + 1).unwrap_or(0);
    named ^ fold(above, masks.len() as u32)
}

/// XOR-folds `x` in `bits`-wide chunks: (fold, x >> bits) is unique per x because the low chunk
/// enters the fold once.
///
/// In log steps rather than chunk by chunk: after the steps shifting by `bits`, `2 * bits`,
/// `4 * bits`…, each of the low `bits` bits holds the XOR of that bit of every chunk, so 64-bit
/// numbers take 4 steps for 64 slices where the chunks took 11. The count depends on `bits`
/// alone, so the loop's exit is predicted: one that stopped at the number's highest chunk ran a
/// different count from one line to the next, and mispredicted. Every L2 request folds its line
/// on the answering's critical path (one thread, or a partition's).
fn fold(x: u64, bits: u32) -> usize {
    if bits == 0 {
        return 0;
    }
    let mut h = x;
    let mut shift = bits;
    while shift < u64::BITS {
        h ^= h >> shift;
        shift *= 2;
    }
    (h & (u64::MAX >> (u64::BITS - bits))) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The fold in log steps is the XOR of every `bits`-wide chunk of the 64 bits.
        #[test]
        fn the_fold_is_the_xor_of_every_chunk(x in proptest::num::u64::ANY, bits in 1u32..=64) {
            let mask = u64::MAX >> (u64::BITS - bits);
            let chunks = (0..u64::BITS.div_ceil(bits))
                .map(|k| x.checked_shr(k * bits).unwrap_or(0) & mask)
                .fold(0, |h, c| h ^ c);
            proptest::prop_assert_eq!(fold(x, bits) as u64, chunks);
        }

        /// Address bits named one to a unit bit, the bits above folded, are the slices' fold of
        /// a granule's number: `[[9], [10], [11]]` is a unit per 512 bytes of 128-byte lines.
        #[test]
        fn single_bits_named_in_order_fold_as_a_granule(line in 0u64..1 << 50) {
            let bits = UnitBits::try_from(vec![vec![9], vec![10], vec![11]]).unwrap();
            proptest::prop_assert_eq!(unit_of(&bits, line << 7), fold(line >> 2, 3));
        }
    }

    proptest::proptest! {
        /// A read opens the rows of the chunks its sectors touch, each once, in address order:
        /// the same rows and costs as visiting the chunks one by one.
        #[test]
        fn a_read_visits_the_chunks_its_sectors_touch_in_address_order(
            reads in proptest::collection::vec((0u64..64, 1u8..=u8::MAX), 1..40),
            chunk in 0u32..3,
        ) {
            let cfg = DramRows {
                banks: 4,
                page_bytes: 256,
                interleave_bytes: Some(32 << chunk),
                row_miss_bytes: 10,
                reorder_rows: Some(2),
                open_cycles: None,
                permute_per: None,
            };
            // Lines of 256 bytes: eight 32-byte sectors, in chunks of 1, 2 or 4 sectors.
            let (mut rows, mut by_chunk) = (Rows::new(&cfg, 256, 32), Rows::new(&cfg, 256, 32));
            let per = 1u32 << chunk;
            for (line, mask) in reads {
                let mut want = 0;
                for i in (0u32..8).step_by(per as usize) {
                    if mask & ((u8::MAX >> (8 - per)) << i) != 0 {
                        want += by_chunk.chunk(((line << 8) + (u64::from(i) << 5)) >> (5 + chunk), 0);
                    }
                }
                proptest::prop_assert_eq!(rows.read(line, mask, 0), want);
            }
        }
    }

    proptest::proptest! {
        /// Every chunk of a line is in a bank of the line's partition: the partitions' banks
        /// hold whole lines, as validation promises for chunks no more than `banks >> bits`.
        #[test]
        fn a_lines_chunks_are_in_its_partitions_banks(
            line in 0u64..1 << 40,
            chunk in 0u32..3,
            bits in 0u32..=4,
            round in proptest::bool::ANY,
        ) {
            // 64 banks, 256-byte lines of 1, 2 or 4 chunks, up to 16 partitions of 4 banks.
            let cfg = DramRows {
                banks: 64,
                page_bytes: 1024,
                interleave_bytes: Some(64 << chunk),
                row_miss_bytes: 10,
                reorder_rows: None,
                open_cycles: None,
                permute_per: Some(if round { BankPermutation::Round } else { BankPermutation::Stripe }),
            };
            let rows = Rows::new(&cfg, 256, 32);
            let k = rows.partition(line, bits);
            for c in 0..(4u64 >> chunk) {
                let (_, bank) = rows.place(((line << 8) >> (6 + chunk)) + c);
                proptest::prop_assert_eq!(bank >> (6 - bits), k);
            }
        }
    }

    #[test]
    fn a_fetch_brings_and_counts_every_aligned_group_its_sectors_touch() {
        for group in [1u32, 2, 4, 8] {
            let ones = u8::MAX >> (8 - group);
            for mask in 0..=u8::MAX {
                let (mut want, mut blocks) = (0u8, 0u64);
                for i in (0..8).step_by(group as usize) {
                    if mask & (ones << i) != 0 {
                        want |= ones << i;
                        blocks += 1;
                    }
                }
                assert_eq!(fetch_mask(mask, group), want, "{mask:#010b} by {group}");
                assert_eq!(fetch_blocks(mask, group), blocks, "{mask:#010b} by {group}");
            }
        }
    }

    #[test]
    fn a_sector_range_sets_the_bits_from_its_first_sector_to_its_last() {
        for per_line in 0..=3u32 {
            let n = 1u64 << per_line;
            for line in [0u64, 5] {
                for first in 0..n {
                    for last in first..n {
                        let mut want = 0u8;
                        for s in first..=last {
                            want |= 1 << s;
                        }
                        let got = sector_range(line * n + first, line * n + last, per_line);
                        assert_eq!(got, want, "{per_line} {first} {last}");
                    }
                }
            }
        }
    }

    /// 4 banks of 256-byte pages in 64-byte chunks, 10 bytes an opened row, one row open.
    fn four_banks() -> DramRows {
        DramRows {
            banks: 4,
            page_bytes: 256,
            interleave_bytes: Some(64),
            row_miss_bytes: 10,
            reorder_rows: None,
            open_cycles: None,
            permute_per: None,
        }
    }

    #[test]
    fn interleaved_rows_keep_a_stream_in_its_pages_and_open_one_per_chunk_of_a_far_run() {
        // A stripe is 1 KiB, 8 lines of 128 bytes (four 32-byte sectors each).
        let cfg = four_banks();
        let mut rows = Rows::new(&cfg, 128, 32);
        let stream = |rows: &mut Rows| (0..8).map(|line| rows.read(line, 0b1111, 0)).sum::<u64>();
        assert_eq!(stream(&mut rows), 4 * 10, "each bank opens its page once");
        assert_eq!(stream(&mut rows), 0, "and keeps it open");
        // Two adjacent lines 8 KiB on: four chunks in four banks, each opening its page.
        assert_eq!(rows.read(64, 0b1111, 0) + rows.read(65, 0b1111, 0), 4 * 10);
        // Half a line is one chunk, and the first stripe's pages were closed by the run.
        assert_eq!(rows.read(0, 0b0011, 0), 10);
        assert_eq!(rows.read(0, 0b0001, 0), 0);

        // Without interleaving a page goes to one bank: the same run opens one page.
        let whole = DramRows {
            interleave_bytes: None,
            ..cfg
        };
        let mut rows = Rows::new(&whole, 128, 32);
        assert_eq!(rows.read(64, 0b1111, 0) + rows.read(65, 0b1111, 0), 10);
    }

    #[test]
    fn a_bank_gathers_reads_of_its_last_reorder_rows_rows() {
        // One bank, one line per page: every line is a row of its own.
        let cfg = |reorder_rows| DramRows {
            banks: 1,
            page_bytes: 128,
            interleave_bytes: None,
            row_miss_bytes: 10,
            reorder_rows,
            open_cycles: None,
            permute_per: None,
        };
        // Three rows in turn, twice: with room for three rows the second round finds them open.
        let rounds = |cfg: DramRows| {
            let mut rows = Rows::new(&cfg, 128, 32);
            [0, 1, 2, 0, 1, 2].map(|line| rows.read(line, 0b1111, 0))
        };
        assert_eq!(rounds(cfg(None)), [10; 6]);
        assert_eq!(
            rounds(cfg(Some(2))),
            [10; 6],
            "the oldest row was closed each time"
        );
        assert_eq!(rounds(cfg(Some(3))), [10, 10, 10, 0, 0, 0]);
        // A hit makes its row the most recent: 0 survives the opening of 3.
        let mut rows = Rows::new(&cfg(Some(2)), 128, 32);
        let reads = [0, 1, 0, 3, 0].map(|line| rows.read(line, 0b1111, 0));
        assert_eq!(reads, [10, 10, 0, 10, 0]);
    }

    #[test]
    fn a_bank_keeps_a_row_open_only_while_its_reads_come_within_open_cycles() {
        // One bank, one line per page, room for four rows, open for 100 cycles.
        let cfg = DramRows {
            banks: 1,
            page_bytes: 128,
            interleave_bytes: None,
            row_miss_bytes: 10,
            reorder_rows: Some(4),
            open_cycles: Some(100),
            permute_per: None,
        };
        let mut rows = Rows::new(&cfg, 128, 32);
        let reads = [
            (0, 0),
            (0, 100),
            (1, 150),
            (0, 250),
            (0, 351),
            (1, 352),
            (0, 300),
        ]
        .map(|(line, at)| rows.read(line, 0b1111, at));
        assert_eq!(
            reads,
            [10, 0, 10, 10, 10, 10, 0],
            "a row read 100 cycles after its last read is open, 101 after it is opened again; \
             a read arriving before the row's last one is gathered with it"
        );
        // Unset, the same reads find their rows open but for the first of each.
        let mut rows = Rows::new(
            &DramRows {
                open_cycles: None,
                ..cfg
            },
            128,
            32,
        );
        let reads =
            [(0, 0), (1, 150), (0, 5_000), (1, 90_000)].map(|(l, at)| rows.read(l, 0b1111, at));
        assert_eq!(reads, [10, 10, 0, 0]);
    }

    #[test]
    fn banks_permuted_per_round_send_chunks_a_round_apart_to_different_banks() {
        // A round is 4 chunks, a stripe 16.
        let cfg = |permute_per| DramRows {
            permute_per,
            ..four_banks()
        };
        let banks = |rows: &Rows| (0..16).map(|c| rows.place(c).1).collect::<Vec<_>>();
        let stripe = banks(&Rows::new(&cfg(None), 128, 32));
        assert_eq!(
            stripe[..4],
            stripe[4..8],
            "per stripe, every round the same"
        );
        let round = banks(&Rows::new(&cfg(Some(BankPermutation::Round)), 128, 32));
        for r in round.chunks(4) {
            let mut sorted = r.to_vec();
            sorted.sort_unstable();
            assert_eq!(
                sorted,
                [0, 1, 2, 3],
                "a round gives each bank one chunk: {round:?}"
            );
        }
        assert_ne!(
            round[..4],
            round[4..8],
            "per round, rounds differ: {round:?}"
        );
        assert!((0..16).all(|c| Rows::new(&cfg(None), 128, 32).place(c).0 == 0));
    }

    #[test]
    fn a_backlog_of_full_cycles_takes_no_room() {
        // A store storm: 100,000 one-cycle transfers all arriving at cycle 0.
        let mut q = BandwidthQueue::new(32.0);
        for k in 0..100_000u64 {
            assert_eq!(q.reserve(0, 32), k);
        }
        assert!(q.held() <= 1, "{} cycles held", q.held());
        assert!(q.used.len() <= 2048, "the forgotten front is dropped");
        // A late arrival inside the backlog waits for its end; one after it starts at once.
        assert_eq!(q.reserve(50, 32), 100_000);
        assert_eq!(q.reserve(200_000, 32), 200_000);
        assert!(q.held() <= 100_000, "only the gap before 200,000 is held");
        q.forget_before(200_000);
        assert!(q.held() <= 1);
    }
}
