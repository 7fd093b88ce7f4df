// reduce_shuffle: grid-wide sum with warp shuffles; one atomicAdd per warp.
// Inputs:  in[n] (i32); n.  total[0] must be zeroed before the launch.  blockDim.x a multiple of
//          32 (every lane of a warp takes part in the shuffles).
// Outputs: total[0] = sum of in[0..n) (mod 2^32, two's complement) — grid-stride loop, so any grid.
extern "C" __global__ void reduce_shuffle(const int* in, int* total, int n) {
    int sum = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        sum += in[i];
    unsigned int mask = __activemask();
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(mask, sum, offset);
    if ((threadIdx.x & 31) == 0) atomicAdd(total, sum);
}
