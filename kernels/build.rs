//! Builds every kernel of this crate with nvcc and embeds the results.
//!
//! Why a build script and not the `cc` crate: `cc` builds linkable host objects, while we need PTX
//! text (for the emulator and the driver JIT), fatbins with SASS (for the GPU and the SASS
//! placement tests) and ptxas resource usage, all as *data*. So nvcc is run directly with
//! `std::process::Command`, in parallel threads because there are many small invocations.
//!
//! Outputs in `$OUT_DIR`: `layout.rs` (every numeric `#define WS_…` of `warpscope.cuh`),
//! `builds.rs` (the `BUILDS` and `CORPUS` tables) and the PTX/fatbin files they include.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

#[path = "src/budget.rs"]
mod budget;
use budget::{EntryUsage, parse_entries, register_budget, with_maxnreg};

/// GPU architectures that get SASS in every fatbin; PTX is for compute_75 (JIT on newer GPUs).
const SASS_ARCHS: [u32; 5] = [75, 80, 86, 89, 90];
const PTX_ARCH: u32 = 75;
const MODES: [(u32, &str); 5] = [
    (0, "off"),
    (1, "naive"),
    (2, "fence"),
    (3, "dummy"),
    (4, "auto"),
];

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// One nvcc job: a source in one probe mode.
#[derive(Clone)]
struct Job {
    /// Source path relative to the workspace root, e.g. `kernels/probe_test.cu`.
    rel: String,
    stem: String,
    mode: u32,
    corpus: bool,
    /// A microbenchmark (`kernels/micro/*.cu`): built like the top-level sources, every mode with a
    /// fatbin, but listed apart (`kernels::micro()`), so the per-access placement rules that the
    /// SASS tests apply to `builds()` do not apply to its multi-load timed windows.
    micro: bool,
    /// Per entry (name, `.maxnreg`): the register budget of a probed build (empty otherwise).
    budgets: Vec<(String, u32)>,
    /// A probed build with the bare path of an untimed access (`-DWS_SAMPLED=1`), for launches
    /// that time only some warps or some accesses.
    sampled: bool,
}

struct Done {
    job: Job,
    ptx_file: String,
    fatbin_file: Option<String>,
    entries: Vec<EntryUsage>,
    /// Per other SASS target, its entries' usage.
    by_target: Vec<(u32, Vec<EntryUsage>)>,
    command: String,
}

