// l1-port.cu — what one SM's L1/texture unit can take a cycle: lines, sectors or lookups?
//
// Standalone (not part of the build): nvcc -arch=native -O3 -o l1port l1-port.cu && ./l1port
// The h100 preset charges the SM's L1 port a cycle per line a request touches, and
// `l1.miss_line_cycles` (2) per line that fetches from the L2, whatever number of its sectors it
// fetches; sm-inflight.cu, which set that value, read whole lines only. A texture fetch holds the
// port for its sector lookups at `texture.lookups_per_cycle` (2), derived from one frame's
// L1/TEX throughput under ncu. The paper frames at (90,0,90) read 1.13-1.28x their head-on time
// on silicon where they make 1.35x the lookups, which a rate near one lookup a cycle would
// explain. Two sweeps decide, one block of 1,024 threads on one SM, each thread keeping UNROLL
// independent accesses in flight, cycles per warp-level instruction from clock64:
//   fill: loads whose 32 lanes touch 8 lines, k = 1, 2 or 4 sectors of each (lanes 4i..4i+3 on
//     line i), from lines the L2 holds and the L1 does not (ld.global and ld.global.nc). Per
//     line: the same cycles for every k; per sector (the fill's bytes): cycles growing with k;
//   lookups: point fetches (tex1D of a float cudaArray) that all hit, each quad of lanes on q = 1,
//     2 or 4 distinct sectors: 8, 16 or 32 lookups per instruction. A tag stage of r lookups a
//     cycle takes 8/r, 16/r, 32/r cycles an instruction.
//   filtered: the renderer's kinds of fetch, all hits: a trilinear tex3D of an 8-bit volume
//     (lanes 8 x 4 on a plane, s texels apart, s = 1, 2, 4, 8) and a linear tex1D of a float4
//     table (each lane its own entry). Their lookups a fetch are ncu's to count
//     (l1tex__t_sectors_pipe_tex_mem_texture_op_tex.sum over the requests, kernel `filtered`):
//     cycles a fetch over lookups a fetch is the rate for the study's fetches.
#include <cstdio>
#include <vector>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

constexpr int UNROLL = 8;
constexpr int TRIPS = 32;
constexpr int THREADS = 1024;
constexpr int WARPS = THREADS / 32;

// Word index (4-byte words) of lane `lane`'s access in its warp's group of 8 lines: lanes
// 4i..4i+3 on line i, the quad's lanes on `k` sectors of it (the others share a sector's words).
__device__ __forceinline__ unsigned lane_word(unsigned lane, int k) {
  const unsigned line = lane / 4, j = lane % 4;
  const unsigned sector = j % k;
  return line * 32 + sector * 8 + j;  // 32 words a line, 8 a sector
}

// Runs TRIPS trips of UNROLL independent accesses per thread, `access(t, u)` the u-th of trip
// t, and stores the block's span in clock64 cycles.
template <class Access>
__device__ __forceinline__ void timed(Access access, long long* cycles, unsigned* sink) {
  unsigned x = 0;
  __syncthreads();
  const long long c0 = clock64();
  for (int t = 0; t < TRIPS; ++t) {
    unsigned v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = access(t, u);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) x ^= v[u];
  }
  __syncthreads();
  const long long c1 = clock64();
  if (threadIdx.x == 0) cycles[0] = c1 - c0;
  if (x == 0x12345678u) sink[0] = x;
}

// Each access a fresh group of 8 lines: warp w's u-th access of trip t reads group
// (t * UNROLL + u) * WARPS + w, so no line is read twice and every line misses the L1.
template <bool NC>
__global__ void fill(const unsigned* buf, int k, long long* cycles, unsigned* sink) {
  const unsigned warp = threadIdx.x / 32;
  const unsigned off = lane_word(threadIdx.x % 32, k);
  timed(
      [&](int t, int u) {
        const size_t group = size_t(t * UNROLL + u) * WARPS + warp;
        const unsigned* p = buf + group * 256 + off;
        return NC ? __ldg(p) : *p;  // ld.global: the L1 serves it (cache-operators.cu)
      },
      cycles, sink);
}

