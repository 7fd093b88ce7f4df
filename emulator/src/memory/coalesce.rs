//! Address analysis for one warp instruction: coalescing lanes into cache lines and sectors,
//! shared-memory bank conflicts, and distinct-address counting.
//!
//! Why separate: these are pure functions of the lane addresses, hand-checkable in tests, and the
//! hot path calls them with caller-owned scratch vectors so nothing allocates per instruction.

/// The sectors one warp instruction touches in one cache line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineReq {
    pub line: u64,
    pub mask: u8,
}

/// The lines of one access with their sectors, in order of first touch, and an index from
/// line to place in that order. Why the index: a texture fetch's texels alternate between lines
/// (a trilinear sample's two z slices lie in different lines), so a lane merges into a line
/// seen before at nearly every texel, and searching the list for it cost 40 host instructions
/// a texel on a memory-bound frame. One probe of an open-addressed table replaces the search;
/// a table entry counts only when stamped with the current access, so no access clears it.
#[derive(Debug, Clone)]
pub(crate) struct Lines {
    reqs: Vec<LineReq>,
    /// `(stamp, place in reqs)`; twice as many slots as an access touches lines with any
    /// preset (32 lanes × 8 texels, each in up to two lines), so a probe run stays short.
    slots: Box<[(u32, u32)]>,
    stamp: u32,
}

const SLOT_BITS: u32 = 10;

impl Default for Lines {
    fn default() -> Self {
        Lines {
            reqs: Vec::with_capacity(64),
            slots: vec![(0, 0); 1 << SLOT_BITS].into_boxed_slice(),
            stamp: 0,
        }
    }
}

impl std::ops::Deref for Lines {
    type Target = [LineReq];
    fn deref(&self) -> &[LineReq] {
        &self.reqs
    }
}

impl Lines {
    fn clear(&mut self) {
        self.reqs.clear();
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            // Stamps wrapped: entries of 2^32 accesses ago would look current.
            self.slots.fill((0, 0));
            self.stamp = 1;
        }
    }

    /// Merges one line's sectors into the list, keeping first-touch order.
    #[inline]
    fn merge(&mut self, line: u64, mask: u8) {
        if mask == 0 {
            return;
        }
        let n = self.slots.len();
        if self.reqs.len() >= n / 2 {
            // More lines than the table is made for (a config whose lines are smaller than its
            // accesses): the rest are searched for, so a probe never meets a full table.
            match self.reqs.iter_mut().find(|r| r.line == line) {
                Some(r) => r.mask |= mask,
                None => self.reqs.push(LineReq { line, mask }),
            }
            return;
        }
        // Fibonacci hashing: the top bits of the product spread consecutive and strided lines.
        let mut i = (line.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOT_BITS)) as usize;
        loop {
            let (stamp, at) = self.slots[i];
            if stamp != self.stamp {
                self.slots[i] = (self.stamp, self.reqs.len() as u32);
                self.reqs.push(LineReq { line, mask });
                return;
            }
            let r = &mut self.reqs[at as usize];
            if r.line == line {
                r.mask |= mask;
                return;
            }
            i = (i + 1) & (n - 1);
        }
    }
}

/// Groups the byte ranges `[addr, addr + bytes)` of every lane into lines of `1 << line_shift`
/// bytes with a mask of the `1 << sector_shift`-byte sectors touched, in order of first touch.
pub(crate) fn coalesce(
    lanes: &[(u8, u64)],
    bytes: u32,
    line_shift: u32,
    sector_shift: u32,
    out: &mut Lines,
) {
    coalesce_counting::<false>(lanes, bytes, line_shift, sector_shift, 1, out);
}

