//! Walking a mask's set bits: the active lanes of a warp, the near warps of a scheduler, the
//! members of a register set.

/// The indices of `mask`'s set bits, lowest first.
#[inline]
pub(crate) fn set_bits(mask: impl Into<u64>) -> impl Iterator<Item = usize> {
    let mut m: u64 = mask.into();
    std::iter::from_fn(move || {
        (m != 0).then(|| {
            let b = m.trailing_zeros() as usize;
            m &= m - 1;
            b
        })
    })
}

#[cfg(test)]
mod tests {
    use super::set_bits;

    #[test]
    fn the_set_bits_come_lowest_first() {
        assert_eq!(set_bits(0u32).count(), 0);
        assert_eq!(set_bits(0b1010_0110u32).collect::<Vec<_>>(), [1, 2, 5, 7]);
        assert_eq!(
            set_bits(u64::MAX).collect::<Vec<_>>(),
            (0..64).collect::<Vec<_>>()
        );
        assert_eq!(set_bits(1u64 << 63).collect::<Vec<_>>(), [63]);
    }
}
