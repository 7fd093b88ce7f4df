// tex-lookup-count.cu — how does Nsight Compute count texture hits: per warp request, or thread
// by thread?
//
// Standalone (not part of the build), for a GPU session with ncu:
//   nvcc -arch=sm_90 -O3 -o texcount tex-lookup-count.cu
//   for c in 0 1 2 3 4 5 6 7; do ncu --kernel-name fetch --print-units base --csv \
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
// Run on an H100 on 2026-11-27 (tex-lookup-count-h100-2026-11-27.csv, cases 0-3, and
// tex-lookup-count-3d-h100-2026-11-27.csv, cases 4-7 and 0 again): neither. Every warp's fetch is
// 8 requests, one per quad of lanes. A point sample (cases 0, 1, 5) is 8 sector lookups and
// 87.5 % (one miss in eight): each quad looks up its own distinct sectors. A trilinear sample
// (cases 4 and 7) is 32 lookups and 93.75 % (two misses): each pair of lanes looks up its own
// distinct sectors (16 pairs x one sector per slice). Case 6 says the same where the lanes
// differ: past the 64-texel width, lanes 4-31 clamp to texel 63, in lane 3's sector, so pairs
// give 2 x 4 + 14 x 2 = 36 lookups and 8 misses, as ncu read (quads would give 22, lanes 64).
// Case 2 read 32 sectors and 0 %; case 3 read as case 0 (the compiler fetched once for both
// uses). Before, this used a linear texture (tex1Dfetch, a TLD instruction), for which the
// texture-op metrics read 0.
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

// A 2D cudaArray fetched with tex2D (a TEX instruction, as the study's tex3D): an H100 counted
// nothing on the texture-op metrics for the linear texture (tex1Dfetch, a TLD) this used before.
// Block b has row 8*b of a 4096-wide array to itself (a block-linear GOB is 64 B x 8 rows); lanes
// in case 1 fetch texels 0-15 of it, one 16-byte unit of a sector whatever the swizzle.
// Cases 4-7 fetch a 3D cudaArray with tex3D, as the study does: block b has slices 8b and 8b+1
// of a 64 x 64 x 8*blocks array to itself.
//   case 4: all 32 lanes sample (1, 1, 8b+1) trilinearly (texels 0-1 in x, y and z: two
//           sectors, one per slice)     per quad 16 lookups, 87.5 %; thread by thread 64, 96.9 %
//   case 5: all 32 lanes fetch one texel with point sampling   as case 0
//   case 6: lane l samples (1 + 16 l, 1, 8b+1) trilinearly, meant to give every lane its own two
//           sectors (but x past 63 clamps: see the results above)
//   case 7: as case 4, lanes at x = 1 + (l % 4) / 8: the same texels, distinct coordinates
__global__ void fetch(cudaTextureObject_t t, int c, unsigned* out) {
  const int lane = threadIdx.x;
  unsigned v;
  if (c >= 4) {
    const float z = 8.0f * blockIdx.x + (c == 5 ? 0.5f : 1.0f);
    const float x = c == 6 ? 1.0f + 16 * lane : c == 7 ? 1.0f + (lane % 4) / 8.0f : c == 5 ? 0.5f : 1.0f;
    v = unsigned(255.0f * tex3D<float>(t, x, c == 5 ? 0.5f : 1.0f, z));
  } else {
    const float y = 8.0f * blockIdx.x + 0.5f;
    const int x = c == 2 ? 32 * lane : c == 1 ? lane % 16 : 0;
    v = tex2D<unsigned char>(t, x + 0.5f, y);
    if (c == 3) v += tex2D<unsigned char>(t, x + 0.5f, y);
  }
  out[blockIdx.x * 32 + lane] = v;
}

// A texture object over `arr`, clamped, filtered per `linear`.
static cudaTextureObject_t object(cudaArray_t arr, cudaTextureReadMode mode, bool linear) {
  cudaResourceDesc r = {};
  r.resType = cudaResourceTypeArray;
  r.res.array.array = arr;
  cudaTextureDesc td = {};
  td.readMode = mode;
  td.filterMode = linear ? cudaFilterModeLinear : cudaFilterModePoint;
  td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = cudaAddressModeClamp;
  cudaTextureObject_t t;
  cudaCreateTextureObject(&t, &r, &td, nullptr);
  return t;
}

// A 4096 x 8*blocks 2D array of ones, point-sampled as bytes (cases 0-3).
static cudaTextureObject_t plane(int blocks) {
  const int w = 4096, h = 8 * blocks;
  cudaChannelFormatDesc ch = cudaCreateChannelDesc<unsigned char>();
  cudaArray_t arr;
  cudaMallocArray(&arr, &ch, w, h);
  unsigned char* host = new unsigned char[size_t(w) * h];
  for (size_t i = 0; i < size_t(w) * h; ++i) host[i] = 1;
  cudaMemcpy2DToArray(arr, 0, 0, host, w, w, h, cudaMemcpyHostToDevice);
  delete[] host;
  return object(arr, cudaReadModeElementType, false);
}

// A 64 x 64 x 8*blocks 3D array of ones, read as normalized floats, filtered per `linear`
// (cases 4-7).
static cudaTextureObject_t volume(int blocks, bool linear) {
  const int w = 64, h = 64, d = 8 * blocks;
  cudaChannelFormatDesc ch = cudaCreateChannelDesc<unsigned char>();
  cudaArray_t arr;
  cudaMalloc3DArray(&arr, &ch, make_cudaExtent(w, h, d));
  unsigned char* host = new unsigned char[size_t(w) * h * d];
  for (size_t i = 0; i < size_t(w) * h * d; ++i) host[i] = 1;
  cudaMemcpy3DParms cp = {};
  cp.srcPtr = make_cudaPitchedPtr(host, w, w, h);
  cp.dstArray = arr;
  cp.extent = make_cudaExtent(w, h, d);
  cp.kind = cudaMemcpyHostToDevice;
  cudaMemcpy3D(&cp);
  delete[] host;
  return object(arr, cudaReadModeNormalizedFloat, linear);
}

int main(int argc, char** argv) {
  const int c = argc > 1 ? atoi(argv[1]) : 0, blocks = 1024;
  unsigned* out;
  cudaMalloc(&out, blocks * 32 * sizeof(unsigned));
  cudaTextureObject_t t = c >= 4 ? volume(blocks, c != 5) : plane(blocks);
  fetch<<<blocks, 32>>>(t, c, out);
  cudaError_t e = cudaDeviceSynchronize();
  unsigned h = 0;
  cudaMemcpy(&h, out, sizeof h, cudaMemcpyDeviceToHost);
  printf("case %d: %s, out[0] = %u\n", c, cudaGetErrorString(e), h);
  return e != cudaSuccess;
}
