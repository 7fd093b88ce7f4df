//! Cross-crate tests: the embedded kernel builds, launched through `instrument` on the emulator
//! device, decoded, stored and exported — the path every real run takes.

mod architecture;

use device::{Arg, Device, EmuDevice, LaunchConfig};
use emulator::GpuConfig;
use instrument::{AccessPeriod, Probe, ProbedArg, WarpSelection, launch_probed};
use trace::{Dim3, ProbeMode, RecordKind, Region, SiteInfo, Trace};

const N: usize = 4096;

struct Run {
    out: Vec<f32>,
    trace: Trace,
}

/// `probe_multi` (three independent global loads per thread) in `mode`, on a fresh emulator.
fn run_multi(mode: ProbeMode, trace_warps: WarpSelection) -> Run {
    run_multi_timing(mode, trace_warps, WarpSelection::all())
}

/// Timing: which warps time, and which of its accesses each timed warp times.
struct Timing {
    warps: WarpSelection,
    period: AccessPeriod,
}

impl Timing {
    fn warps(warps: WarpSelection) -> Timing {
        Timing {
            warps,
            period: AccessPeriod::ALL,
        }
    }
}

/// `probe_multi` in `mode` on a fresh emulator, with only `time_warps` (and the traced warps)
/// timing their accesses.
fn run_multi_timing(mode: ProbeMode, trace_warps: WarpSelection, time_warps: WarpSelection) -> Run {
    run_multi_sampled(mode, trace_warps, Timing::warps(time_warps))
}

/// `probe_multi` in `mode` on a fresh emulator, timing as `timing` says.
fn run_multi_sampled(mode: ProbeMode, trace_warps: WarpSelection, timing: Timing) -> Run {
    let mut dev = EmuDevice::new(GpuConfig::preset("gtx480").unwrap());
    run_multi_on(&mut dev, mode, trace_warps, timing)
}

/// `probe_multi` in `mode` on any device.
fn run_multi_on(
    dev: &mut dyn Device,
    mode: ProbeMode,
    trace_warps: WarpSelection,
    timing: Timing,
) -> Run {
    // Timing only some warps or accesses needs the sampled build, whose probes have the bare
    // path.
    let sampled =
        mode != ProbeMode::Off && instrument::needs_sampled_build(&timing.warps, timing.period);
    let build = kernels::find_build("probe_test", mode.ws_mode(), sampled)
        .expect("probe_test is built in every mode");
    multi_with(dev, build, mode, trace_warps, timing).unwrap()
}

/// `probe_multi` of `build` in `mode` on any device; the launch's error as text.
fn multi_with(
    dev: &mut dyn Device,
    build: &kernels::KernelBuild,
    mode: ProbeMode,
    trace_warps: WarpSelection,
    timing: Timing,
) -> Result<Run, String> {
    let entry = build.entry("probe_multi").expect("entry");
    let m = dev.load(build.ptx, Some(build.fatbin)).unwrap();
    let mut bufs: Vec<ProbedArg> = Vec::new();
    for k in 0..3 {
        let data: Vec<u8> = (0..N)
            .flat_map(|i| ((i * (k + 1)) as f32).to_le_bytes())
            .collect();
        let b = dev.alloc(data.len() as u64).unwrap();
        dev.upload(&b, &data).unwrap();
        bufs.push(Arg::Buf(b).into());
    }
    let out = dev.alloc((N * 4) as u64).unwrap();
    bufs.push(Arg::Buf(out).into());
    bufs.push(Arg::I32(N as i32).into());
    bufs.push(ProbedArg::Log);
    let cfg = LaunchConfig {
        grid: Dim3::new((N / 128) as u32, 1, 1),
        block: Dim3::new(128, 1, 1),
        dynamic_shared_bytes: 0,
        regs_per_thread: entry.registers,
    };
    let probe = Probe {
        mode,
        trace_warps,
        time_warps: timing.warps,
        access_period: timing.period,
        slots_per_warp: 8,
        sites: (0..3)
            .map(|s| {
                SiteInfo::new(
                    s,
                    format!("{}[i]", ["a", "b", "c"][s as usize]),
                    Region::Global,
                )
            })
            .collect(),
    };
    let p = launch_probed(dev, m, "probe_multi", &cfg, &bufs, &probe).map_err(|e| e.to_string())?;
    let mut bytes = vec![0u8; N * 4];
    dev.download(&out, &mut bytes).unwrap();
    Ok(Run {
        out: bytes
            .chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect(),
        trace: p.trace,
    })
}

