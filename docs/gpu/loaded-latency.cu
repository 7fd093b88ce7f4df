// loaded-latency.cu — does DRAM's latency rise with load before DRAM's rate is reached?
//
// Standalone (not part of the build): nvcc -arch=native -O3 -o loaded loaded-latency.cu && ./loaded
// With one 256-thread block per SM (16 KiB of loads in flight per SM), an H100 streams at 0.80
// of its rate, so by Little's law its loads take 2.5 times the unloaded DRAM latency; the h100
// preset streams at its full rate there, since its DRAM is one bandwidth queue whose latency
// grows only once the load offered exceeds its rate (docs/validation.md, h100.dram.blocks1.stream).
// This measures the latency under load directly, as a loaded-latency tool does: one thread
// chases pointers through lines no launch has touched (every step an L2 miss) while blocks 1..
// read in the background at 0, 1, 2, 4 and 7 blocks of 256 threads per SM, four independent
// 16-byte ld.global.cg per thread in flight (dram-granularity.cu's loop, without its divisions):
//   stream     every sector in order (wrapping round a 4 GiB buffer)
//   random-64  random 64-byte pairs of sectors, drawn with a mask (no division)
// Printed per pattern and background: the background's useful GB/s while the chase ran, and the
// chase's ns and SM cycles per step (the median of 3 launches). If the chase's latency stays at
// its unloaded value until the background nears DRAM's rate, what slows one block per SM is a
// limit of the SM (its misses in flight); if it rises with the background's rate, DRAM's (or the
// L2's) queues are.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

constexpr size_t BUF_SECTORS = size_t(1) << 27;  // 4 GiB of 32-byte sectors in the background
constexpr int UNROLL = 4;
constexpr unsigned CHASE_LINES = 1u << 16;        // 65 536 lines 16 KiB apart: 1 GiB
constexpr unsigned LINE_STRIDE = 16384 / 4;       // in unsigned words
constexpr int STEPS = 1024;                       // chase steps per launch (distinct lines)
constexpr unsigned long long WARM_NS = 200000;    // the background runs alone this long first

__device__ __forceinline__ uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

struct Result {
  unsigned long long bytes;    // useful bytes the background read
  unsigned long long first_ns, last_ns;  // the background's earliest start and latest end
  long long chase_cycles;
  unsigned long long chase_ns;
  unsigned done;               // set by the chase: the background stops
};

