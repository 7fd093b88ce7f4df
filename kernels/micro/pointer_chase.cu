// pointer_chase.cu — latency microbenchmarks for the emulator's timing model (and any GPU).
//
// Why: a dependent pointer chase is the standard way to measure memory latency (Wong et al. 2010,
// Mei & Chu 2017, Jia et al. 2018): each load's address is the previous load's value, so loads
// cannot overlap and the time per step is the load-to-use latency of wherever the chain lives.
// The emulator tests (emulator/tests/integration/micro.rs) lay the chain out so that every timed
// step hits L1, or L2, or DRAM, and check that the cycles per step measured *through the probe
// header* match the configured latencies. `strided_loads` times independent loads, the shape of
// the paper's kernels, where WS_NAIVE reads the clock before the data arrives and reports a small
// fraction of what WS_FENCE / WS_DUMMY report (Kanda et al. 2011).
//
// One warp runs each kernel; every lane follows the same addresses, so each load is one sector.
#include "warpscope.cuh"

// Steps inside one probe of pointer_chase: a compile-time count, fully unrolled, so no loop
// control sits between the two clock reads.
#define CHASE_STEPS_PER_PROBE 32

// An explicit ld.global (the loaded pointers are generic to the compiler, which would emit generic
// ld.u64); volatile so it stays between the probe's clock reads, which are volatile asm too.
__device__ __forceinline__ unsigned long long* step(unsigned long long* q) {
    unsigned long long next;
    asm volatile("ld.global.u64 %0, [%1];" : "=l"(next) : "l"(q));
    return reinterpret_cast<unsigned long long*>(next);
}

__device__ __forceinline__ unsigned long long* chase_fixed(unsigned long long* q) {
#pragma unroll
    for (int i = 0; i < CHASE_STEPS_PER_PROBE; ++i) q = step(q);
    return q;
}

// Waits until `v` is in its register: a volatile store that reads it, predicated on v == 0 (never
// true here). Without it, the first probe's opening clock would be read while the last warm-up
// load is still in flight, and that probe would include the tail of it.
__device__ __forceinline__ void wait_for(unsigned long long v, unsigned long long* sink) {
    asm volatile(
        "{\n\t.reg .pred p;\n\tsetp.eq.u64 p, %0, 0;\n\t@p st.volatile.global.u64 [%1], %0;\n\t}"
        ::"l"(v), "l"(sink)
        : "memory");
}

// Walks `warm_steps` untimed steps from `start`, then `repeats` probes of
// CHASE_STEPS_PER_PROBE steps each (site 0, writable memory). out[0] = the final pointer.
extern "C" __global__ void pointer_chase(unsigned long long* start, int warm_steps, int repeats,
                                         unsigned long long* out, ws::Log log) {
    WS_KERNEL_BEGIN(log);
    unsigned long long* q = start;
    for (int i = 0; i < warm_steps; ++i) q = step(q);
    wait_for(reinterpret_cast<unsigned long long>(q), out);
    for (int r = 0; r < repeats; ++r) {
        q = WS_LOAD(0, WS_GLOBAL, chase_fixed(q));
    }
    if (threadIdx.x == 0) out[0] = reinterpret_cast<unsigned long long>(q);
    WS_KERNEL_END(log);
}

// `repeats` probes of one independent load each, p[r * stride_words] (site 0, writable memory);
// out[0] = the sum of the loaded values.
extern "C" __global__ void strided_loads(const unsigned int* p, int stride_words, int repeats,
                                         unsigned int* out, ws::Log log) {
    WS_KERNEL_BEGIN(log);
    unsigned int sum = 0;
    for (int r = 0; r < repeats; ++r) {
        sum += WS_LOAD(0, WS_GLOBAL, p[r * stride_words]);
    }
    if (threadIdx.x == 0) out[0] = sum;
    WS_KERNEL_END(log);
}

// `repeats` probes of a load of p[0] (site 0, writable memory): after the first, every load hits
// L1, and no address arithmetic sits inside the timed window, so a fenced or dummy-timed access
// reads the L1 hit latency plus the probe's own few cycles. out[0] = the sum of the loaded values.
extern "C" __global__ void repeated_loads(const unsigned int* p, int repeats, unsigned int* out,
                                          ws::Log log) {
    WS_KERNEL_BEGIN(log);
    unsigned int sum = 0;
    for (int r = 0; r < repeats; ++r) {
        sum += WS_LOAD(0, WS_GLOBAL, p[0]);
    }
    if (threadIdx.x == 0) out[0] = sum;
    WS_KERNEL_END(log);
}

// A chase through the texture path: a 1D float texture (a cudaArray, point filtering, unnormalized
// coordinates) whose texel at x holds the coordinate of the next step's texel (its index + 0.5), so
// each fetch's value is the next fetch's coordinate with no instruction between them, and the time
// per step is the texture path's load-to-use latency. `repeats` probes of CHASE_STEPS_PER_PROBE
// steps each (site 0, texture) after `warm_steps` untimed ones; out[0] = the final coordinate.
__device__ __forceinline__ float tex_chase_fixed(cudaTextureObject_t t, float x) {
#pragma unroll
    for (int i = 0; i < CHASE_STEPS_PER_PROBE; ++i) x = tex1D<float>(t, x);
    return x;
}

extern "C" __global__ void texture_chase(cudaTextureObject_t t, float start, int warm_steps,
                                         int repeats, float* out, ws::Log log) {
    WS_KERNEL_BEGIN(log);
    float x = start;
    for (int i = 0; i < warm_steps; ++i) x = tex1D<float>(t, x);
    wait_for(static_cast<unsigned long long>(__float_as_uint(x)),
             reinterpret_cast<unsigned long long*>(out));
    for (int r = 0; r < repeats; ++r) {
        x = WS_LOAD(0, WS_TEXTURE, tex_chase_fixed(t, x));
    }
    if (threadIdx.x == 0) out[0] = x;
    WS_KERNEL_END(log);
}
