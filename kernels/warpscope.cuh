// warpscope.cuh — per-warp timing of memory accesses inside CUDA kernels.
//
// Why: a load does not block the warp, so `clock(); x = p[i]; clock();` measures when the load was
// ISSUED, not when its data ARRIVED (Kanda et al., IPSJ 2011). This header times each access so
// that the closing clock read waits for the load to complete, and logs one record per warp.
//
// Kernel authors write:
//
//   #include "warpscope.cuh"
//   extern "C" __global__ void k(const float* p, float* out, int n, ws::Log log) {
//       WS_KERNEL_BEGIN(log);                       // first statement, all threads
//       int i = blockIdx.x * blockDim.x + threadIdx.x;
//       float x = 0.0f;
//       if (i < n) x = WS_LOAD(0, WS_GLOBAL, p[i]); // site 0, writable memory
//       if (i < n) out[i] = x * 2.0f;
//       WS_KERNEL_END(log);                         // last statement, all threads (no early return)
//   }
//
// and compile with -DWS_MODE=<mode>. Under WS_OFF every macro disappears and WS_LOAD(s, r, e) is
// exactly (e): the kernel compiles to the same PTX as without this header. Which warps keep
// per-access records is chosen at launch time; which warps time their accesses too, in a build
// with -DWS_SAMPLED=1 (below). A build without it times every warp.
//
// SAMPLED TIMING (-DWS_SAMPLED=1): TIMED AND UNTIMED WARPS, AND EVERY N-TH ACCESS
// A fenced or dummy probe makes its warp wait for each load it times, so a probed warp no longer
// overlaps its loads; timing a sample lowers that cost. Two choices, both the host's:
//   * which warps time (`untimed` in each warp header; the host times every traced warp);
//   * the access period N (1, 2, 4 or 8, in ws::Log.flags): a timed warp times every N-th access
//     it makes, counting all sites together, from a phase set by its global index (warp g times
//     its k-th access when g + k is a multiple of N), so that the warps together time every
//     position of a loop's accesses. Where a kernel's single wave of warps ends with its slowest
//     one, sampling warps leaves that warp as slow as before; sampling accesses slows every warp
//     by 1/N as much.
// WS_KERNEL_BEGIN puts the access counter, set to the warp's phase, and its step into the top six
// bits of the probe state (a shared address never reaches them), so sampling costs no register;
// an untimed warp's counter is 1 and its step 0. At every probe, before anything of it, one
// compare of the state chooses between the TIMED PATH (the probe below, unchanged: its window is
// the same straight-line code whatever the sampling) and the BARE PATH, a separate copy of the
// plain load and nothing else (no clock read, fence, dummy store or update); after the load, on
// either path, the counter advances by its step and wraps. So an untimed access costs its warp a
// compare, a branch and three ALU operations outside any window. Branching inside the probe
// instead would put a branch into every timed window. Predicating its parts instead (one copy of
// the load, the fence predicated off) was measured slower on the emulator's demo frames, fenced
// every 8th access 1.100x the bare kernel's time against 1.025x: an untimed access still paid its
// clock reads and its set-up (docs/sampling.md). Why a build of its own: the
// bare copy doubles every load in the kernel's code, and nvcc then unrolls less (the volume
// renderer's ray loop is not unrolled), which costs every warp; a build that times everything
// keeps the probe as it was.
//
// THE ORDER PROBLEM AND WHY IT HOLDS HERE
// The paper's dummy, `if (dummy < 0) x += 1; t1 = clock();`, is control flow that ptxas may
// schedule after the clock read (reported for nvcc 13.5 in kernels with several independent
// loads): nothing makes the clock read wait for x. Predicating the clock read on a predicate
// computed from x does not help either: ptxas 13.0 turns `@p mov.u64 t1, %clock64` into an
// unconditional CS2R plus a SEL, so the read floats free again (checked on sm_90). Two facts do
// hold, and the construct below rests on them:
//   (1) SASS issues in order, and an instruction that reads a load's destination register waits
//       (scoreboard) for the load to complete before it issues — whatever its predicate;
//   (2) ptxas does not move a clock read across a memory operation (a load, a store, a membar):
//       that is also what keeps the OPENING read before the timed load.
// So the closing read is placed after a volatile store OF THE LOADED VALUE that never executes:
//
//     setp.lt.s32     q, dummy, 0;                    // false at run time (dummy == 0), unknown
//     @q st.volatile.shared.v4.u32 [sink], {x0, x1, x2, x3};  // to the compiler; the store
//                                                     //   reads x's registers themselves
//     mov.u32         t1, %clock;                     // after the store, by (2)
//
// C1: the store consumes x, so it issues only once the load completed (1), and the clock read
// follows it (2). The store reads the destination registers directly (one store of 1, 2 or 4
// words): no operation stands between the data's arrival and the close. An OR of the words
// first would put its dependent chain into every window — three ALU latencies for a float4,
// which the emulator, timing PTX, charges in full (+66 cycles on gtx480) and ptxas folds into
// one or two LOP3s on sm_90. C2: the store is volatile and t1 feeds the log, so neither is removed. C3: the
// store never executes and x is returned untouched, so outputs do not change.
// WS_FENCE is the paper's fence, a CTA-scope memory fence then the clock read; it is
// `fence.acq_rel.cta` (SASS MEMBAR.ALL.CTA), NOT `membar.cta` (== __threadfence_block(), SASS
// MEMBAR.SC.CTA). Measured on an H200 (docs/gpu/h200-2026-11-26.md): after an independent load
// that misses to DRAM, MEMBAR.SC.CTA lets the clock read go after ~20 cycles — it does not wait
// for the load's data, so the paper's fence timed the issue, like the naive probe — while
// MEMBAR.ALL.CTA waits for it (740 cycles, the dummy's 805). On sm_75 the MEMBAR carries no
// scoreboard and blocks issue until it completes; on sm_90 it sets a scoreboard and ptxas makes
// the clock read (or an instruction before it) wait on it. Both membar and clock are `asm volatile` with a "memory"
// clobber, so the front end keeps load, membar and clock in program order in the PTX as well.
// kernels/tests/sass.rs checks all of this per kernel, mode and architecture (sm_75, sm_90) on the
// SASS control bits (which instruction waits on which scoreboard), and the same order in the PTX
// that the emulator runs.
//
// WHAT THE PROBES MUST NOT DISTURB
// A probe that changes the kernel measures another kernel. So the probe's footprint is designed to
// keep the bare kernel's resident blocks per SM and to keep the log's own memory traffic out of
// every timed window:
//   * clocks are 32-bit (%clock, the low word of %clock64): one register per open window, not two;
//   * per-thread probe state is ONE 32-bit value (the warp's state offset in shared memory, and in
//     a sampled build its access counter); everything else is in shared memory or in the kernel
//     parameter `log` (constant bank, free to re-read);
//   * every timed warp keeps per-site statistics (count, sum, min, max of cycles) in its shared-memory
//     state with `red.shared` — no global store until WS_KERNEL_END copies them out;
//   * warps the host selected for tracing (per-access records, for timelines) also store one
//     16-byte record to global memory per access, and then DRAIN it with the same fence before the
//     next timed window opens: a fenced access waits for its own load, never for a log store.
//     (Without the drain, the fence of access k+1 waited for the global store of record k: an L1
//     hit read as an L2 round trip.) Naive and dummy windows have no fence, but they drain too,
//     so that no log traffic shares a window with the timed load. On the emulator's gtx480 preset
//     a traced warp runs a median 1.17× as long as the same warp untraced with fenced probes
//     (0.99–1.27×), 1.00× with naive ones (0.90–1.24×). On an H200 at the paper's geometry the
//     fenced median was 1.04× (1.01–1.09 per block shape); the h100 preset says 1.05×
//     (1.02–1.09) since its DRAM fetches 64 bytes a missed sector, and said 1.11× before
//     (docs/gpu/2026-11-27-findings.md, 2026-11-27-dram-texture-findings.md).
// kernels/tests/sass.rs checks in SASS that no store of the log lies between a timed load and its
// closing clock read; emulator/tests/integration/micro.rs that a fenced L1 hit reads the L1 latency.
//
// RECORDS
// One update per warp and access: the lowest active lane (tested with %lanemask_lt, which costs
// no register across the access) writes it. When a warp has diverged, each divergent group is its
// own "warp execution" of the access. Nothing is lost silently: accesses at sites outside the
// table (site >= log.sites) are counted in `dropped_sites`; a traced warp's records beyond `slots`
// are counted in `count` but not stored.
//
// GLOBAL LOG BUFFER LAYOUT (little-endian; the constants below are THE definition — build.rs turns
// every numeric `#define WS_...` of this file into Rust constants in kernels::layout)
//   header WS_LOG_HEADER_BYTES (64), written by the HOST before launch, never by the kernel:
//     0 u32 magic 0x57534C47  4 u32 version 3  8 u32 mode  12 u32 kind (0 every warp traced,
//     1 summary + selected warps traced)  16 u32 slots (records per traced warp)  20 u32 n_warps
//     24 u32 record_bytes (16)  28 u32 warp_header_bytes (48)  32 u32 sites  36 u32 n_traced
//     40..64 zero
//   warp area i at 64 + i*(48 + sites*16), i = linear block * warps_per_block + warp in block:
//     warp header 48 bytes: 0 u64 begin clock; 8 u64 end clock; 16 u32 smid; 20 u32 %warpid;
//       24 u32 count (trace records attempted: kept + dropped; 0 for untraced warps);
//       28 u32 flags (bit0 END ran); 32 u32 trace (host-written: this warp's trace area, or
//       0xFFFFFFFF = not traced); 36 u32 dropped_sites; 40 u32 untimed (host-written: 1 = the
//       warp takes the bare path, its count and site table stay 0; 0 = timed; a sampled build
//       writes it back with bit 1 set); 44..48 zero
//       (16-byte alignment)
//     then sites entries of 16 bytes: 0 u32 count; 4 u32 min; 8 u32 max; 12 u32 sum (mod 2^32:
//     the reader widens it with count, min and max; see instrument/src/log.rs)
//   trace area t at 64 + n_warps*(48 + sites*16) + t*slots*16, one per traced warp:
//     record 16 bytes: 0 u32 start (low 32 bits of the clock; the reader widens it against the
//     warp's 64-bit begin clock: a warp must not run 2^32 cycles); 4 u32 duration; 8 u32 site;
//     12 u32 zero
//   The host zeroes the buffer and sets min = 0xFFFFFFFF, `trace` and `untimed`; WS_KERNEL_BEGIN initialises
//   the warp's state again where it lives (shared memory), so a reused buffer needs no care.
//
// SHARED STATE: each warp's state is a copy of its global warp area (header and
// site table, same layout) in dynamic shared memory at `shared_offset` (16-byte aligned) +
// warp_in_block * (48 + sites*16); WS_KERNEL_END copies it out. Shared bytes the host adds per
// block: warps_per_block * (48 + sites*16).
#pragma once

