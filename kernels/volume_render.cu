// volume_render.cu — the ray caster of the paper's evaluation, instrumented with warpscope.
//
// Why this kernel: Kanda et al. (IPSJ 2011) evaluate their instrumentation on the CUDA SDK
// sample `volumeRender`; this is a faithful re-statement of its `d_render` kernel (same math, same
// order of float operations, same constants) so that the access pattern — and therefore the
// texture-cache behaviour the paper measures — is the SDK's. Differences from the SDK, and why:
//   * texture objects instead of texture references (references are gone from CUDA 12+);
//   * helper_math.h is not part of the toolkit, so the handful of vector helpers it provides are
//     restated below with the same expression order (nvcc contracts `a*b + c` into fma the same way);
//   * the early `return`s (pixel outside the image, ray missing the box) became guarded bodies,
//     because every thread must reach WS_KERNEL_END so the warp's record is flushed;
//   * the ray step `tstep` is a parameter rather than the constant 0.01f, so that a smaller study
//     geometry can keep the SDK's voxels per step; the host passes 0.01 at the paper's scale;
//   * every texture fetch is a WS_LOAD site: site 0 "volume sample" (tex3D), site 1 "transfer
//     function" (tex1D), with its coordinates computed before the probe (WS_READY) so that each
//     window times its fetch alone; under WS_MODE == WS_OFF the probes vanish and this is the bare
//     kernel.
//
// Host contract (study/src/render.rs writes it; the CPU reference study/src/reference.rs mirrors it):
//   d_output   imageW*imageH RGBA8 pixels (x fastest), cleared to 0 by the host before the launch
//              — like the SDK, pixels whose ray misses the volume are not written;
//   tstep      the ray step in the [-1,1] box (the SDK's constant 0.01f): a parameter so that a
//              smaller volume can keep the SDK's voxels per step (0.01 × 1024 / 2 = 5.12 voxels);
//   c_invViewMatrix  the upper 3 rows of the inverse view matrix, row-major;
//   volTex     3D texture, u8, cudaReadModeNormalizedFloat, linear filter, normalized coords, clamp;
//   tfTex      1D float4 texture (9 entries), element type, linear filter, normalized coords, clamp.

#include "warpscope.cuh"

typedef unsigned int uint;

struct float3x4 {
    float4 m[3];
};

// Inverse view matrix, set with cudaMemcpyToSymbol / write_symbol before the launch.
__constant__ float3x4 c_invViewMatrix;

struct Ray {
    float3 o;  // origin
    float3 d;  // direction
};

// The helper_math.h operations the SDK kernel uses, in the same expression order.
static __device__ __forceinline__ float dot3(float3 a, float3 b) {
    return a.x * b.x + a.y * b.y + a.z * b.z;
}
static __device__ __forceinline__ float dot4(float4 a, float4 b) {
    return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}
static __device__ __forceinline__ float3 normalize3(float3 v) {
    float invLen = rsqrtf(dot3(v, v));
    return make_float3(v.x * invLen, v.y * invLen, v.z * invLen);
}

// Transform a vector by the 3x4 matrix (rotation part only).
static __device__ __forceinline__ float3 mul(const float3x4& M, const float3& v) {
    float3 r;
    r.x = dot3(v, make_float3(M.m[0].x, M.m[0].y, M.m[0].z));
    r.y = dot3(v, make_float3(M.m[1].x, M.m[1].y, M.m[1].z));
    r.z = dot3(v, make_float3(M.m[2].x, M.m[2].y, M.m[2].z));
    return r;
}

// Transform a point by the 3x4 matrix (rotation and translation).
static __device__ __forceinline__ float4 mul(const float3x4& M, const float4& v) {
    float4 r;
    r.x = dot4(v, M.m[0]);
    r.y = dot4(v, M.m[1]);
    r.z = dot4(v, M.m[2]);
    r.w = 1.0f;
    return r;
}

// Slab test against the box: http://www.siggraph.org/education/materials/HyperGraph/raytrace/rtinter3.htm
static __device__ __forceinline__ int intersectBox(Ray r, float3 boxmin, float3 boxmax,
                                                   float* tnear, float* tfar) {
    // compute intersection of ray with all six bbox planes
    float3 invR = make_float3(1.0f / r.d.x, 1.0f / r.d.y, 1.0f / r.d.z);
    float3 tbot = make_float3(invR.x * (boxmin.x - r.o.x), invR.y * (boxmin.y - r.o.y),
                              invR.z * (boxmin.z - r.o.z));
    float3 ttop = make_float3(invR.x * (boxmax.x - r.o.x), invR.y * (boxmax.y - r.o.y),
                              invR.z * (boxmax.z - r.o.z));

    // re-order intersections to find smallest and largest on each axis
    float3 tmin = make_float3(fminf(ttop.x, tbot.x), fminf(ttop.y, tbot.y), fminf(ttop.z, tbot.z));
    float3 tmax = make_float3(fmaxf(ttop.x, tbot.x), fmaxf(ttop.y, tbot.y), fmaxf(ttop.z, tbot.z));

    // find the largest tmin and the smallest tmax (the SDK's expression, x repeated, kept as is)
    float largest_tmin = fmaxf(fmaxf(tmin.x, tmin.y), fmaxf(tmin.x, tmin.z));
    float smallest_tmax = fminf(fminf(tmax.x, tmax.y), fminf(tmax.x, tmax.z));

    *tnear = largest_tmin;
    *tfar = smallest_tmax;

    return smallest_tmax > largest_tmin;
}

