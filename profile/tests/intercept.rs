//! The interceptor on the emulator: real kernels, loaded as a program would load them, launched
//! through an emulator-backed [`Driver`], give the program's own outputs, and the selected
//! launches leave result folders with their records.

use device::{Arg, DevBuf, Device, EmuDevice, LaunchConfig, ModuleId};
use profile::{
    Action, DeviceInfo, Driver, Handle, Image, Interceptor, LaunchFailure, LaunchShape,
    ParamLayout, ProfileError, RunConfig,
};
use std::collections::HashMap;
use trace::{Dim3, Outcome, ProbeMode, RunMetrics, TraceReader};

/// The emulator as the driver of a program's context.
struct EmuDriver {
    dev: EmuDevice,
    modules: Vec<ModuleId>,
    functions: Vec<(ModuleId, String)>,
    /// Streams that are "being captured".
    capturing: Vec<Handle>,
    refuse_ptx: bool,
    /// Attributes set, in order: (function, attribute, value).
    attributes: Vec<(Handle, i32, i32)>,
}

impl EmuDriver {
    fn new() -> EmuDriver {
        EmuDriver {
            dev: EmuDevice::new(emulator::GpuConfig::preset("gtx480").unwrap()),
            modules: Vec::new(),
            functions: Vec::new(),
            capturing: Vec::new(),
            refuse_ptx: false,
            attributes: Vec::new(),
        }
    }

    /// What the program itself does: load an image, get a function.
    fn program_load(&mut self, ptx: &str) -> Handle {
        let m = self.dev.load(ptx, None).unwrap();
        self.modules.push(m);
        self.modules.len() as Handle
    }

    fn program_function(&mut self, module: Handle, name: &str) -> Handle {
        self.function(module, name).unwrap()
    }

    fn buf(&mut self, data: &[u8]) -> DevBuf {
        let b = self.dev.alloc(data.len() as u64).unwrap();
        self.dev.upload(&b, data).unwrap();
        b
    }

    fn read(&mut self, b: &DevBuf) -> Vec<u8> {
        let mut out = vec![0u8; b.bytes as usize];
        self.dev.download(b, &mut out).unwrap();
        out
    }
}

impl Driver for EmuDriver {
    fn device(&mut self) -> Result<DeviceInfo, String> {
        Ok(DeviceInfo {
            name: self.dev.name(),
            clock_mhz: self.dev.clock_mhz(),
            arch: 75,
        })
    }
    fn registers(&mut self, _function: Handle) -> Result<u32, String> {
        Err("the emulator keeps no register counts".into())
    }
    fn load_ptx(&mut self, ptx: &str) -> Result<Handle, String> {
        if self.refuse_ptx {
            return Err("ptxas fatal: a JIT refusal for the test".into());
        }
        let m = self.dev.load(ptx, None).map_err(|e| e.to_string())?;
        self.modules.push(m);
        Ok(self.modules.len() as Handle)
    }
    fn function(&mut self, module: Handle, name: &str) -> Result<Handle, String> {
        let m = self.modules[module as usize - 1];
        self.functions.push((m, name.to_string()));
        Ok(1000 + self.functions.len() as Handle)
    }
    fn set_attribute(
        &mut self,
        function: Handle,
        attribute: i32,
        value: i32,
    ) -> Result<(), String> {
        self.attributes.push((function, attribute, value));
        Ok(())
    }
    fn alloc(&mut self, bytes: u64) -> Result<u64, String> {
        self.dev
            .alloc(bytes)
            .map(|b| b.addr)
            .map_err(|e| e.to_string())
    }
    fn free(&mut self, ptr: u64) {
        let _ = self.dev.free(&DevBuf {
            addr: ptr,
            bytes: 0,
        });
    }
    fn upload(&mut self, ptr: u64, data: &[u8]) -> Result<(), String> {
        let b = DevBuf {
            addr: ptr,
            bytes: data.len() as u64,
        };
        self.dev.upload(&b, data).map_err(|e| e.to_string())
    }
    fn download(&mut self, ptr: u64, out: &mut [u8]) -> Result<(), String> {
        let b = DevBuf {
            addr: ptr,
            bytes: out.len() as u64,
        };
        self.dev.download(&b, out).map_err(|e| e.to_string())
    }
    fn launch_timed(
        &mut self,
        function: Handle,
        shape: &LaunchShape,
        params: &[Vec<u8>],
    ) -> Result<f64, LaunchFailure> {
        let (m, name) = self.functions[function as usize - 1001].clone();
        let cfg = LaunchConfig {
            grid: Dim3::new(shape.grid[0], shape.grid[1], shape.grid[2]),
            block: Dim3::new(shape.block[0], shape.block[1], shape.block[2]),
            dynamic_shared_bytes: shape.shared_bytes,
            regs_per_thread: 32,
        };
        let args: Vec<Arg> = params.iter().map(|p| Arg::Bytes(p.clone())).collect();
        self.dev
            .launch(m, &name, &cfg, &args)
            .map(|o| o.kernel_ms)
            .map_err(|e| LaunchFailure::NotLaunched(e.to_string()))
    }
    fn capturing(&mut self, stream: Handle) -> bool {
        self.capturing.contains(&stream)
    }
}