// ---- modes and kinds (same numbers as trace::ProbeMode / trace::RecordKind / trace::Region) ----
#define WS_OFF 0
#define WS_NAIVE 1
#define WS_FENCE 2
#define WS_DUMMY 3
#define WS_AUTO 4

// Written by the host into the log header; the kernel does not depend on it (which warps are
// traced is the per-warp `trace` field).
#define WS_KIND_TRACE 0
#define WS_KIND_SUMMARY 1

#define WS_GLOBAL 0
#define WS_TEXTURE 1
#define WS_CONSTANT 2
#define WS_READONLY 3

#ifndef WS_MODE
#define WS_MODE WS_OFF
#endif

// ---- log buffer layout ----
#define WS_LOG_MAGIC 0x57534C47
#define WS_LOG_VERSION 3
#define WS_LOG_HEADER_BYTES 64
#define WS_HDR_MAGIC_OFFSET 0
#define WS_HDR_VERSION_OFFSET 4
#define WS_HDR_MODE_OFFSET 8
#define WS_HDR_KIND_OFFSET 12
#define WS_HDR_SLOTS_OFFSET 16
#define WS_HDR_N_WARPS_OFFSET 20
#define WS_HDR_RECORD_BYTES_OFFSET 24
#define WS_HDR_WARP_HEADER_BYTES_OFFSET 28
#define WS_HDR_SITES_OFFSET 32
#define WS_HDR_N_TRACED_OFFSET 36