/// [`coalesce`], and with `LOOKUPS` (a texture fetch) also the access's sector lookups as
/// Nsight Compute's texture hit rate counts them (`CacheCounters::tex_lookups`): the distinct
/// sectors of each group of `group` consecutive lanes (4 for a point sample, 2 for a filtered
/// one: `memory::QUAD`, `memory::PAIR`), summed over groups. A lane's entries are consecutive
/// in `lanes` and lanes come in ascending order, as the texture unit records a sample's
/// texels. Without `LOOKUPS`, returns 0.
///
/// Why one pass: a filtered texture fetch is up to 256 entries (32 lanes × 8 texels; 128 on
/// average on the reuse render), and two passes over them, one for the lines and one for the
/// lookups, cost about 80 host instructions an entry, a fifth of the reuse render's count.
///
/// More than half of a sample's texels lie in the sector of the texel before, which changes
/// neither the lines nor the lookups: such an entry is skipped after one comparison.
///
/// Why so few branches after it: whether a texel lies in the line of its own z slice or in the
/// other slice's varies from lane to lane as the sample points do, so a branch on it is
/// mispredicted about as often as taken. An entry therefore ors its sector into the masks of both
/// lines in view, each under a mask that is all ones only for the line it is in, and branches
/// only when its line is neither (a new line, a few per fetch). A group's lookups are counted
/// from the same two lines' masks of the sectors the group has read, with those of lines that
/// left the view kept aside until the group ends: searching the group's sectors so far
/// mispredicts at the end of most searches. On the reuse render the masks take 0.976 of the
/// wall time the branches and the search took (docs/PERFORMANCE.md).
///
/// A group reads at most 32 sectors (a pair's trilinear samples read 16, a quad's 16-byte loads
/// 8), so at most 32 lines leave the view during one; past that a line's sectors are not kept
/// aside, and a repeat of one would count again.
pub(crate) fn coalesce_counting<const LOOKUPS: bool>(
    lanes: &[(u8, u64)],
    bytes: u32,
    line_shift: u32,
    sector_shift: u32,
    group: u8,
    out: &mut Lines,
) -> u64 {
    out.clear();
    let per_line = line_shift - sector_shift;
    let sector_index_mask = (1u64 << per_line) - 1;
    let len = u64::from(bytes.max(1));
    let group_shift = group.max(1).trailing_zeros();
    let mut view = View::default();
    let mut current = u32::MAX;
    // The sector an entry read last, in this group when counting lookups.
    let mut last = NONE;
    for &(l, addr) in lanes {
        if LOOKUPS {
            let g = u32::from(l >> group_shift);
            if g != current {
                current = g;
                last = NONE;
                view.new_group();
            }
        }
        let first = addr >> sector_shift;
        let end = addr.saturating_add(len - 1) >> sector_shift;
        if first == last && end == last {
            continue;
        }
        last = end;
        for sector in first..=end {
            view.add::<LOOKUPS>(sector >> per_line, 1u8 << (sector & sector_index_mask), out);
        }
    }
    view.finish(out)
}

/// No sector or line: an address that high faults before it reaches the memory model.
const NONE: u64 = u64::MAX;

/// One of the two lines in [`View`].
#[derive(Clone, Copy)]
struct InView {
    line: u64,
    /// Sectors not yet merged into the access's lines.
    pending: u8,
    /// Sectors the current group of lanes has read (lookups).
    read: u8,
}

/// The two lines an access touched last, and the lookups counted so far.
struct View {
    cur: InView,
    prev: InView,
    /// The current group's sectors of lines that left the view during it.
    aside: [(u64, u8); 32],
    n_aside: usize,
    lookups: u64,
}

impl Default for View {
    fn default() -> Self {
        let none = InView {
            line: NONE,
            pending: 0,
            read: 0,
        };
        View {
            cur: none,
            prev: none,
            aside: [(NONE, 0); 32],
            n_aside: 0,
            lookups: 0,
        }
    }
}

impl View {
    fn new_group(&mut self) {
        self.cur.read = 0;
        self.prev.read = 0;
        self.n_aside = 0;
    }

