// tex-footprint.cu: which lanes Nsight Compute pairs when it counts a trilinear fetch's sector
// lookups, what a footprint that straddles a sector costs, and whether two SMs of one TPC share
// their texture misses.
//
// Standalone (not part of the build), for a GPU session with ncu:
//   nvcc -arch=native -O3 -o texfoot tex-footprint.cu
//   ncu --csv --print-units base --metrics l1tex__t_requests_pipe_tex_mem_texture_op_tex.sum,\
//   l1tex__t_sectors_pipe_tex_mem_texture_op_tex.sum,\
//   l1tex__t_sector_pipe_tex_mem_texture_op_tex_hit_rate.pct,\
//   lts__t_sectors_srcunit_tex_op_read.sum ./texfoot
// One launch per case, in the order below; ncu flushes the caches before each.
//
// Why: on the paper's geometry an H100 counted 1.15-1.25x the lookups the emulator counts (pairs
// of lanes 2i, 2i+1, each pair's distinct sectors), while its L1 misses matched the emulator's
// within 2 % in 12 of 16 runs (docs/gpu/ncu-study-h100-2026-11-27.csv). At (90,0,90) silicon's
// count drops between block shapes 4x32 and 2x64, the emulator's between 2x64 and 1x128, as if
// silicon paired lanes 0 and 2 of a quad. And at 1x128 head-on silicon missed 0.68x as often as
// the emulator, whose blocks share no SM with the blocks that read the same sectors.
//
// Trilinear cases (0-13): a 3D u8 cudaArray (512 x 64 x 2048), unnormalized coordinates, one
// warp per block, block b reads slices 8b and 8b+1 only (z = 8b + 1), so that no two blocks
// share a sector. Coordinates end in .0, so every sample's 2x2x2 texels are i, i+1 with
// i = x - 1 (texels 0-1 for x = 1). A 32-byte sector of a block-linear GOB is 16 texels x 2 rows
// of one slice. Expected lookups per warp if pairs are lanes (2i, 2i+1) / (4q, 4q+2):
//    0  all lanes at (1, 1)                     32 / 32 (one sector per slice)
//    1  all lanes at (16, 1): x straddles        64 / 64
//    2  all lanes at (1, 2): y straddles         64 / 64
//    3  all lanes at (16, 2): both               128 / 128
//    4  all lanes at (32, 1)                     64 / 64 (across the GOB's 32-byte halves)
//    5  all lanes at (64, 1)                     64 / 64 (across GOBs in x)
//    6  all lanes at (1, 8)                      64 / 64 (across GOBs in y)
//    7  x = 16 (l >> 1) + 1, y = 1               32 / 64 (lanes 2i and 2i+1 share a sector)
//    8  x = 16 (2 (l >> 2) + (l & 1)) + 1, y = 1 64 / 32 (lanes 4q and 4q+2 share)
//    9  a row of rays 2 texels apart, aligned:   x = 2l + 1, y = 1
//   10  a column of rays, aligned:               x = 1, y = 2l + 1
//   11  a row of rays, straddling:               x = 2l + 2, y = 2
//   12  a column of rays, straddling:            x = 2, y = 2l + 2
//   13  16 x 2 rays (the 16x8 block's warp):     x = 2 (l % 16) + 2, y = 2 (l / 16) + 2
// Point cases (14-16), 264 blocks (two per SM), each lane one texel 16 texels from the next
// lane's (32 sectors per warp), in a region of slices that blocks share: 14 every block its
// own; 15 blocks 2k and 2k+1 share (one TPC's two SMs, if blocks are placed as
// block-placement.cu found on an H100: blocks 8 and 9 on SMs 0 and 1); 16 blocks 4k+j and
// 4k+j+2 share (two GPCs). Misses to L2 (lts__t_sectors_srcunit_tex_op_read): 8448 in case 14;
// in 15 and 16 the same if every SM misses on its own, fewer where SMs merge misses. The
// program prints each point case's block-to-SM placement so that the pairing can be checked.
// Cases 17-21, one warp, all 32 lanes at one point of a cold texture, say what decides that a
// texel is looked up lane by lane (added after the run below, not yet run): lookups per warp if
// lanes / pairs / quads each look up their own sectors:
//   17  1D float4, linear, x = 1 (texels 0-1, one sector)    32 / 16 / 8
//   18  1D float4, point                                    32 / 16 / 8
//   19  2D float4, linear, (1, 1)
//   20  2D u8, linear (bilinear), (1, 1)                     32 / 16 / 8
//   21  1D float, linear, x = 1                              32 / 16 / 8
// Cases 22-23 (first run on an H200, 2026-12-04: 64 and 32, pairs 2i, 2i+1 in this block too;
// tex-footprint-h200-2026-12-04.csv) ask whether the pairing follows the
// block's shape: at (90,0,90) the study's 2x64 frame counted on an H100 as if each quad of
// lanes (2 x 2 pixels there) were paired by columns, where case 8's row of lanes was paired by
// rows (docs/gpu/2026-12-02-quad-pairs.md). Each is a trilinear case run again with every lane
// at the same coordinates, in 256 blocks of 2 x 16 threads instead of 32 x 1: lookups per warp
// if pairs are lanes (2i, 2i+1) / (4q, 4q+2):
//   22  case 8's coordinates                               64 / 32
//   23  case 7's coordinates                               32 / 64
//
// Run on an H100 on 2026-11-27 (tex-footprint-h100-2026-11-27.csv, cases 0-16): pairs of lanes
// 2i, 2i+1, each pair's distinct sectors, in every trilinear case (0-13, e.g. 7 and 8: 32 and
// 64), with sectors of 16 texels x 2 rows as the emulator lays them out (12: 94 lookups, the
// clamped last pair included). Cases 15 and 16 read 16 and 16.5 L2 sectors per warp, half of
// case 14's: two SMs missing the same sector at once send it to L2 once, on one TPC or on two
// GPCs (the L2 request coalescer, ncu's lrc__ metrics).
#include <cstdio>
#include <cuda_runtime.h>

