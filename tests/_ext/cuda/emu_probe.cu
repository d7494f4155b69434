// Kernels that probe the CUDA emulator's semantics (tests/_ext/cuda/test_emulator.py); real_t is
// given by the module's options. They also compile with nvcc (tests/_ext/cuda/test_nvcc.py).

// Each block reverses its slice through shared memory: correct only if the barrier holds every
// thread until all have written.
__global__ void reverse_block(const real_t* x, real_t* y, int n) {
    __shared__ real_t tile[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : (real_t)0;
    __syncthreads();
    int j = blockIdx.x * blockDim.x + (blockDim.x - 1 - threadIdx.x);
    if (j < n) y[j] = tile[threadIdx.x];
}

// Histogram by atomics: many threads of many blocks hit the same bins.
__global__ void histogram(const int* keys, int* bins, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&bins[keys[i]], 1);
}

__global__ void atomic_sum(const real_t* x, real_t* total, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(total, x[i]);
}

// One warp: out[0] = sum by shfl_down, out[1] = sum by shfl_xor (every lane), out[2 + lane] =
// inclusive prefix sum by shfl_up, out[34 + lane] = lane 5's value by shfl.
__global__ void warp_ops(const real_t* x, real_t* out) {
    int lane = threadIdx.x;
    real_t v = x[lane], s = v, a = v, scan = v;
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
    for (int o = 1; o < 32; o <<= 1) {
        real_t t = __shfl_up_sync(0xffffffffu, scan, o);
        if (lane >= o) scan += t;
    }
    real_t b = __shfl_sync(0xffffffffu, v, 5);
    if (lane == 0) out[0] = s;
    if (lane == 31) out[1] = a;
    out[2 + lane] = scan;
    out[34 + lane] = b;
}

// Votes: flags[w] = ballot of (x > 0) in warp w; all/any in out[2w], out[2w + 1].
__global__ void votes(const real_t* x, unsigned* flags, int* out) {
    int p = x[threadIdx.x] > 0;
    unsigned ballot = __ballot_sync(0xffffffffu, p);
    int all = __all_sync(0xffffffffu, p), any = __any_sync(0xffffffffu, p);
    int w = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) { flags[w] = ballot; out[2 * w] = all; out[2 * w + 1] = any; }
}

// Where am I: a 3-D grid of 3-D blocks writes its coordinates.
__global__ void coords(int* out) {
    int b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    int t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    int i = b * blockDim.x * blockDim.y * blockDim.z + t;
    out[4 * i] = blockIdx.x + 10 * blockIdx.y + 100 * blockIdx.z;
    out[4 * i + 1] = threadIdx.x + 10 * threadIdx.y + 100 * threadIdx.z;
    out[4 * i + 2] = blockDim.x * blockDim.y * blockDim.z;
    out[4 * i + 3] = gridDim.x * gridDim.y * gridDim.z;
}

// Bugs the emulator must catch.
__global__ void write_past_end(real_t* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = 1;          // no `if (i < n)`: the last block writes past the end
}

__global__ void write_before_start(real_t* y, int n) {
    if (threadIdx.x == 0) y[-1] = 1;
}

__global__ void exit_before_barrier(real_t* y, int n) {
    int i = threadIdx.x;
    if (i >= n) return;          // the classic bug: early exit, then a barrier
    __syncthreads();
    y[i] = 2;
}

__global__ void two_barriers(real_t* y) {
    if (threadIdx.x % 2) {
        __syncthreads();
    } else {
        __syncthreads();
    }
    y[threadIdx.x] = 1;
}

__global__ void exit_before_shuffle(const real_t* x, real_t* y, int n) {
    int i = threadIdx.x;
    if (i >= n) return;
    real_t v = __shfl_down_sync(0xffffffffu, x[i], 1);
    y[i] = v;
}

// In place: x and y are the same buffer.
__global__ void double_inplace(const real_t* x, real_t* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2 * x[i];
}
