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
// decides it. One warp per block, every warp its own row of a cold 1-byte 2D texture, one point
// fetch per lane:
//   case 0: all 32 lanes fetch the same texel          per request: 1 sector, a miss  ->   0 %
//                                                      thread by thread: 32 lookups  -> 96.9 %
//   case 1: lane l fetches texel l % 16 (one sector)   the same as case 0
//   case 2: lane l fetches texel 32*l (32 sectors)     0 % both ways (every sector once, cold)
//   case 3: case 0 twice in a row (the second fetch    per request 50 %, thread by thread 98.4 %
//           hits whole)
// The sector count says the same thing without the hit rate: per request case 0 reads 1 sector
// per request, thread by thread 32.
//
// Run on an H100 on 2026-11-27 (tex-lookup-count-h100-2026-11-27.csv): neither. Every warp's
// fetch is 8 requests; case 0 and case 1 read 8 sectors and 87.5 % (one miss in eight lookups),
// case 2 32 sectors and 0 %. ncu counts quad by quad: each quad of four lanes looks up its own
// distinct sectors, and only the first lookup of a missing sector misses. (Case 3 read the same
// as case 0: the compiler fetched once for both uses.)
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

// A 2D cudaArray fetched with tex2D (a TEX instruction, as the study's tex3D): an H100 counted
// nothing on the texture-op metrics for the linear texture (tex1Dfetch, a TLD) this used before.
// Block b has row 8*b of a 4096-wide array to itself (a block-linear GOB is 64 B x 8 rows); lanes
// in case 1 fetch texels 0-15 of it, one 16-byte unit of a sector whatever the swizzle.
__global__ void fetch(cudaTextureObject_t t, int c, unsigned* out) {
  const int lane = threadIdx.x;
  const float y = 8.0f * blockIdx.x + 0.5f;
  const int x = c == 2 ? 32 * lane : c == 1 ? lane % 16 : 0;
  unsigned v = tex2D<unsigned char>(t, x + 0.5f, y);
  if (c == 3) v += tex2D<unsigned char>(t, x + 0.5f, y);
  out[blockIdx.x * 32 + lane] = v;
}

int main(int argc, char** argv) {
  const int c = argc > 1 ? atoi(argv[1]) : 0, blocks = 1024, width = 4096, height = 8 * blocks;
  unsigned* out;
  cudaMalloc(&out, blocks * 32 * sizeof(unsigned));
  cudaChannelFormatDesc ch = cudaCreateChannelDesc<unsigned char>();
  cudaArray_t arr;
  cudaMallocArray(&arr, &ch, width, height);
  unsigned char* host = new unsigned char[size_t(width) * height];
  for (size_t i = 0; i < size_t(width) * height; ++i) host[i] = 1;
  cudaMemcpy2DToArray(arr, 0, 0, host, width, width, height, cudaMemcpyHostToDevice);
  delete[] host;
  cudaResourceDesc r = {};
  r.resType = cudaResourceTypeArray;
  r.res.array.array = arr;
  cudaTextureDesc td = {};
  td.readMode = cudaReadModeElementType;
  td.filterMode = cudaFilterModePoint;
  td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
  cudaTextureObject_t t;
  cudaCreateTextureObject(&t, &r, &td, nullptr);
  fetch<<<blocks, 32>>>(t, c, out);
  cudaError_t e = cudaDeviceSynchronize();
  unsigned h = 0;
  cudaMemcpy(&h, out, sizeof h, cudaMemcpyDeviceToHost);
  printf("case %d: %s, out[0] = %u\n", c, cudaGetErrorString(e), h);
  return e != cudaSuccess;
}
