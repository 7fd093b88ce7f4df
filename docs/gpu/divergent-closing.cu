// divergent-closing.cu — what does a CTA fence wait for after a warp's loads of many cold lines?
//
// Standalone (not part of the build): nvcc -arch=native -O3 -o divclose divergent-closing.cu && ./divclose
// contention.cu timed one warp whose 32 lanes each load a different cold line: naive 4 cycles,
// dummy 822, fence.acq_rel.cta 1 125 on an H200. The dummy waits for every lane's value, so the
// fence waits 303 cycles longer than the data takes; the h100 preset gives both 685. This
// varies the lines: N lanes (1, 2, 4, 8, 16, 32) each load their own cold line, 4 KiB apart,
// the others load nothing; the window closed naive, by a dummy, by fence.acq_rel.cta, and by
// the dummy then the fence (which the fence then waits for beyond the data).
// Printed: lane 0's cycles per window and N, the median of 9 launches on lines no launch read.
#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

constexpr size_t LINE_WORDS = 1024;  // 4 KiB apart
constexpr int LAUNCHES = 10;         // the first left out

// MODE 0 naive, 1 dummy, 2 fence.acq_rel.cta, 3 dummy then fence.
template <int MODE>
__global__ void window(const unsigned* p, unsigned base, int lanes, int dummy, unsigned* sink,
                       long long* out) {
  const bool on = int(threadIdx.x) < lanes;
  const unsigned* a = p + (size_t(base) + threadIdx.x) * LINE_WORDS;
  unsigned v = 0;
  long long t0, t1;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0)::"memory");
  if (on) asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  if (MODE == 1 || MODE == 3)
    asm volatile("{ .reg .pred q; setp.lt.s32 q, %1, 0; @q st.volatile.global.u32 [%2], %0; }"
                 ::"r"(v), "r"(dummy), "l"(sink) : "memory");
  if (MODE >= 2) asm volatile("fence.acq_rel.cta;" ::: "memory");
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1)::"memory");
  if (threadIdx.x == 0) out[0] = t1 - t0;
  if (v == 0xdeadbeefu) sink[1] = v;
}

template <int MODE>
static int run(const char* name, const unsigned* p, unsigned* sink, long long* d, unsigned& base) {
  printf("%-14s", name);
  for (int lanes = 1; lanes <= 32; lanes *= 2) {
    std::vector<long long> v;
    for (int r = 0; r < LAUNCHES; ++r) {
      window<MODE><<<1, 32>>>(p, base, lanes, 0, sink, d);
      base += 32;
      CHECK(cudaDeviceSynchronize());
      long long c;
      CHECK(cudaMemcpy(&c, d, sizeof c, cudaMemcpyDeviceToHost));
      if (r > 0) v.push_back(c);
    }
    std::sort(v.begin(), v.end());
    printf(" %7lld", v[v.size() / 2]);
  }
  printf("\n");
  return 0;
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  printf("%s; cycles of lane 0's window, lanes loading a cold line each:\n", prop.name);
  printf("%-14s %7d %7d %7d %7d %7d %7d\n", "closing", 1, 2, 4, 8, 16, 32);
  // 4 closings × 6 lane counts × 10 launches × 32 lines of 4 KiB: 30 MiB; 256 MiB written after
  // it so that none of it is in the L2.
  const size_t words = size_t(4 * 6 * LAUNCHES * 32) * LINE_WORDS;
  unsigned* p;
  CHECK(cudaMalloc(&p, words * 4));
  CHECK(cudaMemset(p, 0, words * 4));
  unsigned* evict;
  CHECK(cudaMalloc(&evict, size_t(256) << 20));
  CHECK(cudaMemset(evict, 2, size_t(256) << 20));
  long long* d;
  CHECK(cudaMalloc(&d, 2 * sizeof(long long) + 8));
  unsigned* sink = reinterpret_cast<unsigned*>(d + 1);
  unsigned base = 0;
  if (run<0>("naive", p, sink, d, base)) return 1;
  if (run<1>("dummy", p, sink, d, base)) return 1;
  if (run<2>("fence", p, sink, d, base)) return 1;
  if (run<3>("dummy+fence", p, sink, d, base)) return 1;
  return 0;
}
