//! Hardware counters of a GPU launch from Nsight Compute (`ncu --csv`): the texture, L1 and L2
//! hit rates, the DRAM bytes and the achieved occupancy, as the analysis uses them on both backends
//! ([`trace::HardwareCounters`]), and the SM clock the launch ran at.
//!
//! Why ncu, not CUPTI from the process itself: ncu is on every GPU machine the project uses, has
//! profiled warpscope's kernels there, and keeps the profiler out of the measuring process (one
//! CUPTI subscriber per process; none under ncu). Its CSV "long format" (one row per launch and
//! metric) is read by column name — never by position, since columns differ between ncu
//! versions — and launch by launch ([`parse_launches`]). The texture hit rate is
//! [`TEX_HIT_RATE_METRIC`]; where a GPU or ncu version has no value for it, the L1TEX sector hit
//! rate over all pipes ([`L1_HIT_RATE_METRIC`]; on Volta and later L1 and texture cache are one)
//! stands in, and the launch says so. Values may carry thousands separators (`1,234.5`) or be
//! `n/a`; byte counts and the clock are read in the unit ncu names.
//!
//! The state the counters describe: ncu is asked neither to flush the caches nor to lock the
//! clocks (`--cache-control none --clock-control none`), so a launch is profiled warm and at the
//! default clocks, as the timed launches run.
//!
//! Main items: [`parse_launches`], [`ncu_path`], [`ncu_args`], [`run_ncu`].
//!
//! ```
//! let text = "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
//!             \"0\",\"d_render\",\"l1tex__t_sector_hit_rate.pct\",\"%\",\"87.5\"\n";
//! let launches = study::parse_launches(text, Some("d_render")).unwrap();
//! assert_eq!(launches[0].counters.l1_hit_rate, Some(0.875));
//! ```

use crate::StudyError;
use analysis::stats::mean;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use trace::HardwareCounters;
use wait_timeout::ChildExt;

/// How long one ncu run may take before it is stopped: a profiled paper-scale frame took about
/// 4 s on an H200, and an ncu that cannot reach the GPU's counters (seen on an H100 machine,
/// "Unknown Error on device 0") can hang instead of exiting.
pub const NCU_LIMIT: Duration = Duration::from_secs(300);

/// Texture hit rate of the L1TEX texture pipe (percent).
pub const TEX_HIT_RATE_METRIC: &str = "l1tex__t_sector_pipe_tex_mem_texture_op_tex_hit_rate.pct";
/// L1TEX sector hit rate over all pipes (percent): the L1 hit rate, and the texture rate's
/// stand-in where the texture pipe's has no value.
pub const L1_HIT_RATE_METRIC: &str = "l1tex__t_sector_hit_rate.pct";
/// L2 sector hit rate (percent).
pub const L2_HIT_RATE_METRIC: &str = "lts__t_sector_hit_rate.pct";
/// Bytes moved between the L2 and DRAM, read and written.
pub const DRAM_BYTES_METRIC: &str = "dram__bytes.sum";
/// Warps resident per active cycle of an SM over its warp slots (percent): the achieved
/// occupancy of ncu's occupancy section.
pub const ACHIEVED_OCCUPANCY_METRIC: &str = "sm__warps_active.avg.pct_of_peak_sustained_active";
/// SM cycles per second over the launch: the clock it ran at (the "SM Frequency" of ncu's
/// Speed Of Light section).
pub const SM_CLOCK_METRIC: &str = "sm__cycles_elapsed.avg.per_second";

/// What ncu says when the driver keeps the counters from the user.
const PERMISSION_ERROR: &str = "ERR_NVGPUCTRPERM";

/// One profiled launch.
#[derive(Debug, Clone, PartialEq)]
pub struct NcuLaunch {
    /// ncu's launch number, and the kernel's name and block size as it printed them.
    pub id: u64,
    pub kernel: String,
    pub block: Option<[u32; 3]>,
    pub counters: HardwareCounters,
    /// Whether the texture hit rate is the L1TEX rate standing in ([`L1_HIT_RATE_METRIC`]).
    pub tex_from_l1: bool,
}

impl NcuLaunch {
    /// Where the counters come from, in words, for run.json's `hit_rate_source`.
    pub fn source(&self) -> String {
        let tex = if self.tex_from_l1 {
            L1_HIT_RATE_METRIC
        } else {
            TEX_HIT_RATE_METRIC
        };
        format!("ncu {tex}, warm, default clocks")
    }
}

