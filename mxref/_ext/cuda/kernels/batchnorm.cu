// BatchNorm forward (batch or moving statistics, updating the moving ones) and backward.
//
// The data is viewed as (N, C, S): C channels (the normalised axis), N the axes before it, S those
// after. Mapping: one block per channel (grid-stride over channels); the block's threads stride
// over the channel's N * S elements for each statistic and fold them with block_reduce_all (warp
// shuffles + shared memory), which also hands every thread the result, then write the outputs.
// Two passes for the variance (mean first, then squared deviations), as the reference computes it.
// req codes: 0 null, 1 write, 2 add.
#include "block_reduce.cuh"

__device__ __forceinline__ void store(real_t* p, long long i, real_t v, int req) {
    if (req == 1) p[i] = v;
    else if (req == 2) p[i] += v;
}

__global__ void batchnorm_forward(const real_t* x, const real_t* gamma, const real_t* beta, real_t* moving_mean,
                                  real_t* moving_var, real_t* y, real_t* mean_out, real_t* invstd_out, int N,
                                  int C, long long S, real_t eps, real_t momentum, int fix_gamma,
                                  int batch_stats, int req_y, int req_mean, int req_invstd) {
    long long M = (long long)N * S;
    for (int c = blockIdx.x; c < C; c += gridDim.x) {
        real_t mean, var;
        if (batch_stats) {
            real_t s = 0;
            for (long long e = threadIdx.x; e < M; e += blockDim.x) s += x[((e / S) * C + c) * S + e % S];
            mean = block_reduce_all(RED_SUM, s) / (real_t)M;
            real_t q = 0;
            for (long long e = threadIdx.x; e < M; e += blockDim.x) {
                real_t d = x[((e / S) * C + c) * S + e % S] - mean;
                q += d * d;
            }
            var = block_reduce_all(RED_SUM, q) / (real_t)M;
            if (threadIdx.x == 0) {
                moving_mean[c] = moving_mean[c] * momentum + ((real_t)1 - momentum) * mean;
                moving_var[c] = moving_var[c] * momentum + ((real_t)1 - momentum) * var;
            }
        } else {
            mean = moving_mean[c];
            var = moving_var[c];
        }
        real_t invstd = (real_t)1 / sqrt(var + eps);
        real_t scale = fix_gamma ? invstd : gamma[c] * invstd;
        for (long long e = threadIdx.x; e < M; e += blockDim.x) {
            long long at = ((e / S) * C + c) * S + e % S;
            store(y, at, (x[at] - mean) * scale + beta[c], req_y);
        }
        if (threadIdx.x == 0) {
            store(mean_out, c, mean, req_mean);
            store(invstd_out, c, invstd, req_invstd);
        }
    }
}

__global__ void batchnorm_backward(const real_t* g, const real_t* x, const real_t* gamma, const real_t* mean,
                                   const real_t* invstd, real_t* dx, real_t* dgamma, real_t* dbeta, int N, int C,
                                   long long S, int fix_gamma, int batch_stats, int req_dx, int req_dgamma,
                                   int req_dbeta) {
    long long M = (long long)N * S;
    for (int c = blockIdx.x; c < C; c += gridDim.x) {
        real_t mu = mean[c], is = invstd[c];
        real_t sg = 0, sgx = 0;
        for (long long e = threadIdx.x; e < M; e += blockDim.x) {
            long long at = ((e / S) * C + c) * S + e % S;
            sg += g[at];
            sgx += g[at] * (x[at] - mu) * is;
        }
        sg = block_reduce_all(RED_SUM, sg);
        sgx = block_reduce_all(RED_SUM, sgx);
        real_t gam = fix_gamma ? (real_t)1 : gamma[c];
        for (long long e = threadIdx.x; e < M; e += blockDim.x) {
            long long at = ((e / S) * C + c) * S + e % S;
            real_t v;
            if (batch_stats) {
                real_t xhat = (x[at] - mu) * is;
                v = (g[at] * (real_t)M - sg - xhat * sgx) * (gam * is / (real_t)M);
            } else {
                v = g[at] * gam * is;
            }
            store(dx, at, v, req_dx);
        }
        if (threadIdx.x == 0) {
            store(dgamma, c, fix_gamma ? (real_t)0 : sgx, req_dgamma);
            store(dbeta, c, sg, req_dbeta);
        }
    }
}
