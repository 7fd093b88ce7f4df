//! The interceptor: what the injected library does with what it sees of the program — the images
//! it loads, the functions it gets, the launches it makes — over any [`Driver`].
//!
//! A selected launch is replaced by the same kernel with the probes in, but only after every step
//! that can fail has passed: the PTX is found and parses, the rewriter instrumented the kernel,
//! the driver compiled it, the parameters were read, the log was allocated. A failure before the
//! launch launches the original kernel and records why. Nothing is launched on a stream that is
//! being captured into a graph. The probed launch runs on the program's own stream and is waited
//! for, then its log is decoded into a result folder like any other run's.
//!
//! What profiling cost is measured on a later launch of the same kernel with the same grid and
//! block that is not profiled: it is launched as it was, timed, and its time is put beside the
//! profiled one (`overhead` in the profiled run's run.json). A kernel launched once has no such
//! launch; its overhead stays unknown, and the index says so.

use crate::driver::{
    DEFAULT_DYNAMIC_SHARED_LIMIT, DeviceInfo, Driver, Handle, LaunchFailure, LaunchShape,
    MAX_DYNAMIC_SHARED_ATTRIBUTE,
};
use crate::params::ParamLayout;
use crate::select::KernelName;
use crate::{ProfileError, Resolved};
use instrument::rewrite::{RewriteOptions, instrument_ptx};
use instrument::{Probe, ProbePlan};
use std::collections::HashMap;
use trace::{
    AppFacts, BareRun, Dim3, LaunchRecord, Outcome, ProbeFacts, RunMetrics, SiteInfo, TraceWriter,
};

/// A module's or library's code as the program loaded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Image {
    /// PTX text (`cuModuleLoadData` of PTX).
    Ptx(String),
    /// A fatbin (nvcc's default embedding), whose PTX entries are searched for the kernel.
    Fatbin(Vec<u8>),
    /// A cubin or anything else without PTX.
    NoPtx(String),
}

/// Reads a launch's parameters, one byte string each, given their layout (the hook knows where
/// the launch keeps them).
pub type ReadParams<'a> = dyn FnMut(&ParamLayout) -> Result<Vec<Vec<u8>>, ProfileError> + 'a;

/// A profiled kernel launch that waits for a bare launch to be timed against: kernel, grid,
/// block.
type TimingKey = (String, [u32; 3], [u32; 3]);

/// What the library's hook does with a launch after asking the interceptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Launch the program's kernel as it asked; with `time`, record how long it took and
    /// report it with [`Interceptor::timed`].
    Original { time: bool },
    /// The probed kernel ran in its place: the launch is done.
    Replaced,
}

/// A kernel made ready for probed launches.
#[derive(Debug, Clone)]
struct Prepared {
    function: Handle,
    layout: ParamLayout,
    sites: Vec<SiteInfo>,
    ptx_target: String,
    line_table: bool,
}

/// A function the program got: its module or library, and its name.
#[derive(Debug, Clone)]
struct Known {
    owner: Handle,
    name: KernelName,
}

/// The interceptor's state: everything it has seen, and what it has made.
pub struct Interceptor {
    cfg: Resolved,
    program: String,
    images: HashMap<Handle, Image>,
    functions: HashMap<Handle, Known>,
    prepared: HashMap<(Handle, String), Result<Prepared, String>>,
    /// Function attributes the program set, by kernel (owner, mangled name), in order.
    attributes: HashMap<(Handle, String), Vec<(i32, i32)>>,
    device: Option<DeviceInfo>,
    /// Launches seen, all kernels; launches per kernel.
    seq: u64,
    per_kernel: HashMap<String, u64>,
    profiled: u64,
    /// Profiled runs waiting for a bare launch of the same kernel, grid and block to time.
    awaiting_timing: HashMap<TimingKey, (String, f64)>,
    /// Records not yet taken by [`Interceptor::take_records`].
    records: Vec<LaunchRecord>,
}

