// Optimizer updates: SGD, momentum SGD, Adam. One thread per weight element, grid-stride (the
// updates are memory-bound: each element is read and written once per step).
//
// g = clip(rescale_grad * grad, clip_gradient) (no clip when clip_gradient < 0); weight decay stays
// outside the clip, as in MXNet's kernels.

__device__ __forceinline__ real_t clipped(real_t g, real_t rescale, real_t clip) {
    g *= rescale;
    if (clip >= (real_t)0) g = g > clip ? clip : (g < -clip ? -clip : g);
    return g;
}

// out = (1 - lr * wd) * w - lr * g     (out may be w itself)
__global__ void sgd_update(const real_t* w, const real_t* grad, real_t* out, long long n, real_t lr,
                           real_t wd, real_t rescale, real_t clip) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        real_t g = clipped(grad[i], rescale, clip);
        out[i] = ((real_t)1 - lr * wd) * w[i] - lr * g;
    }
}

// mom = momentum * mom - lr * wd * w - lr * g;  out = w + mom
__global__ void sgd_mom_update(const real_t* w, const real_t* grad, real_t* mom, real_t* out, long long n,
                               real_t lr, real_t momentum, real_t wd, real_t rescale, real_t clip) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        real_t g = clipped(grad[i], rescale, clip);
        real_t m = momentum * mom[i] - lr * wd * w[i] - lr * g;
        mom[i] = m;
        out[i] = w[i] + m;
    }
}
