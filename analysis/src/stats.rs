//! The few statistics the analysis needs, written out here because each is a handful of lines
//! and their exact conventions matter for the paper's figures (population variance, average
//! ranks for ties, the 0.6745 robust z-score). polars could compute some of them, but only with
//! extra features that double its build; these work on plain slices and are tested against
//! hand-computed values below.
//!
//! Conventions: an empty input or a zero variance gives `None`, never `NaN`, so that a missing
//! value is visible as an empty CSV cell and is never mistaken for a number.

/// Arithmetic mean; `None` for an empty slice.
pub fn mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    Some(xs.iter().sum::<f64>() / xs.len() as f64)
}

/// The smallest and the largest value; `None` for an empty input. A NaN is passed over, as
/// `f64::min` and `f64::max` pass it over.
pub fn range(xs: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    let mut xs = xs.into_iter().peekable();
    xs.peek()?;
    Some(xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    }))
}

/// Population variance (divides by n, as a spread of the warps that ran, not an estimate of a
/// larger population); `None` for an empty slice.
pub fn variance(xs: &[f64]) -> Option<f64> {
    let m = mean(xs)?;
    Some(xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / xs.len() as f64)
}

/// Median (mean of the two middle values for an even count); `None` for an empty slice.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Median absolute deviation from the median (unscaled).
pub fn mad(xs: &[f64]) -> Option<f64> {
    let m = median(xs)?;
    let dev: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    median(&dev)
}

/// Pearson's correlation coefficient of paired samples; `None` when fewer than two pairs, when
/// the lengths differ, or when either side is constant (the coefficient is undefined).
pub fn pearson(xs: &[f64], ys: &[f64]) -> Option<f64> {
    if xs.len() != ys.len() || xs.len() < 2 {
        return None;
    }
    let mx = mean(xs)?;
    let my = mean(ys)?;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in xs.iter().zip(ys) {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
        syy += (y - my) * (y - my);
    }
    if sxx <= 0.0 || syy <= 0.0 {
        return None;
    }
    Some((sxy / (sxx.sqrt() * syy.sqrt())).clamp(-1.0, 1.0))
}

/// Ranks 1..n; tied values share the average of the ranks they span (the convention that makes
/// Spearman's coefficient the Pearson coefficient of the ranks).
pub fn average_ranks(xs: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..xs.len()).collect();
    order.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]).then(a.cmp(&b)));
    let mut ranks = vec![0.0; xs.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && xs[order[j + 1]] == xs[order[i]] {
            j += 1;
        }
        // Positions i..=j (0-based) hold ranks i+1..=j+1; their average is (i+j)/2 + 1.
        let r = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = r;
        }
        i = j + 1;
    }
    ranks
}

/// Spearman's rank correlation with average ranks for ties; `None` as for [`pearson`].
pub fn spearman(xs: &[f64], ys: &[f64]) -> Option<f64> {
    if xs.len() != ys.len() {
        return None;
    }
    pearson(&average_ranks(xs), &average_ranks(ys))
}

/// Scale that turns a mean absolute deviation into the MAD of a normal distribution
/// (√(π/2) ≈ 1.253314); used only when the MAD is zero.
const MEAN_AD_SCALE: f64 = 1.253_314;

