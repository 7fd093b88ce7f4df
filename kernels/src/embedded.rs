//! The kernels built at compile time (`kernels/build.rs`) and embedded in the binary: the study's
//! and the tests' sources per probe mode and record kind, the corpus, the microbenchmarks, and the
//! probe header itself.
//!
//! Why: hosts launch the embedded PTX/fatbins, the emulator interprets the PTX and the SASS tests
//! disassemble the fatbins, all of the same build. Main types: [`KernelBuild`], [`EntryInfo`],
//! [`CorpusKernel`].
//!
//! ```
//! let corpus = kernels::corpus();
//! assert!(corpus.iter().all(|k| k.ptx.contains(".entry")));
//! ```

/// One kernel entry of a build, with its ptxas resource usage for sm_75 and its registers on the
/// other SASS targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryInfo {
    /// The entry name as in the PTX (`extern "C"` names are unmangled).
    pub name: &'static str,
    /// Registers per thread (ptxas `-v`, sm_75).
    pub registers: u32,
    /// Registers per thread on the fatbin's other SASS targets ([`SASS_ARCHS`]), as (target,
    /// registers): what a GPU of that target gives the entry ([`EntryInfo::registers_for`]).
    pub registers_by_target: &'static [(u32, u32)],
    /// Static (`__shared__`) bytes per block; dynamic shared memory is the launcher's.
    pub static_shared_bytes: u32,
    /// Bytes of register spill stores plus loads (ptxas `-v`, sm_75); a probed entry's register
    /// budget can force them.
    pub spill_bytes: u32,
}

impl EntryInfo {
    /// Registers per thread as ptxas assembles the entry for `sm_{arch}`; sm_75's where `arch`
    /// is `None` or a target the build did not assemble.
    pub fn registers_for(&self, arch: Option<u32>) -> u32 {
        arch.and_then(|a| self.registers_by_target.iter().find(|(t, _)| *t == a))
            .map_or(self.registers, |&(_, r)| r)
    }
}

/// One source file compiled in one probe configuration.
#[derive(Debug, Clone, Copy)]
pub struct KernelBuild {
    /// The file stem, e.g. `"probe_test"` for `kernels/probe_test.cu`.
    pub source: &'static str,
    /// `WS_MODE` (0 off … 4 auto).
    pub mode: u32,
    /// Built with `-DWS_SAMPLED=1`: every probe has the bare path of an untimed access, so that a
    /// launch may time only some warps, or only some of each warp's accesses. The other builds
    /// time every access of every warp.
    pub sampled: bool,
    /// PTX for `.target sm_75`.
    pub ptx: &'static str,
    /// Fatbin: SASS for [`SASS_ARCHS`] and the PTX for JIT on newer GPUs.
    pub fatbin: &'static [u8],
    /// Entries in PTX order.
    pub entries: &'static [EntryInfo],
    /// The nvcc commands that made it (paths relative to the workspace root).
    pub command: &'static str,
}

impl KernelBuild {
    /// The entry named `name`, if this build has it.
    pub fn entry(&self, name: &str) -> Option<&'static EntryInfo> {
        self.entries.iter().find(|e| e.name == name)
    }
}

/// A corpus kernel file (`kernels/corpus/*.cu`), compiled -O3 to PTX without probes.
#[derive(Debug, Clone, Copy)]
pub struct CorpusKernel {
    /// The file stem, e.g. `"reduce_shared"`.
    pub name: &'static str,
    /// PTX for `.target sm_75`.
    pub ptx: &'static str,
    /// Entries in PTX order with their sm_75 resource usage.
    pub entries: &'static [EntryInfo],
    /// The nvcc command that made it.
    pub command: &'static str,
}

/// Architectures with SASS in every fatbin.
pub const SASS_ARCHS: &[u32] = &[75, 80, 86, 89, 90];
/// The virtual architecture of all PTX.
pub const PTX_ARCH: u32 = 75;

include!(concat!(env!("OUT_DIR"), "/builds.rs"));

/// Every embedded build, sorted by source, then mode, the sampled build after the other.
pub fn builds() -> &'static [KernelBuild] {
    BUILDS
}

/// The build of `source` (file stem) for `mode`.
pub fn find(source: &str, mode: u32) -> Option<&'static KernelBuild> {
    find_build(source, mode, false)
}

/// The build of `source` (file stem) for `mode`, sampled ([`KernelBuild::sampled`]) or not; a
/// sampled build exists for the probed modes of the top-level kernels.
pub fn find_build(source: &str, mode: u32, sampled: bool) -> Option<&'static KernelBuild> {
    BUILDS
        .iter()
        .find(|b| b.source == source && b.mode == mode && b.sampled == sampled)
}

/// The microbenchmarks (`kernels/micro/*.cu`: the pointer chase and independent loads), every
/// probe mode with a fatbin, sorted by source, then mode. Apart from [`builds`]: their timed
/// windows hold many loads on purpose.
pub fn micro() -> &'static [KernelBuild] {
    MICRO
}

