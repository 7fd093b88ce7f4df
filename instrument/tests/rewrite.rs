//! The PTX rewriter on unmodified kernels: every corpus kernel, instrumented with `--mode auto`,
//! gives the same outputs as its bare run on the emulator, byte for byte, and its log holds
//! statistics and records for each probed load.

use device::{Arg, DevBuf, Device, EmuDevice, LaunchConfig};
use emulator::{GpuConfig, TexAddress, TexFilter, TexFormat, TextureDesc};
use instrument::rewrite::{RewriteOptions, SiteKind, instrument_ptx};
use instrument::{AccessPeriod, Probe, ProbedArg, ProbedLaunch, WarpSelection, launch_probed};
use trace::{Dim3, ProbeMode};

const BUF_BYTES: usize = 64 * 1024;
const GRID: [u32; 3] = [2, 2, 1];
/// 256 threads per block; transpose's tile loop needs its documented (32, 8).
fn block(kernel: &str) -> [u32; 3] {
    if kernel == "transpose" {
        [32, 8, 1]
    } else {
        [16, 16, 1]
    }
}

/// The `.param` types of entry `kernel`, in order (`u64`, `u32`, `f32`, ...).
fn param_types(ptx: &str, kernel: &str) -> Vec<String> {
    let start = ptx
        .find(&format!(".entry {kernel}("))
        .expect("entry in PTX");
    let list = &ptx[start..];
    let list = &list[..list.find(')').expect("parameter list ends")];
    list.lines()
        .filter_map(|l| l.trim().strip_prefix(".param"))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            // `.param .align 8 .b8 name[32]` is a by-value struct.
            if w.first() == Some(&".align") {
                "struct".to_string()
            } else {
                w[0].trim_start_matches('.').to_string()
            }
        })
        .collect()
}

/// Texture parameters of the corpus (a `cudaTextureObject_t` is a u64 in PTX, like a pointer).
fn is_texture(kernel: &str, index: usize) -> bool {
    matches!(
        (kernel, index),
        ("texture_sample", 0 | 1) | ("texture_rgba8", 0)
    )
}

fn is_roofline_n(kernel: &str, index: usize) -> bool {
    matches!(
        (kernel, index),
        ("roof_read" | "roof_copy" | "roof_sweep", 2) | ("roof_triad", 4)
    )
}

/// Runs per kernel: a second input where one parameter selects another code path.
fn variants(kernel: &str) -> usize {
    if kernel == "roof_sweep" { 2 } else { 1 }
}

struct Setup {
    args: Vec<Arg>,
    bufs: Vec<DevBuf>,
}

