// CUDA emulation header: lets the .cu kernels of mxref/_ext/cuda/kernels compile with g++ and run
// on the CPU, one fiber per CUDA thread (see docs/architecture/gpu.md, "The emulator").
//
// What a kernel sees is CUDA's device API: threadIdx/blockIdx/blockDim/gridDim, __shared__,
// __syncthreads, atomics, warp shuffles and votes, the math functions. Underneath:
//   * a launch runs its blocks one after another on the calling (engine worker) thread;
//   * inside a block every CUDA thread is a fiber with its own stack; a fiber runs until it
//     reaches a barrier (__syncthreads, a shuffle, a vote) or exits, then the scheduler runs the
//     next one, so a barrier is released only when every thread of the block (or warp) is there;
//   * a thread that exits, or waits at another barrier, while the others wait at a __syncthreads
//     or a shuffle is barrier divergence, reported as an error naming the kernel;
//   * every pointer argument is copied into a staging buffer that ends at a PROT_NONE guard page,
//     so the first byte read or written past its end faults; the SIGSEGV handler turns the fault
//     into an error naming the kernel, the argument, the block and the thread.
// NOTE: fibers switch with _setjmp/_longjmp (no system call); ucontext only starts them. glibc's
// fortified longjmp refuses to jump between stacks, so this file is compiled with -U_FORTIFY_SOURCE.
#pragma once
#include <algorithm>
#include <cmath>
#include <math.h>   // float overloads of the math functions in the global namespace, as in CUDA
#include <csetjmp>
#include <csignal>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

// ----------------------------------------------------------------------------- CUDA's vocabulary
struct uint3 { unsigned int x, y, z; };
struct dim3 {
    unsigned int x, y, z;
    dim3(unsigned int a = 1, unsigned int b = 1, unsigned int c = 1) : x(a), y(b), z(c) {}
};

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
// One copy per host thread: the fibers of a block share it, as CUDA threads share a block's memory.
#define __shared__ static thread_local
#define __constant__ static
#define warpSize 32

namespace emu {

enum State { READY = 0, AT_BARRIER = 1, AT_WARP = 2, DONE = 3 };
enum WarpOp { SYNCWARP = 0, SHFL_DOWN, SHFL_UP, SHFL_XOR, SHFL_IDX, VOTE_ALL, VOTE_ANY, VOTE_BALLOT };

struct Launch;

struct Fiber {
    uint3 tid;                 // threadIdx
    int linear, lane, warp;    // linear thread id in the block, lane in its warp, warp in the block
    int state;
    int line;                  // source line of the __syncthreads it waits at
    int op, arg, width;        // the warp operation it waits in, and its operand
    uint64_t value, result;    // the lane's contribution to a shuffle/vote, and what it gets back
    int started;
    jmp_buf jb;
    ucontext_t uc;
    char* stack;
    Launch* launch;
};

struct Region {                // one staged argument range (see stage())
    char* user;                // the device pointer the caller passed
    long long nbytes;
    char* map;                 // the mapping: guard page, canary, data, guard page
    size_t map_len;
    char* data;                // where the kernel sees the bytes (ends at the upper guard page)
    bool writable;
    int first_arg;             // the argument it was staged for (named in errors)
};

struct Launch {
    const char* kernel;
    const char* const* argnames;
    dim3 gdim, bdim;
    uint3 bidx;
    int nthreads;
    Fiber* fibers;
    void (*invoke)(void**);
    void** args;
    jmp_buf sched;
    sigjmp_buf escape;
    volatile int running;
    volatile int faulted;
    void* fault_addr;
    int fault_write;
    Fiber* fault_fiber;
    std::vector<Region> regions;
    char error[1024];
    int failed;
};

inline thread_local Fiber* current = nullptr;
inline thread_local Launch* active = nullptr;

inline void yield(Fiber* f) {
    if (!_setjmp(f->jb)) _longjmp(f->launch->sched, 1);
}

inline void syncthreads(int line) {
    Fiber* f = current;
    f->state = AT_BARRIER;
    f->line = line;
    yield(f);
}

template <typename T>
inline T warp_exchange(int op, T v, int arg, int width) {
    static_assert(sizeof(T) <= 8, "a shuffled value has at most 8 bytes");
    Fiber* f = current;
    f->op = op;
    f->arg = arg;
    f->width = width <= 0 ? 32 : width;
    f->value = 0;
    std::memcpy(&f->value, &v, sizeof(T));
    f->state = AT_WARP;
    yield(f);
    T r;
    std::memcpy(&r, &current->result, sizeof(T));
    return r;
}

}  // namespace emu

