//! `warpscope launch` for real programs, end to end on the emulator: pipelines of kernels
//! sharing buffers, pointer arguments (offsets, aliases, NULL), and the compile cache.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn warpscope(args: &[&str], nvcc: Option<&Path>) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_warpscope"));
    c.args(args);
    if let Some(n) = nvcc {
        c.env("NVCC", n);
    }
    c
}

fn ok(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn read_u32_npy(path: &Path) -> Vec<u32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    npyz::NpyFile::new(&bytes[..]).unwrap().into_vec().unwrap()
}

fn example(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/reduction");
    for f in ["reduce.cu", "reduce.toml"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    dir.join("reduce.toml")
}

/// `nvcc` wrapped by a script that logs each call to `calls.log` beside it.
fn counting_nvcc(dir: &Path) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let real = kernels::nvcc_path().expect("nvcc (scripts/setup-cuda)");
    let log = dir.join("calls.log");
    let script = dir.join("nvcc");
    // `cp` writes the script, not this process: a child that another test's thread forks while
    // this process holds the file open for writing keeps it open until it execs, and running
    // the script then fails with ETXTBSY.
    let draft = dir.join("nvcc.draft");
    std::fs::write(
        &draft,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&draft, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cp = std::process::Command::new("cp")
        .arg(&draft)
        .arg(&script)
        .status();
    assert!(
        cp.as_ref().is_ok_and(|s| s.success()),
        "cp {draft:?}: {cp:?}"
    );
    (script, log)
}

fn calls(log: &Path) -> usize {
    std::fs::read_to_string(log).map_or(0, |s| s.lines().count())
}

fn launch_args<'a>(spec: &'a Path, out: &'a Path, cache: &'a Path) -> Vec<&'a str> {
    vec![
        "launch",
        spec.to_str().unwrap(),
        "--backend",
        "emu",
        "--out",
        out.to_str().unwrap(),
        "--cache",
        cache.to_str().unwrap(),
    ]
}

/// The README's two-kernel example (a two-pass sum, the second pass in place on one buffer
/// passed twice) against a CPU sum.
#[test]
fn two_pass_reduction_pipeline_matches_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let spec = example(dir.path());
    let text = std::fs::read_to_string(&spec).unwrap().replace(
        "fill = \"random:7\"",
        "fill = \"random:7\"\noutput = \"data.npy\"",
    );
    std::fs::write(&spec, text).unwrap();
    let out = dir.path().join("out");
    let cache = dir.path().join("cache");
    ok(
        warpscope(&launch_args(&spec, &out, &cache), None)
            .output()
            .unwrap(),
        "launch",
    );
    let data = read_u32_npy(&out.join("data.npy"));
    assert_eq!(data.len(), 65536);
    // pass 1, grid-stride over 64 blocks of 256 threads
    let mut want = vec![0u32; 64];
    for (i, v) in data.iter().enumerate() {
        let b = (i / 256) % 64;
        want[b] = want[b].wrapping_add(*v);
    }
    assert_eq!(read_u32_npy(&out.join("partial.after-1.npy")), want);
    let total = data.iter().fold(0u32, |a, v| a.wrapping_add(*v));
    let sum = read_u32_npy(&out.join("sum.npy"));
    assert_eq!(sum[0], total);
    assert_eq!(sum[1..], want[1..], "pass 2 writes only element 0");
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["kernel"], "block_sums+sum_in_place");
    // No probes, so no bare run beside it to measure what they cost.
    assert!(run["overhead"].is_null(), "{run}");
    let launches = run["launches"].as_array().unwrap();
    assert_eq!(launches.len(), 2);
    let cycles: u64 = launches.iter().map(|l| l["cycles"].as_u64().unwrap()).sum();
    assert_eq!(run["cycles"].as_u64().unwrap(), cycles);
}

