// fp16: half-precision arithmetic (cuda_fp16.h): scalar and paired.
#include <cuda_fp16.h>

// half_axpy: out[i] = __hfma(a, x[i], y[i]) with a = __float2half(alpha) (round to nearest even);
// i.e. one f16 fused multiply-add, rounded once to f16.  Inputs x[n], y[n] (f16 bits as u16), alpha
// (f32), n.  Any launch.
extern "C" __global__ void half_axpy(const __half* x, const __half* y, __half* out, float alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __hfma(__float2half(alpha), x[i], y[i]);
}

// half2_ops: on pairs p = x2[i], q = y2[i] (each two f16):
//   out2[i] = __hmul2(__hadd2(p, q), __hsub2(p, q))  (each op rounded to f16),
//   outf[i] = __low2float(out2[i]) + __high2float(out2[i])  (f32 sum of the two halves).
// Inputs x2[n], y2[n] (half2 = 2 x u16), n.  Any launch.
extern "C" __global__ void half2_ops(const __half2* x2, const __half2* y2, __half2* out2, float* outf,
                                     int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __half2 p = x2[i], q = y2[i];
        __half2 r = __hmul2(__hadd2(p, q), __hsub2(p, q));
        out2[i] = r;
        outf[i] = __low2float(r) + __high2float(r);
    }
}