#define threadIdx (::emu::current->tid)
#define blockIdx (::emu::current->launch->bidx)
#define blockDim (::emu::current->launch->bdim)
#define gridDim (::emu::current->launch->gdim)
#define __syncthreads() ::emu::syncthreads(__LINE__)

inline void __syncwarp(unsigned = 0xffffffffu) { ::emu::warp_exchange<int>(::emu::SYNCWARP, 0, 0, 32); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// The mask is not checked: every live lane of the warp takes part (documented in gpu.md).
template <typename T> inline T __shfl_down_sync(unsigned, T v, unsigned d, int w = 32) {
    return ::emu::warp_exchange<T>(::emu::SHFL_DOWN, v, (int)d, w);
}
template <typename T> inline T __shfl_up_sync(unsigned, T v, unsigned d, int w = 32) {
    return ::emu::warp_exchange<T>(::emu::SHFL_UP, v, (int)d, w);
}
template <typename T> inline T __shfl_xor_sync(unsigned, T v, int m, int w = 32) {
    return ::emu::warp_exchange<T>(::emu::SHFL_XOR, v, m, w);
}
template <typename T> inline T __shfl_sync(unsigned, T v, int src, int w = 32) {
    return ::emu::warp_exchange<T>(::emu::SHFL_IDX, v, src, w);
}
inline int __all_sync(unsigned, int p) { return ::emu::warp_exchange<int>(::emu::VOTE_ALL, p != 0, 0, 32); }
inline int __any_sync(unsigned, int p) { return ::emu::warp_exchange<int>(::emu::VOTE_ANY, p != 0, 0, 32); }
inline unsigned __ballot_sync(unsigned, int p) {
    return ::emu::warp_exchange<unsigned>(::emu::VOTE_BALLOT, p != 0, 0, 32);
}

// Atomics are real host atomics: two streams (engine workers) may run kernels at the same time.
template <typename T> inline T emu_cas_add(T* p, T v) {
    T old, want;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    do { want = old + v; } while (!__atomic_compare_exchange(p, &old, &want, false, __ATOMIC_SEQ_CST,
                                                             __ATOMIC_SEQ_CST));
    return old;
}
inline float atomicAdd(float* p, float v) { return emu_cas_add(p, v); }
inline double atomicAdd(double* p, double v) { return emu_cas_add(p, v); }
inline int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
inline int atomicSub(int* p, int v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }
inline int atomicExch(int* p, int v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
inline float atomicExch(float* p, float v) { float o; __atomic_exchange(p, &v, &o, __ATOMIC_SEQ_CST); return o; }
inline int atomicCAS(int* p, int cmp, int v) {
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return cmp;
}
inline unsigned atomicCAS(unsigned* p, unsigned cmp, unsigned v) {
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return cmp;
}
inline int atomicMax(int* p, int v) {
    int old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
    return old;
}
inline int atomicMin(int* p, int v) {
    int old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (old > v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
    return old;
}

// --------------------------------------------------------------------- device math and intrinsics
inline int max(int a, int b) { return a > b ? a : b; }
inline int min(int a, int b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline float max(float a, float b) { return fmaxf(a, b); }
inline float min(float a, float b) { return fminf(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x < 0.f ? 0.f : (x > 1.f ? 1.f : x); }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((uint64_t)a * b) >> 32); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
template <typename T> inline T __ldg(const T* p) { return *p; }

#include "emu_runtime.h"
