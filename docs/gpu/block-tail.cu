// How the GPU spreads the blocks of a grid that does not fit at once: which SM each block runs
// on, when it starts and when it ends. dram-granularity.cu's reader with 8 blocks of 256
// threads per SM fits six an SM (38 registers on sm_90), so 264 of its 1,056 blocks start as
// others finish. The emulator hands them to the SMs that free a slot first, 0 to 4 an SM, and
// its slowest SMs set a kernel time 1.21x its mean SM's (2026-12-04-registers-by-target.md);
// whether silicon spreads them as unevenly is what this measures.
//
// Two cases, each with 8 blocks of 256 threads per SM, six resident (36 KiB of dynamic shared
// memory a block):
//   spin    every block waits 50 us on %globaltimer: equal work, no shared resource
//   random  every block reads random 64-byte pairs of an 8 GiB buffer, as dram-granularity.cu's
//           random-64 pattern with 8 blocks per SM (grid-stride, four 16-byte .cg loads a trip)
// Thread 0 of each block records %smid, the SM's arrival count, and %globaltimer at the block's
// start and after its last thread is done.
//
// Build and run: nvcc -arch=native -O3 -o block-tail block-tail.cu && ./block-tail
// Output (stdout, CSV): case,block,smid,order,start_ns,end_ns; per case on stderr: the kernel's
// span, the blocks per SM (least, most, and how many SMs ran each count), and the latest end
// among the SMs that ran each count.
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>

constexpr size_t BUF_SECTORS = size_t(1) << 28;  // 8 GiB of 32-byte sectors
constexpr size_t READS = size_t(1) << 25;        // sectors read per launch (1 GiB)
constexpr int UNROLL = 4;
constexpr int THREADS = 256;
constexpr int SHARED = 36 * 1024;  // six blocks an SM: 6 x (36 + 1) KiB of 228

__device__ unsigned arrivals[1024];

__device__ __forceinline__ uint64_t mix(uint64_t x) {  // dram-granularity.cu's
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__device__ __forceinline__ unsigned long long now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// `arg` is the run length in sectors (2), passed at run time as dram-granularity.cu passes it,
// so that the address takes the same divisions.
__global__ void tail(const uint4* buf, int kind, int arg, unsigned* sink,
                     unsigned long long* out) {
  extern __shared__ unsigned char pad[];
  __shared__ unsigned long long start;
  if (threadIdx.x == 0) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    start = now();
    out[4 * blockIdx.x] = smid;
    out[4 * blockIdx.x + 1] = atomicAdd(&arrivals[smid], 1);
    pad[0] = (unsigned char)smid;
  }
  __syncthreads();
  if (kind == 0) {
    if (threadIdx.x == 0) {
      const unsigned long long end = start + 50000;
      while (now() < end) {
      }
    }
  } else {
    // dram-granularity.cu's read_sectors with kind 2 (random runs of `arg` sectors).
    const size_t threads = size_t(gridDim.x) * blockDim.x, halves = READS * 2;
    unsigned x = 0;
    for (size_t t = size_t(blockIdx.x) * blockDim.x + threadIdx.x; t < halves;
         t += threads * UNROLL) {
      uint4 v[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const size_t half = (t + u * threads) % halves;
        const size_t i = half >> 1, run = i / arg;
        const size_t sec = (mix(run) % (BUF_SECTORS / arg)) * arg + i % arg;
        v[u] = __ldcg(buf + sec * 2 + (half & 1));
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    if (x == 0x9e3779b9u) atomicAdd(sink, 1);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    out[4 * blockIdx.x + 2] = start;
    out[4 * blockIdx.x + 3] = now();
  }
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int blocks = 8 * sms;
  uint4* buf;
  unsigned* sink;
  unsigned long long* d;
  if (cudaMalloc(&buf, BUF_SECTORS * 32) != cudaSuccess || cudaMalloc(&sink, 4) != cudaSuccess ||
      cudaMalloc(&d, 4 * blocks * sizeof(unsigned long long)) != cudaSuccess) {
    fprintf(stderr, "cudaMalloc failed\n");
    return 1;
  }
  cudaMemset(buf, 0x5a, BUF_SECTORS * 32);  // no word XORs to the sink's value
  cudaFuncSetAttribute(tail, cudaFuncAttributeMaxDynamicSharedMemorySize, SHARED);
  int resident = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, tail, THREADS, SHARED);
  fprintf(stderr, "%d SMs, %d blocks, %d resident per SM\n", sms, blocks, resident);
  unsigned long long* h = new unsigned long long[4 * blocks];
  printf("case,block,smid,order,start_ns,end_ns\n");
  const char* names[] = {"spin", "random"};
  for (int kind = 0; kind < 2; kind++) {
    for (int rep = 0; rep < 2; rep++) {  // the first launch warms up; the second is recorded
      static unsigned zero[1024];
      cudaMemcpyToSymbol(arrivals, zero, sizeof zero);
      tail<<<blocks, THREADS, SHARED>>>(buf, kind, 2, sink, d);
      cudaError_t e = cudaDeviceSynchronize();
      if (e != cudaSuccess) {
        fprintf(stderr, "%s: %s\n", names[kind], cudaGetErrorString(e));
        return 1;
      }
    }
    cudaMemcpy(h, d, 4 * blocks * sizeof(unsigned long long), cudaMemcpyDeviceToHost);
    unsigned long long t0 = ~0ull, t1 = 0;
    for (int b = 0; b < blocks; b++) {
      t0 = h[4 * b + 2] < t0 ? h[4 * b + 2] : t0;
      t1 = h[4 * b + 3] > t1 ? h[4 * b + 3] : t1;
    }
    int per_sm[1024] = {0};
    unsigned long long sm_end[1024] = {0};
    for (int b = 0; b < blocks; b++) {
      const unsigned sm = (unsigned)h[4 * b];
      per_sm[sm]++;
      if (h[4 * b + 3] > sm_end[sm]) sm_end[sm] = h[4 * b + 3];
      printf("%s,%d,%u,%u,%llu,%llu\n", names[kind], b, sm, (unsigned)h[4 * b + 1],
             h[4 * b + 2] - t0, h[4 * b + 3] - t0);
    }
    fflush(stdout);  // the rows before the summary: both streams may be one file
    int count[64] = {0};
    unsigned long long latest[64] = {0};
    for (int s = 0; s < sms; s++) {
      const int c = per_sm[s] < 63 ? per_sm[s] : 63;
      const unsigned long long end = per_sm[s] ? sm_end[s] - t0 : 0;
      count[c]++;
      if (end > latest[c]) latest[c] = end;
    }
    fprintf(stderr, "%s: span %.1f us; SMs by blocks run:", names[kind], (t1 - t0) / 1e3);
    for (int c = 0; c < 64; c++)
      if (count[c]) fprintf(stderr, " %d blocks x %d SMs (latest end %.1f us)", c, count[c],
                            latest[c] / 1e3);
    fprintf(stderr, "\n");
  }
  delete[] h;
  return 0;
}
