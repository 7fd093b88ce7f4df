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
// and compile with -DWS_MODE=<mode> -DWS_KIND=<kind>. Under WS_OFF every macro disappears and
// WS_LOAD(s, r, e) is exactly (e): the kernel compiles to the same PTX as without this header.
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
//     or.b32          bits, <all 32-bit words of x>;  // reads every destination register
//     setp.lt.s32     q, dummy, 0;                    // false at run time (dummy == 0), unknown
//     @q st.volatile.global.u32 [sink], bits;         //   to the compiler; the store waits for x
//     mov.u64         t1, %clock64;                   // after the store, by (2)
//
// C1: the store consumes x, so it issues only once the load completed (1), and the clock read
// follows it (2). C2: the store is volatile and t1 feeds the log, so neither is removed. C3: the
// store never executes and x is returned untouched, so outputs do not change.
// WS_FENCE is the paper's fence: `membar.cta` (== __threadfence_block(), SASS MEMBAR.SC.CTA) then
// the clock read. On sm_75 the MEMBAR carries no scoreboard and blocks issue until prior memory
// operations completed; on sm_90 it sets a scoreboard and ptxas makes the clock read (or an
// instruction before it) wait on it. Both membar and clock are `asm volatile` with a "memory"
// clobber, so the front end keeps load, membar and clock in program order in the PTX as well.
// kernels/tests/sass.rs checks all of this per kernel, mode and architecture (sm_75, sm_90) on the
// SASS control bits (which instruction waits on which scoreboard), and the same order in the PTX
// that the emulator runs.
//
// RECORDS
// One record per warp and access: the leader of __activemask() (lowest active lane) writes it. When
// a warp has diverged, each divergent group is its own "warp execution" of the access: its leader
// takes a record index with an atomicAdd on the per-warp counter, so groups never race on a slot.
// Records beyond `slots` are counted but not written (dropped = count - min(count, slots)): never a
// silent loss. Clocks are 64-bit (%clock64).
//
// BUFFERING (flags bit 0): records go to this warp's slots in dynamic shared memory at
// `shared_offset` (must be 16-byte aligned) and WS_KERNEL_END copies them to global memory; without
// the flag they go straight to the global buffer. Shared bytes the host must add per block:
// warps_per_block * (WS_SHARED_WARP_HEADER_BYTES + body), body = slots*WS_RECORD_BYTES (trace) or
// WS_MAX_SITES*WS_SUMMARY_SITE_BYTES (summary).
//
// GLOBAL LOG BUFFER LAYOUT (little-endian; the constants below are THE definition — build.rs turns
// every numeric `#define WS_...` of this file into Rust constants in kernels::layout)
//   header WS_LOG_HEADER_BYTES (64), written by the HOST before launch, never by the kernel:
//     0 u32 magic 0x57534C47  4 u32 version 1  8 u32 mode  12 u32 kind  16 u32 slots_per_warp
//     20 u32 n_warps  24 u32 record_bytes (16)  28 u32 warp_header_bytes (32)  32 u32 max_sites (16)
//     36..64 zero
//   warp area i at 64 + i*(32 + area_body), i = linear block * warps_per_block + warp in block
//     warp header 32 bytes: 0 u64 begin clock; 8 u64 end clock; 16 u32 smid; 20 u32 %warpid;
//                           24 u32 count (records attempted = kept + dropped); 28 u32 flags (bit0 END ran)
//     trace:   area_body = slots*16, record: 0 u64 start clock; 8 u32 duration; 12 u32 site
//     summary: area_body = max_sites*24, per site: 0 u32 count; 4 u32 min; 8 u32 max; 12 u32 pad; 16 u64 sum
//   WS_KERNEL_BEGIN initialises the warp's count (and summary area); the host need not zero it.
#pragma once

// ---- modes and kinds (same numbers as trace::ProbeMode / trace::RecordKind / trace::Region) ----
#define WS_OFF 0
#define WS_NAIVE 1
#define WS_FENCE 2
#define WS_DUMMY 3
#define WS_AUTO 4

