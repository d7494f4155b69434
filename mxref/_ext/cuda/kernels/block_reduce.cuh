// Block-wide reductions shared by reduce.cu and softmax.cu.
//
// Two levels, the standard shape of a CUDA reduction:
//   1. each warp folds its 32 values with __shfl_down_sync (offsets 16, 8, 4, 2, 1): lane 0 ends
//      up with the warp's result, no shared memory and no barrier needed;
//   2. lane 0 of every warp writes its result to shared memory, a barrier, and warp 0 folds those
//      (at most 32 warps in a 1024-thread block) the same way.
// Every thread of the block must call these (they contain __syncthreads); blockDim.x must be a
// multiple of 32. The result is valid in thread 0; block_reduce_all broadcasts it to every thread.
#pragma once

#define RED_SUM 0
#define RED_MAX 1
#define RED_MIN 2

__device__ __forceinline__ real_t red_identity(int op) {
    return op == RED_SUM ? (real_t)0 : (op == RED_MAX ? -(real_t)INFINITY : (real_t)INFINITY);
}

__device__ __forceinline__ real_t red_combine(int op, real_t a, real_t b) {
    if (op == RED_SUM) return a + b;
    if (op == RED_MAX) return a > b ? a : b;
    return a < b ? a : b;
}

__device__ __forceinline__ real_t warp_reduce(int op, real_t v) {
    for (int offset = 16; offset > 0; offset >>= 1)
        v = red_combine(op, v, __shfl_down_sync(0xffffffffu, v, offset));
    return v;
}

__device__ real_t block_reduce_all(int op, real_t v) {
    __shared__ real_t partial[32];
    __shared__ real_t result;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = (blockDim.x + 31) / 32;
    v = warp_reduce(op, v);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? partial[lane] : red_identity(op);
        v = warp_reduce(op, v);
        if (lane == 0) result = v;
    }
    __syncthreads();
    v = result;
    __syncthreads();       // `partial` and `result` are reused by the next call
    return v;
}
