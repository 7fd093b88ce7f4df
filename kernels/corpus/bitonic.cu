// bitonic: sorts each segment of blockDim.x consecutive u32 keys ascending, in shared memory.
// Inputs:  data[n] (u32, sorted in place); n.  Launch: blockDim.x a power of two <= 1024;
//          block b sorts data[b*B .. min((b+1)*B, n)); missing elements are padded with
//          0xFFFFFFFF (and not written back).
// Outputs: data with each segment sorted ascending.
extern "C" __global__ void bitonic_sort(unsigned int* data, int n) {
    __shared__ unsigned int s[1024];
    unsigned int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? data[i] : 0xFFFFFFFFu;
    __syncthreads();
    for (unsigned int k = 2; k <= blockDim.x; k <<= 1) {
        for (unsigned int j = k >> 1; j > 0; j >>= 1) {
            unsigned int p = t ^ j;
            if (p > t) {
                unsigned int a = s[t], b = s[p];
                bool up = (t & k) == 0;
                if ((a > b) == up) {
                    s[t] = b;
                    s[p] = a;
                }
            }
            __syncthreads();
        }
    }
    if (i < n) data[i] = s[t];
}