    #[inline(always)]
    fn add<const LOOKUPS: bool>(&mut self, line: u64, bit: u8, out: &mut Lines) {
        // `&`, not `&&`: one branch, rarely taken.
        if (line != self.cur.line) & (line != self.prev.line) {
            self.enter::<LOOKUPS>(line, out);
        }
        let in_cur = 0u8.wrapping_sub(u8::from(line == self.cur.line));
        let in_prev = !in_cur;
        self.cur.pending |= bit & in_cur;
        self.prev.pending |= bit & in_prev;
        if LOOKUPS {
            let read = (self.cur.read & in_cur) | (self.prev.read & in_prev);
            self.lookups += u64::from(read & bit == 0);
            self.cur.read |= bit & in_cur;
            self.prev.read |= bit & in_prev;
        }
    }

    /// A line in neither place becomes the current one. Both lines in view go to `out` first,
    /// the previous one before the current, so lines still enter it in first-touch order; the
    /// previous line leaves the view, its group's sectors set aside. Out of line: a few
    /// entries of a fetch's hundred come here.
    #[cold]
    fn enter<const LOOKUPS: bool>(&mut self, line: u64, out: &mut Lines) {
        out.merge(self.prev.line, self.prev.pending);
        out.merge(self.cur.line, self.cur.pending);
        let mut read = 0;
        if LOOKUPS {
            if self.prev.read != 0 && self.n_aside < self.aside.len() {
                self.aside[self.n_aside] = (self.prev.line, self.prev.read);
                self.n_aside += 1;
            }
            if let Some(k) = self.aside[..self.n_aside].iter().position(|a| a.0 == line) {
                read = self.aside[k].1;
                self.n_aside -= 1;
                self.aside[k] = self.aside[self.n_aside];
            }
        }
        self.prev = InView {
            pending: 0,
            ..self.cur
        };
        self.cur = InView {
            line,
            pending: 0,
            read,
        };
    }

    fn finish(self, out: &mut Lines) -> u64 {
        out.merge(self.prev.line, self.prev.pending);
        out.merge(self.cur.line, self.cur.pending);
        self.lookups
    }
}

/// Bank-conflict degree of a shared-memory access: the largest number of *distinct* words any
/// one bank must serve (lanes reading the same word share one access: broadcast). 1 = no
/// conflict; 0 for no lanes. `bank_width` is a power of two (the config checks it); `scratch` is
/// reused storage.
pub(crate) fn bank_conflict_ways(
    lanes: &[(u8, u64)],
    bytes: u32,
    banks: u32,
    bank_width: u32,
    scratch: &mut Vec<(u64, u64)>,
) -> u32 {
    debug_assert!(bank_width.is_power_of_two(), "bank width {bank_width}");
    let banks = Banks::new(banks, bank_width);
    let len = u64::from(bytes.max(1));
    conflict_free_ways(lanes, len, &banks)
        .unwrap_or_else(|| counted_ways(lanes, len, &banks, scratch))
}

/// Which bank serves a word, and which words a byte range covers. A warp instruction asks
/// this for every lane, so the divisions become a shift and, for the power-of-two bank counts
/// of every GPU so far, a mask; other counts still divide.
struct Banks {
    width_shift: u32,
    count: u64,
    mask: Option<u64>,
}

impl Banks {
    fn new(count: u32, width: u32) -> Banks {
        let count = u64::from(count.max(1));
        Banks {
            width_shift: width.max(1).trailing_zeros(),
            count,
            mask: count.is_power_of_two().then(|| count - 1),
        }
    }

    #[inline]
    fn of(&self, word: u64) -> u64 {
        match self.mask {
            Some(m) => word & m,
            None => word % self.count,
        }
    }

    /// Calls `f` with the words each lane's `len` bytes cover, lane by lane, until it returns
    /// false; returns whether it never did. Plain loops: this runs for every shared-memory
    /// access, and a flattened range iterator cost more than the checks that use it.
    #[inline]
    fn each_word(&self, lanes: &[(u8, u64)], len: u64, mut f: impl FnMut(u64) -> bool) -> bool {
        let shift = self.width_shift;
        for &(_, addr) in lanes {
            let last = addr.saturating_add(len - 1) >> shift;
            let mut word = addr >> shift;
            loop {
                if !f(word) {
                    return false;
                }
                if word >= last {
                    break;
                }
                word += 1;
            }
        }
        true
    }
}

