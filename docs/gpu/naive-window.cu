// naive-window.cu — what does a naive clock window (clock, access, clock) read on silicon, and
// what sets it: the stall counts ptxas gives the instructions between the two reads, or the
// reads themselves?
//
// Standalone (not part of the build): nvcc -arch=native -O3 -o naivewin naive-window.cu && ./naivewin
// On sm_90 ptxas reads %clock with CS2R.32 (fixed latency, into a vector register) or S2UR
// (into a uniform register, on a scoreboard), and a %clock64 whose whole value is used with
// CS2R. Naive windows measured so far read 4 cycles with CS2R at both ends around one load
// (contention.cu), where the stall counts between the reads add up to 4, and 9 to 33 with an
// S2UR at one end, which the stall counts do not give (docs/gpu/2026-12-05-naive-windows.md).
// One warp times each window REPS times; lane 0 records every reading. ptxas 13.0 for sm_90
// compiles the variants to these windows (stall counts from the opening read to the closing
// one, from kernels/examples/sass_windows.rs):
//   V0  nothing between, %clock:               S2UR, NOP, S2UR                      8
//   V1  nothing between, %clock64:             CS2R, CS2R                           2
//   V2  one load of a word in L1, %clock:      S2UR, NOP, LDG, S2UR                 8
//   V3  the same, %clock64:                    CS2R, LDG, CS2R                      2
//   V4  the load's address computed from the
//       opening clock (one of 8 lines), %clock: CS2R.32, 2 ALU, IMAD.WIDE, LDG, S2UR 21
//   V5  the same, %clock64:                    CS2R, 4 ALU, LDG, CS2R               27
//   V6  two 16-byte shared stores, %clock:     S2UR, NOP, STS, STS, S2UR            8
//   V7  the same, %clock64:                    CS2R, STS, STS, CS2R                 6
// Printed per variant: mean, min, max and the readings' histogram (value x count), leaving out
// each launch's first window. `experiments/run` also keeps this binary's SASS
// (naive-window.sass), since the GPU machine's ptxas may schedule otherwise.
#include <cstdio>
#include <map>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

constexpr int REPS = 256;

__device__ __forceinline__ unsigned clk32() {
  unsigned t;
  asm volatile("mov.u32 %0, %%clock;" : "=r"(t)::"memory");
  return t;
}
__device__ __forceinline__ unsigned long long clk64() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
  return t;
}
__device__ __forceinline__ unsigned ld(const unsigned* a) {
  unsigned v;
  asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  return v;
}

// The window of variant V around its access, in the clock's own width; the loaded value is
// added to `sum` after the closing read, so that nothing in the window waits for it.
template <int V, typename T>
__device__ __forceinline__ T window(const unsigned* p, float f, float* sh, unsigned* sum) {
  T t0, t1;
  auto now = [] {
    if constexpr (sizeof(T) == 4) return clk32(); else return clk64();
  };
  if constexpr (V / 2 == 0) {
    t0 = now();
    t1 = now();
  } else if constexpr (V / 2 == 1) {
    t0 = now();
    unsigned v = ld(p);
    t1 = now();
    *sum += v;
  } else if constexpr (V / 2 == 2) {
    t0 = now();
    // An address the window computes: one of 8 lines in L1, picked by the opening clock.
    unsigned v = ld(p + ((unsigned)t0 & 7) * 32);
    t1 = now();
    *sum += v;
  } else {
    t0 = now();
    float a = f * 1.5f + 1.0f, b = f * 2.5f + 2.0f, c = f * 3.5f + 3.0f, d = f * 4.5f + 4.0f;
    float e = f * 5.5f + 5.0f, g = f * 6.5f + 6.0f, h = f * 7.5f + 7.0f, k = f * 8.5f + 8.0f;
    unsigned s = (unsigned)__cvta_generic_to_shared(sh);
    asm volatile("st.volatile.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(s), "f"(a), "f"(b),
                 "f"(c), "f"(d) : "memory");
    asm volatile("st.volatile.shared.v4.f32 [%0+16], {%1, %2, %3, %4};" ::"r"(s), "f"(e),
                 "f"(g), "f"(h), "f"(k) : "memory");
    t1 = now();
  }
  return t1 - t0;
}

// Odd variants keep the whole 64-bit difference, so that ptxas reads %clock64 with CS2R at
// both ends rather than its low word.
template <int V>
__global__ void k(const unsigned* p, float f, unsigned long long* out, unsigned* sink) {
  __shared__ float sh[8];
  unsigned sum = 0;
  for (int r = 0; r < REPS; ++r) {
    unsigned long long w = (V % 2 == 0) ? window<V, unsigned>(p, f, sh, &sum)
                                        : window<V, unsigned long long>(p, f, sh, &sum);
    if (threadIdx.x == 0) out[r] = w;
    // Drains the record's store outside the next window.
    asm volatile("fence.acq_rel.cta;" ::: "memory");
  }
  sink[threadIdx.x] = sum + (unsigned)sh[threadIdx.x % 8];
}

using K = void (*)(const unsigned*, float, unsigned long long*, unsigned*);

int main() {
  const K ks[] = {k<0>, k<1>, k<2>, k<3>, k<4>, k<5>, k<6>, k<7>};
  const char* names[] = {"empty, 32-bit clocks", "empty, 64-bit clocks", "L1 load, 32-bit",
                         "L1 load, 64-bit", "L1 load + address, 32-bit",
                         "L1 load + address, 64-bit", "8 FFMA + STS, 32-bit",
                         "8 FFMA + STS, 64-bit"};
  unsigned *p, *sink;
  unsigned long long* out;
  CHECK(cudaMalloc(&p, 4096));
  CHECK(cudaMemset(p, 0, 4096));
  CHECK(cudaMalloc(&out, REPS * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&sink, 32 * sizeof(unsigned)));
  for (int v = 0; v < 8; ++v) {
    // Once to warm the L1 and the instruction cache, then the recorded launch.
    for (int l = 0; l < 2; ++l) {
      ks[v]<<<1, 32>>>(p, 1.0f, out, sink);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
    }
    unsigned long long h[REPS];
    CHECK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
    // The first window of a launch finds its loads cold: left out, as fence-variants.cu does.
    std::map<unsigned long long, int> hist;
    double s = 0;
    unsigned long long mn = ~0ull, mx = 0;
    for (int r = 1; r < REPS; ++r) {
      ++hist[h[r]];
      s += h[r];
      mn = h[r] < mn ? h[r] : mn;
      mx = h[r] > mx ? h[r] : mx;
    }
    printf("V%d %-26s mean %6.2f min %4llu max %4llu  histogram", v, names[v], s / (REPS - 1), mn, mx);
    for (auto [val, n] : hist) printf(" %llux%d", val, n);
    printf("\n");
  }
  return 0;
}