/// Iglewicz–Hoaglin robust z-scores: 0.6745 · (x − median) / MAD. When more than half the values
/// are equal the MAD is zero; then the mean absolute deviation stands in for it
/// ((x − median) / (1.253314 · meanAD), the usual fallback), and when that is zero too every value
/// equals the median and every score is 0.
pub fn robust_z(xs: &[f64]) -> Vec<f64> {
    let (Some(m), Some(d)) = (median(xs), mad(xs)) else {
        return Vec::new();
    };
    if d > 0.0 {
        return xs.iter().map(|x| 0.6745 * (x - m) / d).collect();
    }
    let mean_ad = xs.iter().map(|x| (x - m).abs()).sum::<f64>() / xs.len() as f64;
    if mean_ad > 0.0 {
        xs.iter()
            .map(|x| (x - m) / (MEAN_AD_SCALE * mean_ad))
            .collect()
    } else {
        vec![0.0; xs.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn range_is_the_smallest_and_largest_value() {
        assert_eq!(range([3.0, 1.0, 2.0]), Some((1.0, 3.0)));
        assert_eq!(range([f64::NAN, 2.0, -4.0]), Some((-4.0, 2.0)));
        assert_eq!(range([5.0]), Some((5.0, 5.0)));
        assert_eq!(range(Vec::new()), None);
    }

    proptest! {
        // Spearman depends only on order: a strictly increasing transform of x leaves it unchanged,
        // and a decreasing one flips its sign.
        #[test]
        fn spearman_is_rank_based(pairs in proptest::collection::vec((0i32..50, 0i32..50), 3..30)) {
            let xs: Vec<f64> = pairs.iter().map(|p| p.0 as f64).collect();
            let ys: Vec<f64> = pairs.iter().map(|p| p.1 as f64).collect();
            let up: Vec<f64> = xs.iter().map(|x| x.powi(3) + 7.0).collect();
            let down: Vec<f64> = xs.iter().map(|x| -x.exp()).collect();
            let r = spearman(&xs, &ys);
            prop_assert_eq!(r.map(|v| (v * 1e9).round()), spearman(&up, &ys).map(|v| (v * 1e9).round()));
            prop_assert_eq!(r.map(|v| (-v * 1e9).round()), spearman(&down, &ys).map(|v| (v * 1e9).round()));
            if let Some(p) = pearson(&xs, &ys) {
                prop_assert!((-1.0..=1.0).contains(&p));
            }
        }

        // Robust z-scores do not change when every value is shifted by the same amount.
        #[test]
        fn robust_z_is_shift_invariant(xs in proptest::collection::vec(0i32..1000, 1..40), shift in -500i32..500) {
            let a: Vec<f64> = xs.iter().map(|&x| x as f64).collect();
            let b: Vec<f64> = xs.iter().map(|&x| (x + shift) as f64).collect();
            for (za, zb) in robust_z(&a).iter().zip(robust_z(&b)) {
                prop_assert!((za - zb).abs() < 1e-9);
            }
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn mean_variance_median_by_hand() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&xs), Some(5.0));
        // Σ(x−5)² = 9+1+1+1+0+0+4+16 = 32; 32/8 = 4.
        assert_eq!(variance(&xs), Some(4.0));
        assert_eq!(median(&xs), Some(4.5));
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(mean(&[]), None);
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn pearson_by_hand() {
        // x = 1,2,3; y = 2,4,7: mx = 2, my = 13/3; dx = -1,0,1; dy = -7/3,-1/3,8/3.
        // Sxy = 7/3 + 8/3 = 5; Sxx = 2; Syy = (49+1+64)/9 = 114/9. r = 5 / sqrt(2·114/9).
        let r = pearson(&[1.0, 2.0, 3.0], &[2.0, 4.0, 7.0]).unwrap();
        assert!(close(r, 5.0 / (2.0 * 114.0 / 9.0f64).sqrt()), "{r}");
        assert!(close(pearson(&[1.0, 2.0], &[5.0, 3.0]).unwrap(), -1.0));
        assert_eq!(pearson(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]), None);
        assert_eq!(pearson(&[1.0], &[1.0]), None);
        assert_eq!(pearson(&[1.0, 2.0], &[1.0]), None);
    }

    #[test]
    fn average_ranks_share_ties() {
        assert_eq!(
            average_ranks(&[10.0, 20.0, 20.0, 5.0, 20.0]),
            vec![2.0, 4.0, 4.0, 1.0, 4.0]
        );
        assert_eq!(average_ranks(&[1.0, 1.0]), vec![1.5, 1.5]);
    }

    #[test]
    fn spearman_with_ties_by_hand() {
        // x ranks: 1, 2.5, 2.5, 4; y ranks: 1, 2, 3, 4.
        // rx − 2.5 = -1.5, 0, 0, 1.5; ry − 2.5 = -1.5, -0.5, 0.5, 1.5.
        // S = 2.25 + 2.25 = 4.5; Sxx = 4.5; Syy = 5. ρ = 4.5 / sqrt(4.5·5).
        let rho = spearman(&[1.0, 2.0, 2.0, 3.0], &[10.0, 20.0, 30.0, 40.0]).unwrap();
        assert!(close(rho, 4.5 / (4.5f64 * 5.0).sqrt()), "{rho}");
        // A monotone but non-linear relation has ρ = 1 and r < 1.
        let xs = [1.0, 2.0, 3.0, 4.0];
        let ys = [1.0, 8.0, 27.0, 64.0];
        assert!(close(spearman(&xs, &ys).unwrap(), 1.0));
        assert!(pearson(&xs, &ys).unwrap() < 1.0);
    }

    #[test]
    fn robust_z_by_hand() {
        // median 3, |dev| = 2,1,0,1,97 → MAD = 1; z = 0.6745·(x−3).
        let z = robust_z(&[1.0, 2.0, 3.0, 4.0, 100.0]);
        assert!(close(z[0], -2.0 * 0.6745));
        assert!(close(z[2], 0.0));
        assert!(close(z[4], 97.0 * 0.6745));
        assert!(z[4] > 3.5 && z[3].abs() < 3.5);
        // MAD = 0: median 5, mean |dev| = 10/5 = 2; z = (15−5)/(1.253314·2).
        let z = robust_z(&[5.0, 5.0, 5.0, 5.0, 15.0]);
        assert!(close(z[4], 10.0 / (MEAN_AD_SCALE * 2.0)));
        assert!(close(z[0], 0.0));
        assert_eq!(robust_z(&[7.0, 7.0]), vec![0.0, 0.0]);
        assert!(robust_z(&[]).is_empty());
    }
}