// Block 0, thread 0: the chase, from line `start` of the cycle in `next`. Blocks 1..: the
// background, kind 0 a stream, 1 random 64-byte pairs, until the chase is done.
__global__ void __launch_bounds__(256, 8) loaded(const uint4* buf, const unsigned* next, unsigned start, int kind,
                       Result* out, unsigned* sink) {
  if (blockIdx.x == 0) {
    if (threadIdx.x != 0) return;
    const unsigned long long begin = now_ns();
    while (now_ns() - begin < WARM_NS && gridDim.x > 1) {}
    unsigned i = start;
    const long long c0 = clock64();
    const unsigned long long n0 = now_ns();
    for (int s = 0; s < STEPS; ++s) i = __ldcg(next + size_t(i) * LINE_STRIDE);
    const long long c1 = clock64();
    const unsigned long long n1 = now_ns();
    out->chase_cycles = c1 - c0;
    out->chase_ns = n1 - n0;
    *(volatile unsigned*)&out->done = 1;
    sink[0] = i;
    return;
  }
  const size_t threads = size_t(gridDim.x - 1) * blockDim.x;
  const size_t t = size_t(blockIdx.x - 1) * blockDim.x + threadIdx.x;
  const unsigned long long first = now_ns();
  unsigned x = 0;
  size_t pass = 0;
  for (;; ++pass) {
    if ((pass & 7) == 0 && *(volatile unsigned*)&out->done) break;
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const size_t half = (pass * UNROLL + u) * threads + t;  // a 16-byte half of a sector
      size_t s = half >> 1;
      if (kind == 1) s = ((mix(s >> 1) << 1) | (s & 1)) & (BUF_SECTORS - 1);
      v[u] = __ldcg(buf + (s & (BUF_SECTORS - 1)) * 2 + (half & 1));
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  const unsigned long long last = now_ns();
  if (x == 0x9e3779b9u) atomicAdd(sink + 1, 1);  // keeps the loads
  if (threadIdx.x % 32 == 0) {  // a warp's lanes read the flag together: one count per warp
    atomicAdd(&out->bytes, (unsigned long long)pass * UNROLL * 16 * 32);
    atomicMin(&out->first_ns, first);
    atomicMax(&out->last_ns, last);
  }
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  printf("%s, %d SMs\n", prop.name, sms);
  uint4* buf;
  unsigned *next, *sink;
  Result* out;
  CHECK(cudaMalloc(&buf, BUF_SECTORS * 32));
  CHECK(cudaMemset(buf, 1, BUF_SECTORS * 32));
  CHECK(cudaMalloc(&next, size_t(CHASE_LINES) * LINE_STRIDE * 4));
  int fit = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, loaded, 256, 0));
  CHECK(cudaMalloc(&sink, 8));
  CHECK(cudaMalloc(&out, sizeof(Result)));
  // One random cycle through the lines (Sattolo's shuffle, a fixed seed).
  std::vector<unsigned> order(CHASE_LINES), link(CHASE_LINES);
  for (unsigned i = 0; i < CHASE_LINES; ++i) order[i] = i;
  uint64_t seed = 0x2545f4914f6cdd1dull;
  for (unsigned i = CHASE_LINES - 1; i > 0; --i) {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    std::swap(order[i], order[seed % i]);
  }
  for (unsigned i = 0; i < CHASE_LINES; ++i) link[order[i]] = order[(i + 1) % CHASE_LINES];
  CHECK(cudaMemcpy2D(next, LINE_STRIDE * 4, link.data(), 4, 4, CHASE_LINES,
                     cudaMemcpyHostToDevice));
  printf("blocks of 256 resident per SM: %d (with the chase's block on one SM, one fewer there)\n",
         fit);
  const char* names[] = {"stream", "random-64"};
  const int per_sm[] = {0, 1, 2, 4, 7};
  printf("%-10s %14s %14s %12s %14s\n", "pattern", "blocks per SM", "background GB/s",
         "chase ns", "chase cycles");
  unsigned launch = 0;
  for (int kind = 0; kind < 2; ++kind) {
    for (int k : per_sm) {
      if (k >= fit) continue;  // the chase's block must fit beside the background's
      std::vector<double> gbs, ns, cyc;
      for (int r = 0; r < 3; ++r) {
        Result init = {0, ~0ull, 0, 0, 0, 0};
        CHECK(cudaMemcpy(out, &init, sizeof init, cudaMemcpyHostToDevice));
        // 256 MiB written evicts the L2 (50-60 MiB), so an idle chase misses it too.
        CHECK(cudaMemset(buf, r + 2, size_t(256) << 20));
        // Each launch chases lines no launch before it touched.
        unsigned start = order[(launch++ * STEPS) % CHASE_LINES];
        loaded<<<1 + k * sms, 256>>>(buf, next, start, kind, out, sink);
        CHECK(cudaGetLastError());
        Result got;
        CHECK(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost));
        const double span = k > 0 ? double(got.last_ns - got.first_ns) : 1.0;
        gbs.push_back(k > 0 ? got.bytes / span : 0.0);
        ns.push_back(double(got.chase_ns) / STEPS);
        cyc.push_back(double(got.chase_cycles) / STEPS);
      }
      std::sort(gbs.begin(), gbs.end());
      std::sort(ns.begin(), ns.end());
      std::sort(cyc.begin(), cyc.end());
      printf("%-10s %14d %14.1f %12.1f %14.1f\n", names[kind], k, gbs[1], ns[1], cyc[1]);
    }
  }
  return 0;
}
