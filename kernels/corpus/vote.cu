// vote: warp votes and bit counts.
// Inputs:  in[n] (i32); n.  blockDim.x a multiple of 32; threads i >= n vote as if in[i] = 0.
// Outputs, per global warp w (lanes i = 32w .. 32w+31):
//   ballot[w] = bit l set iff in[32w + l] > 0;
//   count[w]  = popc(ballot[w]);
//   flags[w]  = (all lanes > 0 ? 1 : 0) | (any lane > 0 ? 2 : 0) | (in[32w] is odd ? 4 : 0 from
//               __shfl_sync broadcast of lane 0's value, &1).
extern "C" __global__ void vote(const int* in, unsigned int* ballot, unsigned int* count,
                                unsigned int* flags, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? in[i] : 0;
    bool p = v > 0;
    unsigned int b = __ballot_sync(0xFFFFFFFFu, p);
    int all = __all_sync(0xFFFFFFFFu, p);
    int any = __any_sync(0xFFFFFFFFu, p);
    int first = __shfl_sync(0xFFFFFFFFu, v, 0);
    if ((threadIdx.x & 31) == 0) {
        int w = i >> 5;
        ballot[w] = b;
        count[w] = __popc(b);
        flags[w] = (all ? 1u : 0u) | (any ? 2u : 0u) | ((first & 1) ? 4u : 0u);
    }
}