fn mean_duration(t: &Trace) -> f64 {
    let d: Vec<f64> = t
        .warps
        .iter()
        .flat_map(|w| w.records.iter().map(|r| r.duration().0 as f64))
        .collect();
    d.iter().sum::<f64>() / d.len() as f64
}

/// The paper's effect through the real header, the real host code and the timing model: the naive
/// probe sees issue time, the completion probes see the memory latency; outputs never change (C3).
#[test]
fn naive_sees_issue_fence_and_dummy_see_completion() {
    let want: Vec<f32> = (0..N)
        .map(|i| i as f32 + 2.0 * (2 * i) as f32 + 4.0 * (3 * i) as f32)
        .collect();
    let off = run_multi(ProbeMode::Off, WarpSelection::all());
    assert_eq!(off.out, want);
    assert!(off.trace.warps.is_empty());
    let naive = run_multi(ProbeMode::Naive, WarpSelection::all());
    let fence = run_multi(ProbeMode::Fence, WarpSelection::all());
    let dummy = run_multi(ProbeMode::Dummy, WarpSelection::all());
    for r in [&naive, &fence, &dummy] {
        assert_eq!(r.out, want, "probes must not change the output");
        assert_eq!(r.trace.warps.len(), N / 32);
        assert_eq!(
            r.trace.record_count(),
            3 * (N / 32) as u64,
            "one record per site and warp"
        );
        assert_eq!(r.trace.dropped_count(), 0);
    }
    let (n, f, d) = (
        mean_duration(&naive.trace),
        mean_duration(&fence.trace),
        mean_duration(&dummy.trace),
    );
    assert!(
        n * 4.0 < f,
        "naive {n} should be a small fraction of fence {f}"
    );
    assert!(
        n * 4.0 < d,
        "naive {n} should be a small fraction of dummy {d}"
    );
}

/// One launch keeps statistics for every warp and records for the traced ones, and the two
/// agree: each traced warp's per-site count, sum, min and max, reduced on the device, equal what
/// its records give. Untraced warps have statistics only.
#[test]
fn statistics_and_records_of_one_launch_agree() {
    let r = run_multi(ProbeMode::Fence, "0-2,every:16".parse().unwrap());
    assert_eq!(r.trace.launch.kind, RecordKind::Summary);
    let traced: Vec<u32> = r
        .trace
        .warps
        .iter()
        .filter(|w| !w.records.is_empty())
        .map(|w| w.global_warp)
        .collect();
    assert_eq!(traced, vec![0, 1, 2, 16, 32, 48, 64, 80, 96, 112]);
    for w in &r.trace.warps {
        assert_eq!(w.summaries.len(), 3, "warp {}", w.global_warp);
        for s in &w.summaries {
            assert_eq!(s.count, 1);
            if w.records.is_empty() {
                continue;
            }
            let mine: Vec<u64> = w
                .records
                .iter()
                .filter(|x| x.site == s.site)
                .map(|x| x.duration().0)
                .collect();
            assert_eq!(mine.len() as u64, s.count);
            assert_eq!(mine.iter().sum::<u64>(), s.sum.0);
            assert_eq!(*mine.iter().min().unwrap(), s.min.0);
            assert_eq!(*mine.iter().max().unwrap(), s.max.0);
        }
    }
}