/// The counters of several launches of one frame: each field the mean over the launches that
/// have it.
pub fn mean_counters(launches: &[NcuLaunch]) -> Option<NcuLaunch> {
    let first = launches.first()?;
    let field = |f: fn(&HardwareCounters) -> Option<f64>| {
        mean(
            &launches
                .iter()
                .filter_map(|l| f(&l.counters))
                .collect::<Vec<_>>(),
        )
    };
    Some(NcuLaunch {
        counters: HardwareCounters {
            tex_hit_rate: field(|c| c.tex_hit_rate),
            l1_hit_rate: field(|c| c.l1_hit_rate),
            l2_hit_rate: field(|c| c.l2_hit_rate),
            dram_bytes: field(|c| c.dram_bytes.map(|b| b as f64)).map(|b| b.round() as u64),
            achieved_occupancy: field(|c| c.achieved_occupancy),
            sm_clock_mhz: field(|c| c.sm_clock_mhz),
        },
        tex_from_l1: launches.iter().any(|l| l.tex_from_l1),
        ..first.clone()
    })
}

/// Bytes in one `unit` as ncu prints it (`byte`, `Kbyte`, …, decimal prefixes); None for any
/// other unit, whose value is then left out rather than misread.
fn bytes_per_unit(unit: &str) -> Option<f64> {
    match unit.trim().to_ascii_lowercase().as_str() {
        "byte" | "bytes" | "b" => Some(1.0),
        "kbyte" | "kb" => Some(1e3),
        "mbyte" | "mb" => Some(1e6),
        "gbyte" | "gb" => Some(1e9),
        "tbyte" | "tb" => Some(1e12),
        _ => None,
    }
}

/// MHz in one `unit` of a frequency as ncu prints it (`hz`, `Mhz`, `Ghz`, or as a rate of
/// cycles: `cycle/second`, `cycle/usecond`, `cycle/nsecond`); None for any other unit.
fn mhz_per_unit(unit: &str) -> Option<f64> {
    match unit.trim().to_ascii_lowercase().as_str() {
        "hz" | "cycle/second" | "cycle/s" => Some(1e-6),
        "khz" | "cycle/msecond" | "cycle/ms" => Some(1e-3),
        "mhz" | "cycle/usecond" | "cycle/us" => Some(1.0),
        "ghz" | "cycle/nsecond" | "cycle/ns" => Some(1e3),
        _ => None,
    }
}