#define WS_WARP_HEADER_BYTES 48
#define WS_WH_BEGIN_OFFSET 0
#define WS_WH_END_OFFSET 8
#define WS_WH_SMID_OFFSET 16
#define WS_WH_WARPID_OFFSET 20
#define WS_WH_COUNT_OFFSET 24
#define WS_WH_FLAGS_OFFSET 28
#define WS_WH_TRACE_OFFSET 32
#define WS_WH_DROPPED_SITES_OFFSET 36
#define WS_WH_UNTIMED_OFFSET 40
#define WS_WARP_FLAG_END 1
#define WS_NOT_TRACED 0xFFFFFFFF
// `untimed`'s value for a warp that takes the bare path; also the probe state's bit that says so.
#define WS_WARP_UNTIMED 1
// Set in `untimed` as a sampled build writes it back, so that the host can tell that the build it
// asked to sample did.
#define WS_WARP_SAMPLED_BUILD 2

#define WS_RECORD_BYTES 16
#define WS_REC_START_OFFSET 0
#define WS_REC_DURATION_OFFSET 4
#define WS_REC_SITE_OFFSET 8

// Sites a log can hold statistics for (the host passes the launch's count in ws::Log.sites).
#define WS_MAX_SITES 64
#define WS_SUMMARY_SITE_BYTES 16
#define WS_SUM_COUNT_OFFSET 0
#define WS_SUM_MIN_OFFSET 4
#define WS_SUM_MAX_OFFSET 8
#define WS_SUM_SUM_OFFSET 12

