// 2-D max / avg / sum pooling, forward and backward, on (N*C, H, W) planes.
//
// Window of output (oh, ow): rows oh*SH - PH .. + KH, columns ow*SW - PW .. + KW; positions outside
// the image are padding (-inf for max, 0 for avg/sum). avg divides by the window's size counting
// padding (include_pad, MXNet's default) but never past the padded image, or by the in-image part.
//
// Mapping: one thread per output element (grid-stride). Forward reads its window. Backward
// scatters its gradient into the window (max: to the first arg max, in (kh, kw) order, as the
// reference), and windows overlap when the stride is below the kernel, so it adds with atomicAdd.
#define OP_MAX 0
#define OP_AVG 1
#define OP_SUM 2

__device__ __forceinline__ real_t pool_divisor(int oh, int ow, int H, int W, int KH, int KW, int SH, int SW,
                                               int PH, int PW, int include_pad) {
    int h0 = oh * SH, w0 = ow * SW;                 // in padded coordinates
    if (include_pad) {
        int h1 = min(h0 + KH, H + 2 * PH), w1 = min(w0 + KW, W + 2 * PW);
        return (real_t)((h1 - h0) * (w1 - w0));
    }
    int hs = max(h0 - PH, 0), ws = max(w0 - PW, 0);
    int he = min(h0 - PH + KH, H), we = min(w0 - PW + KW, W);
    return (real_t)((he - hs) * (we - ws));
}

__global__ void pool2d_forward(const real_t* x, real_t* y, long long planes, int H, int W, int OH, int OW,
                               int KH, int KW, int SH, int SW, int PH, int PW, int type, int include_pad,
                               int accumulate) {
    long long total = planes * OH * OW;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        int ow = e % OW, oh = (e / OW) % OH;
        const real_t* plane = x + (e / ((long long)OW * OH)) * H * W;
        real_t acc = type == OP_MAX ? -(real_t)INFINITY : (real_t)0;
        for (int kh = 0; kh < KH; ++kh) {
            int ih = oh * SH - PH + kh;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < KW; ++kw) {
                int iw = ow * SW - PW + kw;
                if (iw < 0 || iw >= W) continue;
                real_t v = plane[ih * W + iw];
                acc = type == OP_MAX ? (v > acc ? v : acc) : acc + v;
            }
        }
        if (type == OP_AVG) acc /= pool_divisor(oh, ow, H, W, KH, KW, SH, SW, PH, PW, include_pad);
        y[e] = accumulate ? y[e] + acc : acc;
    }
}

// dx must hold zeros (or the values to add to) before the launch.
__global__ void pool2d_backward(const real_t* g, const real_t* x, real_t* dx, long long planes, int H, int W,
                                int OH, int OW, int KH, int KW, int SH, int SW, int PH, int PW, int type,
                                int include_pad) {
    long long total = planes * OH * OW;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        int ow = e % OW, oh = (e / OW) % OH;
        long long base = (e / ((long long)OW * OH)) * H * W;
        if (type == OP_MAX) {
            real_t best = -(real_t)INFINITY;
            long long at = -1;
            for (int kh = 0; kh < KH; ++kh) {
                int ih = oh * SH - PH + kh;
                if (ih < 0 || ih >= H) continue;
                for (int kw = 0; kw < KW; ++kw) {
                    int iw = ow * SW - PW + kw;
                    if (iw < 0 || iw >= W) continue;
                    real_t v = x[base + ih * W + iw];
                    if (at < 0 || v > best) { best = v; at = base + ih * W + iw; }
                }
            }
            if (at >= 0) atomicAdd(&dx[at], g[e]);
        } else {
            real_t share = g[e];
            if (type == OP_AVG) share /= pool_divisor(oh, ow, H, W, KH, KW, SH, SW, PH, PW, include_pad);
            for (int kh = 0; kh < KH; ++kh) {
                int ih = oh * SH - PH + kh;
                if (ih < 0 || ih >= H) continue;
                for (int kw = 0; kw < KW; ++kw) {
                    int iw = ow * SW - PW + kw;
                    if (iw >= 0 && iw < W) atomicAdd(&dx[base + ih * W + iw], share);
                }
            }
        }
    }
}
