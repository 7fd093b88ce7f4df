// scan: per-block prefix sums in shared memory, two algorithms.
// Both: inputs in[n] (u32), n; blockDim.x a power of two <= 1024; block b handles elements
// [b*blockDim.x, (b+1)*blockDim.x), elements beyond n count as 0 and are not written.

// scan_hillis_steele: out[i] = in[b*B] + ... + in[i] (inclusive, within the block; mod 2^32).
extern "C" __global__ void scan_hillis_steele(const unsigned int* in, unsigned int* out, int n) {
    __shared__ unsigned int buf[2][1024];
    unsigned int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    int src = 0;
    buf[0][t] = i < n ? in[i] : 0u;
    __syncthreads();
    for (unsigned int d = 1; d < blockDim.x; d <<= 1) {
        unsigned int v = buf[src][t];
        if (t >= d) v += buf[src][t - d];
        buf[1 - src][t] = v;
        src = 1 - src;
        __syncthreads();
    }
    if (i < n) out[i] = buf[src][t];
}

// scan_blelloch: out[i] = in[b*B] + ... + in[i-1] (exclusive, within the block; out of the first
// element of each block is 0).  Work-efficient up-sweep / down-sweep.
extern "C" __global__ void scan_blelloch(const unsigned int* in, unsigned int* out, int n) {
    __shared__ unsigned int s[1024];
    unsigned int t = threadIdx.x;
    unsigned int len = blockDim.x;
    int i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? in[i] : 0u;
    __syncthreads();
    for (unsigned int d = 1; d < len; d <<= 1) {
        unsigned int k = (t + 1) * d * 2 - 1;
        if (k < len) s[k] += s[k - d];
        __syncthreads();
    }
    if (t == 0) s[len - 1] = 0;
    __syncthreads();
    for (unsigned int d = len / 2; d > 0; d >>= 1) {
        unsigned int k = (t + 1) * d * 2 - 1;
        if (k < len) {
            unsigned int left = s[k - d];
            s[k - d] = s[k];
            s[k] += left;
        }
        __syncthreads();
    }
    if (i < n) out[i] = s[t];
}
