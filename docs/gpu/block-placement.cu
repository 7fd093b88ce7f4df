// Where the GPU places a grid's blocks: the SM each block of the volume renderer's paper grids
// runs on, and its place in that SM's arrival order. Decides the emulator's block distribution
// (round-robin over SMs, as GPGPU-Sim does): on a 1x128 block shape, eight blocks in a row of
// the grid read the same texture sectors, so whether they share an SM's L1 is what its texture
// hit rate turns on; and which of a frame's rows and columns share an SM sets how evenly its
// work spreads, so the frame's time (2026-12-05-block-placement.md). All eight paper shapes, the
// four the first records hold first, after one launch that is not recorded: in those records
// the process's first grid (1x128) was placed unlike the three after it, and the renderer's
// timed frames follow a warm-up launch.
//
// Each block asks for 13 KiB of dynamic shared memory, so that 16 blocks fit an SM (228 KiB,
// 1 KiB reserved per block), as the render's registers allow; thread 0 records %smid, the SM's
// arrival count and %globaltimer, and every block waits ~20 µs so that the grid is resident
// at once, as the render's is.
//
// Build and run: nvcc -arch=native -O3 -o block-placement block-placement.cu && ./block-placement
// Output (stdout, CSV): shape,bx,by,smid,order,start_ns
#include <cstdio>
#include <cuda_runtime.h>

__device__ unsigned arrivals[1024];

__global__ void place(unsigned* out) {
  extern __shared__ unsigned char pad[];
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    unsigned smid;
    unsigned long long t;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    const unsigned b = blockIdx.y * gridDim.x + blockIdx.x;
    out[4 * b] = smid;
    out[4 * b + 1] = atomicAdd(&arrivals[smid], 1);
    out[4 * b + 2] = (unsigned)t;
    out[4 * b + 3] = (unsigned)(t >> 32);
    pad[0] = (unsigned char)smid;
    unsigned long long end = t + 20000;
    while (t < end) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  }
  __syncthreads();
}

int main() {
  const int shapes[][2] = {{1, 128}, {16, 8}, {128, 1}, {8, 16}, {64, 2}, {32, 4}, {4, 32}, {2, 64}};
  const int n = 2048;
  unsigned* d;
  cudaMalloc(&d, 4 * n * sizeof(unsigned));
  static unsigned h[4 * 2048];
  printf("shape,bx,by,smid,order,start_ns\n");
  cudaFuncSetAttribute(place, cudaFuncAttributeMaxDynamicSharedMemorySize, 13 * 1024);
  place<<<dim3(32, 64), dim3(16, 8), 13 * 1024>>>(d);
  if (cudaDeviceSynchronize() != cudaSuccess) {
    fprintf(stderr, "warm-up launch failed\n");
    return 1;
  }
  for (auto& s : shapes) {
    const dim3 block(s[0], s[1]), grid(512 / s[0], 512 / s[1]);
    unsigned zero[1024] = {0};
    cudaMemcpyToSymbol(arrivals, zero, sizeof zero);
    place<<<grid, block, 13 * 1024>>>(d);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      fprintf(stderr, "%dx%d: %s\n", s[0], s[1], cudaGetErrorString(e));
      return 1;
    }
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    unsigned long long t0 = ~0ull;
    for (int b = 0; b < n; b++) {
      unsigned long long t = h[4 * b + 2] | (unsigned long long)h[4 * b + 3] << 32;
      if (t < t0) t0 = t;
    }
    for (int b = 0; b < n; b++) {
      unsigned long long t = h[4 * b + 2] | (unsigned long long)h[4 * b + 3] << 32;
      printf("%dx%d,%d,%d,%u,%u,%llu\n", s[0], s[1], b % grid.x, b / grid.x, h[4 * b], h[4 * b + 1],
             t - t0);
    }
  }
  return 0;
}
