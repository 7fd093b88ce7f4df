// histogram_shared: 256-bin byte histogram privatised per block in shared memory (shared
// atomics), merged into global memory with one atomicAdd per bin and block.
// Inputs:  data[n] (u8); n.  hist[256] (u32) zeroed before the launch.  Any block size.
// Outputs: hist[v] += number of i < n with data[i] == v.
extern "C" __global__ void histogram_shared(const unsigned char* data, unsigned int* hist, int n) {
    __shared__ unsigned int local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (local[b] != 0) atomicAdd(&hist[b], local[b]);
}
