// ldg: read-only loads through the non-coherent cache (__ldg, ld.global.nc).
// Inputs:  x[n], y[n] (f32); a (f32); n.  Any launch.
// Outputs: out[i] = a * x[i] + y[i] (rounded once if the compiler contracts to FMA — nvcc does at
//          -O3 — so compare with fmaf(a, x[i], y[i])).
extern "C" __global__ void saxpy_ldg(const float* __restrict__ x, const float* __restrict__ y,
                                     float* out, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * __ldg(&x[i]) + __ldg(&y[i]);
}

// gather_ldg: out[i] = table[idx[i] % m] (u32), all reads via __ldg.  Inputs idx[n], table[m].
extern "C" __global__ void gather_ldg(const unsigned int* __restrict__ idx,
                                      const unsigned int* __restrict__ table, unsigned int* out,
                                      int m, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __ldg(&table[__ldg(&idx[i]) % (unsigned int)m]);
}
