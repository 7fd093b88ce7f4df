//! A selection of a launch's warps by global index, with its command-line grammar (`all`,
//! `none`, `every:N`, indices and ranges): the one type behind `--trace-warps` and
//! `--time-warps`; and the access period behind `--time-accesses` (`all`, `every:N`).

/// A set of a launch's warps by global index: which warps keep per-access records
/// (`--trace-warps`) and which time their accesses (`--time-warps`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WarpSelection {
    /// Global warp indices (block linear index · warps per block + warp in block).
    pub list: Vec<u32>,
    /// Also every `every`-th warp (0, every, 2·every, …); `None` or 0: none by sampling.
    pub every: Option<u32>,
}

impl WarpSelection {
    /// No warp.
    pub fn none() -> Self {
        WarpSelection::default()
    }

    /// Every warp.
    pub fn all() -> Self {
        WarpSelection {
            list: Vec::new(),
            every: Some(1),
        }
    }

    /// Whether every warp is selected: for `--time-warps`, whether the launch can do without
    /// the untimed warps' bare path.
    pub fn is_all(&self) -> bool {
        self.every == Some(1)
    }

    /// Whether global warp `w` is selected.
    pub fn contains(&self, w: u32) -> bool {
        self.every.is_some_and(|e| e > 0 && w.is_multiple_of(e)) || self.list.contains(&w)
    }

    /// The selected warps among `n_warps`, ascending (for traced warps, their position is their
    /// trace area index).
    pub fn select(&self, n_warps: u64) -> Vec<u32> {
        let n = u32::try_from(n_warps).unwrap_or(u32::MAX);
        match self.every {
            Some(e) if e > 0 => (0..n).filter(|&w| self.contains(w)).collect(),
            _ => {
                let mut v: Vec<u32> = self.list.iter().copied().filter(|&w| w < n).collect();
                v.sort_unstable();
                v.dedup();
                v
            }
        }
    }
}

impl std::fmt::Display for WarpSelection {
    /// The canonical spec that parses back to the same selection: `0-3,17,every:64`, `all`, `none`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.every == Some(1) {
            return f.write_str("all");
        }
        let mut list = self.list.clone();
        list.sort_unstable();
        list.dedup();
        let mut parts = Vec::new();
        let mut i = 0;
        while i < list.len() {
            let mut j = i;
            while j + 1 < list.len() && list[j + 1] == list[j] + 1 {
                j += 1;
            }
            parts.push(if j > i {
                format!("{}-{}", list[i], list[j])
            } else {
                list[i].to_string()
            });
            i = j + 1;
        }
        if let Some(e) = self.every.filter(|&e| e > 1) {
            parts.push(format!("every:{e}"));
        }
        if parts.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&parts.join(","))
        }
    }
}

impl std::str::FromStr for WarpSelection {
    type Err = String;
    /// `0-3,17` (global warp indices and inclusive ranges), `every:64`, `all`, `none`, or a
    /// comma-separated mix of ranges and one `every:N`.
    fn from_str(s: &str) -> Result<Self, String> {
        let mut t = WarpSelection::none();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || {
                format!("{s:?}: {part:?} is not a warp index, a range A-B, every:N, all or none")
            };
            match part {
                "all" => t.every = Some(1),
                "none" => {}
                _ => {
                    if let Some(n) = part.strip_prefix("every:") {
                        let n: u32 = n.parse().map_err(|_| bad())?;
                        if n == 0 {
                            return Err(format!("{s:?}: every:0 selects nothing; use none"));
                        }
                        t.every = Some(n);
                    } else if let Some((a, b)) = part.split_once('-') {
                        let (a, b): (u32, u32) =
                            (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                        if a > b {
                            return Err(format!("{s:?}: range {a}-{b} is empty"));
                        }
                        if b - a >= 1 << 24 {
                            return Err(format!("{s:?}: range {a}-{b} is too long; use every:N"));
                        }
                        t.list.extend(a..=b);
                    } else {
                        t.list.push(part.parse().map_err(|_| bad())?);
                    }
                }
            }
        }
        Ok(t)
    }
}

/// Which of its accesses a timed warp times: every `N`-th, counting all sites together, from a
/// phase its global index sets (warp `g` times its `k`-th access when `g + k` is a multiple of
/// `N`), so that the warps together time every position of a loop's accesses. `N` is 1, 2, 4 or
/// 8: the probe state keeps the counter in three spare bits (`kernels/warpscope.cuh`, SAMPLED
/// TIMING).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AccessPeriod(u32);

