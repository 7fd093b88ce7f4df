// texture: texture-object fetches — 2D with linear filtering, and tex1Dfetch on linear memory.
// Inputs:  img: a w x h 2D texture of f32 (one channel) with filterMode linear, addressMode
//          clamp, unnormalized coordinates; lin: a 1D texture object over linear memory of n f32
//          (cudaResourceTypeLinear, point); w, h, n.  Any 2D launch covering w x h.
// Outputs: out[y*w + x] = tex2D(img, x + 0.25, y + 0.75) + tex1Dfetch(lin, (y*w + x) % n)
//          where tex2D is bilinear with 8-bit fixed-point weights (hardware filtering, CUDA
//          programming guide, "Linear Filtering": texel centres at integer + 0.5).
extern "C" __global__ void texture_sample(cudaTextureObject_t img, cudaTextureObject_t lin,
                                          float* out, int w, int h, int n) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    int i = y * w + x;
    float a = tex2D<float>(img, x + 0.25f, y + 0.75f);
    float b = tex1Dfetch<float>(lin, i % n);
    out[i] = a + b;
}

// texture_rgba8: a 4-channel u8 2D texture read as normalized floats (readMode
// cudaReadModeNormalizedFloat, point filtering, wrap addressing, normalized coordinates).
// Inputs:  img (w x h, uchar4), w, h.  Outputs: out[y*w + x] = dot(texel, (1, 2, 4, 8)) where
//          texel = tex2D(img, (x + 0.5)/w, (y + 0.5)/h) with channels in [0, 1] (= byte/255).
extern "C" __global__ void texture_rgba8(cudaTextureObject_t img, float* out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float4 t = tex2D<float4>(img, (x + 0.5f) / w, (y + 0.5f) / h);
    out[y * w + x] = t.x + 2.0f * t.y + 4.0f * t.z + 8.0f * t.w;
}
