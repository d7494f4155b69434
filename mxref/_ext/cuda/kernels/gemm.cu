// A tiled shared-memory GEMM written to be read: C = alpha * op(A) @ op(B) + beta * C, row-major,
// op(A) (M x K), op(B) (K x N), op = transpose when transA / transB.
//
// Thread/block mapping: a 2-D grid of TILE x TILE blocks covers C; thread (tx, ty) of block
// (bx, by) owns C[by * TILE + ty, bx * TILE + tx]. The classic three steps, repeated along K:
//
//        K ->                         N ->
//   M  [ A tile t ]  x  K  [ B tile t ]      1. every thread loads one element of the A tile and
//   |  (TILE x TILE)    |  (TILE x TILE)        one of the B tile into shared memory (zeros past
//                                               the edges), then __syncthreads;
//                                            2. every thread accumulates the dot product of its A
//                                               row and B column within the tiles;
//                                            3. __syncthreads before the tiles are overwritten.
//
// Each element of A and B is read from global memory once per tile instead of once per product,
// which is the whole point. Threads outside C still load and reach every barrier (no early exit).
#define TILE 16

__device__ __forceinline__ real_t load_a(const real_t* A, int M, int K, int transA, int i, int k) {
    if (i >= M || k >= K) return 0;
    return transA ? A[(long long)k * M + i] : A[(long long)i * K + k];
}

__device__ __forceinline__ real_t load_b(const real_t* B, int K, int N, int transB, int k, int j) {
    if (k >= K || j >= N) return 0;
    return transB ? B[(long long)j * K + k] : B[(long long)k * N + j];
}

__global__ void gemm_tiled(const real_t* A, const real_t* B, real_t* C, int M, int N, int K, int transA,
                           int transB, real_t alpha, real_t beta) {
    __shared__ real_t As[TILE][TILE];
    __shared__ real_t Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    real_t acc = 0;
    for (int t = 0; t < K; t += TILE) {
        As[ty][tx] = load_a(A, M, K, transA, row, t + tx);        // step 1
        Bs[ty][tx] = load_b(B, K, N, transB, t + ty, col);
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];   // step 2
        __syncthreads();                                          // step 3
    }
    if (row < M && col < N) {
        long long at = (long long)row * N + col;
        C[at] = beta == (real_t)0 ? alpha * acc : alpha * acc + beta * C[at];
    }
}

// y[r, c] += bias[c] for an (rows x cols) y: FullyConnected's bias, one thread per element.
__global__ void add_row_bias(real_t* y, const real_t* bias, long long rows, long long cols) {
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < rows * cols;
         e += (long long)gridDim.x * blockDim.x)
        y[e] += bias[e % cols];
}

// db[c] (+)= sum_r g[r, c]: FullyConnected's bias gradient; one thread per column, looping rows
// (consecutive threads read consecutive columns of a row: coalesced).
__global__ void sum_rows(const real_t* g, real_t* db, long long rows, long long cols, int accumulate) {
    for (long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x; c < cols;
         c += (long long)gridDim.x * blockDim.x) {
        real_t s = 0;
        for (long long r = 0; r < rows; ++r) s += g[r * cols + c];
        db[c] = accumulate ? db[c] + s : s;
    }
}
