// atomic-units.cu — how many L2 units serve contended atomics, and how long one takes?
//
// Standalone (not part of the build): nvcc -arch=native -O3 -o atomunits atomic-units.cu && ./atomunits
// contention.cu found atomics to one word served at 0.69 per SM clock whether one lane of each
// warp or all 32 sent them, and 1,024 consecutive words (32 lines) at about 8 times that, not
// 32: some unit per group of lines serialises them. The h100 preset has one per L2 slice and
// spreads consecutive lines over its 64 slices, so it runs the 32 lines 32 times faster than one.
// This measures:
//   spread   65 536 warps, lane 0 of each doing 16 atomicAdd to word 0 of line (warp % L), the L
//            lines `gap` bytes apart (L = 1 … 512; gap 128 B, consecutive lines, and 4 KiB):
//            operations per SM clock. Where the rate stops doubling with L, the lines have
//            reached every unit; the gap at which it doubles sooner shows how lines map to units.
//   latency  one thread, a chain of atomicAdd whose returned value makes the next address (one
//            word, no contention): cycles per step, beside the same chain of plain loads (.cg)
// Printed: per case the kernel time (CUDA events, median of 5) and ops per clock; per chain the
// cycles per step (median of 5 launches).
#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

constexpr int BLOCKS = 2048;
constexpr int THREADS = 1024;
constexpr int ITERS = 16;
constexpr size_t BUF_BYTES = size_t(4) << 20;  // 512 lines 4 KiB apart, with room

__global__ void spread(unsigned* buf, unsigned lines, unsigned gap_words) {
  const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (threadIdx.x % 32 != 0) return;
  unsigned* w = buf + size_t(warp % lines) * gap_words;
  for (int k = 0; k < ITERS; ++k) atomicAdd(w, 1u);
}

constexpr int CHAIN = 256;

// ATOMIC: each step's address comes from the atomic's old value (always 0: the word holds 0 and
// the chain adds 0), so each waits for the one before.
template <bool ATOMIC>
__global__ void chain(unsigned* buf, long long* out) {
  unsigned i = 0;
  const long long c0 = clock64();
  for (int s = 0; s < CHAIN; ++s) {
    if (ATOMIC)
      i = atomicAdd(buf + i, 0u);
    else
      i = __ldcg(buf + i);
  }
  const long long c1 = clock64();
  out[0] = c1 - c0;
  out[1] = i;
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  int khz = 0;
  CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  const double ghz = khz / 1e6;
  printf("%s, %d SMs, %.3f GHz\n", prop.name, prop.multiProcessorCount, ghz);
  unsigned* buf;
  CHECK(cudaMalloc(&buf, BUF_BYTES));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  printf("%-8s %6s %6s %10s %12s\n", "gap", "lines", "", "ms", "ops/clock");
  for (unsigned gap : {128u, 4096u}) {
    for (unsigned lines = 1; lines <= 512; lines *= 2) {
      std::vector<float> ms;
      for (int r = 0; r < 6; ++r) {
        CHECK(cudaMemset(buf, 0, BUF_BYTES));
        CHECK(cudaEventRecord(a));
        spread<<<BLOCKS, THREADS>>>(buf, lines, gap / 4);
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        float t;
        CHECK(cudaEventElapsedTime(&t, a, b));
        if (r > 0) ms.push_back(t);
      }
      std::sort(ms.begin(), ms.end());
      const double t_ns = ms[ms.size() / 2] * 1e6;
      const double ops = double(BLOCKS) * THREADS / 32 * ITERS;
      printf("%-8u %6u %6s %10.4f %12.3f\n", gap, lines, "", t_ns / 1e6, ops / (t_ns * ghz));
    }
  }
  long long* d;
  CHECK(cudaMalloc(&d, 2 * sizeof(long long)));
  CHECK(cudaMemset(buf, 0, BUF_BYTES));
  for (int k = 0; k < 2; ++k) {
    std::vector<long long> v;
    for (int r = 0; r < 6; ++r) {
      if (k == 0)
        chain<true><<<1, 1>>>(buf, d);
      else
        chain<false><<<1, 1>>>(buf, d);
      CHECK(cudaDeviceSynchronize());
      long long c;
      CHECK(cudaMemcpy(&c, d, sizeof c, cudaMemcpyDeviceToHost));
      if (r > 0) v.push_back(c);
    }
    std::sort(v.begin(), v.end());
    printf("chain of %-22s %8.1f cycles/step\n", k == 0 ? "atomicAdd (returned)" : "ld.global.cg",
           double(v[v.size() / 2]) / CHAIN);
  }
  return 0;
}
