// const-sharing.cu — which SMs share constant memory's second level, and does a launch empty it?
//
// Standalone (not part of the build): nvcc -arch=native -O3 -o constshare const-sharing.cu && ./constshare
// const-latency.cu found, on an H200, a 2 KiB first level (41 cycles a step), a second level that
// holds 64 KiB (104), about 180 cycles for a line no SM has read since the upload and about 157
// in a second launch's first pass. Where the second level sits decides how the model should
// place it: in each SM, in each pair of SMs (TPC), in each GPC or beside the L2. One warp
// chases a __constant__ working set of 8 KiB (128 lines of 64 B: past the first level, inside
// the second), cycles per step from clock64, for each SM b in turn:
//   within  one launch: a block on SM 0 reads the set twice and raises a flag; a block on SM b
//           waits for the flag, then times its first pass. b = 0 is the same block's own second
//           pass (the second level's latency); an SM that shares the level with SM 0 reads about
//           that, one that does not reads what serves a line its own level misses.
//   across  two launches: the first reads the set twice on SM 0, the second times a first pass on
//           SM b. b = 0 says whether a launch keeps what the SM's levels hold.
//   cold    one launch right after the upload times a first pass on SM b (no SM has read it).
// Each row: the median of 3 rounds, each with its own upload. Blocks land where the GPU puts
// them: a launch has 8 one-warp blocks per SM, and the first block that finds itself on the SM
// wanted claims the role; a row whose SM no block reached prints nan.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

constexpr int WORDS = 16384;  // 64 KiB, the largest a __constant__ array may be
constexpr int LINE_WORDS = 16;  // 64 bytes
constexpr int LINES = 128;  // 8 KiB chased
__constant__ unsigned table[WORDS];

__device__ __forceinline__ unsigned smid() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

// A branch on the last read's word before the clock is read, so that the clock waits for it
// (the table never holds the word tested for).
__device__ __forceinline__ long long clock_after(unsigned p) {
  if (p == 0xffffffffu) asm volatile("trap;");
  return clock64();
}

__device__ __forceinline__ unsigned pass(unsigned p) {
  for (int i = 0; i < LINES; ++i) p = table[p];
  return p;
}

// Slot 0 of `claims` picks the warming block on SM `warm_sm` (none when negative), slot 1 the
// timing block on SM `time_sm` (none when negative). The warmer reads two passes and raises
// `flag`; the timer waits for the flag when `wait` is set, then times one pass into `cycles`.
__global__ void roles(int warm_sm, int time_sm, int wait, unsigned* claims, volatile unsigned* flag,
                      long long* cycles, unsigned* sink) {
  const unsigned s = smid();
  unsigned p = 0;
  __shared__ int role;
  if (threadIdx.x == 0) {
    role = -1;
    if (warm_sm >= 0 && s == unsigned(warm_sm) && atomicCAS(&claims[0], 0u, 1u) == 0u) role = 0;
    else if (time_sm >= 0 && s == unsigned(time_sm) && atomicCAS(&claims[1], 0u, 1u) == 0u) role = 1;
  }
  __syncthreads();
  if (role == 0) {
    p = pass(pass(p));
    long long t1 = clock_after(p);
    p = pass(p);
    long long t2 = clock_after(p);
    if (threadIdx.x == 0) {
      cycles[1] = t2 - t1;  // the warmer's own third pass: the levels it fills
      __threadfence();
      *flag = 1;
    }
  } else if (role == 1) {
    if (wait) {
      // Bounded, so that a warmer that never ran (no block on SM 0) cannot hang the GPU.
      for (long long i = 0; i < (1ll << 26) && *flag == 0; ++i) {
      }
    }
    long long t0 = clock64();
    p = pass(p);
    long long t1 = clock_after(p);
    if (threadIdx.x == 0) cycles[0] = t1 - t0;
  }
  if (role >= 0) sink[blockIdx.x * 32 + threadIdx.x] = p;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int nsm = prop.multiProcessorCount;
  const int blocks = 8 * nsm;
  printf("%s, %d SMs; one warp, cycles per dependent constant read, %d lines of 64 B (%d KiB)\n",
         prop.name, nsm, LINES, LINES * 64 / 1024);
  std::vector<unsigned> host(WORDS, 0u);
  for (int i = 0; i < LINES; ++i) host[i * LINE_WORDS] = ((i + 1) % LINES) * LINE_WORDS;
  unsigned *claims, *flag, *sink;
  long long* d_cycles;
  CHECK(cudaMalloc(&claims, 2 * sizeof(unsigned)));
  CHECK(cudaMalloc(&flag, sizeof(unsigned)));
  CHECK(cudaMalloc(&sink, blocks * 32 * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_cycles, 2 * sizeof(long long)));
  // One launch of `roles`; returns the timer's cycles per step (nan when no block took the role)
  // and, through `warm`, the warmer's third pass per step.
  auto launch = [&](int warm_sm, int time_sm, int wait, double* timed, double* warm) -> cudaError_t {
    const long long none[2] = {-1, -1};
    cudaError_t e;
    if ((e = cudaMemset(claims, 0, 2 * sizeof(unsigned))) != cudaSuccess) return e;
    if ((e = cudaMemset(flag, 0, sizeof(unsigned))) != cudaSuccess) return e;
    if ((e = cudaMemcpy(d_cycles, none, sizeof none, cudaMemcpyHostToDevice)) != cudaSuccess) return e;
    roles<<<blocks, 32>>>(warm_sm, time_sm, wait, claims, flag, d_cycles, sink);
    if ((e = cudaGetLastError()) != cudaSuccess) return e;
    long long c[2];
    if ((e = cudaMemcpy(c, d_cycles, sizeof c, cudaMemcpyDeviceToHost)) != cudaSuccess) return e;
    if (timed) *timed = c[0] < 0 ? NAN : double(c[0]) / LINES;
    if (warm) *warm = c[1] < 0 ? NAN : double(c[1]) / LINES;
    return cudaSuccess;
  };
  printf("%4s %8s %8s %8s %8s\n", "sm", "within", "across", "cold", "warmer");
  for (int b = 0; b < nsm; ++b) {
    std::vector<double> within, across, cold, warmer;
    for (int r = 0; r < 3; ++r) {
      double t, w;
      CHECK(cudaMemcpyToSymbol(table, host.data(), WORDS * sizeof(unsigned)));
      CHECK(launch(-1, b, 0, &t, nullptr));
      cold.push_back(t);
      CHECK(cudaMemcpyToSymbol(table, host.data(), WORDS * sizeof(unsigned)));
      CHECK(launch(0, -1, 0, nullptr, &w));
      CHECK(launch(-1, b, 0, &t, nullptr));
      across.push_back(t);
      warmer.push_back(w);
      CHECK(cudaMemcpyToSymbol(table, host.data(), WORDS * sizeof(unsigned)));
      // SM 0 timing itself: the warmer's own third pass is the within-launch reading.
      CHECK(launch(0, b == 0 ? -1 : b, 1, &t, &w));
      within.push_back(b == 0 ? w : t);
    }
    printf("%4d %8.1f %8.1f %8.1f %8.1f\n", b, median(within), median(across), median(cold),
           median(warmer));
    fflush(stdout);
  }
  return 0;
}
