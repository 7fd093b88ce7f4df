// line-rate.cu — how fast does a warp's load send its lines, and what shares that rate?
//
// Standalone (not part of the build): nvcc -arch=native -O3 -o linerate line-rate.cu && ./linerate
// divergent-closing.cu found a warp's window around N lanes' cold lines growing by about 4
// cycles a line from 2 to 16 lanes on an H200, where the h100 preset's L1 takes a line a cycle.
// sm-inflight.cu's one-SM stream agrees: its 32, 64 and 128 threads (one warp on each of one to
// four sub-partitions) take the same 7,900 cycles, whose seven batches of 18 loads (ptxas' SASS)
// cost about 1,130 cycles each against a chase's 704; with 2 and 4 warps a sub-partition its
// batches cost 3.9 cycles a line more. This times the rate directly:
//   level: the lines are cold (DRAM), in the L2 only (read with ld.global.cg by a launch before),
//     or in the SM's L1 (the warp read them just before its window);
//   lines: N lanes each load a 4-byte word of a line of its own, 4 KiB apart (N = 1 ... 32), or,
//     packed, all 32 lanes load words of N lines, spread over each line's four sectors;
//   warps: k warps of one block time the same pattern at once, on one sub-partition (warps 0, 4,
//     8, ... of a block of 4k warps; the others only wait at the barrier) or spread (a block of
//     k warps: warp w runs on sub-partition w mod 4).
// Each window is one warp's own: %clock64, the load, a predicated-off store of the loaded value
// (the dummy closing: the clock read waits for every lane's data), %clock64. Printed: the median
// over 9 launches (a 10th, first, left out) of the slowest active warp's cycles, per N. A rate
// per line that does not change with k on one sub-partition is the warp's own; one that grows
// with k there and not when spread is the sub-partition's; one that grows either way is the SM's.
#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); return 1; } } while (0)

constexpr size_t LINE_WORDS = 1024;  // lines 4 KiB apart
constexpr int LAUNCHES = 10;         // the first left out
constexpr int MAX_WARPS = 8;         // timed warps a launch at most
enum Level { DRAM = 0, L2 = 1, L1 = 2 };

// The word lane `lane` of a warp loads, for N lines: spread, lane l < N alone loads, from line
// l; packed, every lane loads, from line l mod N, its sector (l / N) mod 4.
__device__ __forceinline__ const unsigned* word(const unsigned* warp_lines, int lane, int lines,
                                                bool packed) {
  if (!packed) return warp_lines + size_t(lane) * LINE_WORDS;
  return warp_lines + size_t(lane % lines) * LINE_WORDS + ((lane / lines) % 4) * 8;
}

// Warm: the active lanes read their words with ld.global.cg, which leaves them in the L2 only.
// Timed: each active warp's window around one load of its words (after a first read of them when
// `level` is L1, which waits for its data). `stride` is 1 (spread) or 4 (one sub-partition).
__global__ void lines_kernel(const unsigned* p, int lines, int packed, int stride, int level,
                             int warm, int dummy, unsigned* sink, long long* out) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const bool timed = warp % stride == 0;
  const int slot = warp / stride;  // the warp's own lines and output
  const bool on = timed && (packed || lane < lines);
  const unsigned* a = word(p + size_t(slot) * 32 * LINE_WORDS, lane, lines, packed != 0);
  unsigned v = 0;
  if (warm) {
    if (on) asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
    if (v == 0xdeadbeefu) sink[1] = v;
    return;
  }
  if (level == L1 && on) {
    asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
    asm volatile("{ .reg .pred q; setp.lt.s32 q, %1, 0; @q st.volatile.global.u32 [%2], %0; }"
                 ::"r"(v), "r"(dummy), "l"(sink) : "memory");
  }
  __syncthreads();
  if (!timed) return;
  long long t0, t1;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0)::"memory");
  if (on) asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  asm volatile("{ .reg .pred q; setp.lt.s32 q, %1, 0; @q st.volatile.global.u32 [%2], %0; }"
               ::"r"(v), "r"(dummy), "l"(sink) : "memory");
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1)::"memory");
  if (lane == 0) out[slot] = t1 - t0;
  if (v == 0xdeadbeefu) sink[1] = v;
}