impl Interceptor {
    pub fn new(cfg: Resolved, program: String) -> Interceptor {
        Interceptor {
            cfg,
            program,
            images: HashMap::new(),
            functions: HashMap::new(),
            prepared: HashMap::new(),
            attributes: HashMap::new(),
            device: None,
            seq: 0,
            per_kernel: HashMap::new(),
            profiled: 0,
            awaiting_timing: HashMap::new(),
            records: Vec::new(),
        }
    }

    /// A module or library was loaded from `image`.
    pub fn loaded(&mut self, owner: Handle, image: Image) {
        self.images.insert(owner, image);
        self.prepared.retain(|(o, _), _| *o != owner);
    }

    /// The program got `function` (a `CUfunction` or a `CUkernel`) named `name` from `owner`.
    pub fn function(&mut self, function: Handle, owner: Handle, name: &str) {
        self.functions.insert(
            function,
            Known {
                owner,
                name: KernelName::new(name),
            },
        );
    }

    /// `function` is `kernel`'s function (`cuKernelGetFunction`): the same kernel by another
    /// handle.
    pub fn alias(&mut self, function: Handle, kernel: Handle) {
        if let Some(k) = self.functions.get(&kernel).cloned() {
            self.functions.insert(function, k);
        }
    }

    /// The program set an attribute of `function` (or of its kernel): the probed function gets
    /// it too (a carve-out, dynamic shared memory beyond 48 KiB, …).
    pub fn attribute(&mut self, function: Handle, attribute: i32, value: i32) {
        if let Some(k) = self.functions.get(&function) {
            let key = (k.owner, k.name.mangled.clone());
            let list = self.attributes.entry(key).or_default();
            list.retain(|(a, _)| *a != attribute);
            list.push((attribute, value));
        }
    }

    /// A launch the hook cannot hand over (its launch attributes ask for what a plain launch
    /// does not give): counted, and recorded when it was selected.
    pub fn refused(&mut self, function: Handle, shape: &LaunchShape, reason: &str) {
        let seq = self.seq;
        self.seq += 1;
        let Some(known) = self.functions.get(&function).cloned() else {
            return;
        };
        *self
            .per_kernel
            .entry(known.name.mangled.clone())
            .or_insert(0) += 1;
        if self.cfg.selection.take(&known.name) {
            self.record(
                seq,
                Some(&known.name),
                shape,
                Outcome::Unprofiled {
                    reason: reason.into(),
                },
            );
        }
    }

    /// The run's result folder.
    pub fn out(&self) -> &std::path::Path {
        &self.cfg.out
    }

    /// Launches per kernel so far (mangled name → count), for the index.
    pub fn launch_counts(&self) -> &HashMap<String, u64> {
        &self.per_kernel
    }

    /// The launch records made since the last call, in launch order.
    pub fn take_records(&mut self) -> Vec<LaunchRecord> {
        std::mem::take(&mut self.records)
    }

    /// Decides a launch of `function` with `shape`, and makes the probed launch when it is
    /// selected and every check passes. `read_params` reads the launch's parameters given their
    /// layout.
    pub fn launch(
        &mut self,
        drv: &mut dyn Driver,
        function: Handle,
        shape: &LaunchShape,
        read_params: &mut ReadParams<'_>,
    ) -> Action {
        let seq = self.seq;
        self.seq += 1;
        let Some(known) = self.functions.get(&function).cloned() else {
            self.record(
                seq,
                None,
                shape,
                Outcome::Unprofiled {
                    reason: "a function warpscope did not see the program get".into(),
                },
            );
            return Action::Original { time: false };
        };
        let n = self
            .per_kernel
            .entry(known.name.mangled.clone())
            .or_insert(0);
        let index = *n;
        *n += 1;
        if !self.cfg.selection.take(&known.name) {
            let key = (known.name.mangled.clone(), shape.grid, shape.block);
            return Action::Original {
                time: self.awaiting_timing.contains_key(&key),
            };
        }
        match self.probed(drv, &known, function, shape, index, read_params) {
            Ok((run, ptx_target, kernel_ms)) => {
                self.record(
                    seq,
                    Some(&known.name),
                    shape,
                    Outcome::Profiled {
                        run,
                        ptx_target,
                        kernel_ms,
                    },
                );
                Action::Replaced
            }
            Err(Stop::Before(reason)) => {
                self.record(
                    seq,
                    Some(&known.name),
                    shape,
                    Outcome::Unprofiled { reason },
                );
                Action::Original { time: false }
            }
            Err(Stop::After(reason)) => {
                self.record(
                    seq,
                    Some(&known.name),
                    shape,
                    Outcome::Unprofiled { reason },
                );
                Action::Replaced
            }
        }
    }

