// Data movement: one strided copy serves transpose, slice, slice_axis, Concat and their backward.
//
// y[y0 + sum_i c_i * ys_i] (+)= x[x0 + sum_i c_i * xs_i] for every coordinate c of the iteration
// shape (d0, ..., d5) (leading dims 1 when fewer are needed). Strides are in elements and may be
// negative (a slice with a negative step). transpose permutes x's strides; a slice offsets and
// scales them; Concat copies each input into its window of y.
// Mapping: one thread per element of the iteration shape, grid-stride; consecutive threads take
// consecutive coordinates of the last axis, so the writes (or reads) along it are coalesced.

__global__ void strided_copy(const real_t* x, real_t* y, long long n, long long d1, long long d2, long long d3,
                             long long d4, long long d5, long long x0, long long xs0, long long xs1,
                             long long xs2, long long xs3, long long xs4, long long xs5, long long y0,
                             long long ys0, long long ys1, long long ys2, long long ys3, long long ys4,
                             long long ys5, int accumulate) {
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n;
         e += (long long)gridDim.x * blockDim.x) {
        long long r = e;
        long long c5 = r % d5; r /= d5;
        long long c4 = r % d4; r /= d4;
        long long c3 = r % d3; r /= d3;
        long long c2 = r % d2; r /= d2;
        long long c1 = r % d1;
        long long c0 = r / d1;
        long long xi = x0 + c0 * xs0 + c1 * xs1 + c2 * xs2 + c3 * xs3 + c4 * xs4 + c5 * xs5;
        long long yi = y0 + c0 * ys0 + c1 * ys1 + c2 * ys2 + c3 * ys3 + c4 * ys4 + c5 * ys5;
        y[yi] = accumulate ? y[yi] + x[xi] : x[xi];
    }
}

// Row r's index into a table of V rows: clipped to [0, V) (mode 0), or wrapped around (mode 1).
__device__ __forceinline__ long long row_of(const real_t* idx, long long r, long long V, int wrap) {
    long long i = (long long)idx[r];
    if (wrap) {
        i %= V;
        return i < 0 ? i + V : i;
    }
    return i < 0 ? 0 : (i >= V ? V - 1 : i);
}

// Embedding / take along axis 0 of a (V, D) table: y[r, :] = w[clip(idx[r]), :] (mode 0 clip,
// 1 wrap). One thread per output element.
__global__ void gather_rows(const real_t* idx, const real_t* w, real_t* y, long long rows, long long V,
                            long long D, int wrap, int accumulate) {
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < rows * D;
         e += (long long)gridDim.x * blockDim.x) {
        long long r = e / D, d = e % D, i = row_of(idx, r, V, wrap);
        real_t v = w[i * D + d];
        y[e] = accumulate ? y[e] + v : v;
    }
}

// Their backward: dw[idx[r], :] += g[r, :]. Rows may repeat, so the adds are atomic. dw must hold
// zeros (or what to add to) first. One thread per element of g.
__global__ void scatter_add_rows(const real_t* idx, const real_t* g, real_t* dw, long long rows, long long V,
                                 long long D, int wrap) {
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < rows * D;
         e += (long long)gridDim.x * blockDim.x) {
        long long r = e / D, d = e % D, i = row_of(idx, r, V, wrap);
        atomicAdd(&dw[i * D + d], g[e]);
    }
}
