// dram-granularity.cu — what does DRAM move for a 32-byte sector that misses the L2?
//
// Standalone (not part of the build): nvcc -arch=native -O3 -o dram dram-granularity.cu && ./dram
// The h100 preset moves 32 bytes from DRAM per missed sector; an H100 runs the study's good block
// shapes 2.3-2.5x slower than the preset, as if it moved 64 (docs/gpu/2026-11-27-findings.md, 4).
// This reads the same 2^25 sectors (1 GiB) of an 8 GiB buffer in different patterns, each lane
// pair reading one sector with two 16-byte ld.global.cg (the L1 is bypassed; nothing is read
// twice, so the L2 serves nothing but what its own fetch brought in):
//   stride N    sectors 0, N, 2N, ... (N = 1 is a dense stream; N = 2 reads half of each 64 B)
//   random      sectors drawn by a hash over the whole buffer
//   random-64   random 64-byte pairs, both sectors read
//   random-128  random 128-byte lines, all four sectors read
// Printed per pattern: the kernel time (median of 5), useful GB/s, and time per sector relative to
// the dense stream. If DRAM fetched 32 B per sector, stride 2 would cost about what the stream
// does; fetching 64 B it costs twice. Each pattern is timed with the context's L2 fetch
// granularity limit (cudaLimitMaxL2FetchGranularity) as it was, and set to 32, 64 and 128.
// Then, at the default limit: random runs of 64 B to 16 KiB (where reads become as cheap as a
// stream says how long a DRAM page is), every sector once but scattered inside blocks of 128 B
// to 32 MiB, every 2 KiB run once with the runs scattered inside blocks of 8 KiB to 32 MiB (a run
// read in order: whether a spread-out read is slow for its spread or for its short runs), and
// four patterns with 1, 2, 4 and 8 blocks of 256
// threads per SM (whether scattered reads are limited by DRAM or by the loads in flight).
// `./dram --once` runs each pattern once at the default limit, for Nsight Compute, whose
// dram__bytes_read.sum per launch says the bytes directly (launches in the order printed).
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <vector>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

constexpr size_t BUF_SECTORS = size_t(1) << 28;   // 8 GiB of 32-byte sectors
constexpr size_t READS = size_t(1) << 25;         // sectors read per launch (1 GiB)
constexpr int UNROLL = 4;                         // independent loads per thread

__device__ __forceinline__ uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// kind 0: stride `arg` sectors; 1: random sectors; 2: random runs of `arg` adjacent sectors;
// 3: every sector of the first 1 GiB once, blocks of 2^arg sectors in order, scattered inside
// each block (an odd multiplier permutes the block's sectors); 4: the same with runs of RUN
// adjacent sectors in place of sectors, each run read in order.
constexpr size_t RUN = 64;  // 2 KiB
__device__ __forceinline__ size_t sector_of(size_t i, int kind, int arg) {
  if (kind == 0) return i * arg;
  if (kind == 1) return mix(i) % BUF_SECTORS;
  if (kind == 3) {
    const size_t block = size_t(1) << arg;
    return (i & ~(block - 1)) | ((i * 40503u) & (block - 1));
  }
  if (kind == 4) {
    const size_t runs = (size_t(1) << arg) / RUN, r = i / RUN;
    return ((r & ~(runs - 1)) | ((r * 40503u) & (runs - 1))) * RUN + i % RUN;
  }
  size_t run = i / arg;
  return (mix(run) % (BUF_SECTORS / arg)) * arg + i % arg;
}

// Grid-stride, so that a smaller grid keeps fewer loads in flight (the parallelism section).
__global__ void read_sectors(const uint4* buf, int kind, int arg, unsigned* sink) {
  const size_t threads = size_t(gridDim.x) * blockDim.x, halves = READS * 2;
  unsigned x = 0;
  for (size_t t = size_t(blockIdx.x) * blockDim.x + threadIdx.x; t < halves; t += threads * UNROLL) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      size_t half = (t + u * threads) % halves;  // a 16-byte half of read number half/2 (the
                                                 // last pass of a small grid wraps round)
      size_t s = sector_of(half >> 1, kind, arg);
      v[u] = __ldcg(buf + s * 2 + (half & 1));
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (x == 0x9e3779b9u) atomicAdd(sink, 1);      // never true for the fill below; keeps the loads
}

__global__ void fill(uint4* buf, size_t n) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    buf[i] = make_uint4(unsigned(i), unsigned(i >> 32) | 1u, 7u, 11u);
}

struct Pattern { const char* name; int kind; int arg; };
static const Pattern PATTERNS[] = {
  {"stride 1 (dense)", 0, 1}, {"stride 2 (64 B)", 0, 2}, {"stride 4 (128 B)", 0, 4},
  {"stride 8 (256 B)", 0, 8}, {"random", 1, 1}, {"random-64", 2, 2}, {"random-128", 2, 4},
};

