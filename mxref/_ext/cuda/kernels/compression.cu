// 2-bit gradient compression with residual feedback, in MXNet's bit layout (see
// mxref/kvstore/compression.py for the math). Float32 only: the codes' layout is defined on bytes.
//
// quantize: one thread per compressed float = 16 gradient elements, so no two threads write one
// output word. Element i goes to float i/16, byte (i%16)/4, bits 7-2c and 6-2c (c = i%4).
// dequantize: one thread per element, reading its two bits.

__global__ void quantize_2bit(const float* grad, float* residual, float* out, long long n, float threshold) {
    long long words = (n + 15) / 16;
    for (long long wi = blockIdx.x * (long long)blockDim.x + threadIdx.x; wi < words;
         wi += (long long)gridDim.x * blockDim.x) {
        unsigned char bytes[4] = {0, 0, 0, 0};
        for (int j = 0; j < 16; ++j) {
            long long i = wi * 16 + j;
            if (i >= n) break;
            float r = residual[i] + grad[i];
            unsigned char code = 0;
            if (r >= threshold) { code = 3; r -= threshold; }
            else if (r <= -threshold) { code = 2; r += threshold; }
            residual[i] = r;
            bytes[j / 4] |= (unsigned char)(code << (6 - 2 * (j % 4)));
        }
        unsigned word = (unsigned)bytes[0] | ((unsigned)bytes[1] << 8) | ((unsigned)bytes[2] << 16) |
                        ((unsigned)bytes[3] << 24);     // little-endian: byte 0 first in memory
        out[wi] = __uint_as_float(word);
    }
}

__global__ void dequantize_2bit(const float* in, float* out, long long n, float threshold) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        unsigned word = __float_as_uint(in[i / 16]);
        int j = i % 16;
        unsigned code = (word >> (8 * (j / 4) + 6 - 2 * (j % 4))) & 3u;
        out[i] = code == 3 ? threshold : (code == 2 ? -threshold : 0.f);
    }
}
