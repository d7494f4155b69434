// Elementwise kernels: unary, binary (same shape), array-with-scalar, broadcast binary, fill.
//
// Thread/block mapping (every kernel here): a 1-D grid of 1-D blocks walks the flat index space
// with a grid-stride loop. Thread t of block b starts at i = b * blockDim.x + t and steps by
// gridDim.x * blockDim.x, so any grid size covers any n, consecutive threads touch consecutive
// elements (coalesced loads), and the launcher picks the grid for the device, not for n.
//
//   i:      0 1 2 ... 255 | 256 ... 511 | ... | G*256 ...        (G = gridDim.x)
//   thread: b0t0 b0t1 ... | b1t0 ...    | ... | b0t0 again (second trip of the loop)
//
// `op` selects the function (the OP_* codes below; the Python side reads them from this file), so
// one compiled kernel serves every operator of a family. `accumulate` implements req = 'add'.
// real_t is given by the module's options (-Dreal_t=float or double).

#include "index4.cuh"

// unary ops
#define OP_COPY 0
#define OP_RELU 1
#define OP_SIGMOID 2
#define OP_TANH 3
#define OP_EXP 4
#define OP_LOG 5
#define OP_SQRT 6
#define OP_SQUARE 7
#define OP_ABS 8
#define OP_NEGATIVE 9
#define OP_RECIPROCAL 10
#define OP_RSQRT 11
#define OP_SIN 12
#define OP_COS 13
#define OP_LOG1P 14
#define OP_EXPM1 15
#define OP_SIGN 16
#define OP_SOFTSIGN 17
#define OP_SOFTRELU 18
#define OP_FLOOR 19
#define OP_CEIL 20
// binary ops f(a, b)
#define OP_ADD 32
#define OP_SUB 33
#define OP_MUL 34
#define OP_DIV 35
#define OP_MAXIMUM 36
#define OP_MINIMUM 37
#define OP_POWER 38
#define OP_HYPOT 39
#define OP_EQUAL 40
#define OP_NOT_EQUAL 41
#define OP_GREATER 42
#define OP_GREATER_EQUAL 43
#define OP_LESSER 44
#define OP_LESSER_EQUAL 45
#define OP_FIRST 46
// backward of unary ops: f(g, z) = g * d(z), z being x or y as the op's backward takes it
#define OP_BWD_RELU 64
#define OP_BWD_SIGMOID 65
#define OP_BWD_TANH 66
#define OP_BWD_EXP 67
#define OP_BWD_LOG 68
#define OP_BWD_SQRT 69
#define OP_BWD_SQUARE 70
#define OP_BWD_ABS 71
#define OP_BWD_RECIPROCAL 72
#define OP_BWD_SIN 73
#define OP_BWD_COS 74
#define OP_BWD_SOFTSIGN 75
#define OP_BWD_SOFTRELU 76
#define OP_BWD_LOG1P 77
#define OP_BWD_EXPM1 78
#define OP_BWD_RSQRT 79
#define OP_BWD_SOFTSIGN_Y 80

__device__ __forceinline__ real_t apply_unary(int op, real_t x) {
    const real_t one = 1, zero = 0;
    switch (op) {
        case OP_COPY: return x;
        case OP_RELU: return x > zero ? x : zero;
        case OP_SIGMOID: return one / (one + exp(-x));
        case OP_TANH: return tanh(x);
        case OP_EXP: return exp(x);
        case OP_LOG: return log(x);
        case OP_SQRT: return sqrt(x);
        case OP_SQUARE: return x * x;
        case OP_ABS: return fabs(x);
        case OP_NEGATIVE: return -x;
        case OP_RECIPROCAL: return one / x;
        case OP_RSQRT: return one / sqrt(x);
        case OP_SIN: return sin(x);
        case OP_COS: return cos(x);
        case OP_LOG1P: return log1p(x);
        case OP_EXPM1: return expm1(x);
        case OP_SIGN: return (real_t)((x > zero) - (x < zero));
        case OP_SOFTSIGN: return x / (one + fabs(x));
        case OP_SOFTRELU: return x > (real_t)20 ? x : log1p(exp(x));
        case OP_FLOOR: return floor(x);
        case OP_CEIL: return ceil(x);
    }
    return x;
}