fn run() -> Result<(), String> {
    let manifest = PathBuf::from(env("CARGO_MANIFEST_DIR")?);
    let root = manifest
        .parent()
        .ok_or("kernels crate has no parent directory")?
        .to_path_buf();
    let out = PathBuf::from(env("OUT_DIR")?);
    println!("cargo:rerun-if-env-changed=NVCC");
    println!("cargo:rerun-if-env-changed=CUDA_HOME");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=.");
    println!("cargo:rerun-if-changed=corpus");
    println!("cargo:rerun-if-changed=micro");

    let header_path = manifest.join("warpscope.cuh");
    let header = std::fs::read_to_string(&header_path)
        .map_err(|e| format!("reading {}: {e}", header_path.display()))?;
    std::fs::write(out.join("layout.rs"), layout_rs(&header)?)
        .map_err(|e| format!("writing layout.rs: {e}"))?;

    let top = list_sources(&manifest, "")?;
    let corpus = list_sources(&manifest, "corpus")?;
    let micro = list_sources(&manifest, "micro")?;
    for f in top.iter().chain(corpus.iter()).chain(micro.iter()) {
        println!("cargo:rerun-if-changed={}", root.join(f).display());
    }
    for h in list_ext(&manifest, "cuh")? {
        println!("cargo:rerun-if-changed={}", manifest.join(h).display());
    }

    let nvcc = find_nvcc(&root).ok_or_else(|| {
        "nvcc not found (looked at $NVCC, $CUDA_HOME/bin/nvcc, .cuda/site/nvidia/cu13/bin/nvcc, PATH). \
         Run `scripts/setup-cuda` from the workspace root to install the pinned CUDA toolchain."
            .to_string()
    })?;
    let version = nvcc_version(&nvcc)?;

    // Two rounds: the bare (WS_OFF) builds and the corpus first, then the probed builds, whose
    // per-entry register budget comes from the bare build's register counts.
    let mut jobs = Vec::new();
    for (rel, micro) in top
        .iter()
        .map(|r| (r, false))
        .chain(micro.iter().map(|r| (r, true)))
    {
        jobs.push(Job {
            rel: rel.clone(),
            stem: stem_of(rel),
            mode: 0,
            corpus: false,
            micro,
            budgets: Vec::new(),
            sampled: false,
        });
    }
    for rel in &corpus {
        jobs.push(Job {
            rel: rel.clone(),
            stem: stem_of(rel),
            mode: 0,
            corpus: true,
            micro: false,
            budgets: Vec::new(),
            sampled: false,
        });
    }
    let mut done = run_parallel(jobs, &nvcc, &root, &out)?;
    let mut probed = Vec::new();
    for bare in done.iter().filter(|d| !d.job.corpus) {
        let budgets: Vec<(String, u32)> = bare
            .entries
            .iter()
            .map(|e| (e.name.clone(), register_budget(e.registers)))
            .collect();
        for &(mode, _) in MODES.iter().filter(|(m, _)| *m != 0) {
            probed.push(Job {
                mode,
                budgets: budgets.clone(),
                ..bare.job.clone()
            });
            // The top-level kernels (the study's and the probe tests') also in a sampled build;
            // the microbenchmarks time their one warp.
            if !bare.job.micro {
                probed.push(Job {
                    mode,
                    budgets: budgets.clone(),
                    sampled: true,
                    ..bare.job.clone()
                });
            }
        }
    }
    done.extend(run_parallel(probed, &nvcc, &root, &out)?);
    done.sort_by(|a, b| {
        (
            a.job.corpus,
            a.job.micro,
            &a.job.stem,
            a.job.mode,
            a.job.sampled,
        )
            .cmp(&(
                b.job.corpus,
                b.job.micro,
                &b.job.stem,
                b.job.mode,
                b.job.sampled,
            ))
    });
    std::fs::write(out.join("builds.rs"), builds_rs(&done, &version))
        .map_err(|e| format!("writing builds.rs: {e}"))?;
    Ok(())
}

fn env(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("environment variable {name} not set"))
}

fn stem_of(rel: &str) -> String {
    Path::new(rel)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `kernels/<sub>/*.cu`, as workspace-relative paths, sorted (build order must not depend on
/// directory order).
fn list_sources(manifest: &Path, sub: &str) -> Result<Vec<String>, String> {
    let dir = manifest.join(sub);
    let mut v = Vec::new();
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(_) if !sub.is_empty() => return Ok(v),
        Err(e) => return Err(format!("reading {}: {e}", dir.display())),
    };
    for e in rd {
        let p = e
            .map_err(|e| format!("reading {}: {e}", dir.display()))?
            .path();
        if p.is_file() && p.extension().is_some_and(|x| x == "cu") {
            let name = p
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            v.push(if sub.is_empty() {
                format!("kernels/{name}")
            } else {
                format!("kernels/{sub}/{name}")
            });
        }
    }
    v.sort();
    Ok(v)
}

fn list_ext(manifest: &Path, ext: &str) -> Result<Vec<String>, String> {
    let mut v = Vec::new();
    for sub in ["", "corpus"] {
        let Ok(rd) = std::fs::read_dir(manifest.join(sub)) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == ext)
                && let Ok(rel) = p.strip_prefix(manifest)
            {
                v.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    v.sort();
    Ok(v)
}

/// Same search as `kernels::nvcc_path` (kept in sync by hand: build scripts cannot use the crate).
fn find_nvcc(root: &Path) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NVCC") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Some(p);
        }
    }
    if let Some(h) = std::env::var_os("CUDA_HOME") {
        let p = PathBuf::from(h).join("bin").join("nvcc");
        if p.is_file() {
            return Some(p);
        }
    }
    let local = root.join(".cuda/site/nvidia/cu13/bin/nvcc");
    if local.is_file() {
        return Some(local);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("nvcc"))
        .find(|p| p.is_file())
}

