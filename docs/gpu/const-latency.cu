// const-latency.cu — how far away is a constant-memory read, by working set?
//
// Standalone (not part of the build): nvcc -arch=native -O3 -o constlat const-latency.cu && ./constlat
// The h100 preset has one constant cache per SM (34 cycles) in front of the L2 (247), and serves
// a kernel's first parameter read from the L2. On an H200, launch-overhead.cu's whole window around
// that first read is about 208 cycles, shorter than one L2 hit: something nearer than the L2
// serves it. This chases through a __constant__ array, one warp, all lanes on the same word
// (LDC with a register index), each step's index the word it read, one word per 64-byte line:
//   first   the chase's first pass over the working set in a launch right after the array's
//           upload (cudaMemcpyToSymbol): where a line comes from when no SM has read it
//   second  the same launch's second pass: where it comes from once this SM has read it
//   again   a second launch's first pass: whether what the first launch read is still near
// Cycles per step, per working set of 256 B to 64 KiB (the largest a __constant__ array may be);
// the median of 5 rounds, each with its own upload.
#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

constexpr int WORDS = 16384;  // 64 KiB
constexpr int LINE_WORDS = 16;  // 64 bytes
__constant__ unsigned table[WORDS];

// A branch on the last read's word before the clock is read, so that the clock waits for it
// (the table never holds the word tested for).
__device__ __forceinline__ long long clock_after(unsigned p) {
  if (p == 0xffffffffu) asm volatile("trap;");
  return clock64();
}

// Two passes of `steps` dependent reads each; lane 0 writes both passes' cycles.
__global__ void chase(int steps, long long* cycles, unsigned* sink) {
  unsigned p = 0;
  long long t0 = clock64();
  for (int i = 0; i < steps; ++i) p = table[p];
  long long t1 = clock_after(p);
  for (int i = 0; i < steps; ++i) p = table[p];
  long long t2 = clock_after(p);
  if (threadIdx.x == 0) {
    cycles[0] = t1 - t0;
    cycles[1] = t2 - t1;
  }
  sink[threadIdx.x] = p;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs; one warp, cycles per dependent constant read, one word per 64 B line\n",
         prop.name, prop.multiProcessorCount);
  printf("%10s %8s %10s %10s %10s\n", "bytes", "steps", "first", "second", "again");
  long long* d_cycles;
  unsigned* sink;
  CHECK(cudaMalloc(&d_cycles, 2 * sizeof(long long)));
  CHECK(cudaMalloc(&sink, 32 * sizeof(unsigned)));
  std::vector<unsigned> host(WORDS);
  for (int bytes = 256; bytes <= WORDS * 4; bytes *= 2) {
    const int lines = bytes / (LINE_WORDS * 4);
    // Line i's first word holds line (i + 1)'s index, the last line's holds 0: one cycle
    // through every line of the working set.
    std::fill(host.begin(), host.end(), 0u);
    for (int i = 0; i < lines; ++i) host[i * LINE_WORDS] = ((i + 1) % lines) * LINE_WORDS;
    std::vector<double> first, second, again;
    for (int r = 0; r < 5; ++r) {
      long long c[2];
      CHECK(cudaMemcpyToSymbol(table, host.data(), WORDS * sizeof(unsigned)));
      chase<<<1, 32>>>(lines, d_cycles, sink);
      CHECK(cudaMemcpy(c, d_cycles, sizeof c, cudaMemcpyDeviceToHost));
      first.push_back(double(c[0]) / lines);
      second.push_back(double(c[1]) / lines);
      chase<<<1, 32>>>(lines, d_cycles, sink);
      CHECK(cudaMemcpy(c, d_cycles, sizeof c, cudaMemcpyDeviceToHost));
      again.push_back(double(c[0]) / lines);
    }
    printf("%10d %8d %10.1f %10.1f %10.1f\n", bytes, lines, median(first), median(second),
           median(again));
  }
  return 0;
}
