// The emulator's launcher and scheduler (included once, by cuda_emu.h, into each emulated module).
#pragma once

namespace emu {

static const size_t kStack = 128 * 1024;      // one CUDA thread's stack (plus a guard page below)
static const unsigned char kCanary = 0xA5;    // fills the bytes before each staged argument

inline size_t page_size() {
    static size_t p = (size_t)sysconf(_SC_PAGESIZE);
    return p;
}

// Fiber stacks are kept per host thread and reused: launches are frequent, threads per block few.
inline thread_local std::vector<char*> stack_pool;

inline char* take_stack() {
    if (!stack_pool.empty()) {
        char* s = stack_pool.back();
        stack_pool.pop_back();
        return s;
    }
    size_t pg = page_size();
    char* m = (char*)mmap(nullptr, kStack + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    mprotect(m, pg, PROT_NONE);               // a thread that overflows its stack faults here
    return m + pg;
}

// Fibers are kept per host thread too, parked where fiber_main waits for its next block: a launch
// resumes them instead of creating contexts (getcontext/setcontext are system calls). The pool's
// storage is reserved once and never moves: a fresh ucontext_t points into itself.
static const int kMaxThreads = 1024;
inline thread_local std::vector<Fiber>* fiber_pool = nullptr;

inline Fiber* fibers_for(int n) {
    if (!fiber_pool) {
        fiber_pool = new std::vector<Fiber>();
        fiber_pool->reserve(kMaxThreads);
    }
    while ((int)fiber_pool->size() < n) {
        fiber_pool->emplace_back();
        Fiber& f = fiber_pool->back();
        f.started = 0;
        f.stack = take_stack();
    }
    return fiber_pool->data();
}

inline void fail(Launch* L, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
inline void fail(Launch* L, const char* fmt, ...) {
    if (L->failed) return;
    L->failed = 1;
    int n = snprintf(L->error, sizeof L->error, "kernel %s: ", L->kernel);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(L->error + n, sizeof L->error - n, fmt, ap);
    va_end(ap);
}

// Every fiber runs this forever: the kernel body for the current block, then "done" back to the
// scheduler, which resumes it at the next block. It never returns.
inline void fiber_main() {
    for (;;) {
        Fiber* f = current;
        f->launch->invoke(f->launch->args);
        f = current;
        f->state = DONE;
        yield(f);
    }
}

__attribute__((noinline)) inline void run_fiber(Launch* L, Fiber* f) {
    if (!_setjmp(L->sched)) {
        current = f;
        if (!f->started) {
            f->started = 1;
            setcontext(&f->uc);
        }
        _longjmp(f->jb, 1);
    }
}

inline const char* op_name(int op) {
    static const char* names[] = {"__syncwarp", "__shfl_down_sync", "__shfl_up_sync", "__shfl_xor_sync",
                                  "__shfl_sync", "__all_sync", "__any_sync", "__ballot_sync"};
    return names[op];
}

// A warp whose live lanes all wait in the same warp operation: compute every lane's result and let
// them go. Returns true if it released the warp; reports divergence when it can never be released.
inline bool resolve_warp(Launch* L, int w) {
    Fiber* F = L->fibers;
    int lo = w * 32, hi = std::min(L->nthreads, lo + 32), n = hi - lo;
    int waiting = 0, live = 0, op = -1;
    for (int i = lo; i < hi; ++i) {
        if (F[i].state == READY) return false;
        if (F[i].state != DONE) ++live;
        if (F[i].state == AT_WARP) {
            if (op >= 0 && F[i].op != op) {
                fail(L, "warp divergence: lanes of warp %d of block (%u,%u,%u) wait in different warp "
                     "operations (%s and %s)", w, L->bidx.x, L->bidx.y, L->bidx.z, op_name(op), op_name(F[i].op));
                return false;
            }
            op = F[i].op;
            ++waiting;
        }
    }
    if (!waiting) return false;
    if (waiting != n) {
        for (int i = lo; i < hi; ++i) {
            if (F[i].state != AT_WARP) {
                fail(L, "warp divergence: %s in warp %d of block (%u,%u,%u) while thread (%u,%u,%u) %s",
                     op_name(op), w, L->bidx.x, L->bidx.y, L->bidx.z, F[i].tid.x, F[i].tid.y, F[i].tid.z,
                     F[i].state == DONE ? "has exited" : "waits at __syncthreads");
                return false;
            }
        }
    }
    (void)live;
    uint32_t ballot = 0;
    for (int i = lo; i < hi; ++i) if (F[i].value & 1) ballot |= 1u << (i - lo);
    for (int i = lo; i < hi; ++i) {
        Fiber& f = F[i];
        int lane = i - lo, width = f.width, base = (lane / width) * width, src = lane;
        switch (op) {
            case SHFL_DOWN: src = lane + f.arg; if (src >= base + width) src = lane; break;
            case SHFL_UP: src = lane - f.arg; if (src < base) src = lane; break;
            case SHFL_XOR: src = lane ^ f.arg; if (src >= base + width) src = lane; break;
            case SHFL_IDX: src = base + ((f.arg % width + width) % width); break;
            default: break;
        }
        if (src >= n) src = lane;          // a lane past the end of a partial warp: keep one's own
        if (op == VOTE_ALL) f.result = ballot == ((n == 32) ? 0xffffffffu : ((1u << n) - 1));
        else if (op == VOTE_ANY) f.result = ballot != 0;
        else if (op == VOTE_BALLOT) f.result = ballot;
        else f.result = F[lo + src].value;
    }
    for (int i = lo; i < hi; ++i) F[i].state = READY;
    return true;
}

// Run one block to completion: fibers until each waits or exits, then release warps and barriers.
inline void run_block(Launch* L) {
    Fiber* F = L->fibers;
    int nwarps = (L->nthreads + 31) / 32;
    for (int i = 0; i < L->nthreads; ++i) F[i].state = READY;
    for (;;) {
        bool progress = false;
        for (int i = 0; i < L->nthreads; ++i) {
            if (F[i].state == READY) {
                run_fiber(L, &F[i]);
                progress = true;
            }
        }
        if (L->failed) return;
        for (int w = 0; w < nwarps; ++w) progress |= resolve_warp(L, w);
        if (L->failed) return;
        if (progress) continue;
        int done = 0, barrier = 0, line = -1;
        const Fiber* first_done = nullptr;
        for (int i = 0; i < L->nthreads; ++i) {
            if (F[i].state == DONE) { ++done; if (!first_done) first_done = &F[i]; }
            if (F[i].state == AT_BARRIER) {
                if (line >= 0 && F[i].line != line) {
                    fail(L, "barrier divergence in block (%u,%u,%u): threads wait at __syncthreads on "
                         "line %d and on line %d", L->bidx.x, L->bidx.y, L->bidx.z, line, F[i].line);
                    return;
                }
                line = F[i].line;
                ++barrier;
            }
        }
        if (done == L->nthreads) return;
        if (barrier + done == L->nthreads && done == 0) {
            for (int i = 0; i < L->nthreads; ++i) F[i].state = READY;
            continue;
        }
        if (barrier && done) {
            fail(L, "barrier divergence in block (%u,%u,%u): thread (%u,%u,%u) exited while %d thread(s) "
                 "wait at __syncthreads on line %d", L->bidx.x, L->bidx.y, L->bidx.z, first_done->tid.x,
                 first_done->tid.y, first_done->tid.z, barrier, line);
            return;
        }
        fail(L, "barrier divergence in block (%u,%u,%u): threads wait at __syncthreads (line %d) while "
             "others wait in a warp operation", L->bidx.x, L->bidx.y, L->bidx.z, line);
        return;
    }
}

// ------------------------------------------------------------------------ out-of-bounds checking
inline void on_fault(int sig, siginfo_t* si, void* uctx);
inline struct sigaction previous_segv, previous_bus;

inline void install_handler() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction sa;
        std::memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fault;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, &previous_segv);
        sigaction(SIGBUS, &sa, &previous_bus);
    });
}