#define WS_KIND_TRACE 0
#define WS_KIND_SUMMARY 1

#define WS_GLOBAL 0
#define WS_TEXTURE 1
#define WS_CONSTANT 2
#define WS_READONLY 3

#ifndef WS_MODE
#define WS_MODE WS_OFF
#endif
#ifndef WS_KIND
#define WS_KIND WS_KIND_TRACE
#endif

// ---- log buffer layout ----
#define WS_LOG_MAGIC 0x57534C47
#define WS_LOG_VERSION 1
#define WS_LOG_HEADER_BYTES 64
#define WS_HDR_MAGIC_OFFSET 0
#define WS_HDR_VERSION_OFFSET 4
#define WS_HDR_MODE_OFFSET 8
#define WS_HDR_KIND_OFFSET 12
#define WS_HDR_SLOTS_OFFSET 16
#define WS_HDR_N_WARPS_OFFSET 20
#define WS_HDR_RECORD_BYTES_OFFSET 24
#define WS_HDR_WARP_HEADER_BYTES_OFFSET 28
#define WS_HDR_MAX_SITES_OFFSET 32

#define WS_WARP_HEADER_BYTES 32
#define WS_WH_BEGIN_OFFSET 0
#define WS_WH_END_OFFSET 8
#define WS_WH_SMID_OFFSET 16
#define WS_WH_WARPID_OFFSET 20
#define WS_WH_COUNT_OFFSET 24
#define WS_WH_FLAGS_OFFSET 28
#define WS_WARP_FLAG_END 1

#define WS_RECORD_BYTES 16
#define WS_REC_START_OFFSET 0
#define WS_REC_DURATION_OFFSET 8
#define WS_REC_SITE_OFFSET 12

#define WS_MAX_SITES 16
#define WS_SUMMARY_SITE_BYTES 24
#define WS_SUM_COUNT_OFFSET 0
#define WS_SUM_MIN_OFFSET 4
#define WS_SUM_MAX_OFFSET 8
#define WS_SUM_SUM_OFFSET 16

// ws::Log.flags bit 0: buffer records in dynamic shared memory.
#define WS_LOG_FLAG_SHARED 1
// Per-warp bookkeeping ahead of the warp's shared slots (u32 counter, padded for 16-byte records).
#define WS_SHARED_WARP_HEADER_BYTES 16
#define WS_SHARED_ALIGN 16
#define WS_WARP_SIZE 32
// sizeof(ws::Log), passed by value as a kernel argument.
#define WS_LOG_ARG_BYTES 24
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
};

struct Record {
    unsigned long long start;
    unsigned int duration;
    unsigned int site;
};

struct SiteSummary {
    unsigned int count;
    unsigned int min;
    unsigned int max;
    unsigned int pad;
    unsigned long long sum;
};

struct WarpHeader {
    unsigned long long begin;
    unsigned long long end;
    unsigned int smid;
    unsigned int warpid;
    unsigned int count;
    unsigned int flags;
};

static_assert(sizeof(Log) == WS_LOG_ARG_BYTES, "ws::Log layout");
static_assert(alignof(Log) == WS_LOG_ARG_ALIGN, "ws::Log alignment");
static_assert(sizeof(Record) == WS_RECORD_BYTES, "ws::Record layout");
static_assert(sizeof(SiteSummary) == WS_SUMMARY_SITE_BYTES, "ws::SiteSummary layout");
static_assert(sizeof(WarpHeader) == WS_WARP_HEADER_BYTES, "ws::WarpHeader layout");
static_assert(__builtin_offsetof(WarpHeader, count) == WS_WH_COUNT_OFFSET, "count offset");
static_assert(__builtin_offsetof(WarpHeader, smid) == WS_WH_SMID_OFFSET, "smid offset");
static_assert(__builtin_offsetof(SiteSummary, sum) == WS_SUM_SUM_OFFSET, "sum offset");
static_assert(__builtin_offsetof(Record, site) == WS_REC_SITE_OFFSET, "site offset");

}  // namespace ws

#if WS_MODE == WS_OFF