// ws::Log.flags bit 0: at least one warp is traced (else the record path skips the trace check).
#define WS_LOG_FLAG_TRACED 1
// ws::Log.flags bits 8..10, read by a sampled build: the access counter's step, 8 / period modulo 8
// (0 for every access, 4 for every 2nd, 2 for every 4th, 1 for every 8th). A timed warp times the
// accesses at which its counter, advanced by the step at each access from a phase that its global
// index sets, is 0 modulo 8: every period-th.
#define WS_LOG_FLAG_STEP_SHIFT 8
#define WS_MAX_ACCESS_PERIOD 8
// The probe state's top six bits in a sampled build (a shared address never reaches them): bits
// 29..31 the access counter, which an add advances and wraps, bits 26..28 its step, kept there so
// that no other register holds it. An access is timed when the counter is 0, so one unsigned
// compare of the state decides (below WS_STATE_COUNTER_ONE); an untimed warp's counter is 1 and
// its step 0, so it never is.
#define WS_STATE_COUNTER_SHIFT 29
#define WS_STATE_COUNTER_MASK 0xE0000000
#define WS_STATE_COUNTER_ONE 0x20000000
#define WS_STATE_STEP_SHIFT 26
#define WS_STATE_STEP_MASK 0x1C000000
#define WS_STATE_STEP_TO_COUNTER 3
#define WS_SHARED_ALIGN 16
#define WS_WARP_SIZE 32
// sizeof(ws::Log), passed by value as a kernel argument.
#define WS_LOG_ARG_BYTES 32
#define WS_LOG_ARG_ALIGN 8

namespace ws {

// The kernel argument. `dummy` is always 0 at run time; the host sets it, so the compiler cannot
// know it (the dummy dependency relies on that).
struct Log {
    unsigned char* buf;
    unsigned int slots;
    int dummy;
    unsigned int flags;
    unsigned int shared_offset;
    unsigned int sites;
    unsigned int n_warps;
};

struct Record {
    unsigned int start;
    unsigned int duration;
    unsigned int site;
    unsigned int zero;
};

struct SiteSummary {
    unsigned int count;
    unsigned int min;
    unsigned int max;
    unsigned int sum;
};

struct WarpHeader {
    unsigned long long begin;
    unsigned long long end;
    unsigned int smid;
    unsigned int warpid;
    unsigned int count;
    unsigned int flags;
    unsigned int trace;
    unsigned int dropped_sites;
    unsigned int untimed;
    unsigned int reserved;  // keeps warp areas, and so the trace areas after them, 16-aligned
};

static_assert(sizeof(Log) == WS_LOG_ARG_BYTES, "ws::Log layout");
static_assert(alignof(Log) == WS_LOG_ARG_ALIGN, "ws::Log alignment");
static_assert(sizeof(Record) == WS_RECORD_BYTES, "ws::Record layout");
static_assert(sizeof(SiteSummary) == WS_SUMMARY_SITE_BYTES, "ws::SiteSummary layout");
static_assert(sizeof(WarpHeader) == WS_WARP_HEADER_BYTES, "ws::WarpHeader layout");
static_assert(__builtin_offsetof(WarpHeader, count) == WS_WH_COUNT_OFFSET, "count offset");
static_assert(__builtin_offsetof(WarpHeader, smid) == WS_WH_SMID_OFFSET, "smid offset");
static_assert(__builtin_offsetof(WarpHeader, trace) == WS_WH_TRACE_OFFSET, "trace offset");
static_assert(__builtin_offsetof(WarpHeader, dropped_sites) == WS_WH_DROPPED_SITES_OFFSET,
              "dropped_sites offset");
static_assert(__builtin_offsetof(WarpHeader, untimed) == WS_WH_UNTIMED_OFFSET, "untimed offset");
static_assert(__builtin_offsetof(SiteSummary, sum) == WS_SUM_SUM_OFFSET, "sum offset");
static_assert(__builtin_offsetof(Record, site) == WS_REC_SITE_OFFSET, "site offset");

}  // namespace ws

#if WS_MODE == WS_OFF

// Not instrumented: nothing is read, nothing is written, the load is the bare expression.
#define WS_KERNEL_BEGIN(log) ((void)0)
#define WS_KERNEL_END(log) ((void)0)
#define WS_LOAD(site, region, ...) (__VA_ARGS__)
#define WS_READY(x) ((void)0)

#else  // instrumented modes

#if WS_MODE < WS_NAIVE || WS_MODE > WS_AUTO
#error "WS_MODE must be one of WS_OFF, WS_NAIVE, WS_FENCE, WS_DUMMY, WS_AUTO"
#endif

namespace ws {

extern __shared__ __align__(16) unsigned char ws_dynamic_shared[];

__device__ __forceinline__ unsigned int clock32() {
    unsigned int t;
    // volatile + "memory": the front end keeps it in program order with the loads around it.
    asm volatile("mov.u32 %0, %%clock;" : "=r"(t)::"memory");
    return t;
}

__device__ __forceinline__ unsigned long long clock64() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
    return t;
}

__device__ __forceinline__ unsigned int lane_id() {
    unsigned int l;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
    return l;
}

