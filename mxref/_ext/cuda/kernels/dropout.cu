// Dropout with a counter-based generator: Philox4x32-10 (Salmon et al., "Parallel random numbers:
// as easy as 1, 2, 3", SC'11). Element i's uniform number is a pure function of (key, i): no state
// per thread, any grid gives the same mask, and the key comes from the op's 'random' resource, so
// the masks are reproducible and ordered like every other use of that resource.
//
// Mapping: one thread per output element (grid-stride). The mask may be shared along some axes
// (`axes`): the output is viewed in 4-D and ms* are the mask's strides (0 along a shared axis), so
// elements that share a mask value draw the same counter.

#include "index4.cuh"

__device__ __forceinline__ unsigned philox_first(unsigned c0, unsigned c1, unsigned k0, unsigned k1) {
    unsigned c2 = 0, c3 = 0;
    for (int round = 0; round < 10; ++round) {
        unsigned hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        unsigned hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
        unsigned n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c0;
}

// y = x * mask, mask = [u >= p] / (1 - p), u in [0, 1) from the top 24 bits of Philox's output.
__global__ void dropout_forward(const real_t* x, real_t* y, real_t* mask, long long n, long long d1,
                                long long d2, long long d3, long long ms0, long long ms1, long long ms2,
                                long long ms3, real_t p, unsigned key0, unsigned key1) {
    real_t scale = (real_t)1 / ((real_t)1 - p);
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n;
         e += (long long)gridDim.x * blockDim.x) {
        unsigned long long m = (unsigned long long)strided4(e, d1, d2, d3, ms0, ms1, ms2, ms3);
        unsigned bits = philox_first((unsigned)m, (unsigned)(m >> 32), key0, key1);
        real_t u = (real_t)(bits >> 8) * (real_t)(1.0 / 16777216.0);
        real_t keep = u >= p ? scale : (real_t)0;
        mask[e] = keep;
        y[e] = x[e] * keep;
    }
}