// Reads the buffer once so that the L2 holds it (it is far smaller than the L2).
__global__ void warm(const unsigned* buf, size_t words, unsigned* sink) {
  unsigned x = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += gridDim.x * blockDim.x)
    x ^= __ldcg(buf + i);
  if (x == 0x12345678u) sink[0] = x;
}

// Point fetches that hit: a warp's quads each on q sectors of one line, the lines within a
// texture small enough to stay in the L1 (8 KiB). Each fetch's index depends on the trip, not on
// an earlier fetch, so UNROLL of them are in flight. The group of lines is a hash of the trip and
// the access: with an index that repeats every trip the compiler hoists the fetches out of the
// loop, and with one that repeats across trips it merges the repeated fetches.
__global__ void lookups(cudaTextureObject_t tex, int q, long long* cycles, unsigned* sink) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned quad = lane / 4, j = lane % 4;
  const unsigned base = quad * 32 + (j % q) * 8 + j;  // 8 lines of 32 texels, as lane_word
  timed(
      [&](int t, int u) {
        const unsigned g = (unsigned(t * UNROLL + u) + warp) * 0x9e3779b1u >> 29;
        const unsigned i = (base + 256 * g) % 2048;
        return __float_as_uint(tex1D<float>(tex, float(i) + 0.5f));
      },
      cycles, sink);
}

