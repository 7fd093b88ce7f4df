// contention.cu — how fast do contended global atomics go, and what does a shuffle read from a
// lane that is not in its member mask?
//
// Standalone (not part of the build): nvcc -arch=native -O3 -o contention contention.cu && ./contention
// The emulator serializes a warp's lanes on one global word at the L2 (one cycle each) and lets
// atomics of different warps to one word share the slice's bandwidth like any request. Kernels
// built on atomics to a few addresses (a histogram, warp-aggregated counters) ran 10-100x too
// fast on it against an H100, so this measures the rate silicon serves them at:
//   global atomics   65 536 warps (2 048 blocks of 1 024 threads) each doing ITERS atomicAdd,
//                    all lanes of a warp on one word or on 32 words, over 1, 32 or 1 024 words
//                    in all, and one lane per warp (warp-aggregated) on 1 word.
// Printed: atomic operations per ns and per SM clock (kernel time from CUDA events, the median
// of 5 launches), and ns per operation on each word.
//
// And cuda-samples' reduce7: in its last step the first 8 lanes of warp 0 (the warps' partial
// sums) add __shfl_down_sync(ballot, sum, 16), (…, 8), … with `ballot` holding those 8 lanes,
// so lanes 0-7 read lanes 8-23, which left the branch. PTX leaves the value undefined; the H100
// gave the right sum and the emulator another. Printed: what lanes 0-7 read from an exited lane
// (its register's last value, 0, or their own value), for shfl.down/idx/xor, and reduce7's sum.
#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

constexpr int BLOCKS = 2048;
constexpr int THREADS = 1024;
constexpr int ITERS = 16;

// MODE 0: every lane adds to word (warp % words); 1: lane l to word (warp * 32 + l) % words;
// 2: lane 0 only (a warp-aggregated counter).
template <int MODE>
__global__ void atomics(unsigned* words, unsigned nwords) {
  unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  unsigned lane = threadIdx.x % 32;
  unsigned w = MODE == 1 ? (warp * 32 + lane) % nwords : warp % nwords;
  if (MODE == 2 && lane != 0) return;
  for (int k = 0; k < ITERS; ++k) atomicAdd(&words[w], 1u);
}

// Lanes 0-7 take the branch; the others wrote 1000 + lane into v and left. The mask holds
// lanes 0-7 only, as reduce7's ballot does.
__global__ void shuffles(int* out) {
  int lane = threadIdx.x;
  int v = 1000 + lane;
  if (lane < 8) {
    v = 10 + lane;
    out[0 * 8 + lane] = __shfl_down_sync(0xffu, v, 16);
    out[1 * 8 + lane] = __shfl_sync(0xffu, v, 20);
    out[2 * 8 + lane] = __shfl_xor_sync(0xffu, v, 16);
    // reduce7's last step over the 8 partial sums 10..17 (sum 108).
    int sum = v;
    for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(0xffu, sum, off);
    out[3 * 8 + lane] = sum;
  }
}

template <int MODE>
static int measure(const char* name, unsigned nwords, unsigned* d, double clock_ghz) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int r = 0; r < 6; ++r) {
    CHECK(cudaMemset(d, 0, 1024 * sizeof(unsigned)));
    CHECK(cudaEventRecord(a));
    atomics<MODE><<<BLOCKS, THREADS>>>(d, nwords);
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float t;
    CHECK(cudaEventElapsedTime(&t, a, b));
    if (r > 0) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  double t_ns = ms[ms.size() / 2] * 1e6;
  double lanes = MODE == 2 ? 1.0 : 32.0;
  double ops = double(BLOCKS) * THREADS / 32 * lanes * ITERS;
  printf("%-28s %5u words  %9.3f ms  %8.2f ops/ns  %7.3f ops/clock  %7.2f ns/op/word\n", name,
         nwords, t_ns / 1e6, ops / t_ns, ops / (t_ns * clock_ghz), t_ns * nwords / ops);
  return 0;
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  int khz = 0;
  CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  double ghz = khz / 1e6;
  printf("%s, %d SMs, %.3f GHz\n", prop.name, prop.multiProcessorCount, ghz);
  unsigned* d;
  CHECK(cudaMalloc(&d, 1024 * sizeof(unsigned)));
  for (unsigned n : {1u, 32u, 1024u}) {
    if (measure<0>("warp's lanes on one word", n, d, ghz)) return 1;
  }
  for (unsigned n : {32u, 1024u}) {
    if (measure<1>("warp's lanes on 32 words", n, d, ghz)) return 1;
  }
  if (measure<2>("one lane per warp", 1, d, ghz)) return 1;
  int* o;
  CHECK(cudaMalloc(&o, 32 * sizeof(int)));
  CHECK(cudaMemset(o, 0, 32 * sizeof(int)));
  shuffles<<<1, 32>>>(o);
  CHECK(cudaDeviceSynchronize());
  int h[32];
  CHECK(cudaMemcpy(h, o, sizeof h, cudaMemcpyDeviceToHost));
  const char* what[4] = {"shfl.down 16", "shfl.idx 20", "shfl.bfly 16", "reduce7 sum (108)"};
  for (int k = 0; k < 4; ++k) {
    printf("%-18s", what[k]);
    for (int l = 0; l < 8; ++l) printf(" %5d", h[k * 8 + l]);
    printf("\n");
  }
  printf("(an exited lane's register holds 1000 + lane; a lane in the branch holds 10 + lane)\n");
  return 0;
}
