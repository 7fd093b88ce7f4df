// Roofline microbenchmarks: measured ceilings on the same backend as the
// study. Contract (also in README.md):
//   roof_fma(out: *f32, iters: i32, m: f32, c: f32): 8 independent chains a ← fmaf(a, m, c) per
//     thread, `iters` steps each (16·iters flops per thread), reduced and stored: out[i] = Σ chains.
//     m and c are arguments (not literals) so the PTX keeps them in registers: literals would be
//     re-materialized by a mov inside the loop, which only ptxas removes.
//   roof_read(a: *f32, out: *f32, n: i32): grid-stride sum of a[0..n); out[i] written only when the
//     sum equals -1 (never for non-negative inputs), so the loads stay but no bytes are written.
//   roof_write(a: *f32, v: f32, n: i32): a[j] = v, grid-stride.
//   roof_copy(a: *f32, b: *f32, n: i32): b[j] = a[j], grid-stride.
//   roof_triad(a: *f32, b: *f32, c: *f32, s: f32, n: i32): a[j] = b[j] + s·c[j] (STREAM triad).
//   roof_sweep(in: *f32, out: *f32, n: i32, fmas: i32, m: f32, c: f32): per element x = in[j],
//     four chains x_k = f^fmas(x + k), f(v) = fmaf(v, m, c), k = 0..3, out[j] = (x0+x1)+(x2+x3):
//     4 bytes loaded, N = 8·fmas + 6 flops (3 adds to seed the chains, 3 to combine them),
//     4 bytes stored → I = N/8.
// i = blockIdx.x·blockDim.x + threadIdx.x; grid-stride loops step by gridDim.x·blockDim.x.

extern "C" __global__ void roof_fma(float *out, int iters, float m, float c) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = (float)threadIdx.x * 1e-3f;
    float a0 = x, a1 = x + 1.f, a2 = x + 2.f, a3 = x + 3.f;
    float a4 = x + 4.f, a5 = x + 5.f, a6 = x + 6.f, a7 = x + 7.f;
    for (int k = 0; k < iters; ++k) {
        a0 = fmaf(a0, m, c);
        a1 = fmaf(a1, m, c);
        a2 = fmaf(a2, m, c);
        a3 = fmaf(a3, m, c);
        a4 = fmaf(a4, m, c);
        a5 = fmaf(a5, m, c);
        a6 = fmaf(a6, m, c);
        a7 = fmaf(a7, m, c);
    }
    out[i] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
}

extern "C" __global__ void roof_read(const float *a, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = gridDim.x * blockDim.x;
    float s = 0.f;
    for (int j = i; j < n; j += stride) {
        s += a[j];
    }
    if (s == -1.f) {
        out[i] = s;
    }
}

extern "C" __global__ void roof_write(float *a, float v, int n) {
    int stride = gridDim.x * blockDim.x;
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride) {
        a[j] = v;
    }
}

extern "C" __global__ void roof_copy(const float *a, float *b, int n) {
    int stride = gridDim.x * blockDim.x;
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride) {
        b[j] = a[j];
    }
}

extern "C" __global__ void roof_triad(float *a, const float *b, const float *c, float s, int n) {
    int stride = gridDim.x * blockDim.x;
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride) {
        a[j] = b[j] + s * c[j];
    }
}

extern "C" __global__ void roof_sweep(const float *in, float *out, int n, int fmas, float m, float c) {
    int stride = gridDim.x * blockDim.x;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    // Software pipelining: the next element's load is issued before this element's arithmetic,
    // so the load latency hides behind it, and four independent chains hide the FMA latency (as a
    // tuned kernel would): compute-bound points can then reach the compute roof.
    float x = j < n ? in[j] : 0.f;
    for (; j < n; j += stride) {
        int jn = j + stride;
        float next = jn < n ? in[jn] : 0.f;
        float x0 = x, x1 = x + 1.f, x2 = x + 2.f, x3 = x + 3.f;
        for (int k = 0; k < fmas; ++k) {
            x0 = fmaf(x0, m, c);
            x1 = fmaf(x1, m, c);
            x2 = fmaf(x2, m, c);
            x3 = fmaf(x3, m, c);
        }
        out[j] = (x0 + x1) + (x2 + x3);
        x = next;
    }
}
