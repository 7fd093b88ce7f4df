// int-division.cu — what does an integer division cost a warp?
//
// Standalone (not part of the build): nvcc -arch=native -O3 -o intdiv int-division.cu && ./intdiv
// No GPU divides integers in one instruction: ptxas turns a PTX div or rem into a sequence, and
// a 64-bit one whose operands need more than 32 bits into a call. The h100 preset charges each
// type the sequence's issue slots and latency as docs/gpu/int-division.py derives them from the
// SASS (its sass_* kernels below); this measures both on silicon, per type and path:
//   latency    one warp, a chain of divisions each of whose dividend and divisor depend on the
//              one before (so nothing is hoisted), cycles per step; beside it the same chain
//              with a subtraction in place of the division
//   2 chains   one warp, two such chains, independent of each other, stepped together: cycles
//              per step of both. Near latency: the two divisions overlap; near twice it: one
//              waits for the other (nvcc's width test puts each 64-bit division behind its own
//              branch, so ptxas may not interleave them)
//   throughput 32 warps per SM, 8 independent chains per thread: cycles per warp step per
//              scheduler (4 per SM), which is the issue slots where issue is the limit
// "narrow" keeps every operand below 2^32 (ptxas' test takes its 32-bit path); "wide" sets bit
// 40 of the dividend (the call).
#include <cstdint>
#include <cstdio>
#include <type_traits>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

// What int-division.py walks: one division between a load of its operands and a store.
#define SASS(name, T, expr) \
  extern "C" __global__ void sass_##name(T* p) { T a = p[1], b = p[2]; p[0] = expr; }
SASS(div_u32, uint32_t, a / b)
SASS(rem_u32, uint32_t, a % b)
SASS(div_s32, int32_t, a / b)
SASS(rem_s32, int32_t, a % b)
SASS(div_u64, uint64_t, a / b)
SASS(rem_u64, uint64_t, a % b)
SASS(div_s64, int64_t, a / b)
SASS(rem_s64, int64_t, a % b)

constexpr int STEPS = 256;

template <typename T, bool DIVIDE>
__device__ __forceinline__ T step(T x, T b, T s) {
  using U = typename std::make_unsigned<T>::type;  // a subtraction that may wrap, without UB
  T d = b | (x & 1);  // the divisor depends on the chain: no reciprocal is hoisted
  return (DIVIDE ? x / d : T(U(x) - U(d))) ^ s;
}

// One warp; lane 0's cycles per step.
template <typename T, bool DIVIDE>
__global__ void latency(T seed, T b, long long* cycles, T* sink) {
  T x = seed + threadIdx.x;
  long long t0 = clock64();
  for (int i = 0; i < STEPS; ++i) x = step<T, DIVIDE>(x, b, seed);
  long long t1 = clock64();
  if (threadIdx.x == 0) *cycles = t1 - t0;
  sink[threadIdx.x] = x;
}

// One warp, two independent chains; lane 0's cycles per step of both.
template <typename T, bool DIVIDE>
__global__ void latency2(T seed, T b, long long* cycles, T* sink) {
  T x = seed + threadIdx.x, y = seed + 2 * threadIdx.x + 1;
  long long t0 = clock64();
  for (int i = 0; i < STEPS; ++i) {
    x = step<T, DIVIDE>(x, b, seed);
    y = step<T, DIVIDE>(y, b, seed);
  }
  long long t1 = clock64();
  if (threadIdx.x == 0) *cycles = t1 - t0;
  sink[threadIdx.x] = x ^ y;
}

constexpr int CHAINS = 8, ROUNDS = 64;

template <typename T, bool DIVIDE>
__global__ void throughput(T seed, T b, long long* cycles, T* sink) {
  T x[CHAINS];
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) x[c] = seed + threadIdx.x * CHAINS + c;
  __syncthreads();
  long long t0 = clock64();
  for (int i = 0; i < ROUNDS; ++i)
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) x[c] = step<T, DIVIDE>(x[c], b, seed);
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
  T acc = 0;
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) acc ^= x[c];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

template <typename T, bool DIVIDE>
static int row(const char* name, T seed, int sms, long long* cyc, T* sink) {
  long long host[1024];
  latency<T, DIVIDE><<<1, 32>>>(seed, T(3), cyc, sink);
  CHECK(cudaGetLastError());
  latency<T, DIVIDE><<<1, 32>>>(seed, T(3), cyc, sink);  // the first launch warms up
  CHECK(cudaMemcpy(host, cyc, sizeof(long long), cudaMemcpyDeviceToHost));
  double lat = double(host[0]) / STEPS;
  for (int r = 0; r < 2; ++r) latency2<T, DIVIDE><<<1, 32>>>(seed, T(3), cyc, sink);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(host, cyc, sizeof(long long), cudaMemcpyDeviceToHost));
  double lat2 = double(host[0]) / STEPS;
  for (int r = 0; r < 2; ++r) throughput<T, DIVIDE><<<sms, 1024>>>(seed, T(3), cyc, sink);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(host, cyc, sizeof(long long) * sms, cudaMemcpyDeviceToHost));
  long long worst = 0;
  for (int i = 0; i < sms; ++i) worst = host[i] > worst ? host[i] : worst;
  // One block of 32 warps per SM: 8 per scheduler, each CHAINS x ROUNDS steps.
  double thr = double(worst) / (8.0 * CHAINS * ROUNDS);
  printf("%-26s %10.1f %10.1f %12.2f\n", name, lat, lat2, thr);
  return 0;
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  const int sms = prop.multiProcessorCount;
  long long* cyc;
  uint64_t* sink;
  CHECK(cudaMalloc(&cyc, sizeof(long long) * 1024));
  CHECK(cudaMalloc(&sink, sizeof(uint64_t) * sms * 1024));
  printf("%-26s %10s %10s %12s\n", "chain step", "latency", "2 chains", "per warp op");
  const uint64_t narrow = 0x9e3779b9ull, wide = narrow | (1ull << 40);
  int bad = 0;
  bad |= row<uint32_t, false>("u32 subtract", uint32_t(narrow), sms, cyc, (uint32_t*)sink);
  bad |= row<uint32_t, true>("u32 divide", uint32_t(narrow), sms, cyc, (uint32_t*)sink);
  bad |= row<int32_t, false>("s32 subtract", int32_t(narrow >> 1), sms, cyc, (int32_t*)sink);
  bad |= row<int32_t, true>("s32 divide", int32_t(narrow >> 1), sms, cyc, (int32_t*)sink);
  bad |= row<uint64_t, false>("u64 subtract", narrow, sms, cyc, sink);
  bad |= row<uint64_t, true>("u64 divide, narrow", narrow, sms, cyc, sink);
  bad |= row<uint64_t, true>("u64 divide, wide", wide, sms, cyc, sink);
  bad |= row<int64_t, false>("s64 subtract", int64_t(narrow), sms, cyc, (int64_t*)sink);
  bad |= row<int64_t, true>("s64 divide, narrow", int64_t(narrow), sms, cyc, (int64_t*)sink);
  bad |= row<int64_t, true>("s64 divide, wide", int64_t(wide), sms, cyc, (int64_t*)sink);
  CHECK(cudaDeviceSynchronize());
  return bad;
}