/// Sampled timing: with `--time-warps every:4` only every 4th warp (and the traced warp 1) times
/// its accesses; the others take the bare path, so their site tables stay empty, and the output
/// is the bare build's, byte for byte. The untimed warps also run faster than timed ones.
#[test]
fn only_the_selected_warps_time_and_the_output_is_the_bare_one() {
    let off = run_multi(ProbeMode::Off, WarpSelection::all());
    for mode in [ProbeMode::Naive, ProbeMode::Fence, ProbeMode::Dummy] {
        let r = run_multi_timing(mode, "1".parse().unwrap(), "every:4".parse().unwrap());
        let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        assert_eq!(bytes(&r.out), bytes(&off.out), "{mode:?}: output changed");
        assert_eq!(r.trace.warps.len(), N / 32);
        for w in &r.trace.warps {
            let timed = w.global_warp % 4 == 0 || w.global_warp == 1;
            let counts: Vec<u64> = w.summaries.iter().map(|s| s.count).collect();
            if timed {
                assert_eq!(counts, vec![1, 1, 1], "{mode:?} warp {}", w.global_warp);
            } else {
                assert!(
                    counts.is_empty(),
                    "{mode:?} warp {}: {counts:?}",
                    w.global_warp
                );
            }
            assert_eq!(w.records.is_empty(), w.global_warp != 1);
        }
        assert_eq!(r.trace.timed_access_count(), 3 * (N as u64 / 32 / 4 + 1));
        // The build that times every warp has no bare path: asked to leave warps untimed, the
        // launch fails, saying that the flag did not come back, rather than count them as timed.
        let mut dev = EmuDevice::new(GpuConfig::preset("gtx480").unwrap());
        let unsampled = kernels::find("probe_test", mode.ws_mode()).unwrap();
        let every4: WarpSelection = "every:4".parse().unwrap();
        let e = multi_with(
            &mut dev,
            unsampled,
            mode,
            "1".parse().unwrap(),
            Timing::warps(every4),
        )
        .err()
        .unwrap_or_else(|| panic!("{mode:?}: untimed warps accepted from a build without them"));
        assert!(e.contains("untimed flag"), "{mode:?}: {e}");
        if mode == ProbeMode::Fence {
            let life = |keep: fn(u32) -> bool| {
                let l: Vec<u64> = (r.trace.warps.iter())
                    .filter(|w| keep(w.global_warp))
                    .map(|w| w.lifetime().0)
                    .collect();
                l.iter().sum::<u64>() as f64 / l.len() as f64
            };
            let (timed, bare) = (life(|g| g % 4 == 0), life(|g| g % 4 == 3));
            assert!(bare < timed, "untimed warps {bare} cycles, timed {timed}");
        }
    }
}

/// Sampled accesses: with `--time-accesses every:N` a timed warp times its k-th access (all sites
/// together) when its global index plus k is a multiple of N, traced warps included, and the
/// output is the bare build's. A build that times everything is refused for it.
#[test]
fn each_warp_times_every_nth_access_from_its_phase() {
    let off = run_multi(ProbeMode::Off, WarpSelection::all());
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    for mode in [ProbeMode::Naive, ProbeMode::Fence, ProbeMode::Dummy] {
        for n in [2u32, 4, 8] {
            let timing = Timing {
                warps: WarpSelection::all(),
                period: AccessPeriod::new(n).unwrap(),
            };
            let r = run_multi_sampled(mode, "0-7".parse().unwrap(), timing);
            assert_eq!(bytes(&r.out), bytes(&off.out), "{mode:?} every:{n}");
            assert_eq!(r.trace.launch.access_period, n);
            for w in &r.trace.warps {
                // probe_multi's sites 0, 1, 2 are a warp's accesses 0, 1, 2.
                let want: Vec<u16> = (0..3u16)
                    .filter(|&k| (w.global_warp % 8 + u32::from(k)).is_multiple_of(n))
                    .collect();
                let timed: Vec<u16> = (w.summaries.iter())
                    .filter(|s| s.count > 0)
                    .map(|s| s.site)
                    .collect();
                assert_eq!(timed, want, "{mode:?} every:{n} warp {}", w.global_warp);
                assert!(w.summaries.iter().all(|s| s.count <= 1));
                let recorded: Vec<u16> = w.records.iter().map(|x| x.site).collect();
                let traced = w.global_warp < 8;
                assert_eq!(recorded, if traced { want } else { Vec::new() });
            }
        }
        let mut dev = EmuDevice::new(GpuConfig::preset("gtx480").unwrap());
        let unsampled = kernels::find("probe_test", mode.ws_mode()).unwrap();
        let every2 = Timing {
            warps: WarpSelection::all(),
            period: AccessPeriod::new(2).unwrap(),
        };
        let e = multi_with(&mut dev, unsampled, mode, WarpSelection::none(), every2)
            .err()
            .unwrap_or_else(|| panic!("{mode:?}: sampled accesses accepted from a build without"));
        assert!(e.contains("sampled build"), "{mode:?}: {e}");
    }
}

