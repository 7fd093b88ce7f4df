// A two-pass sum of n unsigned ints, as CUDA programs write it: pass 1 leaves one partial sum
// per block; pass 2 sums the partials with one block, in place (the same buffer is both its
// output and its input). Sums wrap mod 2^32, so a CPU check is exact.
#define THREADS 256

// Sums a block's values in shared memory; thread 0 gets the total.
__device__ unsigned block_total(unsigned v) {
    __shared__ unsigned s[THREADS];
    // Within a warp: shuffles (warpSize is what nvcc turns into WARP_SZ).
    for (int o = warpSize / 2; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    if (lane == 0) s[warp] = v;
    __syncthreads();
    unsigned t = 0;
    if (threadIdx.x == 0)
        for (int w = 0; w < (int)(blockDim.x / warpSize); ++w) t += s[w];
    return t;
}

extern "C" __global__ void block_sums(const unsigned* in, unsigned* partial, int n) {
    unsigned v = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        v += in[i];
    unsigned t = block_total(v);
    if (threadIdx.x == 0) partial[blockIdx.x] = t;
}

// One block: out[0] = in[0] + ... + in[n-1]; `out` may be `in` (the spec passes one buffer twice).
extern "C" __global__ void sum_in_place(unsigned* out, const unsigned* in, int n) {
    unsigned v = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) v += in[i];
    unsigned t = block_total(v);
    if (threadIdx.x == 0) out[0] = t;
}