fn nvcc_version(nvcc: &Path) -> Result<String, String> {
    let o = Command::new(nvcc)
        .arg("--version")
        .output()
        .map_err(|e| format!("running {} --version: {e}", nvcc.display()))?;
    let text = String::from_utf8_lossy(&o.stdout);
    Ok(text
        .lines()
        .find(|l| l.contains("release"))
        .unwrap_or("unknown")
        .trim()
        .to_string())
}

/// Parses `#define WS_NAME <integer>` lines (decimal or hex) into `pub const WS_NAME: u32`.
fn layout_rs(header: &str) -> Result<String, String> {
    let mut s = String::from("// Generated by build.rs from warpscope.cuh; do not edit.\n");
    let mut seen = std::collections::BTreeSet::new();
    for (no, line) in header.lines().enumerate() {
        let mut it = line.split_whitespace();
        if it.next() != Some("#define") {
            continue;
        }
        let (Some(name), Some(value), None) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        if !name.starts_with("WS_") || name.contains('(') {
            continue;
        }
        let v = value.trim_end_matches(['u', 'U']);
        let parsed = if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
            u32::from_str_radix(h, 16).ok()
        } else {
            v.parse::<u32>().ok()
        };
        let Some(n) = parsed else { continue };
        if !seen.insert(name.to_string()) {
            return Err(format!(
                "warpscope.cuh line {}: {name} defined twice",
                no + 1
            ));
        }
        let _ = writeln!(
            s,
            "/// `#define {name} {value}` (warpscope.cuh line {}).",
            no + 1
        );
        let _ = writeln!(s, "pub const {name}: u32 = {n:#x};");
    }
    if seen.is_empty() {
        return Err("warpscope.cuh defines no numeric WS_ constants".into());
    }
    Ok(s)
}

fn run_parallel(jobs: Vec<Job>, nvcc: &Path, root: &Path, out: &Path) -> Result<Vec<Done>, String> {
    let n = jobs.len();
    let queue = Arc::new(Mutex::new(
        jobs.into_iter().enumerate().collect::<VecDeque<_>>(),
    ));
    type Slots = Vec<Option<Result<Done, String>>>;
    let results: Arc<Mutex<Slots>> = Arc::new(Mutex::new((0..n).map(|_| None).collect()));
    let threads = std::thread::available_parallelism()
        .map(|p| p.get())
        .unwrap_or(2)
        .clamp(1, 8);
    let mut handles = Vec::new();
    for _ in 0..threads {
        let (queue, results) = (Arc::clone(&queue), Arc::clone(&results));
        let (nvcc, root, out) = (nvcc.to_path_buf(), root.to_path_buf(), out.to_path_buf());
        handles.push(std::thread::spawn(move || {
            loop {
                let next = queue.lock().ok().and_then(|mut q| q.pop_front());
                let Some((i, job)) = next else { break };
                let r = build_one(&job, &nvcc, &root, &out);
                if let Ok(mut res) = results.lock() {
                    res[i] = Some(r);
                }
            }
        }));
    }
    for h in handles {
        h.join()
            .map_err(|_| "an nvcc worker thread panicked".to_string())?;
    }
    let results = Arc::try_unwrap(results)
        .map_err(|_| "worker results still shared".to_string())?
        .into_inner()
        .map_err(|_| "worker results poisoned".to_string())?;
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("a build job did not run".into())))
        .collect()
}

fn nvcc_run(nvcc: &Path, root: &Path, args: &[String], what: &str) -> Result<String, String> {
    let o = Command::new(nvcc)
        .current_dir(root)
        .args(args)
        .output()
        .map_err(|e| format!("running nvcc for {what}: {e}"))?;
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&o.stderr));
    if !o.status.success() {
        return Err(format!(
            "nvcc failed for {what}: nvcc {}\n{text}",
            args.join(" ")
        ));
    }
    Ok(text)
}