/// `d + 32` (offset), the same buffer as two parameters, and a NULL pointer, on a .ptx kernel:
/// dst[t] = src[t] + (opt == NULL ? 1000 : 0).
#[test]
fn pointer_arguments_offset_alias_and_null() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("k.ptx"),
        ".version 8.0\n.target sm_75\n.address_size 64\n\
         .visible .entry shift_add(.param .u64 dst, .param .u64 src, .param .u64 opt)\n{\n\
         .reg .b64 %rd<8>;\n.reg .b32 %r<4>;\n.reg .pred %p<2>;\n\
         ld.param.u64 %rd1, [dst];\nld.param.u64 %rd2, [src];\nld.param.u64 %rd3, [opt];\n\
         mov.u32 %r1, %tid.x;\nmul.wide.u32 %rd4, %r1, 4;\nadd.s64 %rd5, %rd2, %rd4;\n\
         ld.global.u32 %r2, [%rd5];\nsetp.eq.u64 %p1, %rd3, 0;\nselp.u32 %r3, 1000, 0, %p1;\n\
         add.s32 %r2, %r2, %r3;\nadd.s64 %rd6, %rd1, %rd4;\nst.global.u32 [%rd6], %r2;\nret;\n}\n",
    )
    .unwrap();
    let spec = dir.path().join("spec.toml");
    let launch = |dst: &str, opt: &str| {
        format!(
            "[[launch]]\nkernel = \"shift_add\"\ngrid = [1,1,1]\nblock = [16,1,1]\n\
             [[launch.arg]]\nname = \"dst\"\nbuffer = \"@a\"\n{dst}\n\
             [[launch.arg]]\nname = \"src\"\nbuffer = \"@a\"\n\
             [[launch.arg]]\nname = \"opt\"\n{opt}\n"
        )
    };
    // launch 1 defines `a` and copies a[0..16] onto itself (dst = src, opt not NULL: + 0);
    // launch 2 writes a[32..48] through `a + 32` elements with a NULL `opt`; launch 3 writes
    // a[48..64] through `a + 192` bytes with `opt` as a u64 scalar 0 (the other way to NULL).
    std::fs::write(
        &spec,
        format!(
            "source = \"k.ptx\"\n\
             [[launch]]\nkernel = \"shift_add\"\ngrid = [1,1,1]\nblock = [16,1,1]\n\
             [[launch.arg]]\nname = \"a\"\nbuffer = \"u32\"\nlen = 64\nfill = \"iota\"\noutput = \"a.npy\"\n\
             [[launch.arg]]\nname = \"src\"\nbuffer = \"@a\"\n\
             [[launch.arg]]\nname = \"opt\"\nbuffer = \"@a\"\n\
             {}{}",
            launch("offset = 32", "null = true"),
            launch("offset_bytes = 192", "scalar = \"u64\"\nvalue = 0")
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let cache = dir.path().join("cache");
    ok(
        warpscope(&launch_args(&spec, &out, &cache), None)
            .output()
            .unwrap(),
        "launch",
    );
    let a = read_u32_npy(&out.join("a.npy"));
    for (i, &v) in a.iter().enumerate() {
        let i = i as u32;
        let want = match i {
            0..32 => i,
            32..48 => i - 32 + 1000,
            48..64 => i - 48 + 1000,
            _ => unreachable!(),
        };
        assert_eq!(v, want, "a[{i}]");
    }
}

/// A second launch of an unchanged spec reads the compiled PTX from the cache without running
/// nvcc; an edited source is compiled again.
#[test]
fn unchanged_source_is_not_compiled_again() {
    let dir = tempfile::tempdir().unwrap();
    let spec = example(dir.path());
    let (nvcc, log) = counting_nvcc(dir.path());
    let cache = dir.path().join("cache");
    let run = |out: &str| {
        let out = dir.path().join(out);
        let err = ok(
            warpscope(&launch_args(&spec, &out, &cache), Some(&nvcc))
                .output()
                .unwrap(),
            "launch",
        );
        (err, read_u32_npy(&out.join("sum.npy")))
    };
    let (_, first) = run("a");
    let compiled = calls(&log);
    assert!(compiled > 0, "the first launch runs nvcc");
    let (err, second) = run("b");
    assert_eq!(calls(&log), compiled, "the second launch must not run nvcc");
    assert!(err.contains("from"), "says where the PTX came from: {err}");
    assert_eq!(first, second);
    let src = dir.path().join("reduce.cu");
    let edited = std::fs::read_to_string(&src).unwrap() + "\n// edited\n";
    std::fs::write(&src, edited).unwrap();
    run("c");
    assert!(calls(&log) > compiled, "an edited source is compiled again");
}

/// Two launches of the same source at once, on an empty cache: both succeed, the cache holds
/// one complete entry and no temporary folder, and a third launch is served from it.
#[test]
fn concurrent_launches_share_the_cache_safely() {
    let dir = tempfile::tempdir().unwrap();
    let spec = example(dir.path());
    let (nvcc, log) = counting_nvcc(dir.path());
    let cache = dir.path().join("cache");
    let outs: Vec<PathBuf> = (0..3).map(|i| dir.path().join(format!("out{i}"))).collect();
    let children: Vec<_> = outs[..2]
        .iter()
        .map(|o| {
            warpscope(&launch_args(&spec, o, &cache), Some(&nvcc))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        ok(c.wait_with_output().unwrap(), "concurrent launch");
    }
    let entries: Vec<String> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        entries.len(),
        1,
        "one entry, no temporary folders: {entries:?}"
    );
    let before = calls(&log);
    ok(
        warpscope(&launch_args(&spec, &outs[2], &cache), Some(&nvcc))
            .output()
            .unwrap(),
        "third launch",
    );
    assert_eq!(calls(&log), before, "served from the cache");
    let sums: Vec<Vec<u32>> = outs
        .iter()
        .map(|o| read_u32_npy(&o.join("sum.npy")))
        .collect();
    assert!(sums.iter().all(|s| *s == sums[0]));
}

/// A kernel whose ptxas count (sm_75) exceeds gtx480's 63 registers runs there with the spill
/// recorded in run.json; one that fits no way is refused naming the presets it fits on.
#[test]
fn register_spill_is_recorded_and_a_refusal_suggests_presets() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("k.ptx"),
        ".version 8.0\n.target sm_75\n.address_size 64\n\
         .visible .entry k(.param .u64 p)\n{\n.reg .b64 %rd<2>;\nld.param.u64 %rd1, [p];\n\
         st.global.u32 [%rd1], 5;\nret;\n}\n",
    )
    .unwrap();
    let spec = dir.path().join("spec.toml");
    let write = |extra: &str| {
        std::fs::write(
            &spec,
            format!(
                "source = \"k.ptx\"\nkernel = \"k\"\ngrid = [1,1,1]\nblock = [128,1,1]\n{extra}\n\
                 [[arg]]\nname = \"p\"\nbuffer = \"u32\"\nlen = 1\noutput = \"p.npy\"\n"
            ),
        )
        .unwrap()
    };
    let out = dir.path().join("out");
    let cache = dir.path().join("cache");
    let mut args = launch_args(&spec, &out, &cache);
    args.extend(["--preset", "gtx480"]);
    write("regs_per_thread = 64");
    let err = ok(warpscope(&args, None).output().unwrap(), "launch");
    assert!(err.contains("spill"), "the spill is said: {err}");
    assert_eq!(read_u32_npy(&out.join("p.npy")), [5]);
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["emulator"]["registers_per_thread"], 63);
    assert_eq!(run["emulator"]["spilled_registers_per_thread"], 1);
    assert!(run["warnings"][0].as_str().unwrap().contains("gtx480"));
    write("shared_bytes = 60000");
    let o = warpscope(&args, None).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("49152") && err.contains("it fits on: v100, a100, h100, h200"),
        "{err}"
    );
}

