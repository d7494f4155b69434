// Cast between element types: y[i] = (dst_t)x[i]. The module is built per (src_t, dst_t) pair
// (-Dsrc_t=float -Ddst_t=double). Mapping: one thread per element, grid-stride loop.
// nvcc check options: -Dsrc_t=double -Ddst_t=int
__global__ void cast(const src_t* x, dst_t* y, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        y[i] = (dst_t)x[i];
}
