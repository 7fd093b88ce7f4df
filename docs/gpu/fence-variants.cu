// fence-variants.cu — which closing construct makes a clock read wait for an independent load?
//
// Standalone (not part of the build): nvcc -arch=sm_90 -O3 -o fence fence-variants.cu && ./fence
// Run on an H200 on 2026-11-26; its output is in fence-variants-h200-2026-11-26.txt and what it
// showed in h200-2026-11-26-findings.md. With the store cases, on an H100 and an H200 on
// 2026-11-27: fence-variants-2026-11-27.txt, 2026-11-27-findings.md. One thread; each timed window is
//     t0 = clock; v = ld.global [p + r*stride]; <close>; t1 = clock
// with <close> one of: nothing (naive), membar.cta, fence.acq_rel.cta, membar.gl,
// fence.acq_rel.gpu, membar.sys, or the dummy (a never-executed volatile store of v). Printed:
// mean/min/max cycles per window over 31 windows (the first, cold one apart) for DRAM misses
// (lines untouched since a 256 MiB write flushed the L2), L2 hits (lines a first launch read; L1
// starts cold at each launch) and L1 hits (the same word again and again). Between windows the
// out store is drained with fence.acq_rel.cta (membar.gl would invalidate L1: its SASS carries
// CCTL.IVALL, and so do those of membar.gl, fence.acq_rel.gpu and membar.sys as closings, which
// is why they read L2 latency on the L1 case).
// The store cases time `st.global [p + r*stride]; <close>` the same way (dummy apart: it needs a
// loaded value), to lines not in L2 (after the flush) and in L2 (a first launch stored to them):
// whether a closing waits for the warp's own stores, which the emulator's h100 preset assumes of
// membar.cta (it waits for stores and atomics, not loads).
#include <cstdio>
#include <cstdint>
#define REPS 32
__device__ __forceinline__ unsigned clk() { unsigned t; asm volatile("mov.u32 %0, %%clock;" : "=r"(t) :: "memory"); return t; }
__device__ __forceinline__ unsigned ld(const unsigned* a) { unsigned v; asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory"); return v; }
template <int V> __device__ __forceinline__ void close(unsigned v, unsigned* sink) {
  if (V == 1) asm volatile("membar.cta;" ::: "memory");
  if (V == 2) asm volatile("fence.acq_rel.cta;" ::: "memory");
  if (V == 3) asm volatile("membar.gl;" ::: "memory");
  if (V == 4) asm volatile("fence.acq_rel.gpu;" ::: "memory");
  if (V == 5) asm volatile("membar.sys;" ::: "memory");
  if (V == 6) asm volatile("{\n\t.reg .pred q;\n\tsetp.eq.u32 q, %0, 0xdeadbeef;\n\t@q st.volatile.global.u32 [%1], %0;\n\t}" :: "r"(v), "l"(sink) : "memory");
}
template <int V> __global__ void k(const unsigned* p, long stride, unsigned* sink, unsigned* out) {
  unsigned sum = 0;
  for (int r = 0; r < REPS; ++r) {
    unsigned t0 = clk();
    unsigned v = ld(p + (long)r * stride);
    close<V>(v, sink);
    unsigned t1 = clk();
    sum += v;
    out[r] = t1 - t0;
    asm volatile("fence.acq_rel.cta;" ::: "memory");  // drain the out store outside the window (membar.gl would invalidate L1)
  }
  sink[1] = sum;
}
template <int V> __global__ void kst(unsigned* p, long stride, unsigned* sink, unsigned* out) {
  for (int r = 0; r < REPS; ++r) {
    unsigned t0 = clk();
    asm volatile("st.global.u32 [%0], %1;" :: "l"(p + (long)r * stride), "r"(t0) : "memory");
    close<V>(t0, sink);
    unsigned t1 = clk();
    out[r] = t1 - t0;
    asm volatile("fence.acq_rel.cta;" ::: "memory");
  }
}
// Waits for the launch and prints its windows: mean, min and max over all but the first (cold).
static int report(int width, const char* label, const char* name, const unsigned* out) {
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("error %s\n", cudaGetErrorString(e)); return 1; }
  unsigned h[REPS];
  cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
  double s = 0; unsigned mn = ~0u, mx = 0;
  for (int r = 1; r < REPS; ++r) { s += h[r]; mn = h[r] < mn ? h[r] : mn; mx = h[r] > mx ? h[r] : mx; }
  printf("%-*s %-18s mean %7.1f min %5u max %5u  (first %u)\n", width, label, name, s / (REPS - 1), mn, mx, h[0]);
  return 0;
}
typedef void (*K)(const unsigned*, long, unsigned*, unsigned*);
typedef void (*KS)(unsigned*, long, unsigned*, unsigned*);
int main() {
  const char* names[] = {"naive", "membar.cta", "fence.acq_rel.cta", "membar.gl", "fence.acq_rel.gpu", "membar.sys", "dummy"};
  K ks[] = {k<0>, k<1>, k<2>, k<3>, k<4>, k<5>, k<6>};
  size_t big = 1ull << 30, flushsz = 256ull << 20;
  unsigned *p, *flush, *sink, *out;
  cudaMalloc(&p, big); cudaMalloc(&flush, flushsz); cudaMalloc(&sink, 64); cudaMalloc(&out, REPS * 4);
  cudaMemset(p, 0, big);
  const char* cases[] = {"DRAM miss", "L2 hit", "L1 hit"};
  for (int c = 0; c < 3; ++c)
    for (int v = 0; v < 7; ++v) {
      long stride = c == 2 ? 0 : (long)(big / 4 / REPS);     // L1: the same word
      const unsigned* base = p + (c * 7 + v) * 64;  // other lines per case and variant
      cudaMemset(flush, v + 1, flushsz);                     // evict L2
      if (c >= 1) ks[0]<<<1, 1>>>(base, stride, sink, out);  // warm: L2 (and L1 for c==2)
      ks[v]<<<1, 1>>>(base, stride, sink, out);
      if (report(9, cases[c], names[v], out)) return 1;
    }
  KS kss[] = {kst<0>, kst<1>, kst<2>, kst<3>, kst<4>, kst<5>};
  const char* scases[] = {"store, not in L2", "store, in L2"};
  for (int c = 0; c < 2; ++c)
    for (int v = 0; v < 6; ++v) {
      long stride = (long)(big / 4 / REPS);
      unsigned* base = p + (32 + c * 6 + v) * 64;  // lines no load case used
      cudaMemset(flush, v + 1, flushsz);
      if (c == 1) kss[0]<<<1, 1>>>(base, stride, sink, out);  // the lines into L2
      kss[v]<<<1, 1>>>(base, stride, sink, out);
      if (report(16, scases[c], names[v], out)) return 1;
    }
  return 0;
}
