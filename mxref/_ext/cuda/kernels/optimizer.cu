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

// Adam (no bias correction of its own: the optimizer folds it into lr):
//   g = clip(rescale * grad + wd * w);  mean = b1 mean + (1 - b1) g;  var = b2 var + (1 - b2) g^2
//   out = w - lr * mean / (sqrt(var) + epsilon)
__global__ void adam_update(const real_t* w, const real_t* grad, real_t* mean, real_t* var, real_t* out,
                            long long n, real_t lr, real_t beta1, real_t beta2, real_t epsilon, real_t wd,
                            real_t rescale, real_t clip) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        real_t g = grad[i] * rescale + wd * w[i];
        if (clip >= (real_t)0) g = g > clip ? clip : (g < -clip ? -clip : g);
        real_t m = beta1 * mean[i] + ((real_t)1 - beta1) * g;
        real_t v = beta2 * var[i] + ((real_t)1 - beta2) * g * g;
        mean[i] = m;
        var[i] = v;
        out[i] = w[i] - lr * m / (sqrt(v) + epsilon);
    }
}
