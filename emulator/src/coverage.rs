//! PTX coverage as data: the instructions and special registers that CUDA 12/13's nvcc emits
//! for sm_70–sm_90 (PTX ISA 6.0–8.x), each with a one-line example, and whether the emulator
//! runs it — decided by decoding the example with the emulator's own decoder, so the table
//! cannot claim more than the decoder does. The README carries [`coverage_markdown`]; an
//! integration test regenerates it and fails when the README's copy differs
//! (`WS_REGEN_COVERAGE=1` rewrites it).
//!
//! ```
//! let rows = emulator::coverage();
//! assert!(rows.iter().any(|r| r.name == "shfl.sync" && r.supported));
//! assert!(emulator::coverage_markdown().starts_with("| PTX |"));
//! ```

use crate::decode::decode_module;
use crate::error::EmuError;
use crate::ir::Op;
use crate::ptx;

/// One instruction family or special register.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoverageRow {
    /// `add`, `ld.global.nc`, `%laneid`, ...
    pub name: &'static str,
    /// A statement as nvcc writes it.
    pub example: &'static str,
    pub supported: bool,
    /// Why not, in the decoder's words (empty when supported).
    pub note: String,
}

/// (name, example) — instruction families, in PTX ISA chapter order, then special registers.
/// Registers the examples may use: %r (b32), %rd (b64), %f (f32), %fd (f64), %h (b16), %p
/// (pred); `sh` is a shared array, `L` a label, `f` a function without parameters.
const ROWS: &[(&str, &str)] = &[
    // integer arithmetic
    ("add / sub", "add.s32 %r1, %r2, %r3;"),
    (
        "add.cc / addc / sub.cc / subc",
        "addc.cc.u32 %r1, %r2, %r3;",
    ),
    ("mul.lo / .hi / .wide", "mul.wide.s32 %rd1, %r2, %r3;"),
    ("mad.lo / .hi / .wide", "mad.lo.s32 %r1, %r2, %r3, %r4;"),
    ("mad.cc / madc", "madc.hi.cc.u32 %r1, %r2, %r3, %r4;"),
    ("mul24 / mad24", "mul24.lo.s32 %r1, %r2, %r3;"),
    ("sad", "sad.u32 %r1, %r2, %r3, %r4;"),
    ("div / rem (integer)", "div.s32 %r1, %r2, %r3;"),
    ("abs / neg (integer)", "abs.s32 %r1, %r2;"),
    ("min / max (integer)", "max.u32 %r1, %r2, %r3;"),
    ("popc", "popc.b32 %r1, %r2;"),
    ("clz", "clz.b32 %r1, %r2;"),
    ("bfind", "bfind.u32 %r1, %r2;"),
    ("fns", "fns.b32 %r1, %r2, %r3, %r4;"),
    ("brev", "brev.b32 %r1, %r2;"),
    ("bfe", "bfe.u32 %r1, %r2, %r3, %r4;"),
    ("bfi", "bfi.b32 %r1, %r2, %r3, %r4, %r5;"),
    ("szext", "szext.wrap.s32 %r1, %r2, %r3;"),
    ("bmsk", "bmsk.clamp.b32 %r1, %r2, %r3;"),
    ("dp4a", "dp4a.u32.u32 %r1, %r2, %r3, %r4;"),
    ("dp2a", "dp2a.lo.u32.u32 %r1, %r2, %r3, %r4;"),
    // floating point
    ("add / sub / mul (float)", "add.rn.f32 %f1, %f2, %f3;"),
    ("fma", "fma.rn.f32 %f1, %f2, %f3, %f4;"),
    ("mad (float)", "mad.rn.f64 %fd1, %fd2, %fd3, %fd4;"),
    ("div (float)", "div.rn.f32 %f1, %f2, %f3;"),
    ("div.approx / div.full", "div.full.f32 %f1, %f2, %f3;"),
    ("abs / neg (float)", "abs.ftz.f32 %f1, %f2;"),
    ("min / max (float)", "max.NaN.f32 %f1, %f2, %f3;"),
    ("rcp", "rcp.rn.f64 %fd1, %fd2;"),
    ("sqrt", "sqrt.rn.f32 %f1, %f2;"),
    ("rsqrt", "rsqrt.approx.f32 %f1, %f2;"),
    ("sin / cos", "sin.approx.ftz.f32 %f1, %f2;"),
    ("lg2 / ex2", "ex2.approx.ftz.f32 %f1, %f2;"),
    ("tanh", "tanh.approx.f32 %f1, %f2;"),
    ("copysign", "copysign.f32 %f1, %f2, %f3;"),
    ("testp", "testp.finite.f32 %p1, %f2;"),
    (
        "half: add / mul / fma (f16, f16x2, bf16)",
        "fma.rn.f16x2 %r1, %r2, %r3, %r4;",
    ),
    // comparison and selection
    ("setp", "setp.lt.and.s32 %p1, %r2, %r3, %p2;"),
    ("set", "set.lt.u32.f32 %r1, %f2, %f3;"),
    ("selp", "selp.b32 %r1, %r2, %r3, %p1;"),
    ("slct", "slct.s32.s32 %r1, %r2, %r3, %r4;"),
    // logic and shift
    ("and / or / xor / not / cnot", "xor.b32 %r1, %r2, %r3;"),
    ("lop3", "lop3.b32 %r1, %r2, %r3, %r4, 0x96;"),
    ("shl / shr", "shr.s32 %r1, %r2, %r3;"),
    ("shf", "shf.l.wrap.b32 %r1, %r2, %r3, %r4;"),
    ("prmt", "prmt.b32 %r1, %r2, %r3, %r4;"),
    // data movement and conversion
    ("mov", "mov.u32 %r1, %r2;"),
    ("mov (pack / unpack)", "mov.b64 %rd1, {%r2, %r3};"),
    ("cvt", "cvt.rn.f32.s32 %f1, %r2;"),
    (
        "cvt (pack, f16x2 / bf16x2)",
        "cvt.rn.f16x2.f32 %r1, %f2, %f3;",
    ),
    ("cvta / cvta.to", "cvta.to.global.u64 %rd1, %rd2;"),
    ("isspacep", "isspacep.shared.u64 %p1, %rd2;"),
    ("ld", "ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1+16];"),
    ("ld.global.nc / ldu", "ld.global.nc.u32 %r1, [%rd1];"),
    (
        "ld (cache hint)",
        "ld.global.L1::no_allocate.u32 %r1, [%rd1];",
    ),
    ("ld.shared (32-bit address)", "ld.shared.u32 %r1, [%r2+68];"),
    (
        "ld.acquire / ld.relaxed / ld.volatile",
        "ld.acquire.gpu.global.u32 %r1, [%rd1];",
    ),
    ("st", "st.global.v2.f32 [%rd1], {%f1, %f2};"),
    (
        "prefetch / prefetchu",
        "prefetch.global.L2::evict_last [%rd1];",
    ),
    ("applypriority / discard", "discard.global.L2 [%rd1], 128;"),
    (
        "createpolicy",
        "createpolicy.fractional.L2::evict_last.b64 %rd1, 1.0;",
    ),
    ("cp.async", "cp.async.ca.shared.global [%r1], [%rd1], 16;"),
    (
        "cp.async.commit_group / wait_group",
        "cp.async.wait_group 0;",
    ),
    (
        "cp.async.bulk (TMA)",
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 16, [%r2];",
    ),
    ("mbarrier", "mbarrier.init.shared.b64 [%r1], %r2;"),
    (
        "ldmatrix / stmatrix",
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r5];",
    ),
    // atomics
    (
        "atom (add, min, max, inc, dec, and, or, xor)",
        "atom.global.add.u32 %r1, [%rd1], %r2;",
    ),
    (
        "atom.cas / atom.exch",
        "atom.shared.cas.b32 %r1, [%r2], %r3, %r4;",
    ),
    (
        "atom.add.f32 / f64",
        "atom.global.add.f64 %fd1, [%rd1], %fd2;",
    ),
    (
        "atom (scope, order)",
        "atom.acq_rel.gpu.global.add.u32 %r1, [%rd1], %r2;",
    ),
    ("red", "red.global.add.f32 [%rd1], %f1;"),
    // textures and surfaces
    (
        "tex (1d, 2d, 3d; texture objects)",
        "tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}];",
    ),
    (
        "tex.level / tex.grad",
        "tex.level.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}], %f7;",
    ),
    (
        "tld4",
        "tld4.r.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}];",
    ),
    ("txq", "txq.width.b32 %r1, [%rd1];"),
    (
        "suld / sust",
        "suld.b.2d.b32.trap {%r1}, [%rd1, {%r2, %r3}];",
    ),
    // control flow
    ("bra", "bra.uni L;"),
    ("brx.idx", "brx.idx %r1, T;"),
    ("call (direct, inlined)", "call.uni f, ();"),
    ("ret / exit", "exit;"),
    ("trap / brkpt", "trap;"),
    ("nanosleep", "nanosleep.u32 100;"),
    ("pmevent", "pmevent 1;"),
    // synchronisation and warp-level
    ("bar.sync / barrier.sync", "bar.sync 0;"),
    ("bar.arrive", "bar.arrive 1, 64;"),
    ("bar.red", "bar.red.popc.u32 %r1, 0, %p1;"),
    ("bar.warp.sync", "bar.warp.sync -1;"),
    ("barrier.cluster", "barrier.cluster.arrive;"),
    ("membar / fence", "fence.acq_rel.gpu;"),
    ("fence.proxy", "fence.proxy.async;"),
    ("shfl.sync", "shfl.sync.bfly.b32 %r1|%p1, %r2, 1, 31, -1;"),
    ("vote.sync", "vote.sync.ballot.b32 %r1, %p1, -1;"),
    (
        "match.any.sync / match.all.sync",
        "match.any.sync.b32 %r1, %r2, -1;",
    ),
    ("activemask", "activemask.b32 %r1;"),
    ("redux.sync", "redux.sync.add.u32 %r1, %r2, -1;"),
    ("elect.sync", "elect.sync %r1|%p1, -1;"),
    ("griddepcontrol", "griddepcontrol.launch_dependents;"),
    ("setmaxnreg", "setmaxnreg.inc.sync.aligned.u32 232;"),
    // matrix
    (
        "wmma",
        "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, {%r9, %r10, %r11, %r12, %r13, %r14, %r15, %r16}, {%f9, %f10, %f11, %f12, %f13, %f14, %f15, %f16};",
    ),
    (
        "mma.sync",
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2}, {%r3}, {%f5, %f6, %f7, %f8};",
    ),
    ("wgmma", "wgmma.fence.sync.aligned;"),
    // stack and clusters
    ("alloca / stacksave / stackrestore", "stacksave.u64 %rd1;"),
    (
        "mapa / getctarank",
        "mapa.shared::cluster.u32 %r1, %r2, %r3;",
    ),
    // special registers and constants
    ("%tid / %ntid", "mov.u32 %r1, %tid.x;"),
    ("%ctaid / %nctaid", "mov.u32 %r1, %nctaid.y;"),
    ("%laneid", "mov.u32 %r1, %laneid;"),
    ("%warpid / %nwarpid", "mov.u32 %r1, %warpid;"),
    ("%smid / %nsmid", "mov.u32 %r1, %smid;"),
    ("%gridid", "mov.u64 %rd1, %gridid;"),
    (
        "%lanemask_eq / _lt / _le / _gt / _ge",
        "mov.u32 %r1, %lanemask_lt;",
    ),
    ("%clock / %clock_hi", "mov.u32 %r1, %clock;"),
    ("%clock64", "mov.u64 %rd1, %clock64;"),
    ("%globaltimer", "mov.u64 %rd1, %globaltimer;"),
    (
        "%dynamic_smem_size / %total_smem_size",
        "mov.u32 %r1, %dynamic_smem_size;",
    ),
    ("%envreg", "mov.u32 %r1, %envreg3;"),
    ("%pm0 … %pm7", "mov.u32 %r1, %pm0;"),
    ("%aggr_smem_size", "mov.u32 %r1, %aggr_smem_size;"),
    (
        "%cluster_ctaid / %clusterid / %cluster_ctarank",
        "mov.u32 %r1, %cluster_ctarank;",
    ),
    ("WARP_SZ (warpSize)", "mov.u32 %r1, WARP_SZ;"),
];