static __device__ __forceinline__ uint rgbaFloatToInt(float4 rgba) {
    rgba.x = __saturatef(rgba.x);  // clamp to [0.0, 1.0]
    rgba.y = __saturatef(rgba.y);
    rgba.z = __saturatef(rgba.z);
    rgba.w = __saturatef(rgba.w);
    return (uint(rgba.w * 255) << 24) | (uint(rgba.z * 255) << 16) | (uint(rgba.y * 255) << 8) |
           uint(rgba.x * 255);
}

extern "C" __global__ void d_render(uint* d_output, uint imageW, uint imageH, float density,
                                    float brightness, float transferOffset, float transferScale,
                                    float tstep, cudaTextureObject_t volTex, cudaTextureObject_t tfTex,
                                    ws::Log log) {
    WS_KERNEL_BEGIN(log);

    const int maxSteps = 500;
    const float opacityThreshold = 0.95f;
    const float3 boxMin = make_float3(-1.0f, -1.0f, -1.0f);
    const float3 boxMax = make_float3(1.0f, 1.0f, 1.0f);

    uint x = blockIdx.x * blockDim.x + threadIdx.x;
    uint y = blockIdx.y * blockDim.y + threadIdx.y;

    // The SDK returns here for out-of-image pixels; a guarded body keeps every thread on the path
    // to WS_KERNEL_END.
    if ((x < imageW) && (y < imageH)) {
        float u = (x / (float)imageW) * 2.0f - 1.0f;
        float v = (y / (float)imageH) * 2.0f - 1.0f;

        // calculate eye ray in world space
        Ray eyeRay;
        float4 o = mul(c_invViewMatrix, make_float4(0.0f, 0.0f, 0.0f, 1.0f));
        eyeRay.o = make_float3(o.x, o.y, o.z);
        eyeRay.d = normalize3(make_float3(u, v, -2.0f));
        eyeRay.d = mul(c_invViewMatrix, eyeRay.d);

        // find intersection with box
        float tnear, tfar;
        int hit = intersectBox(eyeRay, boxMin, boxMax, &tnear, &tfar);

        if (hit) {
            if (tnear < 0.0f) tnear = 0.0f;  // clamp to near plane

            // march along ray from front to back, accumulating color
            float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            float t = tnear;
            float3 pos = make_float3(eyeRay.o.x + eyeRay.d.x * tnear, eyeRay.o.y + eyeRay.d.y * tnear,
                                     eyeRay.o.z + eyeRay.d.z * tnear);
            float3 step = make_float3(eyeRay.d.x * tstep, eyeRay.d.y * tstep, eyeRay.d.z * tstep);

            for (int i = 0; i < maxSteps; i++) {
                // read from 3D texture; remap position to [0, 1] coordinates. The coordinates are
                // computed before the probe (WS_READY) so that its window holds the fetch alone.
                const float u = pos.x * 0.5f + 0.5f, v = pos.y * 0.5f + 0.5f, w = pos.z * 0.5f + 0.5f;
                WS_READY(u);
                WS_READY(v);
                WS_READY(w);
                float sample = WS_LOAD(0, WS_TEXTURE, tex3D<float>(volTex, u, v, w));

                // lookup in transfer function texture; its coordinate waits for the volume sample,
                // which must happen before the probe opens, or the transfer function's window
                // would time the volume fetch
                const float tc = (sample - transferOffset) * transferScale;
                WS_READY(tc);
                float4 col = WS_LOAD(1, WS_TEXTURE, tex1D<float4>(tfTex, tc));
                col.w *= density;

                // pre-multiply alpha
                col.x *= col.w;
                col.y *= col.w;
                col.z *= col.w;
                // "over" operator for front-to-back blending: sum = sum + col * (1 - sum.w)
                float remain = 1.0f - sum.w;
                sum = make_float4(sum.x + col.x * remain, sum.y + col.y * remain,
                                  sum.z + col.z * remain, sum.w + col.w * remain);

                // exit early if opaque
                if (sum.w > opacityThreshold) break;

                t += tstep;

                if (t > tfar) break;

                pos = make_float3(pos.x + step.x, pos.y + step.y, pos.z + step.z);
            }

            sum = make_float4(sum.x * brightness, sum.y * brightness, sum.z * brightness,
                              sum.w * brightness);

            // write output color
            d_output[y * imageW + x] = rgbaFloatToInt(sum);
        }
    }

    WS_KERNEL_END(log);
}