    /// The time of an original launch made for [`Action::Original`] `{ time: true }`: put beside
    /// the profiled run it was waited for.
    pub fn timed(&mut self, function: Handle, shape: &LaunchShape, kernel_ms: f64) {
        let Some(known) = self.functions.get(&function).cloned() else {
            return;
        };
        let key = (known.name.mangled.clone(), shape.grid, shape.block);
        let Some((run, probed_ms)) = self.awaiting_timing.remove(&key) else {
            return;
        };
        let path = self.cfg.out.join(&run).join(trace::RUN_FILE_NAME);
        let written = RunMetrics::read(&path).and_then(|mut m| {
            m.overhead = trace::overhead_ratio(probed_ms, kernel_ms);
            m.bare = Some(BareRun {
                kernel_ms: Some(kernel_ms),
                ..BareRun::default()
            });
            m.write(&path)
        });
        let seq = self.seq.saturating_sub(1);
        let outcome = match written {
            Ok(()) => Outcome::Timed {
                kernel_ms,
                of_run: run,
            },
            Err(e) => Outcome::Unprofiled {
                reason: format!("timed, but {run}'s run.json: {}", trace::error_chain(&e)),
            },
        };
        self.record(seq, Some(&known.name), shape, outcome);
    }

    fn record(
        &mut self,
        seq: u64,
        name: Option<&KernelName>,
        shape: &LaunchShape,
        outcome: Outcome,
    ) {
        self.records.push(LaunchRecord {
            seq,
            kernel: name.map_or_else(|| "?".into(), |n| n.mangled.clone()),
            demangled: name.map_or_else(|| "?".into(), |n| n.demangled.clone()),
            grid: shape.grid,
            block: shape.block,
            shared_bytes: shape.shared_bytes,
            outcome,
        });
    }

