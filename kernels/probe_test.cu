// probe_test.cu — kernels that exercise the warpscope probe header in every mode.
//
// Why: the SASS placement tests (kernels/tests/sass.rs) and the emulator tests need timed loads of
// every region in differently shaped code: a lone load, several independent loads whose latencies
// the scheduler would like to overlap, vector loads, texture fetches, and a divergent loop. Each
// kernel's output is a function of its inputs only (the probes must not change it), so the
// emulator tests can compare every mode's output with a CPU reference.
//
// Sites are numbered per kernel from 0; WS_GLOBAL sites are writable memory, the others read-only.
#include "warpscope.cuh"

// out[i] = 3*p[i] + 1 for i < n.  One global site (0).
extern "C" __global__ void probe_global(const float* p, float* out, int n, ws::Log log) {
    WS_KERNEL_BEGIN(log);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = WS_LOAD(0, WS_GLOBAL, p[i]);
        out[i] = 3.0f * x + 1.0f;
    }
    WS_KERNEL_END(log);
}

// out[i] = a[i] + 2*b[i] + 4*c[i] for i < n.  Three independent global sites (0, 1, 2) whose loads
// ptxas would overlap if it could: the case where the paper's plain dummy loses its order.
extern "C" __global__ void probe_multi(const float* a, const float* b, const float* c, float* out,
                                       int n, ws::Log log) {
    WS_KERNEL_BEGIN(log);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = WS_LOAD(0, WS_GLOBAL, a[i]);
        float y = WS_LOAD(1, WS_GLOBAL, b[i]);
        float z = WS_LOAD(2, WS_GLOBAL, c[i]);
        out[i] = x + 2.0f * y + 4.0f * z;
    }
    WS_KERNEL_END(log);
}

// out[y*w + x] = tex2D(tex, x+0.5, y+0.5).x * scale[x] (point sampling in the test setup) for a
// w*h image.  Site 0 texture (tex object), site 1 global.
extern "C" __global__ void probe_texture(cudaTextureObject_t tex, const float* scale, float* out,
                                         int w, int h, ws::Log log) {
    WS_KERNEL_BEGIN(log);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        float4 t = WS_LOAD(0, WS_TEXTURE, tex2D<float4>(tex, x + 0.5f, y + 0.5f));
        float s = WS_LOAD(1, WS_GLOBAL, scale[x]);
        out[y * w + x] = t.x * s + t.y;
    }
    WS_KERNEL_END(log);
}

// out[i] = q[i].x*q[i].y + q[i].z - q[i].w + c[i] + (float)u[i] + tex1Dfetch(t, i) for i < n.
// Sites: 0 global float4, 1 read-only (__ldg) float, 2 global uchar, 3 texture (linear memory).
extern "C" __global__ void probe_vector(const float4* q, const float* __restrict__ c,
                                        const unsigned char* u, cudaTextureObject_t t, float* out,
                                        int n, ws::Log log) {
    WS_KERNEL_BEGIN(log);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float4 v = WS_LOAD(0, WS_GLOBAL, q[i]);
        float r = WS_LOAD(1, WS_READONLY, __ldg(&c[i]));
        unsigned char b = WS_LOAD(2, WS_GLOBAL, u[i]);
        float f = WS_LOAD(3, WS_TEXTURE, tex1Dfetch<float>(t, i));
        out[i] = v.x * v.y + v.z - v.w + r + (float)b + f;
    }
    WS_KERNEL_END(log);
}

// A ray-marching-like divergent loop: thread i takes steps[i] steps (rays end at different
// times), each step fetching vol[(i*7 + k*13) % m] through a texture (site 0) and accumulating
// front-to-back with a constant opacity; one global load of steps[i] (site 1).
// out[i] = sum_k (1-alpha)^k * alpha * vol[(i*7 + k*13) % m], alpha = 0.25.
extern "C" __global__ void probe_divergent(cudaTextureObject_t vol, const int* steps, float* out,
                                           int m, int n, ws::Log log) {
    WS_KERNEL_BEGIN(log);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int s = WS_LOAD(1, WS_GLOBAL, steps[i]);
        float acc = 0.0f;
        float trans = 1.0f;
        for (int k = 0; k < s; ++k) {
            float v = WS_LOAD(0, WS_TEXTURE, tex1Dfetch<float>(vol, (i * 7 + k * 13) % m));
            acc += trans * 0.25f * v;
            trans *= 0.75f;
        }
        out[i] = acc;
    }
    WS_KERNEL_END(log);
}

// Dependent arithmetic between loads: out[i] = sqrt(|a[i]|) * b[j] with j = (int)(a[i]) mod n
// (a data-dependent address, i.e. a pointer chase of length two). Sites 0 and 1 global.
extern "C" __global__ void probe_chase(const float* a, const float* b, float* out, int n,
                                       ws::Log log) {
    WS_KERNEL_BEGIN(log);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = WS_LOAD(0, WS_GLOBAL, a[i]);
        int j = ((int)fabsf(x)) % n;
        float y = WS_LOAD(1, WS_GLOBAL, b[j]);
        out[i] = sqrtf(fabsf(x)) * y;
    }
    WS_KERNEL_END(log);
}
