// reduce_shared: per-block sum with a shared-memory tree (interleaved halving, sequential addressing).
// Inputs:  in[n] (u32); n.  Launch: blockDim.x a power of two <= 1024, any grid.
// Outputs: partial[blockIdx.x] = sum of in[i] (mod 2^32) over i = blockIdx.x*blockDim.x*2 + t and
//          that + blockDim.x, t < blockDim.x, i < n (each block reduces 2*blockDim.x elements).
extern "C" __global__ void reduce_shared(const unsigned int* in, unsigned int* partial, int n) {
    __shared__ unsigned int s[1024];
    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x * 2 + t;
    unsigned int v = 0;
    if (i < (unsigned int)n) v = in[i];
    if (i + blockDim.x < (unsigned int)n) v += in[i + blockDim.x];
    s[t] = v;
    __syncthreads();
    for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = s[0];
}
