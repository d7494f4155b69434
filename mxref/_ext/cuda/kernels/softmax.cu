// softmax / log_softmax along one axis, and SoftmaxOutput's fused backward (softmax - one_hot).
//
// The input is viewed as (outer, mid, inner) with the softmax axis as `mid`. Thread/block mapping:
// one block per row (outer * inner rows, grid-stride over rows); the block's threads stride over
// the row's `mid` elements three times: the row maximum (block_reduce_all, max), the sum of
// exp(x - max) (block_reduce_all, sum), then each output. Subtracting the maximum keeps exp from
// overflowing, as every numerically careful softmax does.
#include "block_reduce.cuh"

__global__ void softmax_axis(const real_t* x, real_t* y, long long outer, long long mid, long long inner,
                             real_t inv_temperature, int log_mode) {
    for (long long o = blockIdx.x; o < outer * inner; o += gridDim.x) {
        long long i = o / inner, j = o % inner;
        const real_t* row = x + i * mid * inner + j;
        real_t* out = y + i * mid * inner + j;
        real_t m = -(real_t)INFINITY;
        for (long long k = threadIdx.x; k < mid; k += blockDim.x) m = fmax(m, row[k * inner] * inv_temperature);
        m = block_reduce_all(RED_MAX, m);
        real_t s = 0;
        for (long long k = threadIdx.x; k < mid; k += blockDim.x) s += exp(row[k * inner] * inv_temperature - m);
        s = block_reduce_all(RED_SUM, s);
        real_t log_s = log(s);
        for (long long k = threadIdx.x; k < mid; k += blockDim.x) {
            real_t z = row[k * inner] * inv_temperature - m;
            out[k * inner] = log_mode ? z - log_s : exp(z) / s;
        }
    }
}

// Backward of softmax (log_mode 0: dx = y * (g - sum(g * y))) and log_softmax (log_mode 1:
// dx = g - exp(y) * sum(g)), one block per row as above.
__global__ void softmax_axis_backward(const real_t* g, const real_t* y, real_t* dx, long long outer,
                                      long long mid, long long inner, real_t inv_temperature,
                                      int log_mode, int accumulate) {
    for (long long o = blockIdx.x; o < outer * inner; o += gridDim.x) {
        long long i = o / inner, j = o % inner, base = i * mid * inner + j;
        real_t s = 0;
        for (long long k = threadIdx.x; k < mid; k += blockDim.x) {
            long long at = base + k * inner;
            s += log_mode ? g[at] : g[at] * y[at];
        }
        s = block_reduce_all(RED_SUM, s);
        for (long long k = threadIdx.x; k < mid; k += blockDim.x) {
            long long at = base + k * inner;
            real_t v = log_mode ? g[at] - exp(y[at]) * s : y[at] * (g[at] - s);
            v *= inv_temperature;
            dx[at] = accumulate ? dx[at] + v : v;
        }
    }
}

// SoftmaxOutput backward for integer class labels: dx[n, c] = (p[n, c] - [c == label[n]]) * scale,
// zero for rows whose label is ignore_label when use_ignore. One thread per element of p (n, k),
// grid-stride.
__global__ void softmax_output_backward(const real_t* p, const real_t* label, real_t* dx, long long n,
                                        long long k, real_t scale, int use_ignore, real_t ignore_label,
                                        int accumulate) {
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n * k;
         e += (long long)gridDim.x * blockDim.x) {
        long long r = e / k, c = e % k;
        real_t lab = label[r];
        real_t v = (p[e] - ((long long)lab == c ? (real_t)1 : (real_t)0)) * scale;
        if (use_ignore && lab == ignore_label) v = 0;
        dx[e] = accumulate ? dx[e] + v : v;
    }
}

// The fused softmax cross-entropy (Gluon's SoftmaxCrossEntropyLoss): loss[row] = -log_softmax(x)[l],
// l = clip(label[row], 0, mid - 1); one block per row, as softmax_axis (max, then sum of exp).
__global__ void softmax_ce_forward(const real_t* x, const real_t* label, real_t* loss, long long outer,
                                   long long mid, long long inner, int accumulate) {
    for (long long o = blockIdx.x; o < outer * inner; o += gridDim.x) {
        long long i = o / inner, j = o % inner;
        const real_t* row = x + i * mid * inner + j;
        real_t m = -(real_t)INFINITY;
        for (long long k = threadIdx.x; k < mid; k += blockDim.x) m = fmax(m, row[k * inner]);
        m = block_reduce_all(RED_MAX, m);
        real_t s = 0;
        for (long long k = threadIdx.x; k < mid; k += blockDim.x) s += exp(row[k * inner] - m);
        s = block_reduce_all(RED_SUM, s);
        if (threadIdx.x == 0) {
            long long l = (long long)label[o];
            l = l < 0 ? 0 : (l >= mid ? mid - 1 : l);
            real_t v = -(row[l * inner] - m - log(s));
            loss[o] = accumulate ? loss[o] + v : v;
        }
    }
}

// Its backward: dx = g[row] * (softmax(x) - onehot(l)), one block per row.
__global__ void softmax_ce_backward(const real_t* g, const real_t* x, const real_t* label, real_t* dx,
                                    long long outer, long long mid, long long inner, int accumulate) {
    for (long long o = blockIdx.x; o < outer * inner; o += gridDim.x) {
        long long i = o / inner, j = o % inner, base = i * mid * inner + j;
        real_t m = -(real_t)INFINITY;
        for (long long k = threadIdx.x; k < mid; k += blockDim.x) m = fmax(m, x[base + k * inner]);
        m = block_reduce_all(RED_MAX, m);
        real_t s = 0;
        for (long long k = threadIdx.x; k < mid; k += blockDim.x) s += exp(x[base + k * inner] - m);
        s = block_reduce_all(RED_SUM, s);
        long long l = (long long)label[o];
        l = l < 0 ? 0 : (l >= mid ? mid - 1 : l);
        for (long long k = threadIdx.x; k < mid; k += blockDim.x) {
            long long at = base + k * inner;
            real_t v = g[o] * (exp(x[at] - m) / s - (k == l ? (real_t)1 : (real_t)0));
            dx[at] = accumulate ? dx[at] + v : v;
        }
    }
}
