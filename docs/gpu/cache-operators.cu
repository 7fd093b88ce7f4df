// cache-operators.cu — which global loads does the L1 serve?
//
// Standalone (not part of the build): nvcc -arch=native -O3 -o cacheops cache-operators.cu && ./cacheops
// atomic-units.cu's chain of ld.global.cg read 268 cycles a step on an H200, an L2 hit, where the
// h100 preset serves the chain from its L1 (47.5): the preset ignores the cache operator. This
// times one thread's dependent chain over one word (its value 0 makes the next address the
// same word) with each load form a kernel may use: plain ld.global (.ca), .cg, .cs, .lu, .cv,
// ld.volatile, ld.relaxed.gpu, ld.acquire.gpu, ld.relaxed.cta and ld.global.nc; and the same
// chain over 32 words of one line whose lanes all load (a warp, each lane its own word).
// Printed: cycles per step, the median of 5 launches after a first; each launch starts with the
// word in L2 (the launch before read it) and L1 cold, so a form the L1 serves reads the L1's
// latency after its first step and one it does not reads the L2's.
#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

constexpr int STEPS = 256;

// The load forms, in the order printed.
template <int K>
__device__ __forceinline__ unsigned ld(const unsigned* a) {
  unsigned v;
  if (K == 0) asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  if (K == 1) asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  if (K == 2) asm volatile("ld.global.cs.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  if (K == 3) asm volatile("ld.global.lu.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  if (K == 4) asm volatile("ld.global.cv.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  if (K == 5) asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  if (K == 6) asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  if (K == 7) asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  if (K == 8) asm volatile("ld.relaxed.cta.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  if (K == 9) asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  return v;
}
constexpr int FORMS = 10;
const char* const NAMES[FORMS] = {"ld.global",          "ld.global.cg",
                                  "ld.global.cs",       "ld.global.lu",
                                  "ld.global.cv",       "ld.volatile.global",
                                  "ld.relaxed.gpu",     "ld.acquire.gpu",
                                  "ld.relaxed.cta",     "ld.global.nc"};

template <int K>
__global__ void chain(const unsigned* buf, long long* out) {
  unsigned i = threadIdx.x;
  const long long c0 = clock64();
  for (int s = 0; s < STEPS; ++s) i = threadIdx.x + ld<K>(buf + i);
  const long long c1 = clock64();
  if (threadIdx.x == 0) {
    out[0] = c1 - c0;
    out[1] = i;
  }
}

template <int K>
static int run(const unsigned* buf, long long* d, int lanes, double& step) {
  std::vector<long long> v;
  for (int r = 0; r < 6; ++r) {
    chain<K><<<1, lanes>>>(buf, d);
    CHECK(cudaDeviceSynchronize());
    long long c;
    CHECK(cudaMemcpy(&c, d, sizeof c, cudaMemcpyDeviceToHost));
    if (r > 0) v.push_back(c);
  }
  std::sort(v.begin(), v.end());
  step = double(v[v.size() / 2]) / STEPS;
  return 0;
}

template <int K>
static int row(const unsigned* buf, long long* d) {
  double one, warp;
  if (run<K>(buf, d, 1, one) || run<K>(buf, d, 32, warp)) return 1;
  printf("%-20s %10.1f %10.1f\n", NAMES[K], one, warp);
  return 0;
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  printf("%s; cycles per step of a dependent chain of loads of one word\n", prop.name);
  printf("%-20s %10s %10s\n", "load", "1 lane", "32 lanes");
  unsigned* buf;
  CHECK(cudaMalloc(&buf, 4096));
  CHECK(cudaMemset(buf, 0, 4096));
  long long* d;
  CHECK(cudaMalloc(&d, 2 * sizeof(long long)));
  if (row<0>(buf, d) || row<1>(buf, d) || row<2>(buf, d) || row<3>(buf, d) || row<4>(buf, d) ||
      row<5>(buf, d) || row<6>(buf, d) || row<7>(buf, d) || row<8>(buf, d) || row<9>(buf, d))
    return 1;
  return 0;
}
