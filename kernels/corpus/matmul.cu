// matmul: C = A * B with 16x16 shared-memory tiles.
// Inputs:  A[M][K], B[K][N] (f32, row major); M, N, K.  Launch: block (16, 16),
//          grid (ceil(N/16), ceil(M/16)).
// Outputs: C[M][N], C[r][c] = sum_k A[r][k]*B[k][c], accumulated in k order 0..K-1 in a float
//          starting at 0 (products rounded then added: no FMA contraction is guaranteed, so compare
//          with a tolerance, or with integer-valued inputs exactly).
#define T 16
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    int row = blockIdx.y * T + threadIdx.y;
    int col = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int t0 = 0; t0 < K; t0 += T) {
        int ak = t0 + threadIdx.x;
        int bk = t0 + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ak < K) ? A[row * K + ak] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (bk < K && col < N) ? B[bk * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < T; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