/// Decodes `example` inside a kernel that declares everything the examples use.
fn decode_example(example: &str) -> Result<(), String> {
    let src = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .func f()\n{{\n ret;\n}}\n\
         .visible .entry k()\n{{\n\
         .shared .align 8 .b8 sh[256];\n\
         .reg .b32 %r<20>;\n.reg .b64 %rd<20>;\n.reg .f32 %f<20>;\n.reg .f64 %fd<20>;\n\
         .reg .b16 %h<10>;\n.reg .pred %p<5>;\n\
         {example}\n\
         L:\n ret;\n}}\n"
    );
    let ast = ptx::parse(&src).map_err(|e| e.to_string())?;
    let m = decode_module(&ast).map_err(|e| e.to_string())?;
    let k = m.kernels.first().ok_or("no kernel")?;
    if let Some(EmuError::Unusable { what, .. }) = &k.unusable {
        return Err(what.clone());
    }
    if let Some(x) = k.insts.iter().find(|x| x.op == Op::Invalid) {
        return Err(k
            .messages
            .get(x.target as usize)
            .cloned()
            .unwrap_or_default());
    }
    Ok(())
}

/// Every row, with its status from the decoder.
pub fn coverage() -> Vec<CoverageRow> {
    ROWS.iter()
        .map(|&(name, example)| {
            let r = decode_example(example);
            CoverageRow {
                name,
                example,
                supported: r.is_ok(),
                note: r.err().unwrap_or_default(),
            }
        })
        .collect()
}

/// The README's table: one row per family, `yes` or `no` with the decoder's reason.
pub fn coverage_markdown() -> String {
    let mut s = String::from("| PTX | example | emulator |\n|---|---|---|\n");
    for r in coverage() {
        let status = if r.supported {
            "yes".to_string()
        } else {
            format!("no ({})", r.note.replace('|', "\\|"))
        };
        s.push_str(&format!(
            "| {} | `{}` | {status} |\n",
            r.name,
            r.example.replace('|', "\\|")
        ));
    }
    s
}
