//! How the reports spell numbers and names: percentages, significant digits, block shapes and
//! views. One place, so that a figure reads the same in every sentence, table and report (and in
//! `warpscope gpu-check`'s, which uses [`pct`]).

/// A fraction as a percentage with `digits` decimals, a space before the sign: `0.574` → `57 %`
/// (0 digits), `57.4 %` (1 digit).
pub fn pct(x: f64, digits: usize) -> String {
    format!("{:.digits$} %", x * 100.0)
}

/// Whole percents from `lo` to `hi` (`12–20 %`), or one (`40 %`) where both round alike.
pub(crate) fn pct_range((lo, hi): (f64, f64)) -> String {
    let (a, b) = (format!("{:.0}", lo * 100.0), format!("{:.0}", hi * 100.0));
    if a == b {
        format!("{a} %")
    } else {
        format!("{a}–{b} %")
    }
}

/// `x` with 4 significant digits, without exponent for the usual magnitudes.
pub(crate) fn sig(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let mag = x.abs().log10().floor() as i32;
    if !(-4..=9).contains(&mag) {
        return format!("{x:.3e}");
    }
    let decimals = (3 - mag).max(0) as usize;
    format!("{x:.decimals$}")
}

/// "16x8" → "16×8", as the paper writes shapes.
pub(crate) fn pretty_shape(shape: &str) -> String {
    shape.replace('x', "×")
}

/// "90,0,90" → "(90,0,90)".
pub(crate) fn pretty_view(view: &str) -> String {
    format!("({view})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_have_one_spelling() {
        assert_eq!(pct(0.574, 0), "57 %");
        assert_eq!(pct(0.9054, 1), "90.5 %");
        assert_eq!(pct_range((0.121, 0.2)), "12–20 %");
        assert_eq!(pct_range((0.398, 0.402)), "40 %");
    }

    #[test]
    fn significant_digits() {
        assert_eq!(sig(0.0021734), "0.002173");
        assert_eq!(sig(123.456), "123.5");
        assert_eq!(sig(12345.6), "12346");
        assert_eq!(sig(-0.5), "-0.5000");
        assert_eq!(sig(1e-7), "1.000e-7");
    }

    #[test]
    fn shapes_and_views() {
        assert_eq!(pretty_shape("16x8"), "16×8");
        assert_eq!(pretty_view("0,0,0"), "(0,0,0)");
    }
}
