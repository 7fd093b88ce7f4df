// upload-warmth.cu — does a kernel find a buffer in the L2 right after the buffer's upload?
//
// Standalone (not part of the build): nvcc -arch=native -O3 -o warmth upload-warmth.cu && ./warmth
// The GPU check times each corpus case on a second launch, its inputs uploaded (cudaMemcpy from
// pageable host memory) just before; every emulator launch starts with cold caches. If the
// upload leaves its lines in the L2, silicon's timed launch reads its inputs at L2 latency where
// the model reads them from DRAM: on the model, a second launch on the same buffers makes the
// short corpus kernels 1.3-1.7x faster (the corpus rows of docs/validation.md). Per buffer size
// (1, 4 and 16 MB, below the L2; 256 MB, above it), the event time of one read of the whole
// buffer (16-byte loads, four blocks of 256 threads per SM, grid-stride), each the median of 9:
//   cold_us      after a flush of the L2 (a kernel that writes 512 MB elsewhere);
//   uploaded_us  after a flush, then the buffer's upload;
//   warm_us      right after a launch that read the buffer.
// uploaded_us near warm_us and below cold_us: the upload left the buffer in the L2.
// Each timed read is queued behind a 20 us spin on one warp, so that the host's launch of the
// read falls outside its events in all three cases (the read right after a synchronize would
// otherwise carry the launch's few microseconds, and the read queued behind the flush would not).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

__global__ void read_all(const uint4* p, size_t n, unsigned int* sink) {
  unsigned int s = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint4 v = p[i];
    s ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  // One word per thread, so that no load is dead.
  sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__global__ void write_all(uint4* p, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    p[i] = make_uint4(unsigned(i), 1u, 2u, 3u);
  }
}

// Keeps the stream busy while the host queues what follows.
__global__ void spin(long long ns) {
  long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

constexpr int THREADS = 256, ROUNDS = 9;
constexpr long long SPIN_NS = 20000;
constexpr size_t FLUSH_BYTES = size_t(512) << 20;

// One read of the n vectors at buf between two events; its microseconds appended to us.
static int timed_read(const uint4* buf, size_t n, unsigned int* sink, int blocks, cudaEvent_t a,
                      cudaEvent_t b, std::vector<double>& us) {
  float ms = 0.0f;
  spin<<<1, 32>>>(SPIN_NS);
  CHECK(cudaEventRecord(a));
  read_all<<<blocks, THREADS>>>(buf, n, sink);
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  CHECK(cudaGetLastError());
  CHECK(cudaEventElapsedTime(&ms, a, b));
  us.push_back(1e3 * ms);
  return 0;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main() {
  int dev = 0, sms = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, dev));
  printf("# %s, %d SMs, L2 %d MB\n", prop.name, sms, prop.l2CacheSize >> 20);
  printf("mb\tcold_us\tuploaded_us\twarm_us\n");
  const int blocks = 4 * sms;
  uint4* flush = nullptr;
  unsigned int* sink = nullptr;
  CHECK(cudaMalloc(&flush, FLUSH_BYTES));
  CHECK(cudaMalloc(&sink, sizeof(unsigned int) * THREADS * blocks));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (size_t mb : {size_t(1), size_t(4), size_t(16), size_t(256)}) {
    const size_t bytes = mb << 20, n = bytes / sizeof(uint4);
    std::vector<unsigned char> host(bytes);
    for (size_t i = 0; i < bytes; ++i) host[i] = static_cast<unsigned char>(i * 7);
    uint4* buf = nullptr;
    CHECK(cudaMalloc(&buf, bytes));
    CHECK(cudaMemcpy(buf, host.data(), bytes, cudaMemcpyHostToDevice));
    std::vector<double> cold, uploaded, warm;
    for (int r = 0; r < ROUNDS; ++r) {
      // Cold: the L2 holds the flush's lines.
      write_all<<<blocks, THREADS>>>(flush, FLUSH_BYTES / sizeof(uint4));
      if (timed_read(buf, n, sink, blocks, a, b, cold)) return 1;
      // Uploaded: a flush, then the buffer's upload, then the read.
      write_all<<<blocks, THREADS>>>(flush, FLUSH_BYTES / sizeof(uint4));
      CHECK(cudaDeviceSynchronize());
      CHECK(cudaMemcpy(buf, host.data(), bytes, cudaMemcpyHostToDevice));
      if (timed_read(buf, n, sink, blocks, a, b, uploaded)) return 1;
      // Warm: the read again, right after the one before.
      if (timed_read(buf, n, sink, blocks, a, b, warm)) return 1;
    }
    printf("%zu\t%.2f\t%.2f\t%.2f\n", mb, median(cold), median(uploaded), median(warm));
    CHECK(cudaFree(buf));
  }
  return 0;
}
