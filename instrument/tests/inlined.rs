//! Site names from the PTX line table: a load in inlined code (the `__ldg` intrinsic, a user helper
//! inlined two deep, a kernel written in a header) is named by the line in the kernel's own
//! function with the inlined position kept; a PTX without a line table is named by PTX line and
//! the result says so; a malformed `inlined_at` is an error naming kernel and line.
//!
//! The inputs are `fixtures/inlined.cu` (with `inlined.cuh`) and nvcc 13.0's PTX of it, with and
//! without `-lineinfo`, checked in with the commands that made them (`fixtures/inlined.cmd`).

use device::{Arg, Device, EmuDevice, LaunchConfig};
use emulator::GpuConfig;
use instrument::rewrite::{RewriteOptions, instrument_ptx, sites_in_ptx};
use instrument::{Probe, ProbedArg, WarpSelection, launch_probed};
use trace::{Dim3, ProbeMode};

const LINEINFO: &str = include_str!("fixtures/inlined.ptx");
const NO_LINEINFO: &str = include_str!("fixtures/inlined_noline.ptx");

/// The 1-based PTX lines of the loads of `kernel` (not `ld.param`).
fn load_lines(ptx: &str, kernel: &str) -> Vec<usize> {
    let start = ptx.find(&format!(".entry {kernel}(")).expect("entry");
    let first = ptx[..start].lines().count();
    ptx[start..]
        .lines()
        .take_while(|l| !l.starts_with('}'))
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("ld.global"))
        .map(|(i, _)| first + i)
        .collect()
}

#[test]
fn loads_in_inlined_code_are_named_by_the_kernels_line() {
    let inst = instrument_ptx(LINEINFO, &RewriteOptions::default()).unwrap();
    assert!(inst.line_table);
    assert_eq!(inst.line_table_note(), None);
    let names = |kernel: &str| -> Vec<String> {
        let k = inst.kernel(kernel).unwrap();
        let lines: Vec<usize> = k.sites.iter().map(|s| s.ptx_line).collect();
        assert_eq!(
            lines,
            load_lines(LINEINFO, kernel),
            "{kernel}: one site per load"
        );
        k.sites.iter().map(|s| s.info.name.clone()).collect()
    };
    assert_eq!(
        names("gather"),
        [
            "inlined.cu:15",
            "inlined.cu:16 (inlined: sm_32_intrinsics.hpp:134)",
            // load_pair (line 17) → load_one (line 10) → the load (line 6), twice.
            "inlined.cu:17 (inlined: inlined.cu:6)",
            "inlined.cu:17 (inlined: inlined.cu:6)",
        ]
    );
    // The outermost position is the user's line whatever its file.
    assert_eq!(
        names("in_header"),
        ["inlined.cuh:4 (inlined: sm_32_intrinsics.hpp:134)"]
    );
    // The names survive the instrumented PTX's site comments, which a later launch reads.
    for kernel in ["gather", "in_header"] {
        assert_eq!(
            sites_in_ptx(&inst.ptx, kernel).unwrap(),
            inst.kernel(kernel).unwrap().site_infos()
        );
    }
}

