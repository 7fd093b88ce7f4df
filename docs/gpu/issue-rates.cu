// issue-rates.cu — how often can a scheduler issue each kind of arithmetic instruction?
//
// Standalone (not part of the build): nvcc -arch=native -O3 -o issuerates issue-rates.cu && ./issuerates
// int-division.cu's chains without a division issued their 32-bit steps in 4.1 cycles per
// scheduler on an H200 where the h100 preset, which issues an integer instruction every 2 cycles
// (16 lanes a cycle, Accel-Sim's initiation interval), takes 8.2. This times each PTX operation
// alone: one block of 1,024 threads per SM (8 warps per scheduler), each thread 8 independent
// chains of the operation, 64 steps unrolled 4 times. Printed per operation: the median block's
// clock64 span and the cycles per PTX warp instruction per scheduler (that span over 8 warps ×
// 8 chains × 64 steps × the step's PTX instructions), so 1.0 is one a cycle and 2.0 one every
// other cycle. Which SASS ptxas chose (IADD3 or IMAD.IADD, LOP3, two instructions for add.u64)
// cuobjdump -sass tells. Operations 8-13 (shr, mul.wide, min, prmt, popc and cvt, each of the
// last two after a xor) were added after the first run.
#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

constexpr int CHAINS = 8;
constexpr int STEPS = 64;
constexpr int THREADS = 1024;

// One step of chain c; its other operand is the next chain's value, so that ptxas can neither
// fold a chain's steps into one (x + k + k = x + 2k) nor drop them (x ^ k ^ k = x).
template <int OP>
__device__ __forceinline__ void step(unsigned& x, unsigned y, float& f, float g,
                                     unsigned long long& w, unsigned long long v) {
  if (OP == 0) asm volatile("fma.rn.f32 %0, %0, %1, %1;" : "+f"(f) : "f"(g));
  if (OP == 1) asm volatile("add.f32 %0, %0, %1;" : "+f"(f) : "f"(g));
  if (OP == 2) asm volatile("add.u32 %0, %0, %1;" : "+r"(x) : "r"(y));
  if (OP == 3) asm volatile("xor.b32 %0, %0, %1;" : "+r"(x) : "r"(y));
  if (OP == 4) asm volatile("mad.lo.u32 %0, %0, %1, %1;" : "+r"(x) : "r"(y));
  if (OP == 5) asm volatile("shl.b32 %0, %0, %1;" : "+r"(x) : "r"(y));
  if (OP == 6) asm volatile("add.u64 %0, %0, %1;" : "+l"(w) : "l"(v));
  if (OP == 7) asm volatile("{ .reg .u32 t; xor.b32 t, %0, %1; sub.u32 %0, t, %1; }" : "+r"(x) : "r"(y));
  if (OP == 8) asm volatile("shr.u32 %0, %0, %1;" : "+r"(x) : "r"(y));
  if (OP == 9) asm volatile("mul.wide.u32 %0, %1, %2;" : "=l"(w) : "r"(unsigned(w)), "r"(unsigned(v)));
  if (OP == 10) asm volatile("min.u32 %0, %0, %1;" : "+r"(x) : "r"(y));
  if (OP == 11) asm volatile("prmt.b32 %0, %0, %1, 0x5140;" : "+r"(x) : "r"(y));
  if (OP == 12) asm volatile("popc.b32 %0, %1;" : "=r"(x) : "r"(x ^ y));
  if (OP == 13) asm volatile("cvt.rn.f32.u32 %0, %1;" : "=f"(f) : "r"(__float_as_uint(f) ^ __float_as_uint(g)));
}
constexpr int OPS = 14;
const char* const NAMES[OPS] = {"fma.rn.f32", "add.f32",  "add.u32", "xor.b32",
                                "mad.lo.u32", "shl.b32",  "add.u64", "xor then sub (u32)",
                                "shr.u32",    "mul.wide.u32", "min.u32", "prmt.b32",
                                "popc.b32 (of a xor)", "cvt.rn.f32.u32 (of a xor)"};
// PTX instructions per step of a chain.
constexpr int PER_STEP[OPS] = {1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 2, 2};

template <int OP>
__global__ void run(unsigned k, long long* cycles, unsigned* sink) {
  unsigned x[CHAINS];
  float f[CHAINS];
  unsigned long long w[CHAINS];
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) {
    x[c] = threadIdx.x + c + k;
    f[c] = float(threadIdx.x + c + k);
    w[c] = threadIdx.x + c + k;
  }
  __syncthreads();
  const long long c0 = clock64();
#pragma unroll 4
  for (int s = 0; s < STEPS; ++s) {
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) {
      const int n = (c + 1) % CHAINS;
      step<OP>(x[c], x[n], f[c], f[n], w[c], w[n]);
    }
  }
  __syncthreads();
  const long long c1 = clock64();
  if (threadIdx.x == 0) cycles[blockIdx.x] = c1 - c0;
  unsigned acc = 0;
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) acc ^= x[c] ^ __float_as_uint(f[c]) ^ unsigned(w[c]);
  if (acc == 0x9e3779b9u) sink[0] = acc;
}

template <int OP>
static int row(int sms, long long* d, unsigned* sink) {
  std::vector<double> per;
  for (int r = 0; r < 4; ++r) {
    run<OP><<<sms, THREADS>>>(r + 3, d, sink);
    CHECK(cudaDeviceSynchronize());
    std::vector<long long> c(sms);
    CHECK(cudaMemcpy(c.data(), d, sms * sizeof(long long), cudaMemcpyDeviceToHost));
    std::sort(c.begin(), c.end());
    if (r > 0) per.push_back(double(c[c.size() / 2]));
  }
  std::sort(per.begin(), per.end());
  const double warp_instructions = double(THREADS / 32 / 4) * CHAINS * STEPS * PER_STEP[OP];
  printf("%-22s %10.0f %10.2f\n", NAMES[OP], per[per.size() / 2],
         per[per.size() / 2] / warp_instructions);
  return 0;
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  printf("%s, %d SMs; one block of %d threads per SM, %d chains x %d steps per thread\n",
         prop.name, sms, THREADS, CHAINS, STEPS);
  printf("%-22s %10s %10s\n", "operation", "cycles", "per warp instruction per scheduler");
  long long* d;
  unsigned* sink;
  CHECK(cudaMalloc(&d, sms * sizeof(long long)));
  CHECK(cudaMalloc(&sink, 4));
  if (row<0>(sms, d, sink) || row<1>(sms, d, sink) || row<2>(sms, d, sink) ||
      row<3>(sms, d, sink) || row<4>(sms, d, sink) || row<5>(sms, d, sink) ||
      row<6>(sms, d, sink) || row<7>(sms, d, sink) || row<8>(sms, d, sink) ||
      row<9>(sms, d, sink) || row<10>(sms, d, sink) || row<11>(sms, d, sink) ||
      row<12>(sms, d, sink) || row<13>(sms, d, sink))
    return 1;
  return 0;
}
