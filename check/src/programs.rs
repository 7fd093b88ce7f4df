//! Step 7: unmodified programs under `warpscope run`. Programs nobody on the project wrote —
//! NVIDIA's cuda-samples `vectorAdd` and `vectorAddDrv` (tag v13.0, vendored in `cuda-samples/`
//! with their licence) — are built on the GPU machine with its own nvcc in four ways: the
//! runtime API with cudart linked statically (nvcc's default), the driver API loading a fatbin,
//! the kernel in a shared library the program links, and SASS only (no PTX, so nothing to put
//! probes into). Beside them one program of ours reads through an inlined helper and `__ldg` and
//! launches its kernel three times, so that a later bare launch gives the probes' overhead.
//! Each runs once as it is and once under `warpscope run --trace-warps all`. The checks: the same
//! output and exit status; the first launch of each kernel profiled with one record per load per
//! warp and sites named by the program's own source lines; the SASS-only kernel named in the
//! index and launched as it was, with the reason.

use crate::context::Ctx;
use crate::error::CheckError;
use serde::Serialize;
use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use trace::{Outcome, ProgramIndex, TraceReader};

/// A gather through an inlined helper and `__ldg`, launched three times: profiled, timed bare,
/// passed. Two loads per thread (`idx[i]`, `table[...]`), 2048 warps.
const RUNTIME_APP: &str = r#"#include <cstdio>
#include <vector>
__device__ __forceinline__ unsigned fetch(const unsigned* __restrict__ t, unsigned j) {
    return __ldg(&t[j]);
}
__global__ void gather(const unsigned* __restrict__ idx, const unsigned* __restrict__ table,
                       unsigned* out, int m, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fetch(table, idx[i] % m) + 1;
}
int main() {
    const int n = 1 << 16, m = 4093;
    std::vector<unsigned> idx(n), table(m), out(n);
    for (int i = 0; i < n; i++) idx[i] = i * 2654435761u;
    for (int j = 0; j < m; j++) table[j] = j * j;
    unsigned *di, *dt, *dout;
    cudaMalloc(&di, n * 4); cudaMalloc(&dt, m * 4); cudaMalloc(&dout, n * 4);
    cudaMemcpy(di, idx.data(), n * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dt, table.data(), m * 4, cudaMemcpyHostToDevice);
    for (int rep = 0; rep < 3; rep++) gather<<<n / 256, 256>>>(di, dt, dout, m, n);
    cudaMemcpy(out.data(), dout, n * 4, cudaMemcpyDeviceToHost);
    unsigned long long sum = 0;
    for (int i = 0; i < n; i++) sum = sum * 31 + out[i];
    printf("checksum %llu\n", sum);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
"#;

/// The cuda-samples files, as the GPU machine's step folder gets them (`Common/` is the samples'
/// include folder).
const SAMPLE_FILES: &[(&str, &str)] = &[
    (
        "LICENSE-cuda-samples",
        include_str!("../cuda-samples/LICENSE"),
    ),
    (
        "Common/exception.h",
        include_str!("../cuda-samples/Common/exception.h"),
    ),
    (
        "Common/helper_cuda.h",
        include_str!("../cuda-samples/Common/helper_cuda.h"),
    ),
    (
        "Common/helper_cuda_drvapi.h",
        include_str!("../cuda-samples/Common/helper_cuda_drvapi.h"),
    ),
    (
        "Common/helper_functions.h",
        include_str!("../cuda-samples/Common/helper_functions.h"),
    ),
    (
        "Common/helper_image.h",
        include_str!("../cuda-samples/Common/helper_image.h"),
    ),
    (
        "Common/helper_string.h",
        include_str!("../cuda-samples/Common/helper_string.h"),
    ),
    (
        "Common/helper_timer.h",
        include_str!("../cuda-samples/Common/helper_timer.h"),
    ),
    (
        "vectorAdd.cu",
        include_str!("../cuda-samples/vectorAdd/vectorAdd.cu"),
    ),
    (
        "vectorAddDrv.cpp",
        include_str!("../cuda-samples/vectorAddDrv/vectorAddDrv.cpp"),
    ),
    (
        "vectorAdd_kernel.cu",
        include_str!("../cuda-samples/vectorAddDrv/vectorAdd_kernel.cu"),
    ),
];

/// Calls the vectorAdd sample's `main`, renamed `sample_main` where it is built into a shared
/// library: so the kernel, its fatbin and its registration live in the library, not the program.
const LAUNCHER: &str = "int sample_main();\nint main() { return sample_main(); }\n";

/// Both samples add 50,000 floats in 256-thread blocks: two loads (`A[i]`, `B[i]`) in each of the
/// 1,563 warps that hold an element.
const SAMPLE_RECORDS: u64 = 2 * 50_000u64.div_ceil(32);

/// One program's results.
#[derive(Debug, Clone, Serialize)]
pub struct ProgramRow {
    pub program: String,
    /// Whose source it is and how it was built.
    pub build: String,
    /// The kernel, and the source file its sites must name.
    pub kernel: String,
    pub source: String,
    /// The output lines of the plain run and of the run under warpscope, equal.
    pub same_output: bool,
    pub profiled: usize,
    /// Records of the profiled launch, and the loads its warps made (one record each); no
    /// expected records for a kernel that must run unprofiled.
    pub records: u64,
    pub expected_records: Option<u64>,
    /// Why the index says the kernel's first unprofiled launch ran as it was.
    pub unprofiled: Option<String>,
    pub sites: Vec<String>,
    /// Probed ÷ bare kernel time, from a later bare launch.
    pub overhead: Option<f64>,
}

impl ProgramRow {
    pub fn passed(&self) -> bool {
        self.same_output
            && match self.expected_records {
                Some(n) => {
                    self.profiled >= 1
                        && self.records == n
                        && !self.sites.is_empty()
                        && self.sites.iter().all(|s| s.starts_with(&self.source))
                }
                // Named as SASS-only, with the flags that would embed its PTX.
                None => {
                    self.profiled == 0
                        && (self.unprofiled.as_deref()).is_some_and(|r| r.contains("SASS-only"))
                }
            }
    }
}

/// The step's results: each program's row, or why none ran.
#[derive(Debug, Clone, Serialize)]
pub struct ProgramsStep {
    pub rows: Vec<ProgramRow>,
    pub note: Option<String>,
}

/// A program of the step: how to build it and what `warpscope run` must make of it.
struct Program {
    name: &'static str,
    build: &'static str,
    kernel: &'static str,
    source: &'static str,
    /// Records its kernel's first launch must give; `None`: the kernel must run unprofiled.
    records: Option<u64>,
    /// nvcc's arguments for each build step, run in the step folder.
    steps: Vec<NvccStep>,
}

struct NvccStep {
    args: Vec<OsString>,
    /// Links against libcuda, which only a machine with the driver has.
    needs_libcuda: bool,
}

fn nvcc_step(args: &[&str]) -> NvccStep {
    NvccStep {
        args: args.iter().map(OsString::from).collect(),
        needs_libcuda: args.contains(&"-lcuda"),
    }
}

/// The programs, built for `sm_<sm>` (e.g. `90`): SASS for it and, except the SASS-only build,
/// its PTX.
fn programs_for(sm: &str) -> Vec<Program> {
    let arch = format!("-arch=sm_{sm}");
    let sass_only = format!("arch=compute_{sm},code=sm_{sm}");
    let (arch, sass_only) = (arch.as_str(), sass_only.as_str());
    vec![
        Program {
            name: "vectorAdd",
            build: "cuda-samples vectorAdd, runtime API, cudart static",
            kernel: "vectorAdd",
            source: "vectorAdd.cu",
            records: Some(SAMPLE_RECORDS),
            steps: vec![nvcc_step(&[
                "-lineinfo",
                arch,
                "-ICommon",
                "-o",
                "vectorAdd",
                "vectorAdd.cu",
            ])],
        },
        Program {
            name: "vectorAddDrv",
            build: "cuda-samples vectorAddDrv, driver API, module from a fatbin",
            kernel: "VecAdd_kernel",
            source: "vectorAdd_kernel.cu",
            records: Some(SAMPLE_RECORDS),
            steps: vec![
                nvcc_step(&[
                    "-lineinfo",
                    arch,
                    "-fatbin",
                    "-o",
                    "vectorAdd_kernel64.fatbin",
                    "vectorAdd_kernel.cu",
                ]),
                nvcc_step(&["-ICommon", "-c", "-o", "vectorAddDrv.o", "vectorAddDrv.cpp"]),
                nvcc_step(&["-o", "vectorAddDrv", "vectorAddDrv.o", "-lcuda"]),
            ],
        },
        Program {
            name: "vectorAdd_so",
            build: "cuda-samples vectorAdd, its kernel in a shared library",
            kernel: "vectorAdd",
            source: "vectorAdd.cu",
            records: Some(SAMPLE_RECORDS),
            steps: vec![
                nvcc_step(&[
                    "-lineinfo",
                    arch,
                    "-ICommon",
                    "-shared",
                    "-Xcompiler",
                    "-fPIC",
                    "-Dmain=sample_main",
                    "-o",
                    "libvectoradd.so",
                    "vectorAdd.cu",
                ]),
                nvcc_step(&[
                    "-o",
                    "vectorAdd_so",
                    "launcher.cpp",
                    "-L.",
                    "-lvectoradd",
                    "-Xlinker",
                    "-rpath,$ORIGIN",
                ]),
            ],
        },
        Program {
            name: "vectorAdd_sass",
            build: "cuda-samples vectorAdd, SASS only (no PTX): must run unprofiled",
            kernel: "vectorAdd",
            source: "vectorAdd.cu",
            records: None,
            steps: vec![nvcc_step(&[
                "-lineinfo",
                "-gencode",
                sass_only,
                "-ICommon",
                "-o",
                "vectorAdd_sass",
                "vectorAdd.cu",
            ])],
        },
        Program {
            name: "app_runtime",
            build: "warpscope's gather: an inlined helper and __ldg, three launches",
            kernel: "gather",
            source: "app_runtime.cu",
            records: Some(2 * 2048),
            steps: vec![nvcc_step(&[
                "-lineinfo",
                arch,
                "-o",
                "app_runtime",
                "app_runtime.cu",
            ])],
        },
    ]
}

fn run_tool(cmd: &mut Command, what: &str) -> Result<String, CheckError> {
    let o = cmd.output().map_err(|e| CheckError::Program {
        what: what.into(),
        reason: e.to_string(),
    })?;
    if !o.status.success() {
        return Err(CheckError::Program {
            what: what.into(),
            reason: format!(
                "{}: {}",
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            ),
        });
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Writes every source into `dir` and builds the programs there with `nvcc`; without libcuda
/// (`with_libcuda` false) the steps that link it are left out.
fn build(
    nvcc: &Path,
    dir: &Path,
    sm: &str,
    with_libcuda: bool,
) -> Result<Vec<Program>, CheckError> {
    let sources = SAMPLE_FILES
        .iter()
        .copied()
        .chain([("launcher.cpp", LAUNCHER), ("app_runtime.cu", RUNTIME_APP)]);
    for (name, text) in sources {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| CheckError::Program {
                what: format!("creating {}", parent.display()),
                reason: e.to_string(),
            })?;
        }
        trace::write_bytes_atomic(&path, text.as_bytes())?;
    }
    let lib = kernels::cudart_lib_dir(nvcc);
    let programs = programs_for(sm);
    for step in programs.iter().flat_map(|p| &p.steps) {
        if step.needs_libcuda && !with_libcuda {
            continue;
        }
        let mut cmd = Command::new(nvcc);
        cmd.current_dir(dir).args(&step.args);
        if let Some(lib) = &lib {
            cmd.arg(format!("-L{}", lib.display()));
        }
        let line = step.args.join(std::ffi::OsStr::new(" "));
        run_tool(&mut cmd, &format!("nvcc {}", line.to_string_lossy()))?;
    }
    Ok(programs)
}

pub(crate) fn programs(ctx: &Ctx<'_>) -> Result<ProgramsStep, CheckError> {
    let not_run = |why: &str| {
        Ok(ProgramsStep {
            rows: Vec::new(),
            note: Some(format!("not run: {why}")),
        })
    };
    if !ctx.gpu {
        return not_run("warpscope run needs a GPU");
    }
    let Some(nvcc) = kernels::nvcc_path() else {
        return not_run("no nvcc on this machine ($NVCC, $CUDA_HOME, PATH, /usr/local/cuda)");
    };
    let Some(cc) = ctx.open()?.properties().compute_capability else {
        return not_run("the device did not give its compute capability");
    };
    let dir = ctx.step_dir("programs")?;
    let programs = build(&nvcc, &dir, &cc.replace('.', ""), true)?;
    let rows = programs
        .iter()
        .map(|p| check_program(ctx, &dir, p))
        .collect::<Result<_, _>>()?;
    Ok(ProgramsStep { rows, note: None })
}

/// Runs the program as it is and under `warpscope run`, and reads what the run wrote.
fn check_program(ctx: &Ctx<'_>, dir: &Path, p: &Program) -> Result<ProgramRow, CheckError> {
    let exe = dir.join(p.name);
    let plain = run_tool(Command::new(&exe).current_dir(dir), p.name)?;
    let out = dir.join(format!("{}-run", p.name));
    let profiled = run_tool(
        Command::new(ctx.program)
            .current_dir(dir)
            .args(["run", "--trace-warps", "all", "--out"])
            .arg(&out)
            .arg("--")
            .arg(&exe),
        &format!("warpscope run -- {}", p.name),
    )?;
    let index = ProgramIndex::read(&out.join(trace::INDEX_FILE))?;
    let launches = || (index.launches.iter()).filter(|r| r.demangled.contains(p.kernel));
    let runs: Vec<&String> = launches()
        .filter_map(|r| match &r.outcome {
            Outcome::Profiled { run, .. } => Some(run),
            _ => None,
        })
        .collect();
    let unprofiled = launches().find_map(|r| match &r.outcome {
        Outcome::Unprofiled { reason } => Some(reason.clone()),
        _ => None,
    });
    let (mut records, mut sites, mut overhead) = (0, Vec::new(), None);
    if let Some(run) = runs.first() {
        let reader = TraceReader::open(&out.join(run).join(trace::TRACE_FILE_NAME))?;
        records = reader.record_count();
        sites = reader
            .launch()
            .sites
            .iter()
            .map(|s| s.name.clone())
            .collect();
        overhead = trace::RunMetrics::read(&out.join(run).join(trace::RUN_FILE_NAME))?.overhead;
    }
    Ok(ProgramRow {
        program: p.name.into(),
        build: p.build.into(),
        kernel: p.kernel.into(),
        source: p.source.into(),
        same_output: plain.lines().eq(profiled.lines()),
        profiled: runs.len(),
        records,
        expected_records: p.records,
        unprofiled,
        sites,
        overhead,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the GPU machine's nvcc will do, done here by the project's toolkit for sm_90: every
    /// program builds (the driver API program up to its link with libcuda, which needs the
    /// driver), the SASS-only program holds no PTX, and the shared library, not the program
    /// that links it, holds the kernel.
    #[test]
    fn every_program_builds_as_the_gpu_step_builds_it() {
        let nvcc = kernels::nvcc_path()
            .expect("nvcc (scripts/setup-cuda) builds the workspace's kernels, so it is here");
        let cuobjdump = kernels::tool_path("cuobjdump").expect("cuobjdump beside nvcc");
        let dir = tempfile::tempdir().unwrap();
        let programs = build(&nvcc, dir.path(), "90", false).unwrap();
        assert_eq!(programs.len(), 5);
        let listing = |file: &str, what: &str| {
            let o = Command::new(&cuobjdump)
                .arg(what)
                .arg(dir.path().join(file))
                .output()
                .unwrap();
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
        };
        let kernel = "Function : _Z9vectorAddPKfS0_Pfi";
        for file in ["vectorAdd", "vectorAdd_sass", "libvectoradd.so"] {
            assert!(
                listing(file, "-sass").contains(kernel),
                "{file} holds the kernel's SASS"
            );
        }
        assert!(!listing("vectorAdd_so", "-sass").contains(kernel));
        assert!(listing("vectorAdd", "--list-ptx").contains("vectorAdd.sm_90.ptx"));
        assert!(listing("libvectoradd.so", "--list-ptx").contains(".sm_90.ptx"));
        assert!(listing("vectorAdd_sass", "--list-ptx").contains("No PTX file found"));
        assert!(listing("app_runtime", "--list-ptx").contains(".sm_90.ptx"));
        assert!(dir.path().join("vectorAdd_kernel64.fatbin").is_file());
        assert!(dir.path().join("vectorAddDrv.o").is_file());
    }

    #[test]
    fn a_sass_only_program_passes_only_unprofiled_with_a_reason() {
        let row = ProgramRow {
            program: "vectorAdd_sass".into(),
            build: String::new(),
            kernel: "vectorAdd".into(),
            source: "vectorAdd.cu".into(),
            same_output: true,
            profiled: 0,
            records: 0,
            expected_records: None,
            unprofiled: Some(
                "kernel `_Z9vectorAddPKfS0_Pfi` is SASS-only (sm_90): rebuild with -gencode \
                 arch=compute_90,code=compute_90 to embed PTX to instrument"
                    .into(),
            ),
            sites: Vec::new(),
            overhead: None,
        };
        assert!(row.passed());
        assert!(
            !ProgramRow {
                unprofiled: None,
                ..row.clone()
            }
            .passed()
        );
        let other = Some("its module was loaded before warpscope saw it".to_string());
        assert!(
            !ProgramRow {
                unprofiled: other,
                ..row.clone()
            }
            .passed()
        );
        assert!(
            !ProgramRow {
                profiled: 1,
                ..row.clone()
            }
            .passed()
        );
        let profiled = ProgramRow {
            expected_records: Some(3126),
            profiled: 1,
            records: 3126,
            sites: vec!["vectorAdd.cu:48".into()],
            unprofiled: None,
            ..row
        };
        assert!(profiled.passed());
        assert!(
            !ProgramRow {
                records: 3125,
                ..profiled.clone()
            }
            .passed()
        );
        assert!(
            !ProgramRow {
                sites: vec!["other.cu:1".into()],
                ..profiled
            }
            .passed()
        );
    }
}