    /// The probed launch in place of the program's: its folder, PTX target and time.
    fn probed(
        &mut self,
        drv: &mut dyn Driver,
        known: &Known,
        function: Handle,
        shape: &LaunchShape,
        index: u64,
        read_params: &mut ReadParams<'_>,
    ) -> Result<(String, String, f64), Stop> {
        if drv.capturing(shape.stream) {
            return Err(Stop::Before(
                "launched into a stream capture (a CUDA graph): not profiled".into(),
            ));
        }
        let device = match &self.device {
            Some(d) => d.clone(),
            None => {
                let d = drv.device().map_err(Stop::Before)?;
                self.device = Some(d.clone());
                d
            }
        };
        let key = (known.owner, known.name.mangled.clone());
        if !self.prepared.contains_key(&key) {
            let p = self.prepare(drv, known, function, device.arch);
            self.prepared.insert(key.clone(), p);
        }
        let prepared = match &self.prepared[&key] {
            Ok(p) => p.clone(),
            Err(why) => return Err(Stop::Before(why.clone())),
        };
        let params = read_params(&prepared.layout).map_err(|e| Stop::Before(e.to_string()))?;
        prepared
            .layout
            .check(&params)
            .map_err(|e| Stop::Before(e.to_string()))?;
        let probe = Probe {
            mode: self.cfg.mode,
            trace_warps: self.cfg.trace_warps.clone(),
            time_warps: self.cfg.time_warps.clone(),
            access_period: self.cfg.time_accesses,
            slots_per_warp: self.cfg.slots_per_warp,
            sites: prepared.sites.clone(),
        };
        let cfg = device::LaunchConfig {
            grid: dim3(shape.grid),
            block: dim3(shape.block),
            dynamic_shared_bytes: shape.shared_bytes,
            regs_per_thread: 0,
        };
        let plan = ProbePlan::new(
            &known.name.mangled,
            &cfg,
            &probe,
            (device.clock_mhz, "gpu", &device.name),
        )
        .map_err(|e| Stop::Before(e.to_string()))?;
        let mut log = plan.initial_log();
        let buf = drv.alloc(plan.log_bytes()).map_err(|e| {
            Stop::Before(format!("the probe log's {} bytes: {e}", plan.log_bytes()))
        })?;
        let attributes = self.attributes.get(&key).cloned().unwrap_or_default();
        let launched = drv
            .upload(buf, &log)
            .and_then(|()| set_attributes(drv, prepared.function, &attributes, &plan))
            .map_err(LaunchFailure::NotLaunched)
            .and_then(|()| {
                let mut with_log = params;
                with_log.push(plan.log_arg(buf));
                let probed_shape = LaunchShape {
                    shared_bytes: plan.dynamic_shared_bytes(),
                    ..*shape
                };
                drv.launch_timed(prepared.function, &probed_shape, &with_log)
            });
        let kernel_ms = match launched {
            Ok(ms) => ms,
            Err(LaunchFailure::NotLaunched(e)) => {
                drv.free(buf);
                return Err(Stop::Before(format!("the probed launch was refused: {e}")));
            }
            Err(LaunchFailure::Failed(e)) => {
                return Err(Stop::After(format!("the probed kernel failed: {e}")));
            }
        };
        let downloaded = drv.download(buf, &mut log);
        drv.free(buf);
        downloaded.map_err(|e| Stop::After(format!("the probe log could not be read: {e}")))?;
        let trace = plan
            .decode(&log, probe.slots_per_warp)
            .map_err(|e| Stop::After(format!("the probe log: {e}")))?;
        self.profiled += 1;
        let run = format!("{:03}-{}", self.profiled - 1, folder_name(&known.name.base));
        let dir = self.cfg.out.join(&run);
        let mut m = RunMetrics::new(
            "gpu",
            &known.name.mangled,
            cfg.grid,
            cfg.block,
            self.cfg.mode,
        );
        m.device = device.name.clone();
        m.clock_mhz = device.clock_mhz;
        m.kernel_ms = Some(kernel_ms);
        m.cycles = Some((kernel_ms * device.clock_mhz * 1e3).round() as u64);
        m.records = trace.record_count();
        m.dropped_records = trace.dropped_count();
        m.probes = Some(ProbeFacts {
            kind: trace.launch.kind,
            trace_warps: probe.trace_warps.to_string(),
            time_warps: probe.time_warps.to_string(),
            time_accesses: probe.access_period.to_string(),
            timed_warps: Some(plan.shape().timed_warps()),
            timed_accesses: Some(trace.timed_access_count()),
            slots_per_warp: probe.slots_per_warp,
            shared_bytes: plan.probe_shared_bytes(),
            occupancy_note: "not measured in a program's own process".into(),
        });
        m.app = Some(AppFacts {
            program: self.program.clone(),
            demangled: known.name.demangled.clone(),
            launch: index,
            ptx_target: prepared.ptx_target.clone(),
            line_table: prepared.line_table,
        });
        std::fs::create_dir_all(&dir)
            .map_err(|e| Stop::After(format!("cannot create {}: {e}", dir.display())))
            .and_then(|()| {
                TraceWriter::write_all(&dir.join(trace::TRACE_FILE_NAME), &trace)
                    .and_then(|()| m.write(&dir.join(trace::RUN_FILE_NAME)))
                    .map_err(|e| Stop::After(trace::error_chain(&e)))
            })?;
        self.awaiting_timing.insert(
            (known.name.mangled.clone(), shape.grid, shape.block),
            (run.clone(), kernel_ms),
        );
        Ok((run, prepared.ptx_target, kernel_ms))
    }

