// fastmath: fast-math intrinsics, which compile to PTX .approx instructions (ex2.approx,
// sin.approx, cos.approx, rsqrt.approx, lg2.approx, div.approx/full).
// Inputs:  x[n] (f32, finite); n.  Any launch.
// Outputs: out[5*i + k] (f32), with v = x[i]:
//   0: __expf(v)           1: __sinf(v)           2: __cosf(v)
//   3: rsqrtf(fabsf(v) + 1) 4: __logf(fabsf(v) + 1) + __fdividef(v, 3.0f)
// Compare within the PTX ISA's documented error of each .approx op (see the README).
extern "C" __global__ void fastmath(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    float* o = out + 5 * i;
    o[0] = __expf(v);
    o[1] = __sinf(v);
    o[2] = __cosf(v);
    o[3] = rsqrtf(fabsf(v) + 1.0f);
    o[4] = __logf(fabsf(v) + 1.0f) + __fdividef(v, 3.0f);
}