/// The same inputs for the bare and the instrumented run: every pointer a 64 KiB buffer of small
/// values (indices stay in range), every integer 64, every float 0.5, textures 64×64.
fn setup(dev: &mut dyn Device, ptx: &str, kernel: &str, variant: usize) -> Setup {
    let mut args = Vec::new();
    let mut bufs = Vec::new();
    let words: Vec<u8> = (0..BUF_BYTES / 4)
        .flat_map(|k| (((k * 7 + 3) % 61) as u32).to_le_bytes())
        .collect();
    for (i, ty) in param_types(ptx, kernel).iter().enumerate() {
        let arg = match ty.as_str() {
            "u64" | "b64" | "s64" if is_texture(kernel, i) => {
                let img: Vec<u8> = (0..64 * 64)
                    .flat_map(|k| (((k * 7) % 23) as f32).to_le_bytes())
                    .collect();
                let base = TextureDesc {
                    dims: 2,
                    width: 64,
                    height: 64,
                    depth: 1,
                    format: TexFormat::F32,
                    channels: 1,
                    normalized_read: false,
                    filter: TexFilter::Linear,
                    address: [TexAddress::Clamp; 3],
                    normalized_coords: false,
                    linear_buffer: None,
                };
                let desc = match (kernel, i) {
                    ("texture_sample", 1) => {
                        let b = dev.alloc(BUF_BYTES as u64).unwrap();
                        dev.upload(&b, &words).unwrap();
                        TextureDesc {
                            dims: 1,
                            height: 1,
                            filter: TexFilter::Point,
                            linear_buffer: Some(b.addr),
                            ..base
                        }
                    }
                    ("texture_rgba8", _) => TextureDesc {
                        format: TexFormat::U8,
                        channels: 4,
                        normalized_read: true,
                        filter: TexFilter::Point,
                        address: [TexAddress::Wrap; 3],
                        normalized_coords: true,
                        ..base
                    },
                    _ => base,
                };
                let data = if desc.linear_buffer.is_some() {
                    Vec::new()
                } else if desc.format == TexFormat::U8 {
                    (0..64 * 64 * 4).map(|k| (k * 37 % 256) as u8).collect()
                } else {
                    img
                };
                Arg::Tex(dev.create_texture(&desc, &data).unwrap())
            }
            "u64" | "b64" | "s64" => {
                let b = dev.alloc(BUF_BYTES as u64).unwrap();
                dev.upload(&b, &words).unwrap();
                bufs.push(b);
                Arg::Buf(b)
            }
            // The roofline kernels' grid-stride loops are unrolled by 4: 15 iterations and a part
            // run both the unrolled body and the remainder loop.
            "u32" | "s32" | "b32" if is_roofline_n(kernel, i) => Arg::U32(15 * 1024 + 7),
            // roof_sweep without FMAs takes a loop of its own.
            "u32" | "s32" | "b32" if (kernel, i, variant) == ("roof_sweep", 3, 1) => Arg::U32(0),
            "u32" | "s32" | "b32" => Arg::U32(64),
            "f32" => Arg::F32(0.5),
            other => panic!("{kernel}: parameter {i} of type {other} has no test input"),
        };
        args.push(arg);
    }
    Setup { args, bufs }
}

fn download(dev: &mut dyn Device, bufs: &[DevBuf]) -> Vec<Vec<u8>> {
    bufs.iter()
        .map(|b| {
            let mut v = vec![0u8; b.bytes as usize];
            dev.download(b, &mut v).unwrap();
            v
        })
        .collect()
}

fn config(kernel: &str) -> LaunchConfig {
    let b = block(kernel);
    LaunchConfig {
        grid: Dim3::new(GRID[0], GRID[1], GRID[2]),
        block: Dim3::new(b[0], b[1], b[2]),
        dynamic_shared_bytes: 0,
        regs_per_thread: 32,
    }
}

fn device() -> EmuDevice {
    EmuDevice::new(GpuConfig::preset("gtx480").unwrap())
}

/// The outputs of `kernel` of the uninstrumented `ptx`, run on a fresh device.
fn bare_outputs(ptx: &str, kernel: &str, variant: usize) -> Vec<Vec<u8>> {
    let mut bare = device();
    let s = setup(&mut bare, ptx, kernel, variant);
    let m = bare.load(ptx, None).unwrap();
    bare.launch(m, kernel, &config(kernel), &s.args)
        .unwrap_or_else(|e| panic!("{kernel} bare: {e}"));
    download(&mut bare, &s.bufs)
}

/// `kernel` of the instrumented `inst_ptx` launched with `probe` on a fresh device set up as for
/// the uninstrumented `ptx`: the launch and its outputs.
fn probed_run(
    ptx: &str,
    inst_ptx: &str,
    kernel: &str,
    variant: usize,
    probe: &Probe,
) -> (ProbedLaunch, Vec<Vec<u8>>) {
    let mut dev = device();
    let s = setup(&mut dev, ptx, kernel, variant);
    let m = dev.load(inst_ptx, None).unwrap();
    // The rewriter appends the ws::Log parameter last.
    let args: Vec<ProbedArg> = (s.args.iter().cloned().map(ProbedArg::from))
        .chain([ProbedArg::Log])
        .collect();
    let probed = launch_probed(&mut dev, m, kernel, &config(kernel), &args, probe)
        .unwrap_or_else(|e| panic!("{kernel} instrumented: {e}"));
    let out = download(&mut dev, &s.bufs);
    (probed, out)
}

