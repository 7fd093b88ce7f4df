// launch-overhead.cu — what does a grid cost beyond its blocks' work?
//
// Standalone (not part of the build): nvcc -arch=native -O3 -o launch launch-overhead.cu && ./launch
// The emulator times a kernel from its first block's start to its last warp's end. A GPU kernel
// timed by CUDA events, as the GPU check times the corpus, also pays for starting the grid and
// draining it. The corpus's shortest kernels (jacobi_2d at 8-10 us, transpose at 14-17 us) run
// 2-3x faster in the model than on an H100, and this fixed cost is the suspect. Per grid size,
// with blocks of 128 threads that each store one word:
//   event_us   one launch between two events, the mean of 200 after 20 warm-ups;
//   span_us    the same launch's own span on %globaltimer: the earliest block start to the
//              latest block end, as the blocks themselves read it;
//   fixed_us   event_us - span_us: what starting and draining the grid adds;
//   queued_us  the time per launch of 200 launches queued back to back between two events.
// The grid sizes are 1 block, one per SM, and 4, 16 and 64 per SM.
#include <cstdint>
#include <cstdio>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// span[0] = earliest block start, span[1] = latest block end (ns on %globaltimer).
__global__ void blocks(unsigned int* out, unsigned long long* span) {
  const unsigned long long t0 = globaltimer();
  out[blockIdx.x * blockDim.x + threadIdx.x] = blockIdx.x ^ threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) {
    atomicMin(&span[0], t0);
    atomicMax(&span[1], globaltimer());
  }
}

constexpr int THREADS = 128, WARM = 20, REPEATS = 200;

int main() {
  int dev = 0, sms = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, dev));
  printf("# %s, %d SMs\n", prop.name, sms);
  printf("blocks\tevent_us\tspan_us\tfixed_us\tqueued_us\n");
  const int grids[] = {1, sms, 4 * sms, 16 * sms, 64 * sms};
  unsigned int* out = nullptr;
  unsigned long long* span = nullptr;
  CHECK(cudaMalloc(&out, sizeof(unsigned int) * THREADS * 64 * sms));
  CHECK(cudaMalloc(&span, 2 * sizeof(unsigned long long)));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  const unsigned long long init[2] = {~0ull, 0ull};
  for (int g : grids) {
    double event_ms = 0.0, span_ns = 0.0;
    for (int r = 0; r < WARM + REPEATS; ++r) {
      CHECK(cudaMemcpy(span, init, sizeof(init), cudaMemcpyHostToDevice));
      CHECK(cudaEventRecord(a));
      blocks<<<g, THREADS>>>(out, span);
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      CHECK(cudaGetLastError());
      float ms = 0.0f;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      unsigned long long s[2];
      CHECK(cudaMemcpy(s, span, sizeof(s), cudaMemcpyDeviceToHost));
      if (r >= WARM) {
        event_ms += ms;
        span_ns += double(s[1] - s[0]);
      }
    }
    CHECK(cudaEventRecord(a));
    for (int r = 0; r < REPEATS; ++r) blocks<<<g, THREADS>>>(out, span);
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    CHECK(cudaGetLastError());
    float queued_ms = 0.0f;
    CHECK(cudaEventElapsedTime(&queued_ms, a, b));
    const double event_us = 1e3 * event_ms / REPEATS, span_us = 1e-3 * span_ns / REPEATS;
    printf("%d\t%.3f\t%.3f\t%.3f\t%.3f\n", g, event_us, span_us, event_us - span_us,
           1e3 * queued_ms / REPEATS);
  }
  return 0;
}