/// On a preset that names its GPU's SASS target, a compiled source's registers are ptxas's count
/// for that target, as the GPU's own build would have them: this kernel, whose address takes a
/// 64-bit remainder, gets 20 registers on sm_90 where sm_75's count is 18 (the toolchain
/// scripts/setup-cuda installs), and gtx480, whose sm_20 today's ptxas no longer targets, keeps
/// sm_75's.
#[test]
fn a_preset_with_a_sass_target_counts_registers_for_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("k.cu"),
        "extern \"C\" __global__ void k(const uint4* buf, unsigned long long n, unsigned* out) {\n\
         unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         uint4 v = buf[((i ^ (i >> 31)) * 0xbf58476d1ce4e5b9ull) % n];\n\
         out[i] = v.x ^ v.y ^ v.z ^ v.w;\n}\n",
    )
    .unwrap();
    let spec = dir.path().join("k.toml");
    std::fs::write(
        &spec,
        "source = \"k.cu\"\nkernel = \"k\"\ngrid = [1,1,1]\nblock = [64,1,1]\n\
         [[arg]]\nname = \"buf\"\nbuffer = \"u32\"\nlen = 64\n\
         [[arg]]\nname = \"n\"\nscalar = \"u64\"\nvalue = 16\n\
         [[arg]]\nname = \"out\"\nbuffer = \"u32\"\nlen = 64\noutput = \"out.npy\"\n",
    )
    .unwrap();
    let cache = dir.path().join("cache");
    let registers = |preset: &str| {
        let out = dir.path().join(preset);
        let mut args = launch_args(&spec, &out, &cache);
        args.extend(["--preset", preset]);
        ok(warpscope(&args, None).output().unwrap(), preset);
        let run: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
        run["emulator"]["registers_per_thread"].as_u64().unwrap()
    };
    assert_eq!(registers("gtx480"), 18);
    assert_eq!(registers("h100"), 20);
}