impl AccessPeriod {
    /// Every access.
    pub const ALL: AccessPeriod = AccessPeriod(1);
    /// One access in 8, the longest period the probes keep.
    pub const EVERY_8: AccessPeriod = AccessPeriod(kernels::layout::WS_MAX_ACCESS_PERIOD);

    /// The period `n`, where the probes can keep it.
    pub fn new(n: u32) -> Option<AccessPeriod> {
        (n.is_power_of_two() && n <= kernels::layout::WS_MAX_ACCESS_PERIOD)
            .then_some(AccessPeriod(n))
    }

    /// `N`: one access in `N` is timed.
    pub fn get(self) -> u32 {
        self.0
    }

    /// Whether every access is timed: whether the launch can do without the sampled build.
    pub fn is_all(self) -> bool {
        self.0 == 1
    }

    /// The bits of the `ws::Log` flags that carry it: the probes' counter step, 8 / N modulo 8.
    pub fn flag_bits(self) -> u32 {
        let max = kernels::layout::WS_MAX_ACCESS_PERIOD;
        ((max / self.0) % max) << kernels::layout::WS_LOG_FLAG_STEP_SHIFT
    }
}

/// Whether timing the warps `warps` and one access in `period` of each needs the sampled build
/// (the probes' bare path): anything but every access of every warp.
pub fn needs_sampled_build(warps: &WarpSelection, period: AccessPeriod) -> bool {
    !(warps.is_all() && period.is_all())
}

impl Default for AccessPeriod {
    fn default() -> Self {
        AccessPeriod::ALL
    }
}

impl std::fmt::Display for AccessPeriod {
    /// `all`, or `every:N`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            1 => f.write_str("all"),
            n => write!(f, "every:{n}"),
        }
    }
}

impl std::str::FromStr for AccessPeriod {
    type Err = String;
    /// `all` or `every:N`, N one of 1, 2, 4, 8.
    fn from_str(s: &str) -> Result<Self, String> {
        let n = match s.trim() {
            "all" => 1,
            t => t
                .strip_prefix("every:")
                .and_then(|n| n.parse::<u32>().ok())
                .ok_or_else(|| format!("{s:?} is not all or every:N"))?,
        };
        AccessPeriod::new(n).ok_or_else(|| {
            format!(
                "{s:?}: the period must be 1, 2, 4 or {} (the probes count accesses in 3 bits)",
                kernels::layout::WS_MAX_ACCESS_PERIOD
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selections_parse_and_select() {
        let t: WarpSelection = "0-3,17".parse().unwrap();
        assert_eq!(t.select(100), vec![0, 1, 2, 3, 17]);
        assert_eq!(t.select(2), vec![0, 1]);
        let e: WarpSelection = "every:4,5".parse().unwrap();
        assert_eq!(e.select(10), vec![0, 4, 5, 8]);
        assert_eq!(
            "all".parse::<WarpSelection>().unwrap().select(3),
            vec![0, 1, 2]
        );
        assert!(
            "none"
                .parse::<WarpSelection>()
                .unwrap()
                .select(3)
                .is_empty()
        );
        for spec in ["0-3,17", "5,every:4", "all", "none"] {
            assert_eq!(spec.parse::<WarpSelection>().unwrap().to_string(), spec);
        }
        for bad in ["x", "3-1", "every:0", "every:x", "1-"] {
            let e = bad.parse::<WarpSelection>().unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[test]
    fn access_periods_parse_and_set_the_flag_bits() {
        for (spec, n) in [("all", 1), ("every:1", 1), ("every:2", 2), ("every:8", 8)] {
            let p: AccessPeriod = spec.parse().unwrap();
            assert_eq!(p.get(), n, "{spec}");
            assert_eq!(p.to_string().parse::<AccessPeriod>().unwrap(), p);
        }
        assert_eq!(AccessPeriod::ALL.flag_bits(), 0);
        assert_eq!(AccessPeriod::new(8), Some(AccessPeriod::EVERY_8));
        let step = |spec: &str| spec.parse::<AccessPeriod>().unwrap().flag_bits() >> 8;
        assert_eq!(
            (step("every:2"), step("every:4"), step("every:8")),
            (4, 2, 1)
        );
        for bad in ["every:3", "every:16", "every:0", "none", "4"] {
            let e = bad.parse::<AccessPeriod>().unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
    }
}