__device__ __forceinline__ unsigned int sm_id() {
    unsigned int s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

__device__ __forceinline__ unsigned int hw_warp_id() {
    unsigned int w;
    asm volatile("mov.u32 %0, %%warpid;" : "=r"(w));
    return w;
}

// The calling group's active lanes below this one: 0 in the group's leader (its lowest lane).
__device__ __forceinline__ unsigned int lanes_below() {
    unsigned int lt;
    asm volatile("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
    return __activemask() & lt;
}

__device__ __forceinline__ bool is_leader() { return lanes_below() == 0u; }

// The closing clock read, ordered after a never-executed volatile store of the loaded value (see
// "THE ORDER PROBLEM" at the top of this file). The store reads the load's destination registers
// in their own type — `f` for floats, `d` for doubles, `l` for 64-bit integers, `r` for 32-bit
// words — because an operand of another type costs a conversion (`mov.b32 %r, %f`): an operation
// inside every window, which ptxas removes but the emulator, timing PTX, charges an ALU latency.
// `sink` is the warp's shared state, 16-byte aligned as a four-word store needs: nothing is ever
// stored there while dummy >= 0.
#define WS_DUMMY_CLOSE(store, sources)                       \
    "{\n\t"                                                  \
    ".reg .pred q;\n\t"                                      \
    "setp.lt.s32 q, %1, 0;\n\t"                              \
    "@q st.volatile.shared." store " [%2], " sources ";\n\t" \
    "mov.u32 %0, %%clock;\n\t"                               \
    "}"

// Any other type: its 32-bit words (bytes of a smaller value zero-extended; the words of a value
// wider than 16 bytes, which is not one load, beyond the fourth OR-ed into the fourth).
template <typename T>
struct DummyClose {
    __device__ __forceinline__ static unsigned int read(const T& v, int dummy, unsigned int sink) {
        constexpr int words = (int)((sizeof(T) + 3) / 4);
        constexpr int n = words < 4 ? 4 : words;
        unsigned int w[n];
#pragma unroll
        for (int i = 0; i < n; ++i) w[i] = 0u;
        __builtin_memcpy(w, &v, sizeof(T));
#pragma unroll
        for (int i = 4; i < words; ++i) w[3] |= w[i];
        unsigned int t1;
        if (words == 1) {
            asm volatile(WS_DUMMY_CLOSE("u32", "%3")
                         : "=r"(t1)
                         : "r"(dummy), "r"(sink), "r"(w[0])
                         : "memory");
        } else if (words == 2) {
            asm volatile(WS_DUMMY_CLOSE("v2.u32", "{%3, %4}")
                         : "=r"(t1)
                         : "r"(dummy), "r"(sink), "r"(w[0]), "r"(w[1])
                         : "memory");
        } else {
            asm volatile(WS_DUMMY_CLOSE("v4.u32", "{%3, %4, %5, %6}")
                         : "=r"(t1)
                         : "r"(dummy), "r"(sink), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3])
                         : "memory");
        }
        return t1;
    }
};

// The types whose registers the store reads as they are; `...` is the asm's source operands.
#define WS_DUMMY_CLOSE_AS(T, store, sources, ...)                                             \
    template <>                                                                               \
    struct DummyClose<T> {                                                                    \
        __device__ __forceinline__ static unsigned int read(T v, int dummy, unsigned int sink) { \
            unsigned int t1;                                                                  \
            asm volatile(WS_DUMMY_CLOSE(store, sources)                                       \
                         : "=r"(t1)                                                           \
                         : "r"(dummy), "r"(sink), __VA_ARGS__                                 \
                         : "memory");                                                         \
            return t1;                                                                        \
        }                                                                                     \
    };