#[test]
fn every_corpus_kernel_instrumented_with_auto_keeps_its_outputs_and_records_each_load() {
    let mut failures = Vec::new();
    let mut probed_kernels = 0;
    for c in kernels::corpus() {
        let inst = instrument_ptx(c.ptx, &RewriteOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        for entry in c.entries {
            let kernel = entry.name;
            let k = inst.kernel(kernel).expect("every entry instrumented");
            // Every selected load of the bare PTX became a site, in order.
            let body = &c.ptx[c.ptx.find(&format!(".entry {kernel}(")).unwrap()..];
            let body = &body[..body.find("\n}").unwrap()];
            let loads = body
                .lines()
                .filter(|l| {
                    let t = l.trim_start();
                    let t = t.strip_prefix('@').map_or(t, |g| {
                        g.split_once(char::is_whitespace)
                            .map_or("", |x| x.1)
                            .trim_start()
                    });
                    (t.starts_with("ld.")
                        && !t.starts_with("ld.param")
                        && !t.contains(".shared")
                        && !t.contains(".local"))
                        || t.starts_with("tex.")
                        || t.starts_with("ldu.")
                })
                .count();
            assert_eq!(k.sites.len(), loads, "{kernel}: one site per selected load");

            let mut counts = vec![(0u64, 0u64); k.sites.len()];
            for variant in 0..variants(kernel) {
                let want = bare_outputs(c.ptx, kernel, variant);
                let probe = Probe {
                    mode: ProbeMode::Auto,
                    trace_warps: WarpSelection::all(),
                    time_warps: WarpSelection::all(),
                    access_period: AccessPeriod::ALL,
                    slots_per_warp: 256,
                    sites: k.site_infos(),
                };
                let (probed, got) = probed_run(c.ptx, &inst.ptx, kernel, variant, &probe);
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    if g != w {
                        let at = g.iter().zip(w).position(|(a, b)| a != b).unwrap_or(0);
                        failures.push(format!("{kernel}: buffer {i} differs at byte {at}"));
                    }
                }
                let trace = &probed.trace;
                assert_eq!(trace.warps.len(), 32, "{kernel}: one log area per warp");
                assert!(
                    trace
                        .warps
                        .iter()
                        .all(|w| w.end.0 >= w.begin.0 && w.end.0 > 0),
                    "{kernel}: every warp ran WS_KERNEL_END"
                );
                for w in &trace.warps {
                    // Every access a traced warp counted was recorded or reported as dropped.
                    let counted: u64 = w.summaries.iter().map(|x| x.count).sum();
                    assert_eq!(
                        w.records.len() as u64 + u64::from(w.dropped),
                        counted,
                        "{kernel}: warp {}",
                        w.global_warp
                    );
                }
                for (i, site) in k.sites.iter().enumerate() {
                    let id = site.info.id;
                    let w = &trace.warps;
                    counts[i].0 += w
                        .iter()
                        .flat_map(|w| &w.summaries)
                        .filter(|x| x.site == id)
                        .map(|x| x.count)
                        .sum::<u64>();
                    counts[i].1 += w
                        .iter()
                        .flat_map(|w| &w.records)
                        .filter(|r| r.site == id)
                        .count() as u64;
                }
            }
            for (site, &(count, records)) in k.sites.iter().zip(&counts) {
                if count == 0 {
                    failures.push(format!(
                        "{kernel}: site {} ({}) has no statistics",
                        site.info.id, site.info.name
                    ));
                }
                if count > 0 && records == 0 {
                    failures.push(format!("{kernel}: site {} has no records", site.info.id));
                }
                let want = if site.kind.region().is_writable() {
                    ProbeMode::Fence
                } else {
                    ProbeMode::Dummy
                };
                assert_eq!(
                    site.method, want,
                    "{kernel}: auto's choice for {}",
                    site.kind
                );
            }
            probed_kernels += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(probed_kernels >= 17, "{probed_kernels} kernels checked");
}

/// Every corpus entry launched with the rewriter's sampled probes (auto, no warp traced), once
/// per `(time_warps, access period)` of `timings`, each launch's outputs checked against the bare
/// run's byte for byte: `f` sees the entry's name and its launches in that order. Returns how
/// many entries ran.
fn sampled_corpus(timings: &[(&str, u32)], mut f: impl FnMut(&str, &[ProbedLaunch])) -> usize {
    let sampled = RewriteOptions {
        sampled: true,
        ..RewriteOptions::default()
    };
    let mut checked = 0;
    for c in kernels::corpus() {
        let inst = instrument_ptx(c.ptx, &sampled).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        for entry in c.entries {
            let kernel = entry.name;
            let k = inst.kernel(kernel).expect("every entry instrumented");
            let want = bare_outputs(c.ptx, kernel, 0);
            let launches: Vec<ProbedLaunch> = (timings.iter())
                .map(|&(warps, period)| {
                    let probe = Probe {
                        mode: ProbeMode::Auto,
                        trace_warps: WarpSelection::none(),
                        time_warps: warps.parse().unwrap(),
                        access_period: AccessPeriod::new(period).unwrap(),
                        slots_per_warp: 8,
                        sites: k.site_infos(),
                    };
                    let (probed, got) = probed_run(c.ptx, &inst.ptx, kernel, 0, &probe);
                    assert_eq!(
                        got, want,
                        "{kernel} {warps} every:{period}: outputs changed"
                    );
                    assert_eq!(probed.trace.launch.access_period, period);
                    probed
                })
                .collect();
            f(kernel, &launches);
            checked += 1;
        }
    }
    checked
}

/// The rewriter's bare path: with `every:4` timing and no warp traced, every corpus kernel's
/// outputs are the bare run's, byte for byte, and only every 4th warp has statistics.
#[test]
fn with_sampled_timing_only_the_selected_warps_time_and_outputs_stay_bare() {
    let mut timed_accesses = 0;
    let checked = sampled_corpus(&[("every:4", 1)], |kernel, launches| {
        let probed = &launches[0];
        assert_eq!(probed.timed_warps, 8, "{kernel}: 8 of 32 warps timed");
        for w in &probed.trace.warps {
            if w.global_warp % 4 != 0 {
                assert!(
                    w.summaries.is_empty(),
                    "{kernel}: untimed warp {} timed {:?}",
                    w.global_warp,
                    w.summaries
                );
            }
        }
        timed_accesses += probed.trace.timed_access_count();
    });
    assert!(checked >= 17, "{checked} kernels checked");
    assert!(
        timed_accesses > 0,
        "the selected warps timed their accesses"
    );
}

/// Where a traced warp lets the truth be paired, every warp's loads are recorded, not only the
/// timed warps': the run's `load_shift` is the memory system's as a whole. With no warp traced,
/// nothing can be paired and nothing is recorded.
#[test]
fn every_warp_records_its_loads_whichever_warps_time() {
    let c = kernels::find_corpus("histogram_global").expect("corpus kernel");
    let kernel = "histogram_global";
    let sampled = RewriteOptions {
        sampled: true,
        ..RewriteOptions::default()
    };
    let inst = instrument_ptx(c.ptx, &sampled).unwrap();
    let recorded = |trace_warps: &str| {
        let probe = Probe {
            mode: ProbeMode::Fence,
            trace_warps: trace_warps.parse().unwrap(),
            time_warps: "every:4".parse().unwrap(),
            access_period: AccessPeriod::new(1).unwrap(),
            slots_per_warp: 8,
            sites: inst.kernel(kernel).unwrap().site_infos(),
        };
        let (probed, _) = probed_run(c.ptx, &inst.ptx, kernel, 0, &probe);
        assert_eq!(probed.timed_warps, 8, "8 of 32 warps timed");
        let warps: std::collections::BTreeSet<u64> = (probed.outcome.loads.iter().flatten())
            .map(|e| e.warp)
            .collect();
        warps.len()
    };
    assert_eq!(recorded("every:8"), 32, "the untimed warps' loads too");
    assert_eq!(recorded("none"), 0);
}

/// The rewriter's access sampling: with `--time-accesses every:4` every corpus kernel's outputs
/// are the bare run's, no kernel times more than with every access timed, and the corpus as a
/// whole times at least a quarter as many and well under half. Not exactly a quarter: each lane
/// counts its own accesses, so a group of lanes that made different numbers of accesses before
/// running together again decides apart, and a part of it times its access where a warp whose
/// lanes agree would not.
#[test]
fn with_sampled_accesses_a_quarter_time_and_outputs_stay_bare() {
    let (mut every, mut quarter) = (0u64, 0u64);
    let checked = sampled_corpus(&[("all", 1), ("all", 4)], |kernel, launches| {
        let [all, fourth] = [&launches[0], &launches[1]].map(|l| l.trace.timed_access_count());
        assert!(fourth <= all, "{kernel}: {fourth} of {all} accesses timed");
        every += all;
        quarter += fourth;
    });
    assert!(checked >= 17, "{checked} kernels checked");
    assert!(
        4 * quarter >= every && 5 * quarter < 2 * every,
        "{quarter} of {every} accesses timed"
    );
}

#[test]
fn sites_are_named_by_ptx_line_and_exits_reach_one_end() {
    let c = kernels::find_corpus("histogram_global").expect("corpus kernel");
    let inst = instrument_ptx(c.ptx, &RewriteOptions::default()).unwrap();
    let k = inst.kernel("histogram_global").unwrap();
    assert_eq!(k.sites.len(), 1, "one global load (the byte)");
    let line = k.sites[0].ptx_line;
    assert!(
        c.ptx
            .lines()
            .nth(line - 1)
            .unwrap()
            .contains("ld.global.u8")
    );
    assert_eq!(k.sites[0].info.name, format!("ptx:{line}"));
    assert_eq!(k.sites[0].kind, SiteKind::Global);
    assert_eq!(
        inst.ptx.matches("\tret;").count(),
        1,
        "a single return, after WS_KERNEL_END"
    );
    assert!(
        inst.ptx
            .contains(".param .align 8 .b8 histogram_global_ws_log[32]")
    );
    assert_eq!(
        instrument::rewrite::sites_in_ptx(&inst.ptx, "histogram_global").unwrap(),
        k.site_infos()
    );
    assert_eq!(
        instrument::rewrite::mode_of_ptx(&inst.ptx),
        Some(ProbeMode::Auto)
    );
    // Instrumenting twice is refused, not stacked.
    assert!(instrument_ptx(&inst.ptx, &RewriteOptions::default()).is_err());
}

/// A hand-written kernel with what nvcc output does not always show: an early predicated `ret`,
/// a guarded load, and an entry without parameters.
const SMALL: &str = "\
.version 9.0
.target sm_75
.address_size 64

.visible .entry k(
	.param .u64 k_param_0,
	.param .u32 k_param_1
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<4>;
	.reg .f32 	%f<3>;
	.reg .b64 	%rd<4>;

	ld.param.u64 	%rd1, [k_param_0];
	ld.param.u32 	%r1, [k_param_1];
	mov.u32 	%r2, %tid.x;
	setp.ge.u32 	%p1, %r2, %r1;
	@%p1 ret;
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.u32 	%rd3, %r2, 4;
	add.s64 	%rd2, %rd2, %rd3;
	mov.f32 	%f1, 0f3F800000;
	setp.lt.u32 	%p2, %r2, 8;
	@%p2 ld.global.nc.f32 	%f1, [%rd2];
	add.f32 	%f2, %f1, %f1;
	st.global.f32 	[%rd2], %f2;
	ret;
}

.visible .entry empty()
{
	ret;
}
";

#[test]
fn guarded_loads_and_early_returns_on_the_emulator() {
    let inst = instrument_ptx(SMALL, &RewriteOptions::default()).unwrap();
    let k = inst.kernel("k").unwrap();
    assert_eq!(k.sites.len(), 1);
    assert_eq!(k.sites[0].kind, SiteKind::ReadOnly);
    assert_eq!(
        k.sites[0].method,
        ProbeMode::Dummy,
        "auto: read-only → dummy"
    );
    let line = |text: &str| {
        text.lines()
            .position(|l| l.contains("ld.global.nc"))
            .unwrap()
            + 1
    };
    assert_eq!(k.sites[0].info.name, format!("ptx:{}", line(SMALL)));
    assert!(inst.kernel("empty").unwrap().sites.is_empty());
    assert!(inst.ptx.contains("@%p1 bra \t$WS_EXIT;"));
    assert_eq!(
        inst.ptx.matches("\tret;").count(),
        2,
        "one return per entry"
    );

    let data: Vec<u8> = (0..64).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let cfg = LaunchConfig {
        grid: Dim3::new(1, 1, 1),
        block: Dim3::new(64, 1, 1),
        dynamic_shared_bytes: 0,
        regs_per_thread: 32,
    };
    let run = |ptx: &str, probed: bool| {
        let mut dev = device();
        let b = dev.alloc(data.len() as u64).unwrap();
        dev.upload(&b, &data).unwrap();
        let m = dev.load(ptx, None).unwrap();
        let args = vec![Arg::Buf(b), Arg::U32(40)];
        let trace = if probed {
            let args: Vec<ProbedArg> = (args.iter().cloned().map(ProbedArg::from))
                .chain([ProbedArg::Log])
                .collect();
            let probe = Probe {
                mode: ProbeMode::Auto,
                trace_warps: WarpSelection::all(),
                time_warps: WarpSelection::all(),
                access_period: AccessPeriod::ALL,
                slots_per_warp: 8,
                sites: k.site_infos(),
            };
            Some(
                launch_probed(&mut dev, m, "k", &cfg, &args, &probe)
                    .unwrap()
                    .trace,
            )
        } else {
            dev.launch(m, "k", &cfg, &args).unwrap();
            None
        };
        (download(&mut dev, &[b]).remove(0), trace)
    };
    let (want, _) = run(SMALL, false);
    let (got, trace) = run(&inst.ptx, true);
    assert_eq!(got, want, "outputs unchanged");
    let trace = trace.unwrap();
    // Lanes 0..7 of warp 0 load; warp 1 (lanes 32..39 active, 40.. returned) does not.
    let counts: Vec<u64> = trace
        .warps
        .iter()
        .map(|w| w.summaries.iter().map(|s| s.count).sum())
        .collect();
    assert_eq!(counts, vec![1, 0]);
    assert_eq!(trace.warps[0].records.len(), 1);
    assert!(
        trace.warps.iter().all(|w| w.end.0 > w.begin.0),
        "END ran in both warps"
    );
}

#[test]
fn one_kernel_and_clear_refusals() {
    let only = RewriteOptions {
        kernel: Some("empty".into()),
        ..RewriteOptions::default()
    };
    let inst = instrument_ptx(SMALL, &only).unwrap();
    assert_eq!(inst.kernels.len(), 1);
    assert!(!inst.ptx.contains("k_ws_log"), "k is left as it was");
    assert!(inst.ptx.contains(".param .align 8 .b8 empty_ws_log[32]"));

    let e = instrument_ptx(
        SMALL,
        &RewriteOptions {
            kernel: Some("nope".into()),
            ..RewriteOptions::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("nope") && e.contains("k, empty"), "{e}");
    let off = RewriteOptions {
        mode: ProbeMode::Off,
        ..RewriteOptions::default()
    };
    assert!(instrument_ptx(SMALL, &off).is_err());
    let undeclared = SMALL.replace("\t.reg .f32 \t%f<3>;\n", "");
    let e = instrument_ptx(&undeclared, &RewriteOptions::default())
        .unwrap_err()
        .to_string();
    let at = undeclared
        .lines()
        .position(|l| l.contains("ld.global.nc"))
        .unwrap()
        + 1;
    assert!(
        e.contains(&format!("kernel \"k\", PTX line {at}")) && e.contains("%f1"),
        "{e}"
    );
}

#[test]
fn truncated_or_mangled_ptx_gives_an_error_not_a_panic() {
    // Every corpus module cut at many points, and with lines dropped: the rewriter returns a
    // result (usually an error naming kernel and line), never panics.
    let mut errors = 0;
    for c in kernels::corpus().iter().take(6) {
        let mut cut = 0;
        while cut < c.ptx.len() {
            if c.ptx.is_char_boundary(cut)
                && instrument_ptx(&c.ptx[..cut], &RewriteOptions::default()).is_err()
            {
                errors += 1;
            }
            cut += 211;
        }
        for skip in (0..c.ptx.lines().count()).step_by(7) {
            let text: String = c
                .ptx
                .lines()
                .enumerate()
                .filter(|(i, _)| *i != skip)
                .map(|(_, l)| format!("{l}\n"))
                .collect();
            let _ = instrument_ptx(&text, &RewriteOptions::default());
        }
    }
    assert!(errors > 0, "cut modules are refused");
}
