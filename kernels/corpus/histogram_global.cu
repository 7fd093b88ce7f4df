// histogram_global: 256-bin byte histogram with global atomics (grid-stride loop, any launch).
// Inputs:  data[n] (u8); n.  hist[256] (u32) must be zeroed before the launch.
// Outputs: hist[v] += number of i < n with data[i] == v.
extern "C" __global__ void histogram_global(const unsigned char* data, unsigned int* hist, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&hist[data[i]], 1u);
}