/// The microbenchmark build of `source` (file stem) for `mode`.
pub fn find_micro(source: &str, mode: u32) -> Option<&'static KernelBuild> {
    MICRO.iter().find(|b| b.source == source && b.mode == mode)
}

/// The corpus kernels, sorted by name.
pub fn corpus() -> &'static [CorpusKernel] {
    CORPUS
}

/// The corpus file with stem `name`.
pub fn find_corpus(name: &str) -> Option<&'static CorpusKernel> {
    CORPUS.iter().find(|k| k.name == name)
}

/// The text of `warpscope.cuh`.
pub fn probe_header() -> &'static str {
    include_str!("../warpscope.cuh")
}

/// The `nvcc --version` release line of the compiler that built the embedded kernels.
pub fn nvcc_version() -> &'static str {
    NVCC_VERSION
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout;

    #[test]
    fn every_source_has_every_mode() {
        let sources: std::collections::BTreeSet<&str> = builds().iter().map(|b| b.source).collect();
        assert!(sources.contains("probe_test"));
        for s in sources {
            for m in layout::WS_OFF..=layout::WS_AUTO {
                let b = find(s, m).unwrap_or_else(|| panic!("{s} mode {m}"));
                assert!(b.command.contains(&format!("-DWS_MODE={m}")));
                assert!(!b.command.contains(crate::SAMPLED_FLAG));
                assert!(!b.fatbin.is_empty());
                // Every probed mode also in a sampled build; the bare build has no probes.
                let sampled = find_build(s, m, true);
                assert_eq!(sampled.is_some(), m != layout::WS_OFF, "{s} mode {m}");
                if let Some(b) = sampled {
                    assert!(b.command.contains(crate::SAMPLED_FLAG), "{}", b.command);
                }
            }
        }
    }

    #[test]
    fn probed_entries_stay_within_the_bare_register_budget() {
        // The budget is what keeps the bare kernel's occupancy: every probed entry of every
        // embedded build must meet it, and the PTX must carry the directive that enforces it.
        for b in builds().iter().filter(|b| b.mode != layout::WS_OFF) {
            let off = find(b.source, layout::WS_OFF).expect("off build");
            for e in b.entries {
                let bare = off.entry(e.name).expect("same entries").registers;
                let budget = crate::budget::register_budget(bare);
                assert!(
                    e.registers <= budget,
                    "{} mode {} {}: {} registers, budget {budget}",
                    b.source,
                    b.mode,
                    e.name,
                    e.registers
                );
                assert!(b.ptx.contains(&format!(".maxnreg {budget}")), "{}", e.name);
            }
        }
    }

    #[test]
    fn entries_have_resource_usage() {
        let b = find("probe_test", layout::WS_AUTO).expect("probe_test");
        assert!(b.entries.len() >= 5);
        for e in b.entries {
            assert!(b.ptx.contains(&format!(".entry {}(", e.name)), "{}", e.name);
            assert!(e.registers > 0 && e.registers <= 255, "{e:?}");
        }
        assert_eq!(b.entry("nope"), None);
    }

    #[test]
    fn corpus_covers_the_features_the_emulator_must_run() {
        assert!(corpus().len() >= 15, "{} corpus files", corpus().len());
        let all: String = corpus().iter().map(|k| k.ptx).collect();
        // One instruction (prefix) per feature the corpus is there to cover.
        for needle in [
            "bar.sync",
            "shfl.sync.down",
            "vote.sync.ballot",
            "popc.b32",
            "atom.global.add",
            "atom.shared.add",
            "tex.2d",
            "tex.1d",
            "ld.global.nc",
            "fma.rn.f16",
            "add.f16x2",
            "brev.b32",
            "clz.b32",
            "bfe.u32",
            "bfi.b32",
            "prmt.b32",
            "mul.hi.u32",
            "mad.wide.u32",
            "ex2.approx",
            "sin.approx",
            "rsqrt.approx",
            "lg2.approx",
            "ld.shared",
            "st.shared",
        ] {
            assert!(all.contains(needle), "no corpus kernel uses {needle}");
        }
        for k in corpus() {
            assert!(!k.entries.is_empty(), "{}", k.name);
            assert!(k.command.contains(&format!("kernels/corpus/{}.cu", k.name)));
            assert!(find_corpus(k.name).is_some());
        }
    }

    #[test]
    fn corpus_readme_documents_every_entry() {
        let readme = include_str!("../corpus/README.md");
        for k in corpus() {
            for e in k.entries {
                assert!(
                    readme.contains(&format!("`{}`", e.name)),
                    "{} undocumented",
                    e.name
                );
            }
        }
        let probe = find("probe_test", layout::WS_OFF).expect("probe_test");
        for e in probe.entries {
            assert!(
                readme.contains(&format!("`{}`", e.name)),
                "{} undocumented",
                e.name
            );
        }
    }

    #[test]
    fn static_shared_bytes_are_reported() {
        let k = find_corpus("histogram_shared").expect("histogram_shared");
        assert_eq!(k.entries[0].static_shared_bytes, 256 * 4);
    }
}
