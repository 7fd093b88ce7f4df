//! Step 7: unmodified programs under `warpscope run`. Two small programs are built on the GPU
//! machine with its own nvcc — one on the runtime API with cudart linked statically (nvcc's
//! default), one on the driver API loading a fatbin — each run once as it is and once under
//! `warpscope run --trace-warps all`. The checks: the same output and exit status, the first
//! launch of each kernel profiled with one record per load per warp, and sites named by the
//! programs' own source lines (through the inlined `__ldg` and helper).

use crate::context::Ctx;
use crate::error::CheckError;
use serde::Serialize;
use std::path::{Path, PathBuf};
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

/// The driver API program's kernel, built into a fatbin the program loads.
const DRIVER_KERNEL: &str = r#"extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + 1.0f;
}
"#;

/// Loads `scale.fatbin` beside it and launches `scale` twice. One load per thread, 1024 warps.
const DRIVER_APP: &str = r#"#include <cuda.h>
#include <cstdio>
#include <vector>
#define OK(x) do { CUresult r = (x); if (r) { printf("error %d at line %d\n", r, __LINE__); return 1; } } while (0)
int main(int argc, char** argv) {
    FILE* f = fopen(argv[1], "rb");
    if (!f) return 2;
    std::vector<char> image(1 << 22);
    image.resize(fread(image.data(), 1, image.size(), f));
    fclose(f);
    const int n = 1 << 15;
    CUdevice dev; CUcontext ctx; CUmodule mod; CUfunction k;
    OK(cuInit(0)); OK(cuDeviceGet(&dev, 0));
    OK(cuDevicePrimaryCtxRetain(&ctx, dev)); OK(cuCtxSetCurrent(ctx));
    OK(cuModuleLoadData(&mod, image.data()));
    OK(cuModuleGetFunction(&k, mod, "scale"));
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; i++) x[i] = i * 0.5f;
    CUdeviceptr dx, dy;
    OK(cuMemAlloc(&dx, n * 4)); OK(cuMemAlloc(&dy, n * 4));
    OK(cuMemcpyHtoD(dx, x.data(), n * 4));
    float a = 3.0f; int nn = n;
    void* args[] = {&dx, &dy, &a, &nn};
    for (int rep = 0; rep < 2; rep++) OK(cuLaunchKernel(k, n / 256, 1, 1, 256, 1, 1, 0, 0, args, 0));
    OK(cuMemcpyDtoH(y.data(), dy, n * 4));
    double sum = 0;
    for (int i = 0; i < n; i++) sum += y[i] * (i % 7);
    printf("checksum %.1f\n", sum);
    return 0;
}
"#;

/// One program's results.
#[derive(Debug, Clone, Serialize)]
pub struct ProgramRow {
    pub program: String,
    /// The kernel expected to be profiled, and the source file its sites must name.
    pub kernel: String,
    pub source: String,
    /// The output lines of the plain run and of the run under warpscope, equal.
    pub same_output: bool,
    pub profiled: usize,
    /// Records of the profiled launch, and the loads its warps made (one record each).
    pub records: u64,
    pub expected_records: u64,
    pub sites: Vec<String>,
    /// Probed ÷ bare kernel time, from the later bare launch.
    pub overhead: Option<f64>,
}

impl ProgramRow {
    pub fn passed(&self) -> bool {
        self.same_output
            && self.profiled >= 1
            && self.records == self.expected_records
            && !self.sites.is_empty()
            && self.sites.iter().all(|s| s.starts_with(&self.source))
    }
}

/// The step's results: each program's row, or why none ran.
#[derive(Debug, Clone, Serialize)]
pub struct ProgramsStep {
    pub rows: Vec<ProgramRow>,
    pub note: Option<String>,
}

