// tex-lookup-count.cu — how does Nsight Compute count texture hits: per warp request, or thread
// by thread?
//
// Standalone (not part of the build), for a GPU session with ncu:
//   nvcc -arch=sm_90 -O3 -o texcount tex-lookup-count.cu
//   for c in 0 1 2 3; do ncu --kernel-name fetch --print-units base --csv \
//     --metrics l1tex__t_sector_pipe_tex_mem_texture_op_tex_hit_rate.pct,\
//   l1tex__t_sectors_pipe_tex_mem_texture_op_tex.sum,l1tex__t_requests_pipe_tex_mem_texture_op_tex.sum \
//     ./texcount $c; done
//
// Why: the emulator counted texture hits per request (a warp fetch's distinct sectors) and gave
// 1-57 % at the paper's geometry where the H200's ncu said 26-79 %. Counted thread by thread (each
// lane's distinct sectors, only the first lookup of a missing sector a miss), the same emulated
// runs give the H200's figures within 1.2 points in 7 of 16 runs and 7.4-15.5 points above in the
// rest (Pearson 0.96 against 0.40), with no parameter changed
// (docs/gpu/h100-paper-emulator-2026-11-26.md). That is an inference from a fit; this kernel
// decides it. One warp per block, every warp its own 4 KiB of a cold 1-byte linear texture (a
// cudaArray would do the same; linear keeps the addresses obvious), one point fetch per lane:
//   case 0: all 32 lanes fetch the same texel          per request: 1 sector, a miss  ->   0 %
//                                                      thread by thread: 32 lookups  -> 96.9 %
//   case 1: lane l fetches texel l (one 32-B sector)   the same as case 0
//   case 2: lane l fetches texel 32*l (32 sectors)     0 % both ways (every sector once, cold)
//   case 3: case 0 twice in a row (the second fetch    per request 50 %, thread by thread 98.4 %
//           hits whole)
// The sector count says the same thing without the hit rate: per request case 0 reads 1 sector
// per request, thread by thread 32.
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

__global__ void fetch(cudaTextureObject_t t, int c, unsigned* out) {
  const int lane = threadIdx.x, base = blockIdx.x * 4096;
  const int i = c == 2 ? base + 32 * lane : c == 1 ? base + lane : base;
  unsigned v = tex1Dfetch<unsigned char>(t, i);
  if (c == 3) v += tex1Dfetch<unsigned char>(t, i);
  out[blockIdx.x * 32 + lane] = v;
}

int main(int argc, char** argv) {
  const int c = argc > 1 ? atoi(argv[1]) : 0, blocks = 1024;
  unsigned char* d;
  unsigned* out;
  cudaMalloc(&d, blocks * 4096);
  cudaMemset(d, 1, blocks * 4096);
  cudaMalloc(&out, blocks * 32 * sizeof(unsigned));
  cudaResourceDesc r = {};
  r.resType = cudaResourceTypeLinear;
  r.res.linear.devPtr = d;
  r.res.linear.desc = cudaCreateChannelDesc<unsigned char>();
  r.res.linear.sizeInBytes = blocks * 4096;
  cudaTextureDesc td = {};
  td.readMode = cudaReadModeElementType;
  cudaTextureObject_t t;
  cudaCreateTextureObject(&t, &r, &td, nullptr);
  fetch<<<blocks, 32>>>(t, c, out);
  cudaError_t e = cudaDeviceSynchronize();
  unsigned h = 0;
  cudaMemcpy(&h, out, sizeof h, cudaMemcpyDeviceToHost);
  printf("case %d: %s, out[0] = %u\n", c, cudaGetErrorString(e), h);
  return e != cudaSuccess;
}