constexpr int W = 512, H = 64, TRI_BLOCKS = 256, D = 8 * TRI_BLOCKS, POINT_BLOCKS = 264;
constexpr int SMALL = 64;  // texels across the textures of cases 17-21

__device__ float2 coords(int c, int l) {
  switch (c) {
    case 0: return {1, 1};
    case 1: return {16, 1};
    case 2: return {1, 2};
    case 3: return {16, 2};
    case 4: return {32, 1};
    case 5: return {64, 1};
    case 6: return {1, 8};
    case 7: return {16.0f * (l >> 1) + 1, 1};
    case 8: return {16.0f * (2 * (l >> 2) + (l & 1)) + 1, 1};
    case 9: return {2.0f * l + 1, 1};
    case 10: return {1, 2.0f * l + 1};
    case 11: return {2.0f * l + 2, 2};
    case 12: return {2, 2.0f * l + 2};
    default: return {2.0f * (l % 16) + 2, 2.0f * (l / 16) + 2};
  }
}

__global__ void trilinear(cudaTextureObject_t t, int c, float* out) {
  const int l = threadIdx.x;
  const float2 p = coords(c, l);
  out[blockIdx.x * 32 + l] = tex3D<float>(t, p.x, p.y, 8.0f * blockIdx.x + 1.0f);
}

// Cases 22-23: case 8's or case 7's coordinates per lane, in a block of 2 x 16 threads.
__global__ void trilinear2d(cudaTextureObject_t t, int c, float* out) {
  const int l = threadIdx.y * blockDim.x + threadIdx.x;
  const float2 p = coords(c == 22 ? 8 : 7, l);
  out[blockIdx.x * 32 + l] = tex3D<float>(t, p.x, p.y, 8.0f * blockIdx.x + 1.0f);
}

__global__ void point(cudaTextureObject_t t, int c, float* out, unsigned* sm) {
  const int l = threadIdx.x, b = blockIdx.x;
  const int region = c == 14 ? b : c == 15 ? b >> 1 : (b >> 2) * 2 + (b & 1);
  out[b * 32 + l] = tex3D<float>(t, 16.0f * l + 0.5f, 0.5f, 8.0f * region + 0.5f);
  if (l == 0) {
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    sm[b] = s;
  }
}

__global__ void single(cudaTextureObject_t t, int c, float* out) {
  float v;
  if (c == 17 || c == 18) {
    const float4 f = tex1D<float4>(t, 1.0f);
    v = f.x + f.w;
  } else if (c == 19) {
    const float4 f = tex2D<float4>(t, 1.0f, 1.0f);
    v = f.x + f.w;
  } else if (c == 20) {
    v = tex2D<float>(t, 1.0f, 1.0f);
  } else {
    v = tex1D<float>(t, 1.0f);
  }
  out[threadIdx.x] = v;
}