static int launch(const uint4* buf, const Pattern& p, unsigned* sink, unsigned grid = 0) {
  const int block = 256;
  if (grid == 0) grid = unsigned(READS * 2 / UNROLL / block);  // one pass: every load at once
  read_sectors<<<grid, block>>>(buf, p.kind, p.arg, sink);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

static double median_ms(const uint4* buf, const Pattern& p, unsigned* sink, unsigned grid,
                        cudaEvent_t a, cudaEvent_t b) {
  std::vector<float> ms;
  for (int r = 0; r < 6; ++r) {
    cudaEventRecord(a);
    if (launch(buf, p, sink, grid)) return -1;
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float t;
    cudaEventElapsedTime(&t, a, b);
    if (r > 0) ms.push_back(t);  // the first is a warm-up
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int main(int argc, char** argv) {
  bool once = argc > 1 && strcmp(argv[1], "--once") == 0;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  size_t def = 0;
  CHECK(cudaDeviceGetLimit(&def, cudaLimitMaxL2FetchGranularity));
  printf("%s, %d SMs, L2 %d MiB, L2 fetch granularity limit %zu B\n", prop.name,
         prop.multiProcessorCount, prop.l2CacheSize >> 20, def);
  uint4* buf;
  unsigned* sink;
  CHECK(cudaMalloc(&buf, BUF_SECTORS * 32));
  CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  fill<<<4096, 256>>>(buf, BUF_SECTORS * 2);
  CHECK(cudaDeviceSynchronize());
  const int n = sizeof(PATTERNS) / sizeof(PATTERNS[0]);
  if (once) {
    for (int i = 0; i < n; ++i) {
      printf("launch %d: %s\n", i + 1, PATTERNS[i].name);
      if (launch(buf, PATTERNS[i], sink)) return 1;
      CHECK(cudaDeviceSynchronize());
    }
    return 0;
  }
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  const size_t limits[] = {def, 32, 64, 128};
  for (size_t limit : limits) {
    CHECK(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, limit));
    size_t got = 0;
    CHECK(cudaDeviceGetLimit(&got, cudaLimitMaxL2FetchGranularity));
    printf("\nL2 fetch granularity limit set to %zu B (reads back %zu B)\n", limit, got);
    printf("%-18s %10s %12s %16s\n", "pattern", "ms", "useful GB/s", "x dense per sector");
    double dense = 0;
    for (int i = 0; i < n; ++i) {
      double med = median_ms(buf, PATTERNS[i], sink, 0, a, b);
      if (med < 0) return 1;
      if (i == 0) dense = med;
      printf("%-18s %10.4f %12.1f %16.2f\n", PATTERNS[i].name, med, READS * 32.0 / med / 1e6, med / dense);
    }
  }
  CHECK(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, def));
  // Random runs of growing length: where a run reaches a DRAM page, random reads should run as
  // fast as the stream; below it, each run pays for opening its page.
  printf("\nRandom runs of adjacent sectors (default limit): useful GB/s\n");
  for (int run = 2; run <= 512; run *= 2) {
    Pattern p = {"", 2, run};
    double med = median_ms(buf, p, sink, 0, a, b);
    if (med < 0) return 1;
    printf("random %6d B   %10.4f ms %10.1f GB/s\n", run * 32, med, READS * 32.0 / med / 1e6);
  }
  // Scattered inside blocks of growing size, blocks in order: where this falls from the
  // stream's rate to the scattered one says how large the structure is that scattered reads
  // miss (a DRAM row, a TLB's reach), with no byte fetched twice.
  printf("\nEvery sector once, scattered inside blocks of (default limit): useful GB/s\n");
  for (int lg = 2; lg <= 20; lg += 2) {
    Pattern p = {"", 3, lg};
    double med = median_ms(buf, p, sink, 0, a, b);
    if (med < 0) return 1;
    printf("block %9zu B  %10.4f ms %10.1f GB/s\n", size_t(32) << lg, med, READS * 32.0 / med / 1e6);
  }
  // The same with 2 KiB runs in place of sectors: if these keep the stream's rate where the
  // sectors fell, a spread-out read is slow for its short runs (DRAM rows); if they fall as the
  // sectors did, for its spread.
  printf("\n2 KiB runs once each, scattered inside blocks of (default limit): useful GB/s\n");
  for (int lg = 8; lg <= 20; lg += 2) {
    Pattern p = {"", 4, lg};
    double med = median_ms(buf, p, sink, 0, a, b);
    if (med < 0) return 1;
    printf("runs in %9zu B %10.4f ms %10.1f GB/s\n", size_t(32) << lg, med, READS * 32.0 / med / 1e6);
  }
  // Fewer loads in flight: a bandwidth limit does not move with the grid until the loads in
  // flight run out; a latency limit (Little's law) moves with it from the start.
  printf("\nBlocks of 256 per SM (4 x 16-B loads per thread in flight): useful GB/s\n");
  printf("%-18s", "pattern");
  const int per_sm[] = {1, 2, 4, 8};
  for (int k : per_sm) printf(" %8d", k);
  printf("\n");
  const Pattern probe[] = {PATTERNS[0], PATTERNS[4], PATTERNS[5], {"random-1024", 2, 32}};
  for (const Pattern& p : probe) {
    printf("%-18s", p.name);
    for (int k : per_sm) {
      double med = median_ms(buf, p, sink, unsigned(k * prop.multiProcessorCount), a, b);
      if (med < 0) return 1;
      printf(" %8.1f", READS * 32.0 / med / 1e6);
    }
    printf("\n");
  }
  return 0;
}