// The study's fetches, all hitting in the L1: `kind` 0..3 a trilinear fetch of an 8-bit 3D
// texture (64 x 64 x 9 texels), its lanes 8 x 4 on the plane the trip's hash picks, 1 << kind
// texels apart; `kind` 4 a linear fetch of a 1D float4 texture (2,048 entries), each lane its
// own pair of entries.
__global__ void filtered(cudaTextureObject_t vol, cudaTextureObject_t tf, int kind,
                         long long* cycles, unsigned* sink) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const float s = float(1 << (kind & 3));
  timed(
      [&](int t, int u) {
        const unsigned g = (unsigned(t * UNROLL + u) + warp) * 0x9e3779b1u >> 29;
        if (kind == 4) {
          const float x = float((lane * 2 + 64 * g) % 2047) + 0.75f;
          const float4 v = tex1D<float4>(tf, x);
          return __float_as_uint(v.x + v.y + v.z + v.w);
        }
        const float x = float(lane % 8) * s + 0.75f, y = float(lane / 8) * s + 0.75f;
        return __float_as_uint(tex3D<float>(vol, x, y, float(g) + 0.75f));
      },
      cycles, sink);
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs, one block of %d threads on one SM, %d accesses per thread\n", prop.name,
         prop.multiProcessorCount, THREADS, TRIPS * UNROLL);
  const size_t groups = size_t(TRIPS) * UNROLL * WARPS;
  const size_t words = groups * 256;  // 8 lines of 128 B per group: 8 MiB
  unsigned* buf;
  long long* d;
  unsigned* sink;
  CHECK(cudaMalloc(&buf, words * 4));
  CHECK(cudaMemset(buf, 1, words * 4));
  CHECK(cudaMalloc(&d, sizeof(long long)));
  CHECK(cudaMalloc(&sink, 4));
  const double instr = double(WARPS) * TRIPS * UNROLL;  // warp-level accesses
  printf("%-8s %4s %6s %8s %12s %12s %12s\n", "case", "k/q", "lines", "sectors", "cycles",
         "cyc/instr", "cyc/line");
  for (int nc = 0; nc < 2; ++nc) {
    for (int k : {1, 2, 4}) {
      for (int rep = 0; rep < 2; ++rep) {
        warm<<<prop.multiProcessorCount * 4, 256>>>(buf, words, sink);
        CHECK(cudaDeviceSynchronize());
        if (nc) fill<true><<<1, THREADS>>>(buf, k, d, sink);
        else fill<false><<<1, THREADS>>>(buf, k, d, sink);
        CHECK(cudaDeviceSynchronize());
        long long c;
        CHECK(cudaMemcpy(&c, d, sizeof c, cudaMemcpyDeviceToHost));
        if (rep == 1)  // the second, with the code and the TLB warm
          printf("%-8s %4d %6d %8d %12lld %12.2f %12.2f\n", nc ? "fill.nc" : "fill", k, 8,
                 8 * k, c, c / instr, c / (instr * 8));
      }
    }
  }
  // The texture: a 1D cudaArray of 2,048 floats (8 KiB), point-sampled as the renderer's
  // tex3D is sampled (a TEX instruction; tex1Dfetch from linear memory compiles to TLD).
  cudaArray_t arr;
  cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
  CHECK(cudaMallocArray(&arr, &fd, 2048));
  std::vector<float> host(2048, 1.0f);
  CHECK(cudaMemcpy2DToArray(arr, 0, 0, host.data(), 2048 * 4, 2048 * 4, 1, cudaMemcpyHostToDevice));
  cudaResourceDesc res = {};
  res.resType = cudaResourceTypeArray;
  res.res.array.array = arr;
  cudaTextureDesc td = {};
  td.readMode = cudaReadModeElementType;
  td.filterMode = cudaFilterModePoint;
  td.addressMode[0] = cudaAddressModeClamp;
  td.normalizedCoords = 0;
  cudaTextureObject_t tex;
  CHECK(cudaCreateTextureObject(&tex, &res, &td, nullptr));
  for (int q : {1, 2, 4}) {
    for (int rep = 0; rep < 2; ++rep) {
      lookups<<<1, THREADS>>>(tex, q, d, sink);
      CHECK(cudaDeviceSynchronize());
      long long c;
      CHECK(cudaMemcpy(&c, d, sizeof c, cudaMemcpyDeviceToHost));
      if (rep == 1)
        printf("%-8s %4d %6d %8d %12lld %12.2f %12.2f\n", "lookups", q, 8, 8 * q, c, c / instr,
               c / (instr * 8 * q));
    }
  }
  printf("(lookups: the last column is cycles per lookup, 8q lookups an instruction)\n");
  // The filtered fetches' textures: an 8-bit volume read as normalized floats and a float4 table,
  // both linearly filtered, as the renderer's.
  cudaArray_t vol_arr, tf_arr;
  cudaChannelFormatDesc vd = cudaCreateChannelDesc<unsigned char>();
  const cudaExtent ext = make_cudaExtent(64, 64, 9);
  CHECK(cudaMalloc3DArray(&vol_arr, &vd, ext));
  std::vector<unsigned char> vbytes(64 * 64 * 9, 7);
  cudaMemcpy3DParms cp = {};
  cp.srcPtr = make_cudaPitchedPtr(vbytes.data(), 64, 64, 64);
  cp.dstArray = vol_arr;
  cp.extent = ext;
  cp.kind = cudaMemcpyHostToDevice;
  CHECK(cudaMemcpy3D(&cp));
  cudaChannelFormatDesc fd4 = cudaCreateChannelDesc<float4>();
  CHECK(cudaMallocArray(&tf_arr, &fd4, 2048));
  std::vector<float4> tfh(2048, make_float4(1.0f, 1.0f, 1.0f, 1.0f));
  CHECK(cudaMemcpy2DToArray(tf_arr, 0, 0, tfh.data(), 2048 * 16, 2048 * 16, 1, cudaMemcpyHostToDevice));
  cudaTextureObject_t vol, tf;
  res.res.array.array = vol_arr;
  td.filterMode = cudaFilterModeLinear;
  td.readMode = cudaReadModeNormalizedFloat;
  td.addressMode[1] = td.addressMode[2] = cudaAddressModeClamp;
  CHECK(cudaCreateTextureObject(&vol, &res, &td, nullptr));
  res.res.array.array = tf_arr;
  td.readMode = cudaReadModeElementType;
  CHECK(cudaCreateTextureObject(&tf, &res, &td, nullptr));
  printf("%-8s %4s %12s %12s\n", "case", "kind", "cycles", "cyc/instr");
  for (int kind = 0; kind < 5; ++kind) {
    for (int rep = 0; rep < 2; ++rep) {
      filtered<<<1, THREADS>>>(vol, tf, kind, d, sink);
      CHECK(cudaDeviceSynchronize());
      long long c;
      CHECK(cudaMemcpy(&c, d, sizeof c, cudaMemcpyDeviceToHost));
      if (rep == 1)
        printf("%-8s %4d %12lld %12.2f\n", kind == 4 ? "tf1d4" : "vol3d", kind, c, c / instr);
    }
  }
  printf("(filtered: kind 0-3 trilinear, lanes 1, 2, 4, 8 texels apart; 4 the float4 table)\n");
  return 0;
}