static cudaTextureObject_t texture(cudaArray_t a, cudaTextureFilterMode filter,
                                   cudaTextureReadMode read = cudaReadModeNormalizedFloat) {
  cudaResourceDesc r = {};
  r.resType = cudaResourceTypeArray;
  r.res.array.array = a;
  cudaTextureDesc d = {};
  d.addressMode[0] = d.addressMode[1] = d.addressMode[2] = cudaAddressModeClamp;
  d.filterMode = filter;
  d.readMode = read;
  d.normalizedCoords = 0;
  cudaTextureObject_t t;
  cudaCreateTextureObject(&t, &r, &d, nullptr);
  return t;
}

int main() {
  cudaArray_t a;
  const cudaChannelFormatDesc f = cudaCreateChannelDesc<unsigned char>();
  if (cudaMalloc3DArray(&a, &f, make_cudaExtent(W, H, D)) != cudaSuccess) return 1;
  static unsigned char host[W * H * 8];
  for (int i = 0; i < W * H * 8; i++) host[i] = (unsigned char)(i * 7 + 3);
  for (int z = 0; z < D; z += 8) {
    cudaMemcpy3DParms p = {};
    p.srcPtr = make_cudaPitchedPtr(host, W, W, H);
    p.dstArray = a;
    p.dstPos = make_cudaPos(0, 0, z);
    p.extent = make_cudaExtent(W, H, 8);
    p.kind = cudaMemcpyHostToDevice;
    cudaMemcpy3D(&p);
  }
  const cudaTextureObject_t lin = texture(a, cudaFilterModeLinear);
  const cudaTextureObject_t pt = texture(a, cudaFilterModePoint);
  float* out;
  unsigned* sm;
  cudaMalloc(&out, POINT_BLOCKS * 32 * sizeof(float));
  cudaMalloc(&sm, POINT_BLOCKS * sizeof(unsigned));
  for (int c = 0; c <= 13; c++) trilinear<<<TRI_BLOCKS, 32>>>(lin, c, out);
  for (int c = 14; c <= 16; c++) {
    point<<<POINT_BLOCKS, 32>>>(pt, c, out, sm);
    static unsigned h[POINT_BLOCKS];
    cudaMemcpy(h, sm, sizeof h, cudaMemcpyDeviceToHost);
    printf("case %d smid of blocks 0-15:", c);
    for (int b = 0; b < 16; b++) printf(" %u", h[b]);
    printf("\n");
  }
  // Cases 17-21: small textures of their own, one warp each.
  static float zeros[SMALL * SMALL * 4];
  cudaArray_t f4_1d, f4_2d, u8_2d, f1_1d;
  const cudaChannelFormatDesc f4 = cudaCreateChannelDesc<float4>(), f1 = cudaCreateChannelDesc<float>();
  cudaMallocArray(&f4_1d, &f4, SMALL);
  cudaMallocArray(&f4_2d, &f4, SMALL, SMALL);
  cudaMallocArray(&u8_2d, &f, SMALL, SMALL);
  cudaMallocArray(&f1_1d, &f1, SMALL);
  cudaMemcpy2DToArray(f4_1d, 0, 0, zeros, SMALL * 16, SMALL * 16, 1, cudaMemcpyHostToDevice);
  cudaMemcpy2DToArray(f4_2d, 0, 0, zeros, SMALL * 16, SMALL * 16, SMALL, cudaMemcpyHostToDevice);
  cudaMemcpy2DToArray(u8_2d, 0, 0, zeros, SMALL, SMALL, SMALL, cudaMemcpyHostToDevice);
  cudaMemcpy2DToArray(f1_1d, 0, 0, zeros, SMALL * 4, SMALL * 4, 1, cudaMemcpyHostToDevice);
  const cudaTextureReadMode el = cudaReadModeElementType;
  single<<<1, 32>>>(texture(f4_1d, cudaFilterModeLinear, el), 17, out);
  single<<<1, 32>>>(texture(f4_1d, cudaFilterModePoint, el), 18, out);
  single<<<1, 32>>>(texture(f4_2d, cudaFilterModeLinear, el), 19, out);
  single<<<1, 32>>>(texture(u8_2d, cudaFilterModeLinear), 20, out);
  single<<<1, 32>>>(texture(f1_1d, cudaFilterModeLinear, el), 21, out);
  for (int c = 22; c <= 23; c++) trilinear2d<<<TRI_BLOCKS, dim3(2, 16)>>>(lin, c, out);
  const cudaError_t e = cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(e));
  return e != cudaSuccess;
}
