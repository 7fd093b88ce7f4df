//! Which launches are profiled: kernel names as Nsight Compute's `--kernel-name` spells them, and
//! how many launches of each kernel to skip and to take.
//!
//! A name filter is an exact name, or `regex:EXPR`; either is tried against the mangled name
//! (`_Z6gatherPKfPfi`), the demangled one (`gather(float const*, float*, int)`) and the function's
//! base name (`gather`). Unlike Nsight Compute, whose `--launch-skip` and `--launch-count` count
//! the matching launches of all kernels together, warpscope counts each kernel's launches apart:
//! its default, the first launch of every kernel, says where each kernel's time goes without
//! profiling a loop of the same kernel a thousand times.

use crate::ProfileError;
use regex::Regex;
use std::collections::BTreeMap;

/// A kernel's names: as the PTX declares it, and demangled where it is a C++ name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelName {
    pub mangled: String,
    /// `gather(float const*, float*, int)`; the mangled name for an `extern "C"` kernel.
    pub demangled: String,
    /// `gather`; `reduce_v1<256>` for a template.
    pub base: String,
}

impl KernelName {
    pub fn new(mangled: &str) -> KernelName {
        let symbol = cpp_demangle::Symbol::new(mangled).ok();
        let with = |opts: &cpp_demangle::DemangleOptions| {
            symbol
                .as_ref()
                .and_then(|s| s.demangle_with_options(opts).ok())
                .unwrap_or_else(|| mangled.to_string())
        };
        KernelName {
            mangled: mangled.to_string(),
            demangled: with(&cpp_demangle::DemangleOptions::new()),
            base: with(
                &cpp_demangle::DemangleOptions::new()
                    .no_params()
                    .no_return_type(),
            ),
        }
    }
}

/// `--kernel-name`: an exact name or `regex:EXPR`.
#[derive(Debug, Clone)]
pub enum NameFilter {
    Exact(String),
    Regex(Regex),
}

impl NameFilter {
    pub fn parse(s: &str) -> Result<NameFilter, ProfileError> {
        match s.strip_prefix("regex:") {
            Some(expr) => Regex::new(expr)
                .map(NameFilter::Regex)
                .map_err(|e| ProfileError::Config(format!("--kernel-name regex:{expr}: {e}"))),
            None => Ok(NameFilter::Exact(s.to_string())),
        }
    }

    pub fn matches(&self, name: &KernelName) -> bool {
        let forms = [&name.mangled, &name.demangled, &name.base];
        match self {
            NameFilter::Exact(s) => forms.contains(&s),
            NameFilter::Regex(r) => forms.iter().any(|f| r.is_match(f)),
        }
    }
}

/// The selection: a name filter, and per kernel how many launches to skip and to profile.
#[derive(Debug, Clone)]
pub struct Selection {
    filter: Option<NameFilter>,
    skip: u64,
    /// `None`: every launch after the skipped ones.
    count: Option<u64>,
    /// Matching launches seen so far, by mangled name.
    seen: BTreeMap<String, u64>,
}

impl Selection {
    pub fn new(filter: Option<NameFilter>, skip: u64, count: Option<u64>) -> Selection {
        Selection {
            filter,
            skip,
            count,
            seen: BTreeMap::new(),
        }
    }

    /// Counts a launch of `name` and says whether it is to be profiled.
    pub fn take(&mut self, name: &KernelName) -> bool {
        if self.filter.as_ref().is_some_and(|f| !f.matches(name)) {
            return false;
        }
        let n = self.seen.entry(name.mangled.clone()).or_insert(0);
        let index = *n;
        *n += 1;
        index >= self.skip && self.count.is_none_or(|c| index - self.skip < c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_demangled_to_full_and_base_forms() {
        let n = KernelName::new("_Z9reduce_v1ILi256EEvPKfPfi");
        assert_eq!(n.base, "reduce_v1<256>");
        assert!(
            n.demangled
                .contains("reduce_v1<256>(float const*, float*, int)")
        );
        let c = KernelName::new("histogram");
        assert_eq!(
            (c.demangled.as_str(), c.base.as_str()),
            ("histogram", "histogram")
        );
    }

    #[test]
    fn a_filter_matches_any_form_exactly_or_by_regex() {
        let n = KernelName::new("_Z6gatherPKfPfi");
        for hit in [
            "gather",
            "_Z6gatherPKfPfi",
            "gather(float const*, float*, int)",
        ] {
            assert!(NameFilter::parse(hit).unwrap().matches(&n), "{hit}");
        }
        assert!(!NameFilter::parse("gath").unwrap().matches(&n));
        assert!(NameFilter::parse("regex:^gat").unwrap().matches(&n));
        assert!(!NameFilter::parse("regex:^scatter").unwrap().matches(&n));
        let e = NameFilter::parse("regex:(").unwrap_err().to_string();
        assert!(e.contains("regex:("), "{e}");
    }

    #[test]
    fn each_kernel_counts_its_own_launches() {
        let (a, b) = (KernelName::new("a"), KernelName::new("b"));
        let mut first = Selection::new(None, 0, Some(1));
        assert_eq!(
            [
                first.take(&a),
                first.take(&a),
                first.take(&b),
                first.take(&b)
            ],
            [true, false, true, false]
        );
        let mut window = Selection::new(Some(NameFilter::parse("a").unwrap()), 2, Some(2));
        let got: Vec<bool> = (0..6).map(|_| window.take(&a)).collect();
        assert_eq!(got, [false, false, true, true, false, false]);
        assert!(!window.take(&b), "b does not match the filter");
        let mut all = Selection::new(None, 1, None);
        let got: Vec<bool> = (0..4).map(|_| all.take(&a)).collect();
        assert_eq!(got, [false, true, true, true]);
    }
}