const N: u32 = 1000;
const M: u32 = 97;

/// `gather_ldg`'s inputs and the buffers of one launch.
struct Gather {
    idx: DevBuf,
    table: DevBuf,
    out: DevBuf,
}

impl Gather {
    fn new(drv: &mut EmuDriver) -> Gather {
        let idx: Vec<u8> = (0..N).flat_map(|i| (i * 7919).to_le_bytes()).collect();
        let table: Vec<u8> = (0..M).flat_map(|i| (i * i + 3).to_le_bytes()).collect();
        Gather {
            idx: drv.buf(&idx),
            table: drv.buf(&table),
            out: drv.buf(&vec![0u8; N as usize * 4]),
        }
    }

    fn params(&self) -> Vec<Vec<u8>> {
        vec![
            self.idx.addr.to_le_bytes().to_vec(),
            self.table.addr.to_le_bytes().to_vec(),
            self.out.addr.to_le_bytes().to_vec(),
            (M as i32).to_le_bytes().to_vec(),
            (N as i32).to_le_bytes().to_vec(),
        ]
    }

    fn want() -> Vec<u8> {
        (0..N)
            .flat_map(|i| {
                let j = (i * 7919) % M;
                (j * j + 3).to_le_bytes()
            })
            .collect()
    }
}

const SHAPE: LaunchShape = LaunchShape {
    grid: [8, 1, 1],
    block: [128, 1, 1],
    shared_bytes: 0,
    stream: 7,
};

fn config(out: &std::path::Path) -> profile::Resolved {
    RunConfig {
        out: out.to_path_buf(),
        trace_warps: "all".into(),
        ..RunConfig::default()
    }
    .resolve()
    .unwrap()
}

/// A program's launch through the interceptor, as the injected hook makes it.
fn launch(icpt: &mut Interceptor, drv: &mut EmuDriver, function: Handle, g: &Gather) -> Action {
    let params = g.params();
    let action = icpt.launch(drv, function, &SHAPE, &mut |layout: &ParamLayout| {
        layout.check(&params)?;
        Ok::<_, ProfileError>(params.clone())
    });
    if let Action::Original { time } = action {
        let ms = drv.launch_timed(function, &SHAPE, &params).unwrap();
        if time {
            icpt.timed(function, &SHAPE, ms);
        }
    }
    action
}

/// What a program that gathers with `gather_ldg` has done before its first launch: loaded the
/// corpus PTX (its one module, handle 1) and got the function, seen by the interceptor; the
/// driver, the interceptor and the function.
fn gather_program(out: &std::path::Path) -> (EmuDriver, Interceptor, Handle) {
    let ptx = kernels::find_corpus("ldg").unwrap().ptx;
    let mut drv = EmuDriver::new();
    let mut icpt = Interceptor::new(config(out), "./gather".into());
    let module = drv.program_load(ptx);
    icpt.loaded(module, Image::Ptx(ptx.to_string()));
    let f = drv.program_function(module, "gather_ldg");
    icpt.function(f, module, "gather_ldg");
    (drv, icpt, f)
}