/// nvcc on this machine: `$CUDA_HOME/bin`, `PATH`, then `/usr/local/cuda/bin`.
fn nvcc() -> Option<PathBuf> {
    let home = std::env::var_os("CUDA_HOME").map(|h| PathBuf::from(h).join("bin/nvcc"));
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("nvcc"))
            .find(|p| p.is_file())
    });
    [
        home,
        on_path,
        Some(PathBuf::from("/usr/local/cuda/bin/nvcc")),
    ]
    .into_iter()
    .flatten()
    .find(|p| p.is_file())
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

pub(crate) fn programs(ctx: &Ctx<'_>) -> Result<ProgramsStep, CheckError> {
    if !ctx.gpu {
        return Ok(ProgramsStep {
            rows: Vec::new(),
            note: Some("not run: warpscope run needs a GPU".into()),
        });
    }
    let Some(nvcc) = nvcc() else {
        return Ok(ProgramsStep {
            rows: Vec::new(),
            note: Some(
                "not run: no nvcc on this machine (CUDA_HOME, PATH, /usr/local/cuda)".into(),
            ),
        });
    };
    let dir = ctx.step_dir("programs")?;
    let write = |name: &str, text: &str| -> Result<PathBuf, CheckError> {
        let p = dir.join(name);
        trace::write_bytes_atomic(&p, text.as_bytes())?;
        Ok(p)
    };
    let runtime_src = write("app_runtime.cu", RUNTIME_APP)?;
    let runtime = dir.join("app_runtime");
    run_tool(
        Command::new(&nvcc)
            .args(["-lineinfo", "-arch=native", "-o"])
            .arg(&runtime)
            .arg(&runtime_src),
        "nvcc app_runtime.cu",
    )?;
    let kernel_src = write("scale.cu", DRIVER_KERNEL)?;
    let fatbin = dir.join("scale.fatbin");
    run_tool(
        Command::new(&nvcc)
            .args(["-lineinfo", "-arch=native", "-fatbin", "-o"])
            .arg(&fatbin)
            .arg(&kernel_src),
        "nvcc -fatbin scale.cu",
    )?;
    let driver_src = write("app_driver.cu", DRIVER_APP)?;
    let driver = dir.join("app_driver");
    run_tool(
        Command::new(&nvcc)
            .arg("-o")
            .arg(&driver)
            .arg(&driver_src)
            .arg("-lcuda"),
        "nvcc app_driver.cu -lcuda",
    )?;
    let rows = vec![
        check_program(
            ctx,
            &dir,
            (&runtime, &[]),
            ("gather", "app_runtime.cu"),
            2 * 2048,
        )?,
        check_program(
            ctx,
            &dir,
            (&driver, &[fatbin.as_path()]),
            ("scale", "scale.cu"),
            1024,
        )?,
    ];
    Ok(ProgramsStep { rows, note: None })
}

/// Runs `program args` as it is and under `warpscope run`, and reads what the run wrote.
fn check_program(
    ctx: &Ctx<'_>,
    dir: &Path,
    (program, args): (&Path, &[&Path]),
    (kernel, source): (&str, &str),
    expected_records: u64,
) -> Result<ProgramRow, CheckError> {
    let name = program
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let plain = run_tool(Command::new(program).args(args), &name)?;
    let out = dir.join(format!("{name}-run"));
    let profiled = run_tool(
        Command::new(ctx.program)
            .args(["run", "--trace-warps", "all", "--out"])
            .arg(&out)
            .arg("--")
            .arg(program)
            .args(args),
        &format!("warpscope run -- {name}"),
    )?;
    let index = ProgramIndex::read(&out.join(trace::INDEX_FILE))?;
    let runs: Vec<&String> = (index.launches.iter())
        .filter_map(|r| match &r.outcome {
            Outcome::Profiled { run, .. } if r.demangled.contains(kernel) => Some(run),
            _ => None,
        })
        .collect();
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
        program: name,
        kernel: kernel.into(),
        source: source.into(),
        same_output: plain.lines().eq(profiled.lines()),
        profiled: runs.len(),
        records,
        expected_records,
        sites,
        overhead,
    })
}
