// A 256-bin histogram with global atomics, instrumented with the warpscope probe header:
// the load of each input word is a timed site. Run it with
//   warpscope launch examples/histogram/histogram.toml --backend emu --mode fence
#include "warpscope.cuh"

extern "C" __global__ void histogram(const unsigned int* input, unsigned int* hist, int n, ws::Log log) {
    WS_KERNEL_BEGIN(log);
    int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned int v = WS_LOAD(0, WS_GLOBAL, input[i]);
        atomicAdd(&hist[v & 255u], 1u);
    }
    WS_KERNEL_END(log);
}
