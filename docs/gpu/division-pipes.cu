// division-pipes.cu — which of a u32 division's pipes does a second division chain wait for?
//
// Standalone (not part of the build): nvcc -arch=native -O3 -o divpipes division-pipes.cu && ./divpipes
// int-division.cu's two independent u32 chains take 153.0 cycles a step on an H200 where one
// takes 137.6 (s32: 167.7 against 141.7). ptxas interleaves the two sequences instruction by
// instruction; each has on its critical path three conversions of the quarter-rate pipe
// (I2F.U32.RP, MUFU.RCP, F2I.FTZ.U32.TRUNC) and five IMADs of the half-rate one. The emulator
// overlaps the two chains entirely (2026-12-06-division-order.md). This runs one warp's u32
// chain beside N independent one-link-a-step chains of one kind, stepped in the same loop so
// that ptxas interleaves them too, and prints cycles per step:
//   imad   N chains of m = m * A + B (one IMAD a link)
//   i2f    N chains of c = (unsigned)(float)(c ^ k) (one I2FP.F32.U32, one F2I.U32.TRUNC and
//          one LOP3 a link)
//   rcp    N chains of r = rcp.approx(r) + 1 (one MUFU.RCP and one FADD a link)
//   lop    N chains of c = c ^ (c >> 1) (LOP3 and SHF; a control of pipes the division barely uses)
// N = 0 is the chain alone. Where a kind's N ops a step add nothing until their pipe is full,
// the division does not wait on that pipe; where each adds its issue interval, it does.
// Check the SASS (cuobjdump -sass divpipes) before reading a row: each kernel's loop should hold
// the division's sequence and N of the kind's instructions, in one basic block.
#include <cstdint>
#include <cstdio>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

constexpr int STEPS = 256;

enum Kind { IMAD, I2F, RCP, LOP };

__device__ __forceinline__ uint32_t divide_step(uint32_t x, uint32_t b, uint32_t s) {
  return (x / (b | (x & 1))) ^ s;  // int-division.cu's u32 step: nothing is hoisted
}

template <Kind K, int N>
__global__ void beside(uint32_t seed, uint32_t b, long long* cycles, uint32_t* sink) {
  uint32_t x = seed + threadIdx.x;
  uint32_t c[N > 0 ? N : 1];
  float f[N > 0 ? N : 1];
#pragma unroll
  for (int j = 0; j < N; ++j) {
    c[j] = seed * (j + 3) + threadIdx.x;
    f[j] = 1.0f + float(threadIdx.x + j);
  }
  long long t0 = clock64();
  for (int i = 0; i < STEPS; ++i) {
    x = divide_step(x, b, seed);
#pragma unroll
    for (int j = 0; j < N; ++j) {
      if (K == IMAD) c[j] = c[j] * 0x9e3779b1u + (seed | j);
      if (K == I2F) c[j] = __float2uint_rz(__uint2float_rn(c[j] ^ uint32_t(j)));
      if (K == RCP) {
        float r;
        asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(f[j]));
        f[j] = r + 1.0f;
      }
      if (K == LOP) c[j] = c[j] ^ (c[j] >> 1) ^ seed;
    }
  }
  long long t1 = clock64();
  uint32_t acc = x;
#pragma unroll
  for (int j = 0; j < N; ++j) acc ^= c[j] ^ __float_as_uint(f[j]);
  if (threadIdx.x == 0) *cycles = t1 - t0;
  sink[threadIdx.x] = acc;
}

template <Kind K, int N>
static int run(const char* kind, long long* cyc, uint32_t* sink) {
  long long host = 0;
  for (int r = 0; r < 2; ++r) beside<K, N><<<1, 32>>>(0x9e3779b9u, 3u, cyc, sink);  // the first warms up
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(&host, cyc, sizeof host, cudaMemcpyDeviceToHost));
  printf("%-6s %4d %10.1f\n", kind, N, double(host) / STEPS);
  return 0;
}

template <Kind K>
static int sweep(const char* kind, long long* cyc, uint32_t* sink) {
  return run<K, 0>(kind, cyc, sink) | run<K, 2>(kind, cyc, sink) | run<K, 4>(kind, cyc, sink) |
         run<K, 8>(kind, cyc, sink) | run<K, 16>(kind, cyc, sink) | run<K, 32>(kind, cyc, sink);
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  long long* cyc;
  uint32_t* sink;
  CHECK(cudaMalloc(&cyc, sizeof(long long)));
  CHECK(cudaMalloc(&sink, sizeof(uint32_t) * 32));
  printf("%-6s %4s %10s\n", "kind", "N", "cycles a step");
  int bad = sweep<IMAD>("imad", cyc, sink) | sweep<I2F>("i2f", cyc, sink) |
            sweep<RCP>("rcp", cyc, sink) | sweep<LOP>("lop", cyc, sink);
  CHECK(cudaDeviceSynchronize());
  return bad;
}