// Not instrumented: nothing is read, nothing is written, the load is the bare expression.
#define WS_KERNEL_BEGIN(log) ((void)0)
#define WS_KERNEL_END(log) ((void)0)
#define WS_LOAD(site, region, ...) (__VA_ARGS__)

#else  // instrumented modes

#if WS_MODE < WS_NAIVE || WS_MODE > WS_AUTO
#error "WS_MODE must be one of WS_OFF, WS_NAIVE, WS_FENCE, WS_DUMMY, WS_AUTO"
#endif
#if WS_KIND != WS_KIND_TRACE && WS_KIND != WS_KIND_SUMMARY
#error "WS_KIND must be WS_KIND_TRACE or WS_KIND_SUMMARY"
#endif

namespace ws {

extern __shared__ __align__(16) unsigned char ws_dynamic_shared[];

// Per-thread instrumentation state, created by WS_KERNEL_BEGIN.
struct State {
    unsigned char* area;          // this warp's area in the global log (header + body)
    unsigned char* local;         // where records go: shared slots or area body
    unsigned int* counter;        // per-warp record counter (shared or global warp header)
    unsigned int slots;
    int dummy;
    unsigned int shared;          // non-zero: buffered in shared memory
    unsigned long long begin;
};

__device__ __forceinline__ unsigned long long clock_open() {
    unsigned long long t;
    // volatile + "memory": the front end keeps it before the load that follows in program order.
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

// OR of every 32-bit word of a value (bytes of a smaller value zero-extended): an expression that
// reads all of the load's destination registers.
template <typename T>
__device__ __forceinline__ unsigned int bits_of(const T& v) {
    constexpr int words = (int)((sizeof(T) + 3) / 4);
    unsigned int w[words];
#pragma unroll
    for (int i = 0; i < words; ++i) w[i] = 0u;
    __builtin_memcpy(w, &v, sizeof(T));
    unsigned int r = w[0];
#pragma unroll
    for (int i = 1; i < words; ++i) r |= w[i];
    return r;
}

// The closing clock read, ordered after a never-executed volatile store of the loaded value's bits
// (see "THE ORDER PROBLEM" at the top of this file). `sink` is a global address inside this
// warp's log area; nothing is ever stored there while dummy >= 0.
__device__ __forceinline__ unsigned long long clock_close_dependent(unsigned int bits, int dummy,
                                                                    unsigned int* sink) {
    unsigned long long t1;
    asm volatile(
        "{\n\t"
        ".reg .pred q;\n\t"
        ".reg .u64 g;\n\t"
        "setp.lt.s32 q, %1, 0;\n\t"
        "cvta.to.global.u64 g, %2;\n\t"
        "@q st.volatile.global.u32 [g], %3;\n\t"
        "mov.u64 %0, %%clock64;\n\t"
        "}"
        : "=l"(t1)
        : "r"(dummy), "l"(sink), "r"(bits)
        : "memory");
    return t1;
}

__device__ __forceinline__ unsigned long long clock_close_plain() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
    return t;
}

__device__ __forceinline__ void fence_block() {
    // membar.cta == __threadfence_block(); as asm volatile with "memory" so it stays between the
    // load and the closing clock read in PTX.
    asm volatile("membar.cta;" ::: "memory");
}

// Mode actually applied to a site: WS_AUTO picks fence for writable, dummy for read-only memory.
template <int Region>
struct Method {
    static constexpr int value =
        WS_MODE == WS_AUTO ? (Region == WS_GLOBAL ? WS_FENCE : WS_DUMMY) : WS_MODE;
};

__device__ __forceinline__ void begin(const Log& log, State& st) {
    st.begin = clock_open();
    const unsigned int tpb = blockDim.x * blockDim.y * blockDim.z;
    const unsigned int wpb = (tpb + WS_WARP_SIZE - 1) / WS_WARP_SIZE;
    const unsigned int tid = threadIdx.x + threadIdx.y * blockDim.x +
                             threadIdx.z * blockDim.x * blockDim.y;
    const unsigned int block =
        blockIdx.x + blockIdx.y * gridDim.x + blockIdx.z * gridDim.x * gridDim.y;
    const unsigned int warp_in_block = tid / WS_WARP_SIZE;
    const unsigned long long gwarp = (unsigned long long)block * wpb + warp_in_block;
#if WS_KIND == WS_KIND_TRACE
    const unsigned long long body = (unsigned long long)log.slots * WS_RECORD_BYTES;
#else
    const unsigned long long body = (unsigned long long)WS_MAX_SITES * WS_SUMMARY_SITE_BYTES;
#endif
    st.area = log.buf + WS_LOG_HEADER_BYTES + gwarp * (WS_WARP_HEADER_BYTES + body);
    st.slots = log.slots;
    st.dummy = log.dummy;
    st.shared = log.flags & WS_LOG_FLAG_SHARED;
    if (st.shared) {
        unsigned char* s = ws_dynamic_shared + log.shared_offset +
                           warp_in_block * (WS_SHARED_WARP_HEADER_BYTES + (unsigned int)body);
        st.counter = reinterpret_cast<unsigned int*>(s);
        st.local = s + WS_SHARED_WARP_HEADER_BYTES;
    } else {
        st.counter = reinterpret_cast<unsigned int*>(st.area + WS_WH_COUNT_OFFSET);
        st.local = st.area + WS_WARP_HEADER_BYTES;
    }
    const unsigned int mask = __activemask();
    const unsigned int lane = lane_id();
    const unsigned int leader = __ffs(mask) - 1;
    if (lane == leader) *st.counter = 0u;
#if WS_KIND == WS_KIND_SUMMARY
    // The leader alone fills the site table: 16 entries, and it works for a partial last warp.
    // min starts at UINT_MAX so atomicMin works.
    if (lane == leader) {
        for (unsigned int s = 0; s < WS_MAX_SITES; ++s) {
            SiteSummary* p = reinterpret_cast<SiteSummary*>(st.local) + s;
            p->count = 0u;
            p->min = 0xFFFFFFFFu;
            p->max = 0u;
            p->pad = 0u;
            p->sum = 0ull;
        }
    }
#endif
    __syncwarp(mask);
}

// Summary updates: reductions (no return value) in an explicit state space.
__device__ __forceinline__ void red_shared(unsigned int* count, unsigned int* mn, unsigned int* mx,
                                           unsigned long long* sum, unsigned int d) {
    asm volatile(
        "{\n\t"
        ".reg .u64 a;\n\t"
        "cvta.to.shared.u64 a, %0;\n\t"
        "red.shared.add.u32 [a], 1;\n\t"
        "cvta.to.shared.u64 a, %1;\n\t"
        "red.shared.min.u32 [a], %4;\n\t"
        "cvta.to.shared.u64 a, %2;\n\t"
        "red.shared.max.u32 [a], %4;\n\t"
        "cvta.to.shared.u64 a, %3;\n\t"
        "red.shared.add.u64 [a], %5;\n\t"
        "}" ::"l"(count),
        "l"(mn), "l"(mx), "l"(sum), "r"(d), "l"((unsigned long long)d)
        : "memory");
}

__device__ __forceinline__ void red_global(unsigned int* count, unsigned int* mn, unsigned int* mx,
                                           unsigned long long* sum, unsigned int d) {
    asm volatile(
        "{\n\t"
        ".reg .u64 a;\n\t"
        "cvta.to.global.u64 a, %0;\n\t"
        "red.global.add.u32 [a], 1;\n\t"
        "cvta.to.global.u64 a, %1;\n\t"
        "red.global.min.u32 [a], %4;\n\t"
        "cvta.to.global.u64 a, %2;\n\t"
        "red.global.max.u32 [a], %4;\n\t"
        "cvta.to.global.u64 a, %3;\n\t"
        "red.global.add.u64 [a], %5;\n\t"
        "}" ::"l"(count),
        "l"(mn), "l"(mx), "l"(sum), "r"(d), "l"((unsigned long long)d)
        : "memory");
}

__device__ __forceinline__ void record(State& st, unsigned int site, unsigned long long t0,
                                       unsigned long long t1) {
    const unsigned int mask = __activemask();
    const unsigned int lane = lane_id();
    if (lane == (unsigned int)(__ffs(mask) - 1)) {
        const unsigned int d = (unsigned int)(t1 - t0);
#if WS_KIND == WS_KIND_TRACE
        const unsigned int idx = atomicAdd(st.counter, 1u);
        if (idx < st.slots) {
            Record* r = reinterpret_cast<Record*>(st.local) + idx;
            r->start = t0;
            r->duration = d;
            r->site = site;
        }
#else
        if (site < WS_MAX_SITES) {
            // Explicit state spaces: a generic 64-bit atomic makes ptxas emit a shared-window test
            // and a load/CAS loop, i.e. extra loads between probe sites.
            SiteSummary* p = reinterpret_cast<SiteSummary*>(st.local) + site;
            if (st.shared) {
                red_shared(&p->count, &p->min, &p->max, &p->sum, d);
            } else {
                red_global(&p->count, &p->min, &p->max, &p->sum, d);
            }
        }
        // Sites outside the table are still counted as attempted records (reported as dropped).
        atomicAdd(st.counter, 1u);
#endif
    }
}

template <int Region, typename F>
__device__ __forceinline__ auto load(State& st, unsigned int site, F&& f) -> decltype(f()) {
    using T = decltype(f());
    const unsigned long long t0 = clock_open();
    const T v = f();
    unsigned long long t1;
    constexpr int m = Method<Region>::value;
    if (m == WS_NAIVE) {
        t1 = clock_close_plain();
    } else if (m == WS_FENCE) {
        fence_block();
        t1 = clock_close_plain();
    } else {
        t1 = clock_close_dependent(
            bits_of(v), st.dummy, reinterpret_cast<unsigned int*>(st.area + WS_WH_FLAGS_OFFSET));
    }
    record(st, site, t0, t1);
    return v;
}

__device__ __forceinline__ void end(State& st) {
    const unsigned long long t_end = clock_close_plain();
    const unsigned int mask = __activemask();
    const unsigned int lane = lane_id();
    const unsigned int leader = __ffs(mask) - 1;
    __syncwarp(mask);
    unsigned int count = *(volatile unsigned int*)st.counter;
    if (st.shared) {
        // Copy kept records (or the site table) to global memory with all active lanes.
        const unsigned int rank = __popc(mask & ((1u << lane) - 1u));
        const unsigned int n_active = __popc(mask);
#if WS_KIND == WS_KIND_TRACE
        const unsigned int kept = count < st.slots ? count : st.slots;
        const uint4* src = reinterpret_cast<const uint4*>(st.local);
        uint4* dst = reinterpret_cast<uint4*>(st.area + WS_WARP_HEADER_BYTES);
        for (unsigned int k = rank; k < kept; k += n_active) dst[k] = src[k];
#else
        const unsigned long long* src = reinterpret_cast<const unsigned long long*>(st.local);
        unsigned long long* dst =
            reinterpret_cast<unsigned long long*>(st.area + WS_WARP_HEADER_BYTES);
        for (unsigned int k = rank; k < WS_MAX_SITES * WS_SUMMARY_SITE_BYTES / 8; k += n_active)
            dst[k] = src[k];
#endif
    }
    if (lane == leader) {
        WarpHeader* h = reinterpret_cast<WarpHeader*>(st.area);
        h->begin = st.begin;
        h->end = t_end;
        h->smid = sm_id();
        h->warpid = hw_warp_id();
        h->count = count;
        h->flags = WS_WARP_FLAG_END;
    }
}

}  // namespace ws

#define WS_KERNEL_BEGIN(log) \
    ::ws::State ws_state_;   \
    ::ws::begin((log), ws_state_)
#define WS_KERNEL_END(log) ::ws::end(ws_state_)
#define WS_LOAD(site, region, ...) \
    (::ws::load<(region)>(ws_state_, (site), [&]() { return (__VA_ARGS__); }))

#endif  // WS_MODE
