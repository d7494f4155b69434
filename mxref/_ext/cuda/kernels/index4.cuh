// Strided 4-D indexing shared by the broadcast and dropout kernels: a flat index i of a
// (d0, d1, d2, d3) array (d0 implied), split into its coordinates and dotted with strides s0..s3.
#pragma once

__device__ __forceinline__ long long strided4(long long i, long long d1, long long d2, long long d3,
                                              long long s0, long long s1, long long s2, long long s3) {
    long long c3 = i % d3;
    i /= d3;
    long long c2 = i % d2;
    i /= d2;
    return (i / d1) * s0 + (i % d1) * s1 + c2 * s2 + c3 * s3;
}