/// A log too small for the accesses counts what it drops instead of losing it silently, and the
/// trace store and CSV export carry the count.
#[test]
fn dropped_records_are_counted_stored_and_exported() {
    let build = kernels::find("probe_test", ProbeMode::Fence.ws_mode()).unwrap();
    let mut dev = EmuDevice::new(GpuConfig::preset("v100").unwrap());
    let m = dev.load(build.ptx, None).unwrap();
    let mut args: Vec<ProbedArg> = Vec::new();
    for _ in 0..4 {
        let b = dev.alloc(256 * 4).unwrap();
        args.push(Arg::Buf(b).into());
    }
    args.extend([Arg::I32(256).into(), ProbedArg::Log]);
    let cfg = LaunchConfig {
        grid: Dim3::new(2, 1, 1),
        block: Dim3::new(128, 1, 1),
        dynamic_shared_bytes: 0,
        regs_per_thread: 32,
    };
    let probe = Probe {
        mode: ProbeMode::Fence,
        trace_warps: WarpSelection::all(),
        time_warps: WarpSelection::all(),
        access_period: instrument::AccessPeriod::ALL,
        slots_per_warp: 2,
        sites: (0..3)
            .map(|s| SiteInfo::new(s, format!("s{s}"), Region::Global))
            .collect(),
    };
    let p = launch_probed(&mut dev, m, "probe_multi", &cfg, &args, &probe).unwrap();
    assert_eq!(p.trace.record_count(), 8 * 2);
    assert_eq!(p.trace.dropped_count(), 8);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join(trace::TRACE_FILE_NAME);
    trace::TraceWriter::write_all(&store, &p.trace).unwrap();
    let reader = trace::TraceReader::open(&store).unwrap();
    let csv = dir.path().join("warps.csv");
    let s = export::export(
        &reader,
        export::Format::WarpCsv,
        &csv,
        &export::ExportOptions::default(),
    )
    .unwrap();
    assert_eq!(s.dropped, 8);
    let rows = export::read_warps_csv(std::fs::File::open(&csv).unwrap()).unwrap();
    assert!(
        rows.iter().all(|r| r.dropped == 1),
        "each warp made 3 accesses into 2 slots"
    );
}

