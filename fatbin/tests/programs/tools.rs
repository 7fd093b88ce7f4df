//! Building real CUDA programs at test time with the workspace's nvcc, and running cuobjdump.
//!
//! Where nvcc is missing a test says so and passes, except under CI (`CI` set), where it fails:
//! CI installs the toolchain (`scripts/setup-cuda`), so a missing one there is a broken setup.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// A runtime-API program: kernels (one a template, instantiated twice) launched from `main`.
pub const APP_CU: &str = r#"
#include <cstdio>
__device__ __noinline__ float twice(float v) { return 2.0f * v; }
__global__ void add_one(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = twice(x[i]) + 1.0f;
}
template <typename T> __global__ void scale(T *x, T s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}
template __global__ void scale<float>(float *, float, int);
template __global__ void scale<double>(double *, double, int);
int main() {
    float *d;
    cudaMalloc(&d, 32 * sizeof(float));
    add_one<<<1, 32>>>(d, 32);
    scale<float><<<1, 32>>>(d, 2.0f, 32);
    printf("%d\n", (int)cudaDeviceSynchronize());
    return 0;
}
"#;

/// The mangled kernels of [`APP_CU`].
pub const APP_KERNELS: [&str; 3] = [
    "_Z5scaleIdEvPT_S0_i",
    "_Z5scaleIfEvPT_S0_i",
    "_Z7add_onePfi",
];

/// A kernel in a shared library, launched by an exported host function.
pub const LIB_CU: &str = r#"
__global__ void lib_kernel(int *x) { x[threadIdx.x] = threadIdx.x; }
extern "C" void run_lib(int *x) { lib_kernel<<<1, 32>>>(x); }
"#;

/// Two translation units for `-rdc=true`: a kernel calling a `__device__` function of the other.
pub const RDC_A_CU: &str = r#"
__device__ int helper(int v);
__global__ void rdc_kernel(int *x) { x[threadIdx.x] = helper(threadIdx.x); }
int main() { int *d; cudaMalloc(&d, 128); rdc_kernel<<<1, 32>>>(d); return (int)cudaDeviceSynchronize(); }
"#;
pub const RDC_B_CU: &str = r#"
__device__ int helper(int v) { return v * 3; }
__global__ void other_kernel(int *x) { x[0] = helper(1); }
"#;

/// The CUDA tools the tests run.
pub struct Tools {
    pub nvcc: PathBuf,
    pub cuobjdump: PathBuf,
    /// Where the PyPI toolchain keeps cudart (`lib/` beside `bin/`), which nvcc's own profile
    /// does not search; also a folder with the `libcudart.so` link `--cudart shared` needs.
    lib_dirs: Vec<PathBuf>,
}

fn find_tools() -> Result<Tools, String> {
    let nvcc = kernels::nvcc_path()
        .ok_or("nvcc not found ($NVCC, $CUDA_HOME, .cuda or PATH; run scripts/setup-cuda)")?;
    let bin = nvcc.parent().unwrap_or(Path::new("."));
    let cuobjdump = bin.join("cuobjdump");
    if !cuobjdump.is_file() {
        return Err(format!("cuobjdump not found beside {}", nvcc.display()));
    }
    let mut lib_dirs = Vec::new();
    let lib = bin.join("../lib");
    lib_dirs.extend(kernels::cudart_lib_dir(&nvcc));
    let soname = lib.join("libcudart.so.13");
    if !lib.join("libcudart.so").exists() && soname.is_file() {
        // Under the target folder, not a temporary one: the tools live in a static, which is
        // never dropped, so a temporary folder outlived every test run in /tmp.
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cudart-link");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let link = dir.join("libcudart.so");
        if std::fs::read_link(&link).ok().as_deref() != Some(soname.as_path()) {
            // A link left by another toolchain's path is replaced; a missing one is made.
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(&soname, &link).map_err(|e| e.to_string())?;
        }
        lib_dirs.push(dir);
    }
    Ok(Tools {
        nvcc,
        cuobjdump,
        lib_dirs,
    })
}

/// The tools, or `None` after saying why `test` is skipped (a panic under CI).
pub fn tools(test: &str) -> Option<&'static Tools> {
    static TOOLS: OnceLock<Result<Tools, String>> = OnceLock::new();
    match TOOLS.get_or_init(find_tools) {
        Ok(t) => Some(t),
        Err(why) if std::env::var_os("CI").is_some() => {
            panic!("{test} cannot run under CI: {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED {test}: {why}");
            None
        }
    }
}

/// A file nvcc made, in a folder that lives as long as this.
pub struct Built {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
    pub bytes: Vec<u8>,
}

impl Tools {
    /// `nvcc <args> <sources> -o <output>` in a fresh folder holding `sources` (name, text).
    pub fn build(&self, sources: &[(&str, &str)], args: &[&str], output: &str) -> Built {
        let dir = tempfile::tempdir().expect("temporary folder");
        let mut cmd = Command::new(&self.nvcc);
        cmd.current_dir(dir.path()).args(args);
        for lib in &self.lib_dirs {
            cmd.arg(format!("-L{}", lib.display()));
        }
        for (name, text) in sources {
            std::fs::write(dir.path().join(name), text).expect("write source");
            cmd.arg(name);
        }
        cmd.arg("-o").arg(output);
        let out = cmd.output().expect("nvcc runs");
        assert!(
            out.status.success(),
            "nvcc {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let path = dir.path().join(output);
        let bytes = std::fs::read(&path).expect("nvcc's output");
        Built { dir, path, bytes }
    }

    /// cuobjdump's stdout for `args` and `file`, run in `cwd` (where `-x…` options write).
    pub fn cuobjdump(&self, cwd: &Path, args: &[&str], file: &Path) -> String {
        let out = Command::new(&self.cuobjdump)
            .current_dir(cwd)
            .args(args)
            .arg(file)
            .output()
            .expect("cuobjdump runs");
        assert!(
            out.status.success(),
            "cuobjdump {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}
