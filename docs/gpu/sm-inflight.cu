// sm-inflight.cu — how much can one SM read from DRAM at once?
//
// Standalone (not part of the build): nvcc -arch=native -O3 -o sminflight sm-inflight.cu && ./sminflight
// loaded-latency.cu found a DRAM miss's latency within 8 % of its unloaded 704 cycles while one
// 256-thread block per SM streamed at 3.1 TB/s, where DRAM's ceiling is 4.6: what holds one block
// per SM back is the SM (the misses it keeps in flight), not DRAM's queues. This measures one
// SM's own rate and, by Little's law, its bytes in flight:
//   one block on one SM (the grid is one block), 32 … 1024 threads, each keeping UNROLL
//   independent 16-byte ld.global.cg in flight over a stream no launch has read; and the same
//   with one block on every SM (the grid is the SM count), for the device's rate beside it.
// Printed per case: the block's bytes over its own span (clock64, SM cycles), bytes per cycle
// per SM, and bytes in flight per SM at the unloaded latency the chase measured (704 cycles).
// A third set puts every load of one SM's block on a 128-byte line of its own (16 bytes of one
// sector): whether the SM's bound counts lines or bytes. 323 lines in flight (41 KB of whole
// lines, the h100 preset's L1 MSHRs) allow about 7.3 useful B a cycle; 41 KB of sectors, the L1
// port's line a cycle, 16.
#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

constexpr int UNROLL = 4;
constexpr int PASSES = 16;          // loop trips per thread
constexpr double UNLOADED = 704.0;  // loaded-latency-h200-2026-11-29.txt, no background

// Block b reads its own region: PASSES trips of UNROLL loads per thread, consecutive threads on
// consecutive 16-byte words, each trip's loads a block's width apart.
__global__ void stream(const uint4* buf, size_t region, long long* cycles, unsigned* sink) {
  const uint4* p = buf + size_t(blockIdx.x) * region + threadIdx.x;
  unsigned x = 0;
  __syncthreads();
  const long long c0 = clock64();
  for (int k = 0; k < PASSES; ++k) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = __ldcg(p + size_t(k * UNROLL + u) * blockDim.x);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) x ^= v[u].x ^ v[u].w;
  }
  __syncthreads();
  const long long c1 = clock64();
  if (threadIdx.x == 0) cycles[blockIdx.x] = c1 - c0;
  if (x == 0x12345678u) sink[0] = x;
}

// The same loop with every load on a line of its own: thread t's loads are LINE words apart.
// A copy of `stream`'s loop, not a shared helper, so that `stream` stays the kernel the H200 ran.
constexpr int LINE = 8;  // uint4 per 128-byte line
__global__ void sparse(const uint4* buf, long long* cycles, unsigned* sink) {
  const uint4* p = buf + size_t(threadIdx.x) * LINE;
  unsigned x = 0;
  __syncthreads();
  const long long c0 = clock64();
  for (int k = 0; k < PASSES; ++k) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      v[u] = __ldcg(p + size_t(k * UNROLL + u) * blockDim.x * LINE);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) x ^= v[u].x ^ v[u].w;
  }
  __syncthreads();
  const long long c1 = clock64();
  if (threadIdx.x == 0) cycles[0] = c1 - c0;
  if (x == 0x12345678u) sink[0] = x;
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  printf("%s, %d SMs\n", prop.name, sms);
  const size_t region = size_t(PASSES) * UNROLL * 1024;  // uint4 per block at 1024 threads
  const size_t total = region * sms * 8;                 // 8 fresh regions per SM and case set
  uint4* buf;
  CHECK(cudaMalloc(&buf, total * sizeof(uint4)));
  CHECK(cudaMemset(buf, 1, total * sizeof(uint4)));
  long long* d;
  unsigned* sink;
  CHECK(cudaMalloc(&d, sms * sizeof(long long)));
  CHECK(cudaMalloc(&sink, 4));
  unsigned* flush;
  const size_t flush_bytes = size_t(256) << 20;
  CHECK(cudaMalloc(&flush, flush_bytes));
  printf("%-6s %8s %12s %12s %16s\n", "grid", "threads", "cycles", "B/cycle/SM", "B in flight/SM");
  int slot = 0;
  for (int all = 0; all < 2; ++all) {
    for (int threads = 32; threads <= 1024; threads *= 2) {
      const int grid = all ? sms : 1;
      CHECK(cudaMemset(flush, slot, flush_bytes));  // evict the L2
      const uint4* base = buf + size_t(slot % 8) * region * sms;
      ++slot;
      stream<<<grid, threads>>>(base, region, d, sink);
      CHECK(cudaDeviceSynchronize());
      std::vector<long long> c(grid);
      CHECK(cudaMemcpy(c.data(), d, grid * sizeof(long long), cudaMemcpyDeviceToHost));
      std::sort(c.begin(), c.end());
      const double cyc = double(c[c.size() / 2]);
      const double bytes = double(threads) * PASSES * UNROLL * 16;
      const double rate = bytes / cyc;
      printf("%-6d %8d %12.0f %12.2f %16.0f\n", grid, threads, cyc, rate, rate * UNLOADED);
    }
  }
  // One SM, a line per load: useful bytes (16 a load) per cycle, and lines in flight at 704.
  const size_t sparse_words = size_t(PASSES) * UNROLL * 1024 * LINE;
  uint4* sbuf;
  CHECK(cudaMalloc(&sbuf, sparse_words * sizeof(uint4)));
  CHECK(cudaMemset(sbuf, 1, sparse_words * sizeof(uint4)));
  printf("\none SM, each load on a 128-byte line of its own\n");
  printf("%8s %12s %14s %18s\n", "threads", "cycles", "useful B/cycle", "lines in flight");
  for (int threads = 32; threads <= 1024; threads *= 2) {
    CHECK(cudaMemset(flush, slot++, flush_bytes));  // evict the L2
    sparse<<<1, threads>>>(sbuf, d, sink);
    CHECK(cudaDeviceSynchronize());
    long long c = 0;
    CHECK(cudaMemcpy(&c, d, sizeof(long long), cudaMemcpyDeviceToHost));
    const double loads = double(threads) * PASSES * UNROLL;
    printf("%8d %12lld %14.2f %18.0f\n", threads, c, loads * 16 / double(c),
           loads / double(c) * UNLOADED);
  }
  return 0;
}