/// GPU only: on real silicon the fenced and dummy probes see completion, the naive one issue.
/// Runs where a CUDA GPU is usable and says why it skipped elsewhere (CI has no GPU).
#[test]
fn gpu_fenced_access_times_exceed_naive() {
    let mut gpu = match device::CudaDevice::open(0) {
        Ok(dev) => dev,
        Err(why) => {
            eprintln!("skipped (GPU-only test): {why}");
            return;
        }
    };
    let naive = run_multi_on(
        &mut gpu,
        ProbeMode::Naive,
        WarpSelection::all(),
        Timing::warps(WarpSelection::all()),
    );
    let fence = run_multi_on(
        &mut gpu,
        ProbeMode::Fence,
        WarpSelection::all(),
        Timing::warps(WarpSelection::all()),
    );
    let dummy = run_multi_on(
        &mut gpu,
        ProbeMode::Dummy,
        WarpSelection::all(),
        Timing::warps(WarpSelection::all()),
    );
    assert_eq!(naive.out, fence.out);
    assert_eq!(naive.out, dummy.out);
    let (n, f, d) = (
        mean_duration(&naive.trace),
        mean_duration(&fence.trace),
        mean_duration(&dummy.trace),
    );
    eprintln!("GPU mean access cycles: naive {n:.1}, fence {f:.1}, dummy {d:.1}");
    assert!(f > n && d > n, "naive {n} fence {f} dummy {d}");
}

/// `shfl.sync` reading lanes outside its member mask (undefined in PTX): out[t] for all 32
/// lanes shuffling from lane 0 with member mask 0x0000ffff, out[32 + t] for lanes 0..15
/// reading lanes 16..31, which branched to the kernel's end: exited, as ptxas emits the branch.
const SHFL_OUTSIDE_MASK_PTX: &str = ".version 8.0\n.target sm_75\n.address_size 64\n\
.visible .entry shfl_outside_mask(.param .u64 out)\n{\n\
 .reg .b64 %rd<8>;\n .reg .b32 %r<8>;\n .reg .pred %p<2>;\n\
 ld.param.u64 %rd1, [out];\n cvta.to.global.u64 %rd1, %rd1;\n mov.u32 %r1, %tid.x;\n\
 add.s32 %r2, %r1, 100;\n mul.wide.u32 %rd2, %r1, 4;\n add.s64 %rd3, %rd1, %rd2;\n\
 shfl.sync.idx.b32 %r3, %r2, 0, 31, 65535;\n st.global.u32 [%rd3], %r3;\n\
 setp.lt.u32 %p1, %r1, 16;\n @!%p1 bra $END;\n add.s32 %r4, %r1, 16;\n\
 shfl.sync.idx.b32 %r5, %r2, %r4, 31, 65535;\n st.global.u32 [%rd3+128], %r5;\n\
$END:\n ret;\n}\n";

fn shfl_outside_mask_on(dev: &mut dyn Device) -> Vec<u32> {
    let m = dev.load(SHFL_OUTSIDE_MASK_PTX, None).unwrap();
    let out = dev.alloc(64 * 4).unwrap();
    dev.upload(&out, &[0u8; 256]).unwrap();
    let cfg = LaunchConfig {
        grid: Dim3::new(1, 1, 1),
        block: Dim3::new(32, 1, 1),
        dynamic_shared_bytes: 0,
        regs_per_thread: 16,
    };
    dev.launch(m, "shfl_outside_mask", &cfg, &[Arg::Buf(out)])
        .unwrap();
    let mut bytes = vec![0u8; 256];
    dev.download(&out, &mut bytes).unwrap();
    bytes
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The emulator's answer (docs/guide/emulator.md, SIMT): a live source lane's register as it
/// is, and 0 from a lane that has exited, as an H200 gave (docs/gpu/contention.cu). On a GPU
/// (skipped elsewhere) the silicon must give the same.
#[test]
fn gpu_shfl_outside_member_mask_matches_emulator() {
    let emu = shfl_outside_mask_on(&mut EmuDevice::new(GpuConfig::preset("v100").unwrap()));
    let want: Vec<u32> = (0..64u32).map(|i| if i < 32 { 100 } else { 0 }).collect();
    assert_eq!(emu, want);
    let mut gpu = match device::CudaDevice::open(0) {
        Ok(dev) => dev,
        Err(why) => {
            eprintln!("skipped the GPU half (GPU-only): {why}");
            return;
        }
    };
    assert_eq!(shfl_outside_mask_on(&mut gpu), emu, "silicon vs emulator");
}