WS_DUMMY_CLOSE_AS(float, "f32", "%3", "f"(v))
WS_DUMMY_CLOSE_AS(float2, "v2.f32", "{%3, %4}", "f"(v.x), "f"(v.y))
WS_DUMMY_CLOSE_AS(float4, "v4.f32", "{%3, %4, %5, %6}", "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w))
WS_DUMMY_CLOSE_AS(double, "f64", "%3", "d"(v))
WS_DUMMY_CLOSE_AS(double2, "v2.f64", "{%3, %4}", "d"(v.x), "d"(v.y))
WS_DUMMY_CLOSE_AS(long long, "u64", "%3", "l"(v))
WS_DUMMY_CLOSE_AS(unsigned long long, "u64", "%3", "l"(v))
#undef WS_DUMMY_CLOSE_AS

template <typename T>
__device__ __forceinline__ unsigned int clock_close_dependent(const T& v, int dummy,
                                                              unsigned int sink) {
    return DummyClose<T>::read(v, dummy, sink);
}

__device__ __forceinline__ void fence_block() {
    // fence.acq_rel.cta, not membar.cta: on sm_90 silicon only the former waits for an
    // outstanding load (see WS_FENCE above). asm volatile with "memory" so it stays between the
    // load and the closing clock read in PTX.
    asm volatile("fence.acq_rel.cta;" ::: "memory");
}

// Mode actually applied to a site: WS_AUTO picks fence for writable, dummy for read-only memory.
template <int Region>
struct Method {
    static constexpr int value =
        WS_MODE == WS_AUTO ? (Region == WS_GLOBAL ? WS_FENCE : WS_DUMMY) : WS_MODE;
};

#define WS_STR2(x) #x
#define WS_STR(x) WS_STR2(x)

__device__ __forceinline__ unsigned int warp_area_bytes(const Log& log) {
    return WS_WARP_HEADER_BYTES + log.sites * WS_SUMMARY_SITE_BYTES;
}

__device__ __forceinline__ unsigned int warp_in_block() {
    const unsigned int tid =
        threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
    return tid / WS_WARP_SIZE;
}

__device__ __forceinline__ unsigned int global_warp() {
    const unsigned int tpb = blockDim.x * blockDim.y * blockDim.z;
    const unsigned int wpb = (tpb + WS_WARP_SIZE - 1) / WS_WARP_SIZE;
    const unsigned int block =
        blockIdx.x + blockIdx.y * gridDim.x + blockIdx.z * gridDim.x * gridDim.y;
    return block * wpb + warp_in_block();
}

__device__ __forceinline__ unsigned char* global_area(const Log& log, unsigned int gwarp) {
    return log.buf + WS_LOG_HEADER_BYTES + (unsigned long long)gwarp * warp_area_bytes(log);
}

// The one value a thread keeps across the kernel: its warp's state, as an address in the shared
// window (what `ld.shared`/`red.shared` take). In a sampled build its top six bits hold the
// warp's access counter and step; each probe and END clear them from the address they use.
typedef unsigned int State;

#if defined(WS_SAMPLED) && WS_SAMPLED
// Whether this access is timed: the counter is 0, which one compare of the state decides.
__device__ __forceinline__ bool timed(State st) { return st < WS_STATE_COUNTER_ONE; }

// The counter advanced by its step (the add wraps it in the top bits). Called after the access's
// load has issued, on either path, so that it does not delay the branch. Volatile, so that the
// compiler cannot follow the state from one probe to the next and merge their paths, which would
// leave the later windows without a branch of their own.
__device__ __forceinline__ State advance(State st) {
    State next;
    asm volatile(
        "{\n\t"
        ".reg .u32 c;\n\t"
        "shl.b32 c, %1, " WS_STR(WS_STATE_STEP_TO_COUNTER) ";\n\t"
        "and.b32 c, c, " WS_STR(WS_STATE_COUNTER_MASK) ";\n\t"
        "add.u32 %0, %1, c;\n\t"
        "}"
        : "=r"(next)
        : "r"(st));
    return next;
}

// The state's shared address: its counter and step bits cleared.
__device__ __forceinline__ State address(State st) {
    return st & ~(State)(WS_STATE_COUNTER_MASK | WS_STATE_STEP_MASK);
}

#endif

__device__ __forceinline__ unsigned char* state_ptr(State st) {
    return reinterpret_cast<unsigned char*>(__cvta_shared_to_generic(st));
}

__device__ __forceinline__ State begin(const Log& log) {
    const unsigned int gwarp = global_warp();
    const unsigned char* g = global_area(log, gwarp);
    const State st = (unsigned int)__cvta_generic_to_shared(ws_dynamic_shared) +
                     log.shared_offset + warp_in_block() * warp_area_bytes(log);
    unsigned char* s = state_ptr(st);
    // The host-written trace index, read by every lane in straight-line code (volatile, so that
    // the compiler neither sinks it into the leader's branch nor moves it past the begin clock:
    // no load may sit between the begin clock and a probe's opening clock).
#if defined(WS_SAMPLED) && WS_SAMPLED
    unsigned int trace, untimed;
    asm volatile("ld.global.u32 %0, [%2];\n\t"
                 "ld.global.u32 %1, [%3];"
                 : "=r"(trace), "=r"(untimed)
                 : "l"(__cvta_generic_to_global(g + WS_WH_TRACE_OFFSET)),
                   "l"(__cvta_generic_to_global(g + WS_WH_UNTIMED_OFFSET))
                 : "memory");
#else
    unsigned int trace;
    asm volatile("ld.global.u32 %0, [%1];"
                 : "=r"(trace)
                 : "l"(__cvta_generic_to_global(g + WS_WH_TRACE_OFFSET))
                 : "memory");
#endif
    const unsigned int mask = __activemask();
    if (is_leader()) {
        WarpHeader* h = reinterpret_cast<WarpHeader*>(s);
        h->count = 0u;
        h->flags = 0u;
        h->dropped_sites = 0u;
        h->trace = trace;
#if defined(WS_SAMPLED) && WS_SAMPLED
        h->untimed = untimed | WS_WARP_SAMPLED_BUILD;
#endif
        // Until END, the shared copy's `end` holds a traced warp's record base address and `smid`
        // its slot count (fields END writes last), for trace_record.
        if (trace != WS_NOT_TRACED) {
            const unsigned char* traces = log.buf + WS_LOG_HEADER_BYTES +
                                          (unsigned long long)log.n_warps * warp_area_bytes(log);
            h->end = (unsigned long long)(traces + (unsigned long long)trace * log.slots *
                                                       WS_RECORD_BYTES);
            h->smid = log.slots;
        }
        // min starts at UINT_MAX so red.min works.
        SiteSummary* p = reinterpret_cast<SiteSummary*>(s + WS_WARP_HEADER_BYTES);
        for (unsigned int k = 0; k < log.sites; ++k) {
            p[k].count = 0u;
            p[k].min = 0xFFFFFFFFu;
            p[k].max = 0u;
            p[k].sum = 0u;
        }
    }
    __syncwarp(mask);
    // Read last, after the set-up's loads, so that no load lies between it and the first probe.
    const unsigned long long t = clock64();
    if (is_leader()) reinterpret_cast<WarpHeader*>(s)->begin = t;
    // A build without the bare path neither reads the flag nor writes it back; the host checks
    // that the flag it wrote came back, marked, when it asked for sampling.
#if defined(WS_SAMPLED) && WS_SAMPLED
    if (untimed == WS_WARP_UNTIMED) return st | WS_STATE_COUNTER_ONE;
    const unsigned int step = (log.flags >> WS_LOG_FLAG_STEP_SHIFT) & (WS_MAX_ACCESS_PERIOD - 1);
    const State phase = ((gwarp * step) << WS_STATE_COUNTER_SHIFT) & WS_STATE_COUNTER_MASK;
    return st | phase | (step << WS_STATE_STEP_SHIFT);
#else
    return st;
#endif
}

// A traced warp's record: one 16-byte global store, drained before the next window opens. The
// record base and slot count were computed once by WS_KERNEL_BEGIN and kept in the shared state,
// so each record costs two shared loads instead of a 64-bit address computation.
__device__ __forceinline__ void trace_record(State st, unsigned int site, unsigned int t0,
                                          unsigned int d) {
    unsigned int idx;
    asm volatile("atom.shared.add.u32 %0, [%1+" WS_STR(WS_WH_COUNT_OFFSET) "], 1;"
                 : "=r"(idx)
                 : "r"(st)
                 : "memory");
    unsigned long long base;
    unsigned int slots;
    asm volatile("ld.shared.u64 %0, [%2+" WS_STR(WS_WH_END_OFFSET) "];\n\t"
                 "ld.shared.u32 %1, [%2+" WS_STR(WS_WH_SMID_OFFSET) "];"
                 : "=l"(base), "=r"(slots)
                 : "r"(st)
                 : "memory");
    if (idx < slots) {
        uint4* r = reinterpret_cast<uint4*>(base + (unsigned long long)idx * WS_RECORD_BYTES);
        *r = make_uint4(t0, d, site, 0u);
        fence_block();
    }
}

// What the record after an access needs that does not depend on its timing, computed BEFORE the
// opening clock so that its latency hides under the timed load's instead of adding to the
// warp's critical path after the close (with a fence, everything after the close is serial).
struct Pending {
    unsigned int lead;   // activemask & lanemask_lt: 0 in the group's leader
    unsigned int trace;  // this warp's trace area, or WS_NOT_TRACED
};

__device__ __forceinline__ Pending prepare(const Log& log, State st) {
    Pending p;
    p.lead = lanes_below();
    p.trace = WS_NOT_TRACED;
    if (log.flags & WS_LOG_FLAG_TRACED) {
        // A shared load before the window: it completes (shared latency) before any timed load
        // can (L1 latency or more), so a fence never waits for it.
        asm volatile("ld.shared.u32 %0, [%1+" WS_STR(WS_WH_TRACE_OFFSET) "];"
                     : "=r"(p.trace)
                     : "r"(st)
                     : "memory");
    }
    return p;
}

// The statistics update, by the group's leader: predicated reductions in shared memory (no
// return value, so the warp does not wait for them; no branch). Only `sub` waits for the close.
template <unsigned int Site>
__device__ __forceinline__ void record(const Log& log, State st, const Pending& p,
                                       unsigned int t0, unsigned int t1) {
    constexpr unsigned int a = WS_WARP_HEADER_BYTES + Site * WS_SUMMARY_SITE_BYTES;
    asm volatile(
        "{\n\t"
        ".reg .pred L, P, Q;\n\t"
        ".reg .u32 d;\n\t"
        "setp.eq.u32 L, %1, 0;\n\t"
        "setp.lt.and.u32 P, %4, %5, L;\n\t"
        "setp.ge.and.u32 Q, %4, %5, L;\n\t"
        "sub.u32 d, %3, %2;\n\t"
        "@P red.shared.add.u32 [%0+%6], 1;\n\t"
        "@P red.shared.min.u32 [%0+%7], d;\n\t"
        "@P red.shared.max.u32 [%0+%8], d;\n\t"
        "@P red.shared.add.u32 [%0+%9], d;\n\t"
        "@Q red.shared.add.u32 [%0+%10], 1;\n\t"
        "}" ::"r"(st),
        "r"(p.lead), "r"(t0), "r"(t1), "r"(Site), "r"(log.sites), "n"(a + WS_SUM_COUNT_OFFSET),
        "n"(a + WS_SUM_MIN_OFFSET), "n"(a + WS_SUM_MAX_OFFSET), "n"(a + WS_SUM_SUM_OFFSET),
        "n"(WS_WH_DROPPED_SITES_OFFSET)
        : "memory");
    if (p.trace != WS_NOT_TRACED && p.lead == 0u) trace_record(st, Site, t0, t1 - t0);
}

// The probe around one access: the window (opening clock read, the load, the mode's closing),
// then the statistics update and, for a traced warp, its record.
template <int Region, unsigned int Site, typename F>
__device__ __forceinline__ auto probe(const Log& log, State st, F&& f) -> decltype(f()) {
    using T = decltype(f());
    const Pending p = prepare(log, st);
    const unsigned int t0 = clock32();
    const T v = f();
    unsigned int t1;
    constexpr int m = Method<Region>::value;
    if (m == WS_NAIVE) {
        t1 = clock32();
    } else if (m == WS_FENCE) {
        fence_block();
        t1 = clock32();
    } else {
        t1 = clock_close_dependent(v, log.dummy, st);
    }
    record<Site>(log, st, p, t0, t1);
    return v;
}

#if defined(WS_SAMPLED) && WS_SAMPLED
// One branch before the window chooses the path (SAMPLED TIMING above): an access the warp does
// not time runs its own copy of the plain load, a timed one the probe unchanged; either way the
// counter advances after the load has issued.
template <int Region, unsigned int Site, typename F>
__device__ __forceinline__ auto load(const Log& log, State& tagged, F&& f) -> decltype(f()) {
    if (!timed(tagged)) {
        const auto v = f();
        tagged = advance(tagged);
        return v;
    }
    const auto v = probe<Region, Site>(log, address(tagged), f);
    tagged = advance(tagged);
    return v;
}
#else
template <int Region, unsigned int Site, typename F>
__device__ __forceinline__ auto load(const Log& log, State st, F&& f) -> decltype(f()) {
    return probe<Region, Site>(log, st, f);
}
#endif

__device__ __forceinline__ void end(const Log& log, State tagged) {
#if defined(WS_SAMPLED) && WS_SAMPLED
    const State st = address(tagged);
#else
    const State st = tagged;
#endif
    const unsigned long long t_end = clock64();
    const unsigned int mask = __activemask();
    __syncwarp(mask);
    unsigned char* s = state_ptr(st);
    if (is_leader()) {
        WarpHeader* h = reinterpret_cast<WarpHeader*>(s);
        h->end = t_end;
        h->smid = sm_id();
        h->warpid = hw_warp_id();
        h->flags = WS_WARP_FLAG_END;
    }
    __syncwarp(mask);
    // Copy the state (header and site table) to the global log with all active lanes.
    const unsigned int lane = lane_id();
    const unsigned int rank = __popc(mask & ((1u << lane) - 1u));
    const unsigned int n_active = __popc(mask);
    const unsigned long long* src = reinterpret_cast<const unsigned long long*>(s);
    unsigned long long* dst =
        reinterpret_cast<unsigned long long*>(global_area(log, global_warp()));
    const unsigned int words = warp_area_bytes(log) / 8;
    for (unsigned int k = rank; k < words; k += n_active) dst[k] = src[k];
}

}  // namespace ws