/// Parses a value as ncu prints it: `87.5`, `1,234.5`, `"n/a"` (→ None).
fn parse_value(s: &str) -> Option<f64> {
    let t: String = s.trim().chars().filter(|c| *c != ',').collect();
    if t.is_empty() || t.eq_ignore_ascii_case("n/a") {
        return None;
    }
    t.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// `(16, 8, 1)` → `[16, 8, 1]`.
fn parse_dim3(s: &str) -> Option<[u32; 3]> {
    let v: Vec<u32> = s
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .split(',')
        .map(|x| x.trim().parse().ok())
        .collect::<Option<_>>()?;
    v.try_into().ok()
}

/// Reads `ncu --csv` output (the long format; lines before the header such as `==PROF==` are
/// skipped) into one [`NcuLaunch`] per launch, in ncu's order. Only rows whose kernel name
/// contains `kernel` count, when given. A launch without any value of the metrics is left
/// out.
pub fn parse_launches(text: &str, kernel: Option<&str>) -> Result<Vec<NcuLaunch>, StudyError> {
    if text.contains(PERMISSION_ERROR) {
        return Err(StudyError::NcuPermission);
    }
    // The header is the first line that starts with a quoted field; ncu's own messages precede it.
    let mut offset = 0;
    let mut start = None;
    for line in text.split_inclusive('\n') {
        if line.starts_with('"') {
            start = Some(offset);
            break;
        }
        offset += line.len();
    }
    let start = start.ok_or_else(|| {
        StudyError::Ncu("no CSV header (a line starting with a quoted column name) found".into())
    })?;
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(&text.as_bytes()[start..]);
    let headers = reader
        .headers()
        .map_err(|e| StudyError::Ncu(format!("header: {e}")))?
        .clone();
    let col = |name: &str| headers.iter().position(|h| h.trim() == name);
    let metric_col = col("Metric Name")
        .ok_or_else(|| StudyError::Ncu("no \"Metric Name\" column (was --csv given?)".into()))?;
    let value_col =
        col("Metric Value").ok_or_else(|| StudyError::Ncu("no \"Metric Value\" column".into()))?;
    let id_col = col("ID");
    let kernel_col = col("Kernel Name").or_else(|| col("Function Name"));
    let block_col = col("Block Size");
    let unit_col = col("Metric Unit");

    // Per launch: its position, and the L1TEX rate apart until the texture rate is known.
    let mut launches: Vec<(NcuLaunch, Option<f64>)> = Vec::new();
    for (i, row) in reader.records().enumerate() {
        let row = row.map_err(|e| StudyError::Ncu(format!("row {}: {e}", i + 2)))?;
        let name = kernel_col
            .and_then(|c| row.get(c))
            .unwrap_or("")
            .to_string();
        if kernel.is_some_and(|k| !name.contains(k)) {
            continue;
        }
        let id = id_col
            .and_then(|c| row.get(c))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        let at = match launches.iter().position(|(l, _)| l.id == id) {
            Some(at) => at,
            None => {
                launches.push((
                    NcuLaunch {
                        id,
                        kernel: name,
                        block: block_col.and_then(|c| row.get(c)).and_then(parse_dim3),
                        counters: HardwareCounters::default(),
                        tex_from_l1: false,
                    },
                    None,
                ));
                launches.len() - 1
            }
        };
        let (launch, l1tex) = &mut launches[at];
        let (Some(metric), Some(value)) = (
            row.get(metric_col),
            row.get(value_col).and_then(parse_value),
        ) else {
            continue;
        };
        // `.pct` metrics are percentages whatever the unit column says.
        match metric.trim() {
            TEX_HIT_RATE_METRIC => launch.counters.tex_hit_rate = Some(value * 0.01),
            L1_HIT_RATE_METRIC => *l1tex = Some(value * 0.01),
            L2_HIT_RATE_METRIC => launch.counters.l2_hit_rate = Some(value * 0.01),
            ACHIEVED_OCCUPANCY_METRIC => launch.counters.achieved_occupancy = Some(value * 0.01),
            DRAM_BYTES_METRIC => {
                let unit = unit_col.and_then(|c| row.get(c)).unwrap_or("byte");
                launch.counters.dram_bytes =
                    bytes_per_unit(unit).map(|b| (value * b).round() as u64);
            }
            SM_CLOCK_METRIC => {
                let unit = unit_col.and_then(|c| row.get(c)).unwrap_or("hz");
                launch.counters.sm_clock_mhz = mhz_per_unit(unit).map(|m| value * m);
            }
            _ => {}
        }
    }
    Ok(launches
        .into_iter()
        .map(|(mut l, l1tex)| {
            l.counters.l1_hit_rate = l1tex;
            if l.counters.tex_hit_rate.is_none() && l1tex.is_some() {
                l.counters.tex_hit_rate = l1tex;
                l.tex_from_l1 = true;
            }
            l
        })
        .filter(|l| l.counters != HardwareCounters::default())
        .collect())
}

/// `ncu` on PATH, else under `$CUDA_HOME/bin` or `/usr/local/cuda/bin`.
pub fn ncu_path() -> Option<PathBuf> {
    let exe = if cfg!(windows) { "ncu.exe" } else { "ncu" };
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("CUDA_HOME") {
        dirs.push(PathBuf::from(home).join("bin"));
    }
    dirs.push(PathBuf::from("/usr/local/cuda/bin"));
    dirs.into_iter().map(|d| d.join(exe)).find(|p| p.is_file())
}

/// The ncu arguments that profile every launch of `kernel` in `program args…`: the hit-rate
/// metrics, and with `memory` also the L2 hit rate, the DRAM bytes (in base units), the
/// achieved occupancy and the SM clock; caches not flushed and clocks not locked.
pub fn ncu_args(kernel: &str, program: &Path, args: &[String], memory: bool) -> Vec<String> {
    let mut metrics = format!("{TEX_HIT_RATE_METRIC},{L1_HIT_RATE_METRIC}");
    let mut v = vec!["--csv".to_string()];
    if memory {
        metrics.push_str(&format!(
            ",{L2_HIT_RATE_METRIC},{DRAM_BYTES_METRIC},{ACHIEVED_OCCUPANCY_METRIC},{SM_CLOCK_METRIC}"
        ));
        v.extend(["--print-units".to_string(), "base".to_string()]);
    }
    v.extend(
        [
            "--cache-control",
            "none",
            "--clock-control",
            "none",
            "--metrics",
            &metrics,
            "--kernel-name",
            kernel,
        ]
        .map(String::from),
    );
    v.push(program.display().to_string());
    v.extend(args.iter().cloned());
    v
}

/// Runs `ncu` (at `ncu`) on `program args…` and reads the launches of `kernel`. The profile
/// with the L2 and DRAM metrics is tried first; where ncu refuses it (a metric or option this
/// GPU or ncu version lacks), the plain hit-rate profile, which has run on an H200, is what
/// counts: the texture hit rate is never lost to the extras. Each run may take `limit`; one that
/// outlasts it is stopped with the program it profiled, and not retried; nor is one the driver
/// refused the counters to.
pub fn run_ncu(
    ncu: &Path,
    kernel: &str,
    program: &Path,
    args: &[String],
    limit: Duration,
) -> Result<Vec<NcuLaunch>, StudyError> {
    match run_ncu_with(ncu, kernel, program, args, true, limit) {
        Err(e @ (StudyError::NcuTimedOut { .. } | StudyError::NcuPermission)) => Err(e),
        Err(_) => run_ncu_with(ncu, kernel, program, args, false, limit),
        ok => ok,
    }
}

fn run_ncu_with(
    ncu: &Path,
    kernel: &str,
    program: &Path,
    args: &[String],
    memory: bool,
    limit: Duration,
) -> Result<Vec<NcuLaunch>, StudyError> {
    let mut cmd = Command::new(ncu);
    cmd.args(ncu_args(kernel, program, args, memory))
        .env(device::UNGATED_ENV, "1");
    let out = output_within(&mut cmd, limit)
        .map_err(|e| StudyError::io(ncu, e))?
        .ok_or_else(|| StudyError::NcuTimedOut {
            ncu: ncu.to_path_buf(),
            limit,
        })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stdout.contains(PERMISSION_ERROR) || stderr.contains(PERMISSION_ERROR) {
        return Err(StudyError::NcuPermission);
    }
    if !out.status.success() {
        return Err(StudyError::Ncu(format!(
            "{} exited with {}: {}",
            ncu.display(),
            out.status,
            stderr.trim()
        )));
    }
    parse_launches(&stdout, Some(kernel))
}

/// `cmd`'s output, or None when it ran past `limit`. Then its whole process group is killed:
/// ncu starts the profiled program as its own child, which would otherwise live on, holding the
/// GPU and the output pipes.
fn output_within(cmd: &mut Command, limit: Duration) -> std::io::Result<Option<Output>> {
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(cmd, 0);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // Drained while waiting, so that a full pipe cannot stall the child.
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = match child.wait_timeout(limit)? {
        Some(status) => Some(status),
        None => {
            #[cfg(unix)]
            {
                let group = rustix::process::Pid::from_child(&child);
                // The group may be gone already; the child's own kill below still applies.
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            }
            let _ = child.kill();
            child.wait()?;
            None
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    Ok(status.map(|status| Output {
        status,
        stdout,
        stderr,
    }))
}

/// Reads `pipe` to its end on a thread of its own. A read error keeps what was read: the exit
/// status still tells the outcome.
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut bytes);
        }
        bytes
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"";

    fn row(id: u32, kernel: &str, metric: &str, value: &str) -> String {
        row_in(id, kernel, metric, "%", value)
    }

    fn row_in(id: u32, kernel: &str, metric: &str, unit: &str, value: &str) -> String {
        format!(
            "\"{id}\",\"4242\",\"warpscope\",\"127.0.0.1\",\"{kernel}\",\"1\",\"7\",\"(16, 8, 1)\",\"(32, 64, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\",\"{metric}\",\"{unit}\",\"{value}\""
        )
    }

    fn doc(rows: &[String]) -> String {
        let mut s = String::from(
            "==PROF== Connected to process 4242 (/usr/bin/warpscope)\n==PROF== Profiling \"d_render\" - 0: 0%....50%....100% - 9 passes\n",
        );
        s.push_str(HEADER);
        s.push('\n');
        for r in rows {
            s.push_str(r);
            s.push('\n');
        }
        s
    }

    #[test]
    fn prefers_the_texture_metric_and_averages_launches() {
        let text = doc(&[
            row(0, "d_render", L1_HIT_RATE_METRIC, "50"),
            row(0, "d_render", TEX_HIT_RATE_METRIC, "80.5"),
            row(1, "d_render", TEX_HIT_RATE_METRIC, "90.5"),
            row(1, "d_render", ACHIEVED_OCCUPANCY_METRIC, "40.42"),
            row(2, "other_kernel", TEX_HIT_RATE_METRIC, "10"),
        ]);
        let launches = parse_launches(&text, Some("d_render")).unwrap();
        assert_eq!(launches.len(), 2);
        assert_eq!(launches[0].block, Some([16, 8, 1]));
        assert_eq!(launches[0].counters.l1_hit_rate, Some(0.5));
        assert!(!launches[0].tex_from_l1);
        let r = mean_counters(&launches).unwrap();
        let rate = r.counters.tex_hit_rate.unwrap();
        assert!((rate - 0.855).abs() < 1e-12, "{rate}");
        // A counter only one launch has is that launch's.
        assert_eq!(launches[0].counters.achieved_occupancy, None);
        let occupancy = r.counters.achieved_occupancy.unwrap();
        assert!((occupancy - 0.4042).abs() < 1e-12, "{occupancy}");
        // without a kernel filter the other kernel counts too
        assert_eq!(parse_launches(&text, None).unwrap().len(), 3);
    }

    #[test]
    fn the_sm_clock_is_read_in_the_unit_ncu_names() {
        let text = doc(&[
            // As an H200's Speed Of Light section printed it for a paper-scale frame.
            row_in(0, "d_render", SM_CLOCK_METRIC, "hz", "1,494,663,496.73"),
            row_in(1, "d_render", SM_CLOCK_METRIC, "Ghz", "1.98"),
            row_in(2, "d_render", SM_CLOCK_METRIC, "cycle/nsecond", "1.755"),
            row_in(3, "d_render", SM_CLOCK_METRIC, "cycle/furlong", "7"),
            row_in(3, "d_render", TEX_HIT_RATE_METRIC, "%", "50"),
        ]);
        let launches = parse_launches(&text, Some("d_render")).unwrap();
        let clocks: Vec<Option<f64>> = launches.iter().map(|l| l.counters.sm_clock_mhz).collect();
        let near = |got: Option<f64>, want: f64| got.is_some_and(|g| (g - want).abs() < 1e-6);
        assert!(near(clocks[0], 1494.66349673), "{clocks:?}");
        assert!(
            near(clocks[1], 1980.0) && near(clocks[2], 1755.0),
            "{clocks:?}"
        );
        // A unit it does not know leaves the clock out rather than misread.
        assert_eq!(clocks[3], None);
        let mean = mean_counters(&launches).unwrap().counters.sm_clock_mhz;
        assert!(
            near(mean, (1494.66349673 + 1980.0 + 1755.0) / 3.0),
            "{mean:?}"
        );
    }

    #[test]
    fn falls_back_when_the_texture_metric_is_na() {
        let text = doc(&[
            row(0, "d_render", TEX_HIT_RATE_METRIC, "n/a"),
            row(0, "d_render", L1_HIT_RATE_METRIC, "1,012.5"),
        ]);
        let r = &parse_launches(&text, Some("d_render")).unwrap()[0];
        assert!(r.tex_from_l1);
        assert!(r.source().contains(L1_HIT_RATE_METRIC), "{}", r.source());
        assert_eq!(r.counters.tex_hit_rate, Some(10.125));
    }

    #[test]
    fn columns_are_found_by_name_not_position() {
        let text = "\"Metric Value\",\"Metric Name\",\"ID\",\"Kernel Name\"\n\"42\",\"l1tex__t_sector_hit_rate.pct\",\"0\",\"d_render(unsigned int*)\"\n";
        let r = &parse_launches(text, Some("d_render")).unwrap()[0];
        assert_eq!(r.counters.tex_hit_rate, Some(0.42));
    }

    #[test]
    fn no_values_is_none_and_garbage_is_an_error() {
        let text = doc(&[row(0, "d_render", TEX_HIT_RATE_METRIC, "n/a")]);
        assert_eq!(parse_launches(&text, Some("d_render")).unwrap(), []);
        let e = parse_launches("==ERROR== no kernels profiled\n", None).unwrap_err();
        assert!(e.to_string().contains("header"), "{e}");
        let e = parse_launches("\"ID\",\"Foo\"\n\"0\",\"1\"\n", None).unwrap_err();
        assert!(e.to_string().contains("Metric Name"), "{e}");
        let e = parse_launches(
            "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n",
            None,
        )
        .unwrap_err();
        assert!(matches!(e, StudyError::NcuPermission), "{e}");
    }

    #[test]
    fn args_name_the_metrics_and_the_program() {
        let plain = ncu_args(
            "d_render",
            Path::new("/bin/warpscope"),
            &["render".into()],
            false,
        );
        let metrics =
            |a: &[String]| a[a.iter().position(|x| x == "--metrics").unwrap() + 1].clone();
        let m = metrics(&plain);
        assert!(m.contains(TEX_HIT_RATE_METRIC) && m.contains(L1_HIT_RATE_METRIC));
        let control = plain.iter().position(|x| x == "--cache-control").unwrap();
        assert_eq!(plain[control + 1], "none", "caches are not flushed");
        assert!(!m.contains(L2_HIT_RATE_METRIC) && !plain.contains(&"--print-units".into()));
        assert_eq!(plain[plain.len() - 2], "/bin/warpscope");
        assert_eq!(plain[plain.len() - 1], "render");
        let memory = ncu_args(
            "d_render",
            Path::new("/bin/warpscope"),
            &["render".into()],
            true,
        );
        let m = metrics(&memory);
        assert!(m.contains(L2_HIT_RATE_METRIC) && m.contains(DRAM_BYTES_METRIC));
        assert!(m.contains(ACHIEVED_OCCUPANCY_METRIC) && m.contains(SM_CLOCK_METRIC));
        assert!(!metrics(&plain).contains("sm__"));
        let units = memory.iter().position(|x| x == "--print-units").unwrap();
        assert_eq!(memory[units + 1], "base");
        assert_eq!(memory[memory.len() - 1], "render");
    }

    /// An executable shell script `name` in `dir` with `body` after the shebang: a stand-in ncu.
    /// `cp` writes it from a draft, not this process: a child that another test's thread forks
    /// while this process holds the file open for writing keeps it open until it execs, and
    /// running the script then fails with ETXTBSY (which `run_ncu` takes for an old ncu).
    #[cfg(unix)]
    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let draft = dir.join(format!("{name}.draft"));
        std::fs::write(&draft, format!("#!/bin/sh\n{body}")).unwrap();
        std::fs::set_permissions(&draft, std::fs::Permissions::from_mode(0o755)).unwrap();
        let p = dir.join(name);
        let cp = std::process::Command::new("cp")
            .arg(&draft)
            .arg(&p)
            .status();
        assert!(
            cp.as_ref().is_ok_and(|s| s.success()),
            "cp {draft:?} {p:?}: {cp:?}"
        );
        p
    }

    /// A stand-in for ncu: refuses `--print-units` when `old` (an ncu without the memory
    /// profile), and otherwise prints the texture rate and, when asked for, the L2 rate.
    #[cfg(unix)]
    fn fake_ncu(dir: &Path, old: bool) -> PathBuf {
        let body = format!(
            "case \"$*\" in *--print-units*) {refuse} ;; esac\n\
             echo '\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"'\n\
             echo '\"0\",\"d_render\",\"{TEX_HIT_RATE_METRIC}\",\"%\",\"72.2\"'\n\
             case \"$*\" in *{L2_HIT_RATE_METRIC}*) \
             echo '\"0\",\"d_render\",\"{L2_HIT_RATE_METRIC}\",\"%\",\"40\"' ;; esac\n",
            refuse = if old {
                "echo '==ERROR== unknown option' >&2; exit 1"
            } else {
                ":"
            },
        );
        script(dir, if old { "old-ncu" } else { "ncu" }, &body)
    }

    /// The profiled program is told not to gate its launches, which ncu cannot profile.
    #[cfg(unix)]
    #[test]
    fn the_profiled_program_is_told_to_launch_ungated() {
        let dir = tempfile::tempdir().unwrap();
        let body = format!(
            "[ \"${{{var}}}\" = 1 ] || {{ echo '==ERROR== gated' >&2; exit 1; }}\n\
             echo '\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"'\n\
             echo '\"0\",\"d_render\",\"{TEX_HIT_RATE_METRIC}\",\"%\",\"50\"'\n",
            var = device::UNGATED_ENV
        );
        let p = script(dir.path(), "ncu", &body);
        let r = run_ncu(&p, "d_render", Path::new("/bin/true"), &[], NCU_LIMIT).unwrap();
        assert_eq!(r[0].counters.tex_hit_rate, Some(0.5), "{r:?}");
    }

    #[cfg(unix)]
    #[test]
    fn an_ncu_that_refuses_the_memory_profile_still_gives_the_texture_rate() {
        let dir = tempfile::tempdir().unwrap();
        let program = Path::new("/bin/true");
        let new = fake_ncu(dir.path(), false);
        let r = &run_ncu(&new, "d_render", program, &[], NCU_LIMIT).unwrap()[0];
        assert!(
            (r.counters.tex_hit_rate.unwrap() - 0.722).abs() < 1e-12,
            "{r:?}"
        );
        assert_eq!(r.counters.l2_hit_rate, Some(0.4));
        let old = fake_ncu(dir.path(), true);
        let r = &run_ncu(&old, "d_render", program, &[], NCU_LIMIT).unwrap()[0];
        assert!(
            (r.counters.tex_hit_rate.unwrap() - 0.722).abs() < 1e-12,
            "{r:?}"
        );
        assert_eq!(r.counters.l2_hit_rate, None);
    }

    /// An ncu that hangs, as one did on an H100 machine that it could not profile, is stopped at
    /// the limit with what it started, and is not tried a second time without the extras.
    #[cfg(unix)]
    #[test]
    fn an_ncu_that_hangs_is_stopped_at_the_limit_with_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let started = dir.path().join("started");
        // Each try leaves a line; the profiled "program" sleeps in a grandchild that would
        // keep the output pipe open if only ncu itself were killed.
        let p = script(
            dir.path(),
            "ncu",
            &format!("echo try >> {}\nsleep 30 &\nwait\n", started.display()),
        );
        let t = std::time::Instant::now();
        let e = run_ncu(
            &p,
            "d_render",
            Path::new("/bin/true"),
            &[],
            Duration::from_millis(300),
        )
        .unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        assert!(matches!(e, StudyError::NcuTimedOut { .. }), "{e}");
        assert!(e.to_string().contains("did not finish within 0.3 s"), "{e}");
        let tries = std::fs::read_to_string(&started).unwrap();
        assert_eq!(tries.lines().count(), 1, "{tries}");
    }

    #[test]
    fn reads_the_l2_hit_rate_and_dram_bytes_beside_the_texture_rate() {
        let unit_row = |id: u32, metric: &str, unit: &str, value: &str| {
            row(id, "d_render", metric, value).replace("\"%\"", &format!("\"{unit}\""))
        };
        let text = doc(&[
            row(0, "d_render", TEX_HIT_RATE_METRIC, "72.2"),
            row(0, "d_render", L2_HIT_RATE_METRIC, "40"),
            unit_row(0, DRAM_BYTES_METRIC, "byte", "1,000,000"),
            row(1, "d_render", TEX_HIT_RATE_METRIC, "72.2"),
            row(1, "d_render", L2_HIT_RATE_METRIC, "50"),
            unit_row(1, DRAM_BYTES_METRIC, "Mbyte", "3"),
            unit_row(2, DRAM_BYTES_METRIC, "furlong", "7"),
        ]);
        let launches = parse_launches(&text, Some("d_render")).unwrap();
        // the launch with only a byte count in an unknown unit has no value: left out
        assert_eq!(launches.len(), 2);
        let r = mean_counters(&launches).unwrap();
        assert!((r.counters.tex_hit_rate.unwrap() - 0.722).abs() < 1e-12);
        assert_eq!(r.counters.l2_hit_rate, Some(0.45));
        // byte and Mbyte read as bytes; an unknown unit is left out, not misread.
        assert_eq!(r.counters.dram_bytes, Some(2_000_000));
        // the plain profile has neither
        let plain = doc(&[row(0, "d_render", TEX_HIT_RATE_METRIC, "72.2")]);
        let r = &parse_launches(&plain, Some("d_render")).unwrap()[0];
        assert_eq!(
            (r.counters.l2_hit_rate, r.counters.dram_bytes),
            (None, None)
        );
    }
}