/// The general count: every (bank, word) pair, sorted and deduplicated, longest run per bank.
fn counted_ways(
    lanes: &[(u8, u64)],
    len: u64,
    banks: &Banks,
    scratch: &mut Vec<(u64, u64)>,
) -> u32 {
    scratch.clear();
    banks.each_word(lanes, len, |word| {
        scratch.push((banks.of(word), word));
        true
    });
    scratch.sort_unstable();
    scratch.dedup();
    let mut best = 0u32;
    let mut run = 0u32;
    let mut current = None;
    for &(bank, _) in scratch.iter() {
        if current == Some(bank) {
            run += 1;
        } else {
            current = Some(bank);
            run = 1;
        }
        best = best.max(run);
    }
    best
}

/// The common cases without sorting: when every bank serves at most one distinct word (a
/// conflict-free or broadcast access), the degree is 1 (0 without lanes); `None` as soon as a
/// bank meets a second word, left to the general count. Only for up to 64 banks.
fn conflict_free_ways(lanes: &[(u8, u64)], len: u64, banks: &Banks) -> Option<u32> {
    // Two distinct words fewer than `count` apart lie in distinct banks, so when every word
    // the lanes touch lies in one run of `count` words, no bank serves two. The tiles of a
    // shared-memory kernel read so (a row, a column broadcast to the rows): one pass of a
    // minimum and a maximum decides it where the check below writes and reads a table per
    // lane (tiled matmul: about 600 host instructions fewer an access).
    // The first word of the lowest address and the last of the highest: both maps are
    // monotonic, so they bound every lane's words.
    let Some(&(_, first)) = lanes.first() else {
        return Some(0);
    };
    let (low, high) = lanes.iter().fold((first, first), |(low, high), &(_, a)| {
        (low.min(a), high.max(a))
    });
    let shift = banks.width_shift;
    if (high.saturating_add(len - 1) >> shift) - (low >> shift) < banks.count {
        return Some(1);
    }
    if banks.count > 64 {
        return None;
    }
    let mut word_of = [0u64; 64];
    if let Some(mask) = banks.mask {
        // When each lane's bytes lie in one word (an aligned access no wider than a bank, the
        // common case), two passes without a branch per lane decide it: every bank's last
        // word, then whether each lane's word is its bank's. The lane-by-lane check below
        // branches on every lane's bank.
        let shift = banks.width_shift;
        let bank = |word: u64| (word & mask & 63) as usize;
        let mut spans = 0u64;
        for &(_, addr) in lanes {
            let word = addr >> shift;
            spans |= (addr.saturating_add(len - 1) >> shift) ^ word;
            word_of[bank(word)] = word;
        }
        if spans == 0 {
            let free = lanes.iter().fold(true, |free, &(_, a)| {
                free & (word_of[bank(a >> shift)] == a >> shift)
            });
            return free.then(|| u32::from(!lanes.is_empty()));
        }
    }
    let mut seen = 0u64;
    let free = banks.each_word(lanes, len, |word| {
        let bank = banks.of(word) as usize;
        let bit = 1u64 << bank;
        if seen & bit == 0 {
            seen |= bit;
            word_of[bank] = word;
            true
        } else {
            word_of[bank] == word
        }
    });
    free.then(|| u32::from(seen != 0))
}

/// Distinct addresses among the lanes, sorted, into `out`.
pub(crate) fn distinct_addresses(lanes: &[(u8, u64)], out: &mut Vec<u64>) {
    out.clear();
    out.extend(lanes.iter().map(|&(_, a)| a));
    out.sort_unstable();
    out.dedup();
}

/// The most lanes sharing one address (atomics to one word serialize).
pub(crate) fn max_same_address(lanes: &[(u8, u64)], scratch: &mut Vec<u64>) -> u32 {
    address_counts(lanes.iter().map(|&(_, a)| a), scratch).1
}

