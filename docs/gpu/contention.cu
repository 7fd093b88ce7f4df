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
// And the load unit's issue cost for divergent addresses: one warp whose 32 lanes each load
// a different cold line, timed naive (clock, load, clock: the issue), dummy and fenced. An H100
// was reported to read 116 cycles naive and 1 109 dummy, where the h100 preset gives 18 and 728.
// Printed: lane 0's cycles per window, the median of 9 launches, each on lines no launch touched.
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

// One warp: lane l loads the word at line (base + l) * 32 lines apart (4 KiB, so each lane's
// line is its own and no two share a DRAM page's neighbourhood), window closed per MODE:
// 0 naive, 1 dummy (a never-executed store of the value), 2 fence.acq_rel.cta.
template <int MODE>
__global__ void divergent(const unsigned* p, unsigned base, int dummy, unsigned* sink,
                          long long* out) {
  const unsigned* a = p + (size_t(base) + threadIdx.x) * 1024;
  unsigned v;
  long long t0, t1;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0)::"memory");
  asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  if (MODE == 1)
    asm volatile("{ .reg .pred q; setp.lt.s32 q, %1, 0; @q st.volatile.global.u32 [%2], %0; }"
                 ::"r"(v), "r"(dummy), "l"(sink) : "memory");
  if (MODE == 2) asm volatile("fence.acq_rel.cta;" ::: "memory");
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1)::"memory");
  if (threadIdx.x == 0) out[0] = t1 - t0;
  if (v == 0xdeadbeefu) sink[1] = v;
}

template <int MODE>
static int divergent_window(const char* name, const unsigned* p, unsigned* sink, long long* d) {
  std::vector<long long> v;
  for (int r = 0; r < 10; ++r) {
    // 32 fresh lines per launch and mode, far past the lines any earlier launch read.
    unsigned base = (unsigned(MODE) * 10 + unsigned(r)) * 32;
    divergent<MODE><<<1, 32>>>(p, base, 0, sink, d);
    CHECK(cudaDeviceSynchronize());
    long long c;
    CHECK(cudaMemcpy(&c, d, sizeof c, cudaMemcpyDeviceToHost));
    if (r > 0) v.push_back(c);
  }
  std::sort(v.begin(), v.end());
  printf("32 lanes, 32 cold lines, %-6s %7lld cycles\n", name, v[v.size() / 2]);
  return 0;
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
  // 960 lines × 4 KiB = 3.75 MiB of buffer used; 256 MiB written first so none of it is in L2.
  unsigned* big;
  CHECK(cudaMalloc(&big, size_t(256) << 20));
  CHECK(cudaMemset(big, 1, size_t(256) << 20));
  long long* dl;
  CHECK(cudaMalloc(&dl, 2 * sizeof(unsigned) + sizeof(long long)));
  unsigned* sink = reinterpret_cast<unsigned*>(dl + 1);
  // The memset's last writes are in L2; the windows read from the buffer's start.
  unsigned* cold = big;
  CHECK(cudaMemset(cold, 0, 4 << 20));
  unsigned* evict;
  CHECK(cudaMalloc(&evict, size_t(128) << 20));
  CHECK(cudaMemset(evict, 2, size_t(128) << 20));
  if (divergent_window<0>("naive", cold, sink, dl)) return 1;
  if (divergent_window<1>("dummy", cold, sink, dl)) return 1;
  if (divergent_window<2>("fence", cold, sink, dl)) return 1;
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