struct Rig {
  unsigned* p;
  size_t words;
  size_t next;  // first word of the next launch's lines, never read before
  unsigned* evict;
  unsigned* sink;
  long long* out;
};

// One row: the median over launches of the slowest timed warp, for N = 1 ... 32.
static int row(Rig& r, const char* name, Level level, int warps, int stride, bool packed) {
  printf("%-32s", name);
  for (int lines = 1; lines <= 32; lines *= 2) {
    std::vector<long long> v;
    for (int l = 0; l < LAUNCHES; ++l) {
      const size_t need = size_t(warps) * 32 * LINE_WORDS;
      if (r.next + need > r.words) {
        fprintf(stderr, "line-rate: out of fresh lines\n");
        return 1;
      }
      const unsigned* base = r.p + r.next;
      r.next += need;
      const int threads = 32 * warps * stride;
      if (level == L2) {
        lines_kernel<<<1, threads>>>(base, lines, packed, stride, level, 1, 0, r.sink, r.out);
        CHECK(cudaGetLastError());
      }
      lines_kernel<<<1, threads>>>(base, lines, packed, stride, level, 0, 0, r.sink, r.out);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      long long c[MAX_WARPS];
      CHECK(cudaMemcpy(c, r.out, warps * sizeof(long long), cudaMemcpyDeviceToHost));
      if (l > 0) v.push_back(*std::max_element(c, c + warps));
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
  printf("%s; cycles of the slowest timed warp's window (dummy closing), by lines a warp:\n",
         prop.name);
  printf("%-32s %7d %7d %7d %7d %7d %7d\n", "level, warps, placement, lanes", 1, 2, 4, 8, 16, 32);
  Rig r{};
  // Rows below: 3 levels x 7 (warps, placement) + 2 packed, 6 line counts, 10 launches, at most
  // 8 warps of 32 lines of 4 KiB each: at most 23 x 60 x 1 MiB.
  r.words = size_t(23) * 6 * LAUNCHES * MAX_WARPS * 32 * LINE_WORDS;
  CHECK(cudaMalloc(&r.p, r.words * 4));
  CHECK(cudaMemset(r.p, 0, r.words * 4));
  CHECK(cudaMalloc(&r.evict, size_t(256) << 20));
  CHECK(cudaMalloc(&r.out, MAX_WARPS * sizeof(long long) + 16));
  r.sink = reinterpret_cast<unsigned*>(r.out + MAX_WARPS);
  const struct { int warps, stride; const char* what; } shapes[] = {
      {1, 1, "1 warp"},
      {2, 4, "2 warps, one sub-partition"}, {4, 4, "4 warps, one sub-partition"},
      {8, 4, "8 warps, one sub-partition"},
      {2, 1, "2 warps, spread"}, {4, 1, "4 warps, spread"}, {8, 1, "8 warps, spread"},
  };
  const char* levels[] = {"DRAM", "L2", "L1"};
  for (int level = DRAM; level <= L1; ++level) {
    // Nothing of the buffer's initial fill stays in the L2 for the cold rows.
    CHECK(cudaMemset(r.evict, level + 1, size_t(256) << 20));
    for (const auto& s : shapes) {
      char name[64];
      snprintf(name, sizeof name, "%s, %s", levels[level], s.what);
      if (row(r, name, Level(level), s.warps, s.stride, false)) return 1;
    }
  }
  CHECK(cudaMemset(r.evict, 9, size_t(256) << 20));
  if (row(r, "DRAM, 1 warp, packed", DRAM, 1, 1, true)) return 1;
  if (row(r, "L2, 1 warp, packed", L2, 1, 1, true)) return 1;
  return 0;
}