#[test]
fn an_inlined_site_runs_and_its_trace_carries_the_name() {
    let inst = instrument_ptx(LINEINFO, &RewriteOptions::default()).unwrap();
    let k = inst.kernel("gather").unwrap();
    let n = 64usize;
    let cfg = LaunchConfig {
        grid: Dim3::new(1, 1, 1),
        block: Dim3::new(n as u32, 1, 1),
        dynamic_shared_bytes: 0,
        regs_per_thread: 32,
    };
    let floats: Vec<u8> = (0..=n).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let idx: Vec<u8> = (0..n)
        .flat_map(|i| ((n - 1 - i) as u32).to_le_bytes())
        .collect();
    let mut dev = EmuDevice::new(GpuConfig::preset("gtx480").unwrap());
    let mut buf = |bytes: &[u8]| {
        let b = dev.alloc(bytes.len() as u64).unwrap();
        dev.upload(&b, bytes).unwrap();
        b
    };
    let (x, i, y, out) = (
        buf(&floats),
        buf(&idx),
        buf(&floats),
        buf(&vec![0u8; 4 * n]),
    );
    let m = dev.load(&inst.ptx, None).unwrap();
    let args: Vec<ProbedArg> = [x, i, y, out]
        .into_iter()
        .map(|b| ProbedArg::from(Arg::Buf(b)))
        .chain([ProbedArg::Log])
        .collect();
    let probe = Probe {
        mode: ProbeMode::Auto,
        trace_warps: WarpSelection::all(),
        time_warps: WarpSelection::all(),
        access_period: instrument::AccessPeriod::ALL,
        slots_per_warp: 8,
        sites: k.site_infos(),
    };
    let trace = launch_probed(&mut dev, m, "gather", &cfg, &args, &probe)
        .unwrap()
        .trace;
    let mut got = vec![0u8; 4 * n];
    dev.download(&out, &mut got).unwrap();
    // out[i] = x[j] + y[j] + y[j + 1] with j = n - 1 - i and x = y = 0, 1, 2, ...
    let want: Vec<u8> = (0..n)
        .flat_map(|i| (3.0 * (n - 1 - i) as f32 + 1.0).to_le_bytes())
        .collect();
    assert_eq!(got, want, "the kernel's output is unchanged");
    let names: Vec<&str> = trace.launch.sites.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names[1],
        "inlined.cu:16 (inlined: sm_32_intrinsics.hpp:134)"
    );
    // Every site was timed once per warp.
    for s in &trace.launch.sites {
        let count: u64 = trace
            .warps
            .iter()
            .flat_map(|w| &w.summaries)
            .filter(|x| x.site == s.id)
            .map(|x| x.count)
            .sum();
        assert_eq!(count, 2, "{}", s.name);
    }
}

#[test]
fn without_a_line_table_sites_are_named_by_ptx_line_and_the_result_says_so() {
    let inst = instrument_ptx(NO_LINEINFO, &RewriteOptions::default()).unwrap();
    assert!(!inst.line_table);
    let note = inst.line_table_note().unwrap();
    assert!(note.contains("-lineinfo"), "{note}");
    let k = inst.kernel("gather").unwrap();
    let names: Vec<String> = k.sites.iter().map(|s| s.info.name.clone()).collect();
    let want: Vec<String> = load_lines(NO_LINEINFO, "gather")
        .iter()
        .map(|l| format!("ptx:{l}"))
        .collect();
    assert_eq!(names, want);
}

#[test]
fn a_malformed_inlined_at_is_refused_with_kernel_and_line() {
    let at = LINEINFO
        .lines()
        .position(|l| l.contains("inlined_at 3 10 5"))
        .unwrap();
    for bad in ["inlined_at 3 ten 5", "inlined_at 3 10", "inlined_at"] {
        let ptx: String = LINEINFO
            .lines()
            .enumerate()
            .map(|(i, l)| {
                let l = if i == at {
                    l.replace("inlined_at 3 10 5", bad)
                } else {
                    l.to_string()
                };
                l + "\n"
            })
            .collect();
        let e = instrument_ptx(&ptx, &RewriteOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("kernel \"gather\", PTX line {}", at + 1))
                && e.contains("`inlined_at` needs FILE LINE COL"),
            "{bad}: {e}"
        );
    }
    // Cut anywhere, inside a `.loc` too: a result, never a panic.
    let refused = (0..LINEINFO.len())
        .step_by(7)
        .filter(|&cut| LINEINFO.is_char_boundary(cut))
        .filter(|&cut| instrument_ptx(&LINEINFO[..cut], &RewriteOptions::default()).is_err())
        .count();
    assert!(refused > 0, "cut modules are refused");
}