fn build_one(job: &Job, nvcc: &Path, root: &Path, out: &Path) -> Result<Done, String> {
    let base = if job.corpus {
        format!("corpus_{}", job.stem)
    } else if job.micro {
        format!("micro_{}_m{}", job.stem, job.mode)
    } else if job.sampled {
        format!("{}_m{}_sampled", job.stem, job.mode)
    } else {
        format!("{}_m{}", job.stem, job.mode)
    };
    let what = format!(
        "{} (WS_MODE={}{})",
        job.rel,
        job.mode,
        if job.sampled { ", WS_SAMPLED=1" } else { "" }
    );
    let budget_text: String = job
        .budgets
        .iter()
        .map(|(n, r)| format!("{n}={r};"))
        .collect();
    let ptx_path = out.join(format!("{base}.ptx"));
    // `rerun-if-changed=.` reruns this script on any change under kernels/ (so that a newly added
    // .cu is picked up); a content key per build skips nvcc when nothing it reads has changed.
    let key = format!(
        "{:016x}",
        fnv1a(&[
            job.rel.as_bytes(),
            &read_all_inputs(root, &job.rel),
            base.as_bytes(),
            budget_text.as_bytes(),
            include_bytes!("src/budget.rs"),
            nvcc.as_os_str().as_encoded_bytes()
        ])
    );
    let key_path = out.join(format!("{base}.key"));
    let log_path = out.join(format!("{base}.ptxas.log"));
    let mut ptx_args: Vec<String> = vec![
        format!("-arch=compute_{PTX_ARCH}"),
        "-ptx".into(),
        "-O3".into(),
        format!("-DWS_MODE={}", job.mode),
    ];
    if job.sampled {
        ptx_args.push("-DWS_SAMPLED=1".into());
    }
    ptx_args.extend([
        "-I".into(),
        "kernels".into(),
        job.rel.clone(),
        "-o".into(),
        ptx_path.to_string_lossy().into_owned(),
    ]);
    let cached = std::fs::read_to_string(&key_path).is_ok_and(|k| k == key)
        && log_path.is_file()
        && ptx_path.is_file()
        && (job.corpus || out.join(format!("{base}.fatbin")).is_file());
    if !cached {
        nvcc_run(nvcc, root, &ptx_args, &what)?;
        if !job.budgets.is_empty() {
            let raw = std::fs::read_to_string(&ptx_path)
                .map_err(|e| format!("reading {}: {e}", ptx_path.display()))?;
            std::fs::write(&ptx_path, with_maxnreg(&raw, &job.budgets))
                .map_err(|e| format!("writing {}: {e}", ptx_path.display()))?;
        }
    }
    let ptx = std::fs::read_to_string(&ptx_path)
        .map_err(|e| format!("reading {}: {e}", ptx_path.display()))?;
    let mut command = format!("nvcc {}", ptx_args[..ptx_args.len() - 2].join(" "));
    if !job.budgets.is_empty() {
        let _ = write!(command, " && .maxnreg per entry ({budget_text})");
    }

    // Resource usage from ptxas, one target at a time (a multi-arch run interleaves its -v
    // output): sm_75's, and the fatbin's other targets', since a GPU runs its own target's SASS,
    // whose registers set how many blocks fit its SM (42 on sm_75 can be 38 on sm_90).
    let usage = |arch: u32, log_path: &Path| -> Result<Vec<EntryUsage>, String> {
        let log = if cached && log_path.is_file() {
            std::fs::read_to_string(log_path)
                .map_err(|e| format!("reading {}: {e}", log_path.display()))?
        } else {
            let cubin = out.join(format!("{base}.sm_{arch}.cubin"));
            let args: Vec<String> = vec![
                "-cubin".into(),
                format!("-arch=sm_{arch}"),
                "-Xptxas".into(),
                "-v".into(),
                ptx_path.to_string_lossy().into_owned(),
                "-o".into(),
                cubin.to_string_lossy().into_owned(),
            ];
            let log = nvcc_run(nvcc, root, &args, &what)?;
            std::fs::write(log_path, &log)
                .map_err(|e| format!("writing {}: {e}", log_path.display()))?;
            log
        };
        Ok(parse_entries(&ptx, &log))
    };
    let entries = usage(PTX_ARCH, &log_path)?;
    let by_target = SASS_ARCHS
        .into_iter()
        .filter(|&a| a != PTX_ARCH)
        .map(|arch| {
            Ok((
                arch,
                usage(arch, &out.join(format!("{base}.sm_{arch}.ptxas.log")))?,
            ))
        })
        .collect::<Result<Vec<_>, String>>()?;

    let fatbin_file = if job.corpus {
        None
    } else {
        let fat = out.join(format!("{base}.fatbin"));
        let codes: Vec<String> = SASS_ARCHS
            .iter()
            .map(|a| format!("sm_{a}"))
            .chain(std::iter::once(format!("compute_{PTX_ARCH}")))
            .collect();
        let fat_args: Vec<String> = vec![
            "-fatbin".into(),
            format!("-arch=compute_{PTX_ARCH}"),
            format!("-code={}", codes.join(",")),
            ptx_path.to_string_lossy().into_owned(),
            "-o".into(),
            fat.to_string_lossy().into_owned(),
        ];
        if !cached {
            nvcc_run(nvcc, root, &fat_args, &what)?;
        }
        let _ = write!(
            command,
            " && nvcc -fatbin -arch=compute_{PTX_ARCH} -code={} {base}.ptx",
            codes.join(",")
        );
        Some(format!("{base}.fatbin"))
    };
    if !cached {
        std::fs::write(&key_path, &key)
            .map_err(|e| format!("writing {}: {e}", key_path.display()))?;
    }
    Ok(Done {
        job: job.clone(),
        ptx_file: format!("{base}.ptx"),
        fatbin_file,
        entries,
        by_target,
        command,
    })
}