/// How many distinct addresses `addrs` holds, and the most of them that are one address.
pub(crate) fn address_counts(
    addrs: impl Iterator<Item = u64>,
    scratch: &mut Vec<u64>,
) -> (u32, u32) {
    scratch.clear();
    scratch.extend(addrs);
    scratch.sort_unstable();
    let (mut distinct, mut most, mut run) = (0u32, 0u32, 0u32);
    let mut prev = None;
    for &a in scratch.iter() {
        if prev == Some(a) {
            run += 1;
        } else {
            prev = Some(a);
            distinct += 1;
            run = 1;
        }
        most = most.max(run);
    }
    (distinct, most)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    /// The lookups [`coalesce_counting`] counts, after checking that its lines are
    /// [`coalesce`]'s.
    fn lookup_sectors(lanes: &[(u8, u64)], bytes: u32, sector_shift: u32, group: u8) -> u64 {
        let line_shift = sector_shift + 2;
        let (mut with, mut without) = (Lines::default(), Lines::default());
        let n = coalesce_counting::<true>(lanes, bytes, line_shift, sector_shift, group, &mut with);
        coalesce(lanes, bytes, line_shift, sector_shift, &mut without);
        assert_eq!(&*with, &*without);
        n
    }

    fn lanes(f: impl Fn(u64) -> u64) -> Vec<(u8, u64)> {
        (0..32u8).map(|l| (l, f(u64::from(l)))).collect()
    }

    #[test]
    fn consecutive_words_are_one_line_four_sectors() {
        let mut out = Lines::default();
        coalesce(&lanes(|l| 0x1000 + 4 * l), 4, 7, 5, &mut out);
        assert_eq!(
            *out,
            [LineReq {
                line: 0x1000 >> 7,
                mask: 0b1111
            }]
        );
    }

    #[test]
    fn stride_of_a_line_is_thirty_two_single_sectors() {
        let mut out = Lines::default();
        coalesce(&lanes(|l| 128 * l), 4, 7, 5, &mut out);
        assert_eq!(out.len(), 32);
        assert!(out.iter().all(|r| r.mask.count_ones() == 1));
        let sectors: u32 = out.iter().map(|r| r.mask.count_ones()).sum();
        assert_eq!(sectors, 32);
    }

    #[test]
    fn stride_of_a_sector_is_eight_lines_of_four_sectors() {
        let mut out = Lines::default();
        coalesce(&lanes(|l| 32 * l), 4, 7, 5, &mut out);
        assert_eq!(out.len(), 8);
        assert!(out.iter().all(|r| r.mask == 0b1111));
    }

    #[test]
    fn misaligned_access_spans_two_sectors_and_lines() {
        let mut out = Lines::default();
        coalesce(&[(0, 126)], 4, 7, 5, &mut out);
        assert_eq!(
            *out,
            [
                LineReq {
                    line: 0,
                    mask: 0b1000
                },
                LineReq {
                    line: 1,
                    mask: 0b0001
                }
            ]
        );
    }

    #[test]
    fn lookup_sectors_count_each_groups_distinct_sectors() {
        // A trilinear sample of 1-byte texels: lanes 0 and 1 (one quad) read the same 2×2×2
        // texels, whose rows fall in two sectors; lane 4 (the next quad) reads them too, and
        // lane 5 one texel whose 4 bytes straddle two sectors.
        let cube = |lane: u8| [0u64, 1, 16, 17, 64, 65, 80, 81].map(|a| (lane, a));
        let mut lanes: Vec<(u8, u64)> = cube(0).into_iter().chain(cube(1)).collect();
        assert_eq!(lookup_sectors(&lanes, 1, 5, 4), 2);
        assert_eq!(lookup_sectors(&lanes, 1, 5, 2), 2);
        assert_eq!(lookup_sectors(&lanes, 1, 5, 1), 2 + 2);
        lanes.extend(cube(4));
        assert_eq!(lookup_sectors(&lanes, 1, 5, 4), 2 + 2);
        lanes.push((5, 30));
        assert_eq!(lookup_sectors(&lanes, 4, 5, 4), 2 + 3);
        assert_eq!(lookup_sectors(&lanes, 4, 5, 2), 2 + 3);
        lanes.push((6, 0));
        assert_eq!(lookup_sectors(&lanes, 4, 5, 4), 2 + 3);
        assert_eq!(lookup_sectors(&lanes, 4, 5, 2), 2 + 3 + 1);
        let mut lines = Lines::default();
        coalesce(&lanes, 4, 7, 5, &mut lines);
        let distinct: u32 = lines.iter().map(|r| r.mask.count_ones()).sum();
        assert_eq!(distinct, 3, "per request the lanes read three sectors");
        assert_eq!(lookup_sectors(&[], 1, 5, 4), 0);
    }

    #[test]
    fn unsectored_line_has_one_sector_bit() {
        let mut out = Lines::default();
        coalesce(&lanes(|l| 4 * l), 4, 7, 7, &mut out);
        assert_eq!(*out, [LineReq { line: 0, mask: 1 }]);
    }

    #[test]
    fn bank_conflicts_stride_two_words_is_two_way_same_word_is_broadcast() {
        let mut s = Vec::new();
        assert_eq!(bank_conflict_ways(&lanes(|l| 4 * l), 4, 32, 4, &mut s), 1);
        assert_eq!(bank_conflict_ways(&lanes(|l| 8 * l), 4, 32, 4, &mut s), 2);
        assert_eq!(
            bank_conflict_ways(&lanes(|l| 128 * l), 4, 32, 4, &mut s),
            32
        );
        assert_eq!(bank_conflict_ways(&lanes(|_| 64), 4, 32, 4, &mut s), 1);
        // 8-byte accesses by 32 lanes cover 64 words: every bank serves two.
        assert_eq!(bank_conflict_ways(&lanes(|l| 8 * l), 8, 32, 4, &mut s), 2);
        assert_eq!(bank_conflict_ways(&[], 4, 32, 4, &mut s), 0);
    }

    proptest::proptest! {
        /// Against the definition, by search: every lane's sectors, lines in order of first
        /// touch, masks or-ed; over many accesses, so that stale index entries are exercised.
        #[test]
        fn coalesce_groups_sectors_by_line_in_first_touch_order(
            accesses in proptest::collection::vec(
                proptest::collection::vec(0u64..1 << 16, 0..257), 1..6),
            bytes in proptest::sample::select(vec![1u32, 4, 16]),
            sector_shift in 2u32..6,
            // Narrow: neighbouring entries often share a sector, which the pass skips.
            spread in proptest::sample::select(vec![1u64 << 6, 1 << 16]),
        ) {
            let line_shift = sector_shift + 2;
            let mut out = Lines::default();
            let accesses: Vec<Vec<u64>> = accesses
                .iter()
                .map(|a| a.iter().map(|&x| x % spread).collect())
                .collect();
            for addrs in &accesses {
                let l: Vec<(u8, u64)> = addrs.iter().map(|&a| (0, a)).collect();
                coalesce(&l, bytes, line_shift, sector_shift, &mut out);
                let mut want: Vec<LineReq> = Vec::new();
                for &a in addrs {
                    for s in a >> sector_shift..=(a + u64::from(bytes) - 1) >> sector_shift {
                        let (line, bit) = (s >> 2, 1u8 << (s & 3));
                        match want.iter_mut().find(|r| r.line == line) {
                            Some(r) => r.mask |= bit,
                            None => want.push(LineReq { line, mask: bit }),
                        }
                    }
                }
                proptest::prop_assert_eq!(&*out, &want[..]);
            }
        }

        /// Against the definition: the sum over groups of lanes of each group's distinct
        /// sectors, for lanes of up to eight addresses each (a trilinear sample's texels), near
        /// one another so that they share sectors, one or two sectors each.
        #[test]
        fn lookup_sectors_sum_each_groups_distinct_sectors(
            lanes in proptest::collection::vec(
                (0u64..1 << 12, proptest::collection::vec(0u64..96, 1..9)), 0..33),
            bytes in proptest::sample::select(vec![1u32, 4]),
            group in proptest::sample::select(vec![1u8, 2, 4]),
        ) {
            let entries: Vec<(u8, u64)> = lanes.iter().enumerate()
                .flat_map(|(l, (base, offs))| offs.iter().map(move |&o| (l as u8, base + o)))
                .collect();
            let want: usize = lanes.chunks(usize::from(group)).map(|lanes| {
                lanes.iter()
                    .flat_map(|(base, offs)| offs.iter().map(move |&o| base + o))
                    .flat_map(|a| a >> 5..=(a + u64::from(bytes) - 1) >> 5)
                    .collect::<BTreeSet<u64>>()
                    .len()
            }).sum();
            proptest::prop_assert_eq!(lookup_sectors(&entries, bytes, 5, group), want as u64);
        }
    }

    #[test]
    fn more_lines_than_the_index_holds_are_still_merged() {
        // 16-byte texels over 1-byte lines: 256 texels touch 4096 lines, twice where they
        // overlap (the second half repeats the first half's lines).
        let l: Vec<(u8, u64)> = (0..256u64)
            .map(|i| (0, 64 * (i % 128) + (i / 128)))
            .collect();
        let mut out = Lines::default();
        coalesce(&l, 16, 0, 0, &mut out);
        let mut want: Vec<u64> = Vec::new();
        for &(_, a) in &l {
            for line in a..a + 16 {
                if !want.contains(&line) {
                    want.push(line);
                }
            }
        }
        assert_eq!(out.iter().map(|r| r.line).collect::<Vec<_>>(), want);
        assert!(out.iter().all(|r| r.mask == 1));
    }

    #[test]
    fn stale_index_entries_after_the_stamp_wraps_are_not_taken_for_lines() {
        let mut out = Lines::default();
        // Line 0's entry is stamped 1, the stamp the table starts over with after a wrap.
        coalesce(&[(0, 0)], 1, 7, 5, &mut out);
        assert_eq!(out.stamp, 1);
        out.stamp = u32::MAX;
        coalesce(&[(0, 0), (0, 256)], 1, 7, 5, &mut out);
        assert_eq!(out.stamp, 1);
        assert_eq!(
            *out,
            [LineReq { line: 0, mask: 1 }, LineReq { line: 2, mask: 1 }]
        );
    }

    proptest::proptest! {
        #[test]
        fn the_conflict_free_shortcut_agrees_with_the_general_count(
            addrs in proptest::collection::vec(0u64..2048, 0..32),
            bytes in proptest::sample::select(vec![1u32, 2, 4, 8, 16]),
            banks in proptest::sample::select(vec![16u32, 24, 32, 64]),
            width in proptest::sample::select(vec![4u32, 8]),
            // Narrow spreads put every word in one run of `banks` words (the shortcut's
            // window), wide ones rarely.
            spread in proptest::sample::select(vec![32u64, 128, 256, 2048]),
            base in 0u64..1 << 40,
        ) {
            let l: Vec<(u8, u64)> =
                addrs.iter().enumerate().map(|(i, &a)| (i as u8, base + a % spread)).collect();
            let mut s = Vec::new();
            let general = counted_ways(&l, u64::from(bytes), &Banks::new(banks, width), &mut s);
            proptest::prop_assert_eq!(bank_conflict_ways(&l, bytes, banks, width, &mut s), general);
            // Against the definition, written with divisions: distinct words per bank.
            let mut per_bank = BTreeMap::<u64, BTreeSet<u64>>::new();
            for &(_, a) in &l {
                for word in a / u64::from(width)..=(a + u64::from(bytes) - 1) / u64::from(width) {
                    per_bank.entry(word % u64::from(banks)).or_default().insert(word);
                }
            }
            let by_definition = per_bank.values().map(|w| w.len() as u32).max().unwrap_or(0);
            proptest::prop_assert_eq!(general, by_definition);
        }
    }

    #[test]
    fn distinct_and_same_address_counts() {
        let mut s = Vec::new();
        let l = lanes(|l| 4 * (l % 4));
        distinct_addresses(&l, &mut s);
        assert_eq!(s, vec![0, 4, 8, 12]);
        assert_eq!(max_same_address(&l, &mut s), 8);
    }
}
