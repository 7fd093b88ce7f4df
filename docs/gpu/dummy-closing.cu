// dummy-closing.cu — why fence-variants.cu's dummy closing reads ~40 cycles more than
// fence.acq_rel.cta after the value arrives, where warpscope's own dummy probe does not.
//
// Standalone (not part of the build): nvcc -arch=sm_90 -O3 -o dummy dummy-closing.cu && ./dummy
// Not yet run on silicon. What it decides: on an H100 and an H200 fence-variants.cu's dummy read
// 90 cycles around an L1 hit and 339-352 around an L2 hit, 41 and 40-46 more than
// fence.acq_rel.cta (49.3, 299-306), while the GPU check's dummy probe read 39.1 around an L1 hit,
// as its fence did (docs/gpu/fence-variants-2026-11-27.txt, h100-2026-11-27-ncu.md). In the SASS
// nvcc 13.0 gives fence-variants.cu for sm_90 the dummy window is
//     LDG R0 ; ISETP P0, R0, 0xdeadbeef ; @!P0 LDC.64 R6, c[0x0][0x220] ; @!P0 STG [R6], R0 ;
//     CS2R SR_CLOCKLO
// ptxas rematerialises the `sink` parameter as a constant-bank load inside the predicated
// region, and the store waits on that load's scoreboard. The hypothesis: a predicated-off LDC
// still takes its latency before it releases its scoreboard, so the window holds a constant load
// after the data arrives, which the PTX (sink loaded once, before the loop) does not have and
// the emulator does not charge. The closings below tell it apart:
//   fence      fence.acq_rel.cta, the reference (SASS MEMBAR.ALL.CTA, then a wait on every
//              scoreboard);
//   dummy-c    fence-variants.cu's dummy: predicate from the value, volatile global store to the
//              parameter `sink` (the predicated LDC above);
//   dummy-r    the same, the sink address loaded from global memory before the loop, so ptxas
//              cannot rematerialise it from the constant bank: no LDC in the window;
//   dummy-ws   warpscope's probe (kernels/warpscope.cuh, WS_DUMMY_CLOSE): predicate from a
//              run-time zero, volatile shared store of the value to a register address.
// If the hypothesis holds, dummy-r and dummy-ws read within a few cycles of fence and dummy-c
// reads ~40 more. `cuobjdump -sass` of the binary shows each window (kernel k<V>, V as below).
// One thread; each timed window is `t0 = clock; v = ld.global [p + r*stride]; <close>; t1 = clock`;
// printed: mean/min/max cycles per window over 31 windows (the first, cold one apart), for L1 hits
// (the same word each time) and L2 hits (lines a first launch read; L1 starts cold at each
// launch).
#include <cstdio>
#include <cstdint>
#define REPS 32
__device__ __forceinline__ unsigned clk() { unsigned t; asm volatile("mov.u32 %0, %%clock;" : "=r"(t) :: "memory"); return t; }
__device__ __forceinline__ unsigned ld(const unsigned* a) { unsigned v; asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory"); return v; }
// V: 0 fence, 1 dummy-c, 2 dummy-r, 3 dummy-ws (the names printed). `gsink` is the parameter or the loaded address,
// `ssink` a shared address, `zero` a run-time zero.
template <int V> __device__ __forceinline__ void close(unsigned v, unsigned* gsink, unsigned ssink, int zero) {
  if (V == 0) asm volatile("fence.acq_rel.cta;" ::: "memory");
  if (V == 1 || V == 2) asm volatile("{\n\t.reg .pred q;\n\tsetp.eq.u32 q, %0, 0xdeadbeef;\n\t@q st.volatile.global.u32 [%1], %0;\n\t}" :: "r"(v), "l"(gsink) : "memory");
  if (V == 3) asm volatile("{\n\t.reg .pred q;\n\tsetp.lt.s32 q, %0, 0;\n\t@q st.volatile.shared.u32 [%1], %2;\n\t}" :: "r"(zero), "r"(ssink), "r"(v) : "memory");
}
template <int V> __global__ void k(const unsigned* p, long stride, unsigned* sink, unsigned* const* sinkp, int zero, unsigned* out) {
  __shared__ __align__(16) unsigned state[4];
  unsigned* gsink = V == 2 ? *sinkp : sink;  // dummy-r: an address ptxas cannot take from c[]
  unsigned ssink = (unsigned)__cvta_generic_to_shared(state);
  unsigned sum = 0;
  for (int r = 0; r < REPS; ++r) {
    unsigned t0 = clk();
    unsigned v = ld(p + (long)r * stride);
    close<V>(v, gsink, ssink, zero);
    unsigned t1 = clk();
    sum += v;
    out[r] = t1 - t0;
    asm volatile("fence.acq_rel.cta;" ::: "memory");  // drain the out store outside the window
  }
  sink[1] = sum + state[0] * (unsigned)zero;
}
// Waits for the launch and prints its windows: mean, min and max over all but the first (cold).
static int report(const char* label, const char* name, const unsigned* out) {
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("error %s\n", cudaGetErrorString(e)); return 1; }
  unsigned h[REPS];
  cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
  double s = 0; unsigned mn = ~0u, mx = 0;
  for (int r = 1; r < REPS; ++r) { s += h[r]; mn = h[r] < mn ? h[r] : mn; mx = h[r] > mx ? h[r] : mx; }
  printf("%-7s %-9s mean %7.1f min %5u max %5u  (first %u)\n", label, name, s / (REPS - 1), mn, mx, h[0]);
  return 0;
}
typedef void (*K)(const unsigned*, long, unsigned*, unsigned* const*, int, unsigned*);
int main() {
  const char* names[] = {"fence", "dummy-c", "dummy-r", "dummy-ws"};
  K ks[] = {k<0>, k<1>, k<2>, k<3>};
  size_t big = 1ull << 28, flushsz = 256ull << 20;
  unsigned *p, *flush, *sink, *out;
  unsigned** sinkp;
  cudaMalloc(&p, big); cudaMalloc(&flush, flushsz); cudaMalloc(&sink, 64); cudaMalloc(&out, REPS * 4);
  cudaMalloc(&sinkp, sizeof(unsigned*));
  cudaMemcpy(sinkp, &sink, sizeof(unsigned*), cudaMemcpyHostToDevice);
  cudaMemset(p, 0, big);
  const char* cases[] = {"L1 hit", "L2 hit"};
  for (int c = 0; c < 2; ++c)
    for (int v = 0; v < 4; ++v) {
      long stride = c == 0 ? 0 : (long)(big / 4 / REPS);  // L1: the same word
      const unsigned* base = p + (c * 4 + v) * 64;          // other lines per case and closing
      cudaMemset(flush, v + 1, flushsz);                    // evict L2
      ks[0]<<<1, 1>>>(base, stride, sink, sinkp, 0, out);   // warm: L2
      ks[v]<<<1, 1>>>(base, stride, sink, sinkp, 0, out);
      if (report(cases[c], names[v], out)) return 1;
    }
  return 0;
}