    /// Finds the kernel's PTX, instruments it, and has the driver compile it.
    fn prepare(
        &self,
        drv: &mut dyn Driver,
        known: &Known,
        function: Handle,
        arch: u32,
    ) -> Result<Prepared, String> {
        let name = &known.name.mangled;
        let ptx = match self.images.get(&known.owner) {
            None => return Err("its module was loaded before warpscope saw it".into()),
            Some(Image::Ptx(text)) => text.clone(),
            Some(Image::NoPtx(why)) => return Err(why.clone()),
            Some(Image::Fatbin(bytes)) => crate::image::ptx_of_kernel(bytes, name, arch)?,
        };
        let ptx_target = ptx_target(&ptx);
        let layout = ParamLayout::of_entry(&ptx, name).map_err(|e| e.to_string())?;
        let opts = RewriteOptions {
            mode: self.cfg.mode,
            sites: self.cfg.sites.clone(),
            kernel: Some(name.clone()),
            sampled: instrument::needs_sampled_build(&self.cfg.time_warps, self.cfg.time_accesses),
        };
        let mut inst = instrument_ptx(&ptx, &opts).map_err(|e| format!("the rewriter: {e}"))?;
        // The probes keep the program's occupancy: the probed entry gets the register budget of
        // the function the driver built for the program.
        if let Ok(registers) = drv.registers(function) {
            inst = inst.with_register_budget(&[kernels::budget::EntryUsage {
                name: name.clone(),
                registers,
                static_shared_bytes: 0,
                spill_bytes: 0,
            }]);
        }
        let line_table = inst.line_table;
        let sites = inst
            .kernel(name)
            .map(|k| k.site_infos())
            .unwrap_or_default();
        if sites.is_empty() {
            return Err("no load of the kinds asked for (--sites) to time".into());
        }
        let module = drv
            .load_ptx(&inst.ptx)
            .map_err(|e| format!("the driver did not compile the instrumented PTX: {e}"))?;
        let function = drv.function(module, name)?;
        Ok(Prepared {
            function,
            layout,
            sites,
            ptx_target,
            line_table,
        })
    }
}

/// The program's attributes of the kernel on the probed function, and the dynamic shared memory
/// the probes' state needs beside the kernel's.
fn set_attributes(
    drv: &mut dyn Driver,
    function: Handle,
    attributes: &[(i32, i32)],
    plan: &ProbePlan,
) -> Result<(), String> {
    let mut max_shared = DEFAULT_DYNAMIC_SHARED_LIMIT;
    for &(attribute, value) in attributes {
        drv.set_attribute(function, attribute, value)?;
        if attribute == MAX_DYNAMIC_SHARED_ATTRIBUTE {
            max_shared = max_shared.max(u32::try_from(value).unwrap_or(0));
        }
    }
    let need = plan.dynamic_shared_bytes();
    if need > max_shared {
        let need = i32::try_from(need).map_err(|_| format!("{need} bytes of shared memory"))?;
        drv.set_attribute(function, MAX_DYNAMIC_SHARED_ATTRIBUTE, need)?;
    }
    Ok(())
}

/// Where a probed launch stopped: before anything was launched (the original runs), or after the
/// probed kernel was launched (it ran in the original's place).
enum Stop {
    Before(String),
    After(String),
}

fn dim3(d: [u32; 3]) -> Dim3 {
    Dim3::new(d[0], d[1], d[2])
}

/// The `.target` of a PTX text (`compute_75`), `unknown` without one.
fn ptx_target(ptx: &str) -> String {
    ptx.lines()
        .find_map(|l| l.trim().strip_prefix(".target"))
        .and_then(|t| t.split([',', ' ', '\t']).find(|w| !w.is_empty()))
        .map_or_else(|| "unknown".into(), |sm| sm.replace("sm_", "compute_"))
}

/// A kernel's base name as a folder name: what a file system takes, kept short.
fn folder_name(base: &str) -> String {
    let s: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    if s.is_empty() { "kernel".into() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_and_folder_names_are_read_and_made_safe() {
        assert_eq!(ptx_target(".version 9.0\n.target sm_75\n"), "compute_75");
        assert_eq!(ptx_target(".target sm_90a, debug\n"), "compute_90a");
        assert_eq!(ptx_target("no target"), "unknown");
        assert_eq!(folder_name("reduce_v1<256>"), "reduce_v1_256_");
        assert_eq!(folder_name(""), "kernel");
    }
}
