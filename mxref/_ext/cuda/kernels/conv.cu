// Convolution's helpers around the tiled GEMM: im2col / col2im for one image (2-D), the bias, and
// the bias gradient.
//
// im2col turns a batch (N, C, H, W) into columns (C * KH * KW, N * OH * OW): row r = (c, kh, kw),
// column q = (n, oh, ow) holds x[n, c, oh * SH + kh * DH - PH, ow * SW + kw * DW - PW] (0 in the
// padding), so the convolution of the whole batch is one GEMM W (F, C*KH*KW) @ cols, giving
// (F, N * OH * OW), which nchw_from_fns puts back in (N, F, OH * OW) order. Mapping: one thread per
// element of cols (grid-stride); consecutive threads take consecutive columns, i.e. neighbouring
// output pixels, whose inputs are neighbours too (coalesced for stride 1).
//
// col2im is its adjoint: dx[c, h, w] = sum of the cols entries that im2col copied from (c, h, w).
// Mapping: one thread per input pixel, gathering over (kh, kw): no two threads write one pixel, so
// no atomics are needed.
#include "block_reduce.cuh"

__global__ void im2col2d(const real_t* x, real_t* cols, int N, int C, int H, int W, int KH, int KW, int SH,
                         int SW, int PH, int PW, int DH, int DW, int OH, int OW) {
    long long total = (long long)C * KH * KW * N * OH * OW;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        int ow = e % OW;
        long long r = e / OW;
        int oh = r % OH; r /= OH;
        int n = r % N; r /= N;
        int kw = r % KW; r /= KW;
        int kh = r % KH;
        int c = r / KH;
        int ih = oh * SH + kh * DH - PH, iw = ow * SW + kw * DW - PW;
        cols[e] = (ih >= 0 && ih < H && iw >= 0 && iw < W)
                      ? x[(((long long)n * C + c) * H + ih) * W + iw] : (real_t)0;
    }
}

__global__ void col2im2d(const real_t* cols, real_t* dx, int N, int C, int H, int W, int KH, int KW, int SH,
                         int SW, int PH, int PW, int DH, int DW, int OH, int OW, int accumulate) {
    long long total = (long long)N * C * H * W;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        int w = e % W;
        int h = (e / W) % H;
        int c = (e / ((long long)W * H)) % C;
        int n = e / ((long long)W * H * C);
        real_t s = 0;
        for (int kh = 0; kh < KH; ++kh) {
            int th = h + PH - kh * DH;
            if (th < 0 || th % SH) continue;
            int oh = th / SH;
            if (oh >= OH) continue;
            for (int kw = 0; kw < KW; ++kw) {
                int tw = w + PW - kw * DW;
                if (tw < 0 || tw % SW) continue;
                int ow = tw / SW;
                if (ow >= OW) continue;
                s += cols[((((long long)c * KH + kh) * KW + kw) * N + n) * OH * OW + (long long)oh * OW + ow];
            }
        }
        dx[e] = accumulate ? dx[e] + s : s;
    }
}

// y[n, f, s] (+)= t[f, n, s] (+ bias[f]): the GEMM's (F, N*S) result in NCHW order; one thread per
// element of y. `bias` may be null.
__global__ void nchw_from_fns(const real_t* t, const real_t* bias, real_t* y, int N, int F, long long S,
                              int accumulate) {
    long long total = (long long)N * F * S;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        long long s = e % S, f = (e / S) % F, n = e / (S * F);
        real_t v = t[(f * N + n) * S + s] + (bias ? bias[f] : (real_t)0);
        y[e] = accumulate ? y[e] + v : v;
    }
}

// t[f, n, s] = g[n, f, s]: the head gradient in the GEMM's (F, N*S) order; one thread per element.
__global__ void fns_from_nchw(const real_t* g, real_t* t, int N, int F, long long S) {
    long long total = (long long)N * F * S;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        long long s = e % S, f = (e / S) % F, n = e / (S * F);
        t[(f * N + n) * S + s] = g[e];
    }
}

// db[f] (+)= sum_{n, s} g[n, f, s]: one block per channel f, its threads striding over (n, s),
// then block_reduce_all (warp shuffles + shared memory).
__global__ void channel_sum(const real_t* g, real_t* db, int N, int F, long long S, int accumulate) {
    for (int f = blockIdx.x; f < F; f += gridDim.x) {
        real_t acc = 0;
        for (long long e = threadIdx.x; e < (long long)N * S; e += blockDim.x) {
            long long n = e / S, s = e % S;
            acc += g[(n * F + f) * S + s];
        }
        acc = block_reduce_all(RED_SUM, acc);
        if (threadIdx.x == 0) db[f] = accumulate ? db[f] + acc : acc;
    }
}