#[test]
fn a_selected_launch_is_probed_in_place_and_its_outputs_are_the_programs() {
    let out = tempfile::tempdir().unwrap();
    let (mut drv, mut icpt, f) = gather_program(out.path());
    // The program's own setting (a shared-memory carve-out) goes to the probed function too.
    icpt.attribute(f, 9, 50);

    let g = Gather::new(&mut drv);
    assert_eq!(launch(&mut icpt, &mut drv, f, &g), Action::Replaced);
    assert!(
        drv.attributes
            .iter()
            .any(|&(g, a, v)| g != f && (a, v) == (9, 50)),
        "{:?}",
        drv.attributes
    );
    assert_eq!(
        drv.read(&g.out),
        Gather::want(),
        "the probed kernel's outputs"
    );
    // The second launch is not selected (the first of each kernel is): launched as it was, and
    // timed, which says what probing cost.
    let g2 = Gather::new(&mut drv);
    assert_eq!(
        launch(&mut icpt, &mut drv, f, &g2),
        Action::Original { time: true }
    );
    assert_eq!(drv.read(&g2.out), Gather::want());
    let records = icpt.take_records();
    let Outcome::Profiled {
        run, ptx_target, ..
    } = &records[0].outcome
    else {
        panic!("{records:?}")
    };
    assert_eq!(ptx_target, "compute_75");
    assert!(matches!(&records[1].outcome, Outcome::Timed { of_run, .. } if of_run == run));
    let dir = out.path().join(run);
    let m = RunMetrics::read(&dir.join("run.json")).unwrap();
    assert_eq!((m.backend.as_str(), m.mode), ("gpu", ProbeMode::Auto));
    assert_eq!(m.app.as_ref().unwrap().launch, 0);
    let overhead = m.overhead.expect("timed against a later bare launch");
    assert!(overhead > 1.0, "{overhead}");
    let reader = TraceReader::open(&dir.join(trace::TRACE_FILE_NAME)).unwrap();
    // Two read-only loads per thread (idx, then table): two per warp, 32 warps, all traced.
    let warps = 8 * 128 / 32;
    assert_eq!(reader.record_count(), 2 * warps);
    assert_eq!(reader.launch().sites.len(), 2);
}

#[test]
fn every_check_that_fails_launches_the_original_and_says_why() {
    // Each case breaks one thing and gives the function to launch.
    type Break = fn(&mut EmuDriver, &mut Interceptor, Handle) -> Handle;
    let cases: [(&str, Break); 4] = [
        ("capture", |drv, _, f| {
            drv.capturing.push(SHAPE.stream);
            f
        }),
        ("compile", |drv, _, f| {
            drv.refuse_ptx = true;
            f
        }),
        ("did not see", |_, _, _| 4242),
        ("cubin", |_, icpt, f| {
            // The program's module, loaded again as a cubin.
            icpt.loaded(1, Image::NoPtx("a cubin without PTX (SASS only)".into()));
            f
        }),
    ];
    for (want, break_it) in cases {
        let out = tempfile::tempdir().unwrap();
        let (mut drv, mut icpt, f) = gather_program(out.path());
        let f = break_it(&mut drv, &mut icpt, f);
        let g = Gather::new(&mut drv);
        let params = g.params();
        let action = icpt.launch(&mut drv, f, &SHAPE, &mut |_| Ok(params.clone()));
        assert_eq!(action, Action::Original { time: false }, "{want}");
        let records = icpt.take_records();
        let Outcome::Unprofiled { reason } = &records[0].outcome else {
            panic!("{want}: {records:?}")
        };
        assert!(
            reason.contains(want) || reason.contains("graph"),
            "{want}: {reason}"
        );
        assert!(
            std::fs::read_dir(out.path()).unwrap().next().is_none(),
            "{want}: nothing written"
        );
    }
}

#[test]
fn parameters_that_do_not_match_the_signature_launch_the_original() {
    let out = tempfile::tempdir().unwrap();
    let (mut drv, mut icpt, f) = gather_program(out.path());
    let short = vec![vec![0u8; 8]; 2];
    let action = icpt.launch(&mut drv, f, &SHAPE, &mut |_| Ok(short.clone()));
    assert_eq!(action, Action::Original { time: false });
    let r = icpt.take_records();
    assert!(
        matches!(&r[0].outcome, Outcome::Unprofiled { reason } if reason.contains("parameters"))
    );
    let counts: HashMap<String, u64> = icpt.launch_counts().clone();
    assert_eq!(counts["gather_ldg"], 1);
}
