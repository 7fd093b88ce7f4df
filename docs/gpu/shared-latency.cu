// shared-latency.cu — how long does a shared-memory load, and a shared atomic, take a warp?
//
// Standalone (not part of the build): nvcc -arch=native -O3 -o shared shared-latency.cu && ./shared
// warpscope's record path waits for a shared atomic (the slot) and two shared loads before its
// 16-byte store; the h100 preset charges each Accel-Sim's 29 cycles (-gpgpu_smem_latency), and
// tracing a warp costs 1.114x on the preset against 1.043x on an H200
// (docs/gpu/2026-11-27-findings.md, 5). One thread (and, for contention, one full warp) walks a
// chain of 1024 words in shared memory, each step's address the value the last one returned:
//   ld.shared       j = s[j]
//   atom.shared.add j = atomicAdd(&s[j], 0)   (returns the old value: the next index)
//   atom, warp      the same by 32 lanes at once, each on its own chain in its own bank
//   atom, same word 32 lanes adding to one word, j taken from the result (a serialised atomic)
//   ld.shared, ready address  j = *j: each word holds the next word's shared address, so a step is
//                   the load alone (SASS: LDS R, [R], no LEA), the access's latency without the
//                   address arithmetic the other chases have
// Printed: cycles per step (clock64 around 256 steps; a step is the access and the one shift
// that makes its address), the median of 9 launches. The emulator runs the same PTX for its figure.
#include <cstdio>
#include <algorithm>
#include <vector>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

constexpr int WORDS = 1024;
constexpr int STEPS = 256;

template <int MODE>
__global__ void chase(long long* out, unsigned* sink) {
  __shared__ unsigned s[WORDS];
  unsigned lane = threadIdx.x;
  for (int i = lane; i < WORDS; i += blockDim.x)
    s[i] = MODE == 4 ? (unsigned)__cvta_generic_to_shared(&s[(i + 64) % WORDS])
                     : (i + 64) % WORDS;  // same bank, next row
  if (MODE == 3) s[0] = 0;
  __syncthreads();
  volatile unsigned* vs = s;
  unsigned j = MODE == 4 ? (unsigned)__cvta_generic_to_shared(&s[lane]) : lane;
  long long t0 = clock64();
  for (int k = 0; k < STEPS; ++k) {
    if (MODE == 0) j = vs[j];
    if (MODE == 1 || MODE == 2) j = atomicAdd(&s[j], 0u);
    if (MODE == 3) j = atomicAdd(&s[(j >> 20) & (WORDS - 1)], 1u);  // word 0: j stays < 2^20
    if (MODE == 4) asm volatile("ld.volatile.shared.u32 %0, [%0];" : "+r"(j));
  }
  long long t1 = clock64();
  if (lane == 0) out[0] = t1 - t0;
  if (j == 0xdeadbeefu) sink[0] = j;
}

template <int MODE>
static int measure(const char* name, int threads, long long* d_out, unsigned* sink) {
  std::vector<long long> v;
  for (int r = 0; r < 10; ++r) {
    chase<MODE><<<1, threads>>>(d_out, sink);
    CHECK(cudaDeviceSynchronize());
    long long c;
    CHECK(cudaMemcpy(&c, d_out, sizeof c, cudaMemcpyDeviceToHost));
    if (r > 0) v.push_back(c);
  }
  std::sort(v.begin(), v.end());
  double per = double(v[v.size() / 2]) / STEPS;
  printf("%-16s %3d lanes  %7.1f cycles/step\n", name, threads, per);
  return 0;
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  printf("%s\n", prop.name);
  long long* d_out;
  unsigned* sink;
  CHECK(cudaMalloc(&d_out, sizeof(long long)));
  CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  if (measure<0>("ld.shared", 1, d_out, sink)) return 1;
  if (measure<0>("ld.shared", 32, d_out, sink)) return 1;
  if (measure<1>("atom.shared.add", 1, d_out, sink)) return 1;
  if (measure<2>("atom, warp", 32, d_out, sink)) return 1;
  if (measure<3>("atom, same word", 32, d_out, sink)) return 1;
  if (measure<4>("ld.shared, ready", 1, d_out, sink)) return 1;
  return 0;
}
