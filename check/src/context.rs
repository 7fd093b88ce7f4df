//! What the steps get from the plan: the context of one check ([`Ctx`]) and the progress they
//! report ([`Progress`]).

use crate::error::CheckError;
use device::{CudaDevice, Device, EmuDevice};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What the plan reports while it runs; the caller prints it.
#[derive(Debug)]
pub enum Progress<'a> {
    /// `--backend gpu` without a usable GPU: every GPU step will fail.
    NoGpu { error: &'a device::DeviceError },
    /// Step `number` of `of` starts, with `left` of the budget.
    Step {
        number: usize,
        of: usize,
        title: &'a str,
        left: Duration,
    },
    /// The study finished a shard of its sweep.
    StudyShard {
        shard: study::Shard,
        runs: usize,
        left: Duration,
    },
    /// The budget is spent `after` the start with a step still running: that step and those
    /// not started are marked cut off, and both files were written (or `written` says why not).
    /// The caller is expected to end the process here (the binary exits with status 3), since
    /// the running step cannot be stopped; if it returns, the files stay as they are now and
    /// [`run`] returns once that step does.
    Deadline {
        after: Duration,
        report: &'a Path,
        written: Result<(), &'a CheckError>,
    },
}

/// What every step gets: the backend, the preset, the output folder and the clock.
pub(crate) struct Ctx<'a> {
    pub gpu: bool,
    pub preset: emulator::GpuConfig,
    pub out: PathBuf,
    pub program: &'a Path,
    pub progress: &'a (dyn Fn(Progress<'_>) + Sync),
    pub(crate) deadline: Instant,
}

impl Ctx<'_> {
    /// A fresh device of the plan's backend (the emulator: fresh caches too).
    pub fn open(&self) -> Result<Box<dyn Device>, CheckError> {
        if self.gpu {
            Ok(Box::new(CudaDevice::open(0).map_err(CheckError::OpenGpu)?))
        } else {
            Ok(Box::new(self.emulator()))
        }
    }

    /// The emulator with the plan's preset, whatever the backend.
    pub fn emulator(&self) -> EmuDevice {
        EmuDevice::new(self.preset.clone())
    }

    /// Time left before the plan's deadline.
    pub fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// A folder for one step's files, created.
    pub fn step_dir(&self, name: &str) -> Result<PathBuf, CheckError> {
        let d = self.out.join(name);
        std::fs::create_dir_all(&d).map_err(|source| CheckError::CreateDir {
            path: d.clone(),
            source,
        })?;
        Ok(d)
    }
}
