// transpose: tiled matrix transpose through a padded 32x33 shared tile (no bank conflicts).
// Inputs:  in[height][width] (f32, row major); width; height.  Launch: block (32, 8),
//          grid (ceil(width/32), ceil(height/32)).
// Outputs: out[width][height] with out[x][y] = in[y][x].
#define TILE 32
#define ROWS 8
extern "C" __global__ void transpose(const float* in, float* out, int width, int height) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < height && y + j < width) out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
