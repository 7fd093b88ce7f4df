//! A run's configuration, as `warpscope run` writes it for the library it injects into the
//! program: one typed file, read by the library from the path in [`CONFIG_ENV`].

use crate::ProfileError;
use crate::select::{NameFilter, Selection};
use instrument::rewrite::SiteSet;
use instrument::{AccessPeriod, WarpSelection};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use trace::ProbeMode;

/// The environment variable that names the run's configuration file in the program's process.
pub const CONFIG_ENV: &str = "WARPSCOPE_RUN_CONFIG";

/// `--sites`'s default, as the rewriter's own default set spells it (a test holds them together).
pub const DEFAULT_SITES: &str = "global,texture,readonly,constant";

/// What `warpscope run` asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// The result folder: one folder per profiled launch, the launch log, the index.
    pub out: PathBuf,
    pub mode: ProbeMode,
    /// Warps that keep every access (`all`, `none`, `every:N`, a list).
    pub trace_warps: String,
    /// Warps that time their accesses (same grammar); every traced warp is timed too.
    pub time_warps: String,
    /// Which of its accesses a timed warp times (`all`, `every:N`).
    pub time_accesses: String,
    /// Loads to time (`global,texture,readonly,constant`, …).
    pub sites: String,
    /// Records each traced warp can keep.
    pub slots_per_warp: u32,
    /// `--kernel-name`: an exact name, or `regex:EXPR`.
    pub kernel_name: Option<String>,
    /// Launches of each kernel to skip, then to profile (`None`: every later one).
    pub launch_skip: u64,
    pub launch_count: Option<u64>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            out: PathBuf::from("warpscope-run"),
            mode: ProbeMode::Auto,
            trace_warps: "none".into(),
            time_warps: "all".into(),
            time_accesses: "all".into(),
            sites: DEFAULT_SITES.into(),
            slots_per_warp: 1024,
            kernel_name: None,
            launch_skip: 0,
            launch_count: Some(1),
        }
    }
}

/// The configuration with every field parsed.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub out: PathBuf,
    pub mode: ProbeMode,
    pub trace_warps: WarpSelection,
    pub time_warps: WarpSelection,
    pub time_accesses: AccessPeriod,
    pub sites: SiteSet,
    pub slots_per_warp: u32,
    pub selection: Selection,
}

impl RunConfig {
    /// Checks every field; the errors name the option.
    pub fn resolve(&self) -> Result<Resolved, ProfileError> {
        if self.mode == ProbeMode::Off {
            return Err(ProfileError::Config(
                "--mode off profiles nothing; choose naive, fence, dummy or auto".into(),
            ));
        }
        let bad = |option: &str, e: String| ProfileError::Config(format!("{option}: {e}"));
        Ok(Resolved {
            out: self.out.clone(),
            mode: self.mode,
            trace_warps: self
                .trace_warps
                .parse()
                .map_err(|e| bad("--trace-warps", e))?,
            time_warps: self
                .time_warps
                .parse()
                .map_err(|e| bad("--time-warps", e))?,
            time_accesses: self
                .time_accesses
                .parse()
                .map_err(|e| bad("--time-accesses", e))?,
            sites: self.sites.parse().map_err(|e| bad("--sites", e))?,
            slots_per_warp: self.slots_per_warp,
            selection: Selection::new(
                self.kernel_name
                    .as_deref()
                    .map(NameFilter::parse)
                    .transpose()?,
                self.launch_skip,
                self.launch_count,
            ),
        })
    }

    pub fn read(path: &Path) -> Result<RunConfig, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|e| ProfileError::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        serde_json::from_str(&text)
            .map_err(|e| ProfileError::Config(format!("{}: {e}", path.display())))
    }

    pub fn write(&self, path: &Path) -> Result<(), ProfileError> {
        Ok(trace::write_json_atomic(path, self)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_resolves_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("run-config.json");
        let c = RunConfig::default();
        c.write(&p).unwrap();
        assert_eq!(RunConfig::read(&p).unwrap(), c);
        let r = c.resolve().unwrap();
        assert_eq!(r.mode, ProbeMode::Auto);
        assert_eq!(r.trace_warps, WarpSelection::none());
        assert_eq!(r.sites, SiteSet::default());
    }

    #[test]
    fn bad_options_are_named() {
        for (c, want) in [
            (
                RunConfig {
                    mode: ProbeMode::Off,
                    ..RunConfig::default()
                },
                "--mode off",
            ),
            (
                RunConfig {
                    trace_warps: "every:x".into(),
                    ..RunConfig::default()
                },
                "--trace-warps",
            ),
            (
                RunConfig {
                    time_warps: "1-".into(),
                    ..RunConfig::default()
                },
                "--time-warps",
            ),
            (
                RunConfig {
                    sites: "heap".into(),
                    ..RunConfig::default()
                },
                "--sites",
            ),
            (
                RunConfig {
                    kernel_name: Some("regex:[".into()),
                    ..RunConfig::default()
                },
                "regex:[",
            ),
        ] {
            let e = c.resolve().unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }
}