#if defined(WS_SAMPLED) && WS_SAMPLED
// The state carries the access counter, which every probe advances.
#define WS_KERNEL_BEGIN(log)         \
    const ::ws::Log ws_log_ = (log); \
    ::ws::State ws_state_ = ::ws::begin(ws_log_)
#else
#define WS_KERNEL_BEGIN(log)            \
    const ::ws::Log ws_log_ = (log);    \
    const ::ws::State ws_state_ = ::ws::begin(ws_log_)
#endif
#define WS_KERNEL_END(log) ::ws::end(ws_log_, ws_state_)
// Makes `x` (a float, 32-bit integer or pointer) computed before what follows, e.g. a load's
// address or coordinates before its WS_LOAD: arithmetic the compiler leaves inside a probe's
// window is timed with the load, and arithmetic that waits for an EARLIER load (a coordinate
// computed from a loaded value) makes the window time that earlier load too. An empty volatile
// asm that reads the value: no instruction, only order (volatile asm stays in program order).
namespace ws {
__device__ __forceinline__ void ready(float x) { asm volatile("" ::"f"(x)); }
__device__ __forceinline__ void ready(unsigned int x) { asm volatile("" ::"r"(x)); }
__device__ __forceinline__ void ready(int x) { asm volatile("" ::"r"(x)); }
template <typename T>
__device__ __forceinline__ void ready(const T* x) {
    asm volatile("" ::"l"(x));
}
}  // namespace ws
#define WS_READY(x) ::ws::ready(x)

// `site` must be a constant expression (a literal id): the record's offsets are immediates.
#define WS_LOAD(site, region, ...) \
    (::ws::load<(region), (site)>(ws_log_, ws_state_, [&]() { return (__VA_ARGS__); }))

#endif  // WS_MODE
