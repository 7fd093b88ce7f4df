// l2-coalescer.cu — how far apart in time may two SMs miss the same sectors and still send them
// to the L2 once?
//
// Standalone (not part of the build), for a GPU session with ncu:
//   nvcc -arch=native -O3 -o l2coal l2-coalescer.cu && ./l2coal
//   ncu --csv --print-units base --kernel-name pair --metrics \
//     lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_sector_op_read_hit_rate.pct \
//     ./l2coal
// One launch per case, in the order printed; ncu flushes the caches before each.
//
// Why: on an H100, two SMs that miss the same sector at once send it to the L2 once, on one TPC
// or across GPCs (tex-footprint.cu, cases 15 and 16: the L2 request coalescer, ncu's lrc__
// metrics). The emulator has no coalescer: it merges such reads in the L2's MSHRs, which gets
// DRAM right and counts them as L2 hits. A coalescer that joins a read to the one in flight until
// the L2 answers merged far more of the study's reads than silicon did (2026-11-27-ncu-findings.md,
// section 7), so silicon's window is shorter; this measures it.
//
// How: a grid of one warp per SM. Block 8 (the leader) and one follower, block 9 (the same TPC,
// as block-placement.cu found blocks placed on an H100) or block 10 (another GPC), read the same
// 32 sectors, one per 128-byte line, that nothing has read since the caches were flushed (DRAM
// misses, so the leader's reads stay in flight for hundreds of cycles); the other blocks exit.
// The leader publishes a start time on %globaltimer 20 µs ahead; it reads at that time, the
// follower `delay` ns later. Printed per launch: both SMs, the follower's actual offset on
// %globaltimer (its resolution shows in it), both warps' cycles from issue to data, and the
// follower's polls of the start word (each one L2 sector read, to subtract from ncu's count).
// Under ncu: lts__t_sectors_srcunit_tex_op_read.sum is 64 + polls when each SM sends its own
// sectors, 32 + polls when every follower read joined the leader's.
// Baselines: the leader alone (32 + 0), and a follower reading other sectors (64 + polls).
// The L2's read hit rate tells what Nsight Compute counts for a follower read that reaches the
// L2 unjoined while the leader's miss is still in flight (on an H200, 12 of 32 across GPCs at
// 256 ns, where the leader's reads take about 740 cycles): such reads raise the hit rate if
// they count as hits, and leave it at the polls' share if they count as misses. The emulator
// merges them in the L2's MSHRs and counts them as hits.
#include <cstdio>
#include <cstdint>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

constexpr int LEADER = 8;
constexpr unsigned LINE_WORDS = 32;             // 128 B
constexpr size_t CASE_WORDS = 64 * 1024;        // 256 KiB of fresh lines per case

__device__ __forceinline__ uint64_t gtime() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned smid() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}
__device__ __forceinline__ unsigned load_cg(const unsigned* a) {
  unsigned v;
  asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  return v;
}

// out per launch: [0] leader smid, [1] follower smid, [3] leader cycles, [4] follower cycles,
// [5] polls, [6] value sum (keeps the loads), [7] and [8] the leader's and the follower's issue
// time on %globaltimer. follower < 0: the leader alone. `other`: the follower reads the next 32
// lines instead.
__global__ void pair(const unsigned* p, unsigned long long* start, int follower, unsigned delay,
                     int other, long long* out) {
  const int b = blockIdx.x;
  if (b != LEADER && b != follower) return;
  const unsigned lane = threadIdx.x;
  const bool lead = b == LEADER;
  uint64_t t0;
  long long polls = 0;
  if (lead) {
    t0 = gtime() + 20000;
    if (lane == 0) {
      asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(start), "l"(t0) : "memory");
    }
  } else {
    unsigned long long s = 0;
    while (s == 0) {
      asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(s) : "l"(start) : "memory");
      ++polls;
    }
    t0 = s + delay;
  }
  while (gtime() < t0) {
  }
  const unsigned* a = p + (size_t(lane) + (!lead && other ? 32 : 0)) * LINE_WORDS;
  const uint64_t issued = gtime();
  const long long c0 = clock64();
  const unsigned v = load_cg(a);
  // The clock waits for the load: a CTA fence waits for the loads before it (fence-variants.cu).
  // A use of the value does not do it: ptxas folded an `add 0` away, and the clock then read 2.
  asm volatile("fence.acq_rel.cta;" ::: "memory");
  const long long c1 = clock64();
  const unsigned w = v;
  atomicAdd(reinterpret_cast<unsigned long long*>(&out[6]), (unsigned long long)w);
  if (lane == 0) {
    if (lead) {
      out[0] = smid();
      out[3] = c1 - c0;
      out[7] = (long long)issued;
    } else {
      out[1] = smid();
      out[4] = c1 - c0;
      out[5] = polls;
      out[8] = (long long)issued;
    }
  }
}

__global__ void fill(unsigned* buf, size_t n) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    buf[i] = unsigned(i) | 1u;
}

struct Case { const char* name; int follower; unsigned delay; int other; };

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  Case cases[64];
  int n = 0;
  cases[n++] = {"leader alone", -1, 0, 0};
  cases[n++] = {"other sectors, same TPC", LEADER + 1, 0, 1};
  const unsigned delays[] = {0, 64, 128, 256, 512, 1024, 2048, 4096};
  for (int f : {LEADER + 1, LEADER + 2})
    for (unsigned d : delays) cases[n++] = {f == LEADER + 1 ? "same TPC" : "other GPC", f, d, 0};
  const size_t words = size_t(n) * CASE_WORDS;
  unsigned* buf;
  unsigned long long* start;
  long long* out;
  CHECK(cudaMalloc(&buf, words * 4));
  CHECK(cudaMalloc(&start, 8));
  CHECK(cudaMalloc(&out, 16 * sizeof(long long)));
  fill<<<1024, 256>>>(buf, words);
  // Twice the L2 written after the fill, so that none of the cases' lines is left in it.
  const size_t evict_words = size_t(prop.l2CacheSize) / 2;
  unsigned* evict;
  CHECK(cudaMalloc(&evict, evict_words * 4));
  fill<<<1024, 256>>>(evict, evict_words);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(evict));
  printf("%s, %d SMs; one launch per line; cycles from issue to data, lane 0\n", prop.name, sms);
  printf("%-26s %8s %6s %6s %10s %8s %8s %6s\n", "case", "delay", "SM", "SM", "offset_ns",
         "leader", "follower", "polls");
  for (int i = 0; i < n; ++i) {
    const Case& c = cases[i];
    CHECK(cudaMemset(start, 0, 8));
    CHECK(cudaMemset(out, 0, 16 * sizeof(long long)));
    pair<<<sms, 32>>>(buf + size_t(i) * CASE_WORDS, start, c.follower, c.delay, c.other, out);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    long long h[16];
    CHECK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
    if (c.follower < 0) {
      printf("%-26s %8s %6lld %6s %10s %8lld %8s %6s\n", c.name, "-", h[0], "-", "-", h[3], "-", "-");
    } else {
      printf("%-26s %8u %6lld %6lld %10lld %8lld %8lld %6lld\n", c.name, c.delay, h[0], h[1],
             h[8] - h[7], h[3], h[4], h[5]);
    }
  }
  return 0;
}
