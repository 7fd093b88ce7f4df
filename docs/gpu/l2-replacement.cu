// l2-replacement.cu — how much of a working set the L2 keeps while other data streams through
// it, and whether a line read twice outlasts a line read once.
//
// Standalone (not part of the build): nvcc -arch=native -O3 -o l2repl l2-replacement.cu && ./l2repl
// Why: the model's L2 evicts the least recently used line of a 20-way set. With the H100's block
// order its SMs finish far apart, and it then keeps fewer of the lines that blocks share than
// silicon does (docs/gpu/2026-12-06-dispatch-l2.md). Either silicon's SMs keep closer pace or its
// L2 keeps lines longer than LRU would; this measures the second.
//
// Each case:
//   1. flushes the L2 (a kernel writes 512 MB elsewhere);
//   2. reads the set, 4 MiB, every byte, `touches` times over (ld.global.cg: the L2 only);
//   3. reads `stream` bytes of other data once, every byte (ld.global.cg), as a fraction of the
//      L2's size from 0 to 2;
//   4. chases, on one thread, 2,048 of the set's 32,768 lines in a random order (ld.global.cg,
//      each step's address the word the step before read), timing every step.
// Step 4's steps under HIT_CYCLES (between an L2 hit's ~270 and DRAM's ~650) count as hits.
// Each case runs ROUNDS times and prints the median.
//
// Output per case: touches, stream_mb, stream_over_l2, hit_fraction, mean_step_cycles, and the
// 10th, 50th and 90th percentiles of every round's steps together, which show where hits and
// misses lie should HIT_CYCLES not separate them on this GPU.
// LRU over the whole L2 keeps the set while 4 MiB plus the stream fit, and none of it once the
// stream alone fills the L2; sets of 20 ways under a hash soften that edge, and an L2 whose
// halves each hold a copy of what far SMs read halves where it falls. A set kept past the edge
// after two touches and not after one means a line read again is protected; kept after one as
// well, the streamed lines go first.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

constexpr int THREADS = 256, ROUNDS = 3, STEPS = 2048, LINE = 128;
constexpr size_t SET_BYTES = size_t(4) << 20, FLUSH_BYTES = size_t(512) << 20;
constexpr long long HIT_CYCLES = 450;

__global__ void write_all(uint4* p, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    p[i] = make_uint4(unsigned(i), 1u, 2u, 3u);
  }
}

__global__ void read_all(const uint4* p, size_t n, unsigned int* sink) {
  unsigned int s = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcg(p + i);
    s ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  // One word per thread, so that no load is dead.
  sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// A clock read the compiler keeps in place among the memory operations around it.
__device__ __forceinline__ long long clk() {
  long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t) : : "memory");
  return t;
}

// The set's first word of each chased line holds the next line's word index. Each step's store
// of the word it read waits for the load, so the clock read after it sees the load complete.
__global__ void chase(const unsigned int* set, unsigned int first, long long* cycles) {
  __shared__ volatile unsigned int kept[STEPS];
  unsigned int j = first;
  for (int k = 0; k < STEPS; ++k) {
    const long long t0 = clk();
    j = __ldcg(set + j);
    kept[k] = j;
    cycles[k] = clk() - t0;
  }
}

int main() {
  int dev = 0, sms = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, dev));
  const size_t l2 = size_t(prop.l2CacheSize);
  printf("# %s, %d SMs, L2 %zu MiB; set %zu MiB, %d steps a chase, hit under %lld cycles\n",
         prop.name, sms, l2 >> 20, SET_BYTES >> 20, STEPS, HIT_CYCLES);
  printf("touches\tstream_mb\tstream_over_l2\thit_fraction\tmean_step_cycles\tp10\tp50\tp90\n");
  const int blocks = 4 * sms;
  const size_t stream_max = 2 * l2;
  uint4 *flush = nullptr, *stream = nullptr;
  unsigned int *set = nullptr, *sink = nullptr;
  long long* cycles = nullptr;
  CHECK(cudaMalloc(&flush, FLUSH_BYTES));
  CHECK(cudaMalloc(&stream, stream_max));
  CHECK(cudaMalloc(&set, SET_BYTES));
  CHECK(cudaMalloc(&sink, sizeof(unsigned int) * THREADS * blocks));
  CHECK(cudaMalloc(&cycles, sizeof(long long) * STEPS));
  CHECK(cudaMemset(stream, 1, stream_max));

  // 2,048 of the set's lines, every 16th, visited in a random order that closes on itself.
  const size_t lines = SET_BYTES / LINE, words_per_line = LINE / sizeof(unsigned int);
  std::vector<unsigned int> order(STEPS);
  for (int k = 0; k < STEPS; ++k) order[k] = unsigned(k * (lines / STEPS));
  std::mt19937 rng(7);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<unsigned int> host(SET_BYTES / sizeof(unsigned int), 0);
  for (int k = 0; k < STEPS; ++k) {
    host[order[k] * words_per_line] = unsigned(order[(k + 1) % STEPS] * words_per_line);
  }
  CHECK(cudaMemcpy(set, host.data(), SET_BYTES, cudaMemcpyHostToDevice));
  const unsigned int first = unsigned(order[0] * words_per_line);

  std::vector<long long> steps(STEPS);
  for (int touches : {1, 2}) {
    for (int eighths : {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16}) {
      const size_t stream_bytes = l2 * eighths / 8;
      std::vector<double> hits, means;
      std::vector<long long> pooled;
      for (int r = 0; r < ROUNDS; ++r) {
        write_all<<<blocks, THREADS>>>(flush, FLUSH_BYTES / sizeof(uint4));
        for (int t = 0; t < touches; ++t) {
          read_all<<<blocks, THREADS>>>(reinterpret_cast<const uint4*>(set),
                                        SET_BYTES / sizeof(uint4), sink);
        }
        if (stream_bytes > 0) {
          read_all<<<blocks, THREADS>>>(stream, stream_bytes / sizeof(uint4), sink);
        }
        chase<<<1, 1>>>(set, first, cycles);
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(steps.data(), cycles, sizeof(long long) * STEPS, cudaMemcpyDeviceToHost));
        int hit = 0;
        double sum = 0;
        for (long long c : steps) {
          hit += c < HIT_CYCLES;
          sum += double(c);
        }
        hits.push_back(double(hit) / STEPS);
        pooled.insert(pooled.end(), steps.begin(), steps.end());
        means.push_back(sum / STEPS);
      }
      std::sort(hits.begin(), hits.end());
      std::sort(means.begin(), means.end());
      std::sort(pooled.begin(), pooled.end());
      const auto pct = [&](size_t p) { return pooled[pooled.size() * p / 100]; };
      printf("%d\t%zu\t%.3f\t%.3f\t%.1f\t%lld\t%lld\t%lld\n", touches, stream_bytes >> 20,
             eighths / 8.0, hits[ROUNDS / 2], means[ROUNDS / 2], pct(10), pct(50), pct(90));
    }
  }
  return 0;
}