__device__ __forceinline__ real_t apply_binary(int op, real_t a, real_t b) {
    const real_t one = 1, zero = 0, half = 0.5;
    switch (op) {
        case OP_ADD: return a + b;
        case OP_SUB: return a - b;
        case OP_MUL: return a * b;
        case OP_DIV: return a / b;
        case OP_MAXIMUM: return a > b ? a : b;
        case OP_MINIMUM: return a < b ? a : b;
        case OP_POWER: return pow(a, b);
        case OP_HYPOT: return sqrt(a * a + b * b);
        case OP_EQUAL: return a == b ? one : zero;
        case OP_NOT_EQUAL: return a != b ? one : zero;
        case OP_GREATER: return a > b ? one : zero;
        case OP_GREATER_EQUAL: return a >= b ? one : zero;
        case OP_LESSER: return a < b ? one : zero;
        case OP_LESSER_EQUAL: return a <= b ? one : zero;
        case OP_FIRST: return a;
        case OP_BWD_RELU: return b > zero ? a : zero;
        case OP_BWD_SIGMOID: return a * b * (one - b);                 // z = y
        case OP_BWD_TANH: return a * (one - b * b);                    // z = y
        case OP_BWD_EXP: return a * b;                                 // z = y
        case OP_BWD_LOG: return a / b;                                 // z = x
        case OP_BWD_SQRT: return a * half / b;                         // z = y
        case OP_BWD_SQUARE: return a * (b + b);                        // z = x
        case OP_BWD_ABS: return a * (real_t)((b > zero) - (b < zero)); // z = x
        case OP_BWD_RECIPROCAL: return -a / (b * b);                   // z = x
        case OP_BWD_SIN: return a * cos(b);                            // z = x
        case OP_BWD_COS: return -a * sin(b);                           // z = x
        case OP_BWD_SOFTSIGN: return a / ((one + fabs(b)) * (one + fabs(b)));   // z = x
        case OP_BWD_SOFTRELU: return -a * expm1(-b);                   // z = y
        case OP_BWD_LOG1P: return a / (one + b);                       // z = x
        case OP_BWD_EXPM1: return a * exp(b);                          // z = x
        case OP_BWD_RSQRT: return -half * a / (b * sqrt(b));           // z = x
        case OP_BWD_SOFTSIGN_Y: return a * (one - fabs(b)) * (one - fabs(b));  // z = y
    }
    return a;
}

__global__ void unary_op(const real_t* x, real_t* y, int op, long long n, int accumulate) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        real_t v = apply_unary(op, x[i]);
        y[i] = accumulate ? y[i] + v : v;
    }
}

__global__ void binary_op(const real_t* a, const real_t* b, real_t* y, int op, long long n, int accumulate) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        real_t v = apply_binary(op, a[i], b[i]);
        y[i] = accumulate ? y[i] + v : v;
    }
}

// y = f(x, s), or f(s, x) when `reverse` (1 - x, 1 / x, 2 ** x).
__global__ void scalar_op(const real_t* x, real_t* y, real_t s, int op, int reverse, long long n,
                          int accumulate) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        real_t v = reverse ? apply_binary(op, s, x[i]) : apply_binary(op, x[i], s);
        y[i] = accumulate ? y[i] + v : v;
    }
}

// Broadcast binary on shapes collapsed to 4-D: the output is (d0, d1, d2, d3) (d0 = n / (d1 d2 d3));
// sa*/sb* are each input's element strides per output axis, 0 along a broadcast axis. Each flat
// output index is split into its 4 coordinates, which are dotted with the strides.
__global__ void broadcast_op(const real_t* a, const real_t* b, real_t* y, int op, long long n,
                             long long d1, long long d2, long long d3,
                             long long sa0, long long sa1, long long sa2, long long sa3,
                             long long sb0, long long sb1, long long sb2, long long sb3, int accumulate) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        real_t va = a[strided4(i, d1, d2, d3, sa0, sa1, sa2, sa3)];
        real_t vb = b[strided4(i, d1, d2, d3, sb0, sb1, sb2, sb3)];
        real_t v = apply_binary(op, va, vb);
        y[i] = accumulate ? y[i] + v : v;
    }
}

__global__ void fill(real_t* y, real_t value, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        y[i] = value;
}

// y (+)= x1 + x2 + ... for up to 4 inputs at a time (add_n / ElementWiseSum over more inputs
// chains launches, accumulating).
__global__ void sum4(const real_t* x0, const real_t* x1, const real_t* x2, const real_t* x3, int k,
                     real_t* y, long long n, int accumulate) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        real_t v = x0[i];
        if (k > 1) v += x1[i];
        if (k > 2) v += x2[i];
        if (k > 3) v += x3[i];
        y[i] = accumulate ? y[i] + v : v;
    }
}
