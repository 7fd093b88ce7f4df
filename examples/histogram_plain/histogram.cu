// The histogram example as someone else wrote it: no warpscope header, no macros, no log
// parameter. warpscope puts the probes into its PTX:
//   warpscope instrument examples/histogram_plain/histogram.cu --out hist.ws.ptx
//   warpscope launch examples/histogram_plain/histogram.toml --backend emu --instrument auto
extern "C" __global__ void histogram(const unsigned int* input, unsigned int* hist, int n) {
    int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned int v = input[i];
        atomicAdd(&hist[v & 255u], 1u);
    }
}
