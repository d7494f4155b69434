// Reductions along one contiguous run of axes: sum, mean, max, min, 2-norm, 1-norm, argmax, argmin.
//
// The input is viewed as (outer, mid, inner) with the reduced axes collapsed into `mid`; the output
// has outer * inner elements. Thread/block mapping: one block per output element (a grid-stride
// loop over outputs when there are more outputs than blocks); the block's threads stride over the
// `mid` elements of that output, then fold their partial results with block_reduce_all (warp
// shuffles, then shared memory across warps):
//
//   output o = (i, j):   x[i, 0, j]  x[i, 1, j]  ...  x[i, mid-1, j]
//                        thread 0    thread 1         thread (mid-1) % blockDim
//
// The loop over outputs depends only on blockIdx, so every thread of a block takes the same
// number of trips and reaches the same barriers.
#include "block_reduce.cuh"

#define OP_SUM 0
#define OP_MEAN 1
#define OP_MAX 2
#define OP_MIN 3
#define OP_NORM2 4
#define OP_NORM1 5
#define OP_ARGMAX 6
#define OP_ARGMIN 7

__global__ void reduce_axis(const real_t* x, real_t* y, long long outer, long long mid, long long inner,
                            int op, int accumulate) {
    int red = (op == OP_MAX) ? RED_MAX : (op == OP_MIN ? RED_MIN : RED_SUM);
    for (long long o = blockIdx.x; o < outer * inner; o += gridDim.x) {
        long long i = o / inner, j = o % inner;
        const real_t* row = x + i * mid * inner + j;
        real_t acc = red_identity(red);
        for (long long k = threadIdx.x; k < mid; k += blockDim.x) {
            real_t v = row[k * inner];
            if (op == OP_NORM2) v = v * v;
            else if (op == OP_NORM1) v = fabs(v);
            acc = red_combine(red, acc, v);
        }
        acc = block_reduce_all(red, acc);
        if (threadIdx.x == 0) {
            if (op == OP_MEAN) acc = acc / (real_t)mid;
            else if (op == OP_NORM2) acc = sqrt(acc);
            y[o] = accumulate ? y[o] + acc : acc;
        }
    }
}

// argmax/argmin: (value, index) pairs; ties go to the smaller index, as numpy's.
__device__ __forceinline__ bool arg_better(int op, real_t v, long long i, real_t bv, long long bi) {
    if (v == bv) return i < bi;
    return op == OP_ARGMAX ? v > bv : v < bv;
}

__global__ void argreduce_axis(const real_t* x, real_t* y, long long outer, long long mid,
                               long long inner, int op) {
    __shared__ real_t part_v[32];
    __shared__ long long part_i[32];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = (blockDim.x + 31) / 32;
    for (long long o = blockIdx.x; o < outer * inner; o += gridDim.x) {
        long long i = o / inner, j = o % inner;
        const real_t* row = x + i * mid * inner + j;
        real_t bv = op == OP_ARGMAX ? -(real_t)INFINITY : (real_t)INFINITY;
        long long bi = mid;         // "no element yet": loses every tie
        for (long long k = threadIdx.x; k < mid; k += blockDim.x) {
            real_t v = row[k * inner];
            if (arg_better(op, v, k, bv, bi)) { bv = v; bi = k; }
        }
        for (int off = 16; off > 0; off >>= 1) {
            real_t ov = __shfl_down_sync(0xffffffffu, bv, off);
            long long oi = __shfl_down_sync(0xffffffffu, bi, off);
            if (arg_better(op, ov, oi, bv, bi)) { bv = ov; bi = oi; }
        }
        if (lane == 0) { part_v[warp] = bv; part_i[warp] = bi; }
        __syncthreads();
        if (warp == 0) {
            bv = lane < nwarps ? part_v[lane] : (op == OP_ARGMAX ? -(real_t)INFINITY : (real_t)INFINITY);
            bi = lane < nwarps ? part_i[lane] : mid;
            for (int off = 16; off > 0; off >>= 1) {
                real_t ov = __shfl_down_sync(0xffffffffu, bv, off);
                long long oi = __shfl_down_sync(0xffffffffu, bi, off);
                if (arg_better(op, ov, oi, bv, bi)) { bv = ov; bi = oi; }
            }
            if (lane == 0) y[o] = (real_t)(bi == mid ? 0 : bi);
        }
        __syncthreads();
    }
}