/// Every input nvcc reads for `rel`: the source and all headers of kernels/ (the probe header and
/// any shared .cuh), in sorted order.
fn read_all_inputs(root: &Path, rel: &str) -> Vec<u8> {
    let mut v = std::fs::read(root.join(rel)).unwrap_or_default();
    let dir = root.join("kernels");
    let mut headers: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "cuh"))
                .collect()
        })
        .unwrap_or_default();
    headers.sort();
    for h in headers {
        v.extend_from_slice(h.as_os_str().as_encoded_bytes());
        v.extend(std::fs::read(&h).unwrap_or_default());
    }
    v
}

/// FNV-1a, 64 bit: a cache key, not a security boundary (written here to avoid a dependency).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn builds_rs(done: &[Done], version: &str) -> String {
    let mut s = String::from("// Generated by build.rs; do not edit.\n");
    let _ = writeln!(s, "pub(crate) const NVCC_VERSION: &str = {version:?};");
    let entries = |d: &Done| {
        let mut e = String::from("&[");
        for u in &d.entries {
            let targets: String = d
                .by_target
                .iter()
                .filter_map(|(arch, us)| {
                    let r = us.iter().find(|t| t.name == u.name)?.registers;
                    Some(format!("({arch}, {r}), "))
                })
                .collect();
            let _ = write!(
                e,
                "EntryInfo {{ name: {:?}, registers: {}, registers_by_target: &[{targets}], static_shared_bytes: {}, spill_bytes: {} }}, ",
                u.name, u.registers, u.static_shared_bytes, u.spill_bytes
            );
        }
        e.push(']');
        e
    };
    for (table, micro) in [("BUILDS", false), ("MICRO", true)] {
        let _ = writeln!(s, "pub(crate) static {table}: &[KernelBuild] = &[");
        for d in done
            .iter()
            .filter(|d| !d.job.corpus && d.job.micro == micro)
        {
            let fat = d.fatbin_file.as_deref().unwrap_or_default();
            let _ = writeln!(
                s,
                "    KernelBuild {{ source: {:?}, mode: {}, sampled: {}, ptx: include_str!(concat!(env!(\"OUT_DIR\"), \"/{}\")), \
                 fatbin: include_bytes!(concat!(env!(\"OUT_DIR\"), \"/{}\")), entries: {}, command: {:?} }},",
                d.job.stem,
                d.job.mode,
                d.job.sampled,
                d.ptx_file,
                fat,
                entries(d),
                d.command
            );
        }
        s.push_str("];\n");
    }
    s.push_str("pub(crate) static CORPUS: &[CorpusKernel] = &[\n");
    for d in done.iter().filter(|d| d.job.corpus) {
        let _ = writeln!(
            s,
            "    CorpusKernel {{ name: {:?}, ptx: include_str!(concat!(env!(\"OUT_DIR\"), \"/{}\")), entries: {}, command: {:?} }},",
            d.job.stem,
            d.ptx_file,
            entries(d),
            d.command
        );
    }
    s.push_str("];\n");
    s
}