// The handler runs on the alternate signal stack (a fiber that overflowed has none left).
inline thread_local char* alt_stack = nullptr;
inline void ensure_alt_stack() {
    if (alt_stack) return;
    stack_t old;
    if (sigaltstack(nullptr, &old) == 0 && !(old.ss_flags & SS_DISABLE) && old.ss_size >= 65536) {
        alt_stack = (char*)old.ss_sp;      // the thread already has one (Python's faulthandler)
        return;
    }
    size_t size = 256 * 1024;
    alt_stack = (char*)malloc(size);
    stack_t ss;
    ss.ss_sp = alt_stack;
    ss.ss_size = size;
    ss.ss_flags = 0;
    sigaltstack(&ss, nullptr);
}

inline void on_fault(int sig, siginfo_t* si, void* uctx) {
    Launch* L = active;
    if (L && L->running) {
        L->running = 0;
        L->faulted = 1;
        L->fault_addr = si->si_addr;
#if defined(__x86_64__)
        L->fault_write = (((ucontext_t*)uctx)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
        L->fault_write = -1;
#endif
        L->fault_fiber = current;
        siglongjmp(L->escape, 1);
    }
    // Not a kernel of this module: hand the signal to whoever had it before.
    struct sigaction* prev = sig == SIGSEGV ? &previous_segv : &previous_bus;
    if (prev->sa_flags & SA_SIGINFO) {
        prev->sa_sigaction(sig, si, uctx);
    } else if (prev->sa_handler != SIG_IGN && prev->sa_handler != SIG_DFL) {
        prev->sa_handler(sig);
    } else {
        sigaction(sig, prev, nullptr);     // return and fault again under the old disposition
    }
}

// Staging mappings (guard page, data pages, guard page) are kept per host thread and reused:
// mapping and unmapping on every launch cost more than the launch itself. Small ones only.
struct Mapping { char* map; size_t len; };
inline thread_local std::vector<Mapping> mapping_pool;
static const size_t kKeepMapping = 4u << 20;

inline char* take_mapping(size_t len) {
    for (size_t i = 0; i < mapping_pool.size(); ++i) {
        if (mapping_pool[i].len == len) {
            char* m = mapping_pool[i].map;
            mapping_pool[i] = mapping_pool.back();
            mapping_pool.pop_back();
            return m;
        }
    }
    size_t pg = page_size();
    char* m = (char*)mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    mprotect(m, pg, PROT_NONE);
    mprotect(m + len - pg, pg, PROT_NONE);
    return m;
}

inline void give_mapping(char* m, size_t len) {
    if (len <= kKeepMapping && mapping_pool.size() < 32) mapping_pool.push_back(Mapping{m, len});
    else munmap(m, len);
}

// Copy each pointer argument into its own mapping whose data ends at a PROT_NONE page. Arguments
// whose ranges overlap (an in-place op passes x and y as one buffer) share one staging region.
inline bool stage(Launch* L, int nargs, void** args, const long long* extents, const int* writable,
                  void** staged_vals) {
    size_t pg = page_size();
    for (int i = 0; i < nargs; ++i) {
        staged_vals[i] = nullptr;
        if (extents[i] < 0) continue;
        char* p = *(char**)args[i];
        if (!p) continue;
        char* e = p + extents[i];
        bool merged = false;
        for (Region& r : L->regions) {
            if (p <= r.user + r.nbytes && r.user <= e && r.map == nullptr) {
                char* lo = std::min(p, r.user);
                char* hi = std::max(e, r.user + r.nbytes);
                r.user = lo;
                r.nbytes = hi - lo;
                r.writable |= writable[i] != 0;
                merged = true;
                break;
            }
        }
        if (!merged) L->regions.push_back(Region{p, extents[i], nullptr, 0, nullptr, writable[i] != 0, i});
    }
    for (Region& r : L->regions) {
        size_t data_pages = ((size_t)r.nbytes + pg - 1) / pg;
        r.map_len = (data_pages + 2) * pg;
        r.map = take_mapping(r.map_len);
        if (!r.map) { fail(L, "cannot map %lld staging bytes", r.nbytes); return false; }
        char* end = r.map + r.map_len - pg;
        r.data = end - r.nbytes;
        std::memset(r.map + pg, kCanary, r.data - (r.map + pg));
        std::memcpy(r.data, r.user, r.nbytes);
    }
    for (int i = 0; i < nargs; ++i) {
        if (extents[i] < 0) continue;
        char* p = *(char**)args[i];
        if (!p) continue;
        for (Region& r : L->regions) {
            if (p >= r.user && p <= r.user + r.nbytes) { staged_vals[i] = r.data + (p - r.user); args[i] = &staged_vals[i]; break; }
        }
    }
    return true;
}

inline void describe_fault(Launch* L) {
    size_t pg = page_size();
    char* a = (char*)L->fault_addr;
    const char* what = L->fault_write == 1 ? "write" : (L->fault_write == 0 ? "read" : "access");
    char who[160] = "";
    if (Fiber* f = L->fault_fiber)
        snprintf(who, sizeof who, " by thread (%u,%u,%u) of block (%u,%u,%u)", f->tid.x, f->tid.y, f->tid.z,
                 L->bidx.x, L->bidx.y, L->bidx.z);
    for (Region& r : L->regions) {
        char* end = r.data + r.nbytes;
        if (a >= end && a < end + pg) {
            fail(L, "out-of-bounds %s %lld byte(s) past the end of argument '%s' (%lld bytes)%s", what,
                 (long long)(a - end), L->argnames[r.first_arg], r.nbytes, who);
            return;
        }
        if (a >= r.map && a < r.map + pg) {
            fail(L, "out-of-bounds %s before the start of argument '%s' (%lld bytes)%s", what,
                 L->argnames[r.first_arg], r.nbytes, who);
            return;
        }
    }
    if (Fiber* f = L->fault_fiber) {
        if (a < f->stack && a >= f->stack - (long)pg) { fail(L, "stack overflow of a CUDA thread%s", who); return; }
    }
    fail(L, "illegal %s at address %p (not within any argument)%s", what, L->fault_addr, who);
}

inline void unstage(Launch* L, bool copy_back) {
    size_t pg = page_size();
    for (Region& r : L->regions) {
        if (!r.map) continue;
        if (copy_back && !L->failed) {
            for (char* c = r.map + pg; c < r.data; ++c) {
                if ((unsigned char)*c != kCanary) {
                    fail(L, "out-of-bounds write %lld byte(s) before the start of argument '%s' (%lld bytes)",
                         (long long)(r.data - c), L->argnames[r.first_arg], r.nbytes);
                    break;
                }
            }
        }
        if (copy_back && !L->failed && r.writable) std::memcpy(r.user, r.data, r.nbytes);
        give_mapping(r.map, r.map_len);
        r.map = nullptr;
    }
}

inline thread_local char last_error[1024];

// One launch: stage the arguments, start one fiber per thread of a block, run the grid's blocks.
// Returns 0, or -1 with the message in last_error.
inline int launch(const char* kernel, const char* const* argnames, const unsigned* dims, int nargs,
                  void** user_args, const long long* extents, const int* writable, int check,
                  void (*invoke)(void**)) {
    last_error[0] = 0;
    Launch* L = new Launch();
    L->kernel = kernel;
    L->argnames = argnames;
    L->gdim = dim3(dims[0], dims[1], dims[2]);
    L->bdim = dim3(dims[3], dims[4], dims[5]);
    L->nthreads = (int)((long long)dims[3] * dims[4] * dims[5]);
    L->invoke = invoke;
    L->failed = 0;
    if (L->nthreads <= 0 || L->nthreads > 1024 || dims[0] == 0 || dims[1] == 0 || dims[2] == 0) {
        fail(L, "invalid launch configuration grid (%u,%u,%u) block (%u,%u,%u): a block has 1 to 1024 "
             "threads and every grid dimension is at least 1", dims[0], dims[1], dims[2], dims[3], dims[4], dims[5]);
        std::strcpy(last_error, L->error);
        delete L;
        return -1;
    }
    std::vector<void*> args(user_args, user_args + nargs), vals(nargs);
    L->args = args.data();
    install_handler();
    ensure_alt_stack();
    if (check && !stage(L, nargs, L->args, extents, writable, vals.data())) {
        unstage(L, false);
        std::strcpy(last_error, L->error);
        delete L;
        return -1;
    }
    Fiber* fibers = fibers_for(L->nthreads);
    L->fibers = fibers;
    for (int i = 0; i < L->nthreads; ++i) {
        Fiber& f = fibers[i];
        f.launch = L;
        f.linear = i;
        f.lane = i % 32;
        f.warp = i / 32;
        f.tid.x = i % L->bdim.x;
        f.tid.y = (i / L->bdim.x) % L->bdim.y;
        f.tid.z = i / (L->bdim.x * L->bdim.y);
        if (!f.stack) { fail(L, "cannot map a stack for thread %d", i); break; }
        if (!f.started) {
            getcontext(&f.uc);
            f.uc.uc_stack.ss_sp = f.stack;
            f.uc.uc_stack.ss_size = kStack;
            f.uc.uc_link = nullptr;
            makecontext(&f.uc, (void (*)())fiber_main, 0);
        }
    }
    Launch* outer = active;
    active = L;
    if (!L->failed) {
        if (sigsetjmp(L->escape, 1) == 0) {
            L->running = 1;
            for (unsigned z = 0; z < L->gdim.z && !L->failed; ++z)
                for (unsigned y = 0; y < L->gdim.y && !L->failed; ++y)
                    for (unsigned x = 0; x < L->gdim.x && !L->failed; ++x) {
                        L->bidx.x = x; L->bidx.y = y; L->bidx.z = z;
                        run_block(L);
                    }
            L->running = 0;
        } else {
            describe_fault(L);
        }
    }
    active = outer;
    current = nullptr;
    // A fiber stopped anywhere but at the end of a block (a barrier, a fault) cannot be resumed
    // into another launch: it starts afresh next time.
    for (int i = 0; i < L->nthreads; ++i) if (fibers[i].state != DONE) fibers[i].started = 0;
    unstage(L, true);
    int rc = L->failed ? -1 : 0;
    if (rc) std::strcpy(last_error, L->error);
    delete L;
    return rc;
}

}  // namespace emu

extern "C" __attribute__((visibility("default"))) const char* emu_last_error() { return emu::last_error; }
