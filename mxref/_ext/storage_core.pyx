# cython: language_level=3
"""Pool bookkeeping in Cython: bucket arithmetic and counters in C (twin of ``mxref/storage/bookkeeping.py``).

Same contract as the pure-Python ``PoolCore``: identical keys, block sizes, hit/miss pattern (LIFO
free lists) and counters. Not thread-safe: the pooled manager calls it under its lock.

``lend`` and ``take_back`` are the compiled twins of ``PooledStorageManager._lend_hit`` and
``_take_back``: a pool hit and a pooled free in one C call each (see their docstrings).
"""

from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF

IMPLEMENTATION = "cython"

cdef extern from *:
    int __builtin_clzll(unsigned long long x) nogil

STAT_KEYS = ("bytes_in_use", "bytes_pooled", "peak_bytes_in_use", "num_alloc", "num_free",
             "num_pool_hits", "num_release_all")

cdef enum:
    KIND_NAIVE = 0
    KIND_ROUND = 1
    KIND_UNPOOLED = 2


cdef inline unsigned long long _round_up(unsigned long long x, unsigned long long m) nogil:
    return (x + m - 1) // m * m


cdef inline int _bit_length(unsigned long long x) nogil:
    # Python's int.bit_length(); __builtin_clzll(0) is undefined, hence the test.
    if x == 0:
        return 0
    return 64 - __builtin_clzll(x)


cdef extern from "Python.h":
    Py_ssize_t PyList_GET_SIZE(object lst)
    PyObject* PyList_GET_ITEM(object lst, Py_ssize_t i)
    void Py_SET_SIZE(object o, Py_ssize_t size)


cdef inline object _pop_last(list blocks):
    """``blocks.pop()`` for a non-empty list, keeping the list's memory: ``list.pop`` gives it back
    when the list falls under half full (one block popped, one appended, per array a program
    makes and drops: a realloc each way). The slot is read and the size lowered, as ``pop``
    does before it resizes; the next ``append`` writes into the same memory."""
    cdef Py_ssize_t n = PyList_GET_SIZE(blocks)
    cdef PyObject* item = PyList_GET_ITEM(blocks, n - 1)
    block = <object>item                # a new reference for the caller ...
    Py_SET_SIZE(blocks, n - 1)
    Py_DECREF(block)                    # ... and the list's own one dropped (``block`` holds it)
    return block


cdef class PoolCore:
    """Free lists keyed by bucket, plus usage counters; see ``mxref.storage.bookkeeping.PoolCore``."""

    cdef readonly object strategy
    cdef int kind
    cdef unsigned long long page_size, large_round, cutoff, min_bucket
    cdef dict _free
    cdef public long long bytes_in_use, bytes_pooled, peak_bytes_in_use
    cdef public long long num_alloc, num_free, num_pool_hits, num_release_all

    def __init__(self, strategy):
        kinds = {"Naive": KIND_NAIVE, "Round": KIND_ROUND, "Unpooled": KIND_UNPOOLED}
        if strategy.kind not in kinds:
            raise ValueError(f"storage_core: unknown strategy kind {strategy.kind!r}")
        self.strategy = strategy
        self.kind = kinds[strategy.kind]
        self.page_size = strategy.page_size
        self.large_round = strategy.large_alloc_round_size
        self.cutoff = strategy.cutoff
        self.min_bucket = _bit_length(self.page_size - 1)
        self._free = {}
        self.bytes_in_use = 0
        self.bytes_pooled = 0
        self.peak_bytes_in_use = 0
        self.num_alloc = 0
        self.num_free = 0
        self.num_pool_hits = 0
        self.num_release_all = 0

    cdef inline unsigned long long _bucket(self, unsigned long long size):
        cdef unsigned long long log2_ceil
        if size < 1:
            size = 1
        if self.kind == KIND_NAIVE:
            size = _round_up(size, self.page_size)
            if size > self.large_round:
                size = _round_up(size, self.large_round)
            return size
        if self.kind == KIND_ROUND:
            log2_ceil = _bit_length(size - 1)
            if log2_ceil > self.cutoff:
                # ceil(size / 2^cutoff) - 1 + cutoff: linear buckets above the cutoff
                return ((size + (1ULL << self.cutoff) - 1) >> self.cutoff) - 1 + self.cutoff
            return log2_ceil if log2_ceil > self.min_bucket else self.min_bucket
        return size

    cdef inline unsigned long long _block_size(self, unsigned long long key):
        if self.kind == KIND_ROUND:
            if key <= self.cutoff:
                return 1ULL << key
            return (key - self.cutoff + 1) << self.cutoff
        return key

    def bucket(self, unsigned long long nbytes):
        """The free-list key of a request of ``nbytes``."""
        return self._bucket(nbytes)

    def block_size(self, unsigned long long key):
        """Bytes in each block kept under ``key``."""
        return self._block_size(key)

    cdef inline void _hand_out(self, long long size):
        self.num_alloc += 1
        self.bytes_in_use += size
        if self.bytes_in_use > self.peak_bytes_in_use:
            self.peak_bytes_in_use = self.bytes_in_use

    cpdef take(self, key):
        """Pop the most recently freed block of bucket ``key`` (a hit), or ``None`` (a miss)."""
        cdef list blocks = self._free.get(key)
        if not blocks:
            return None
        block = _pop_last(blocks)
        cdef long long size = self._block_size(key)
        self.bytes_pooled -= size
        self.num_pool_hits += 1
        self._hand_out(size)
        return block

    def track_new(self, unsigned long long key):
        """Count a block of bucket ``key`` that the caller just got from the device."""
        self._hand_out(self._block_size(key))

    def give(self, key, block):
        """Return a live block to its free list; ``False`` means "not pooled, free it yourself"."""
        cdef long long size = self._block_size(key)
        self.num_free += 1
        self.bytes_in_use -= size
        if self.kind == KIND_UNPOOLED:
            return False
        cdef list blocks = self._free.get(key)
        if blocks is None:
            blocks = []
            self._free[key] = blocks
        blocks.append(block)
        self.bytes_pooled += size
        return True

    def forget(self, unsigned long long key):
        """Count a live block of bucket ``key`` that the caller freed on the device (``direct_free``)."""
        self.num_free += 1
        self.bytes_in_use -= <long long>self._block_size(key)

    def drain(self):
        """Empty every free list; return the ``(key, block)`` pairs for the caller to free."""
        out = [(key, block) for key, blocks in self._free.items() for block in blocks]
        self._free.clear()
        self.bytes_pooled = 0
        self.num_release_all += 1
        return out

    def free_counts(self):
        """How many blocks wait in each non-empty free list (for tests and debugging)."""
        return {key: len(blocks) for key, blocks in self._free.items() if blocks}

    def stats(self):
        """The counters named in ``STAT_KEYS``."""
        return {"bytes_in_use": self.bytes_in_use, "bytes_pooled": self.bytes_pooled,
                "peak_bytes_in_use": self.peak_bytes_in_use, "num_alloc": self.num_alloc,
                "num_free": self.num_free, "num_pool_hits": self.num_pool_hits,
                "num_release_all": self.num_release_all}


from mxref.storage.handle import FREED as _FREED, Handle as _Handle

include "slots.pxi"
include "views.pxi"

import numpy
cdef object _UINT8 = numpy.dtype(numpy.uint8)

# Handle's fields, by offset (``slots.pxi``): ``lend`` fills six of them, ``take_back`` reads and
# clears four, per array a program makes and drops.
cdef Py_ssize_t H_BUFFER = _slot(_Handle, "buffer"), H_SIZE = _slot(_Handle, "size")
cdef Py_ssize_t H_CTX = _slot(_Handle, "ctx"), H_BLOCK = _slot(_Handle, "_block")
cdef Py_ssize_t H_KEY = _slot(_Handle, "_key"), H_POOL = _slot(_Handle, "_pool")


def lend(pool, Py_ssize_t nbytes):
    """A handle to a pooled block of ``pool`` for ``nbytes``, or ``None`` when the pool has none
    (a miss: the caller takes ``pool.alloc``). ``PooledStorageManager._lend_hit``'s twin."""
    return lend_hit(pool, nbytes)


cdef object lend_hit(object pool, Py_ssize_t nbytes):
    """``lend``, a C call (storage_core.pxd).

    NOTE: no lock. Every change to the pool (pop, counters) is C code that runs no Python code,
    so under the GIL it is one step for every other thread, the pool's lock holders included
    (whose own steps on the free lists and counters are single C calls too); the handle is built
    after the pool is consistent again, so a collection it triggers may free into the pool.
    """
    cdef dict ns = _instance_dict(pool)           # the pool's fields: _core, _host, ctx
    core_obj = ns.get("_core")
    if type(core_obj) is not PoolCore or nbytes < 0 or nbytes >= (1LL << 60):
        return None                     # (sizes alloc refuses; C arithmetic stays in range)
    cdef PoolCore core = <PoolCore>core_obj
    cdef unsigned long long key = core._bucket(nbytes)
    block = core.take(key)
    if block is None:
        return None
    handle = PyType_GenericAlloc(_Handle, 0)       # PooledStorageManager._handle, field by field
    buffer = block
    if ns["_host"]:                     # ``block[:nbytes]``, made in C
        buffer = _view_of(block, (nbytes,), _UINT8, 0)
        if buffer is None:
            buffer = block[:nbytes]
    _put(handle, H_BUFFER, buffer)
    _put(handle, H_SIZE, nbytes)
    _put(handle, H_CTX, ns["ctx"])
    _put(handle, H_BLOCK, block)
    _put(handle, H_KEY, key)
    _put(handle, H_POOL, pool)
    return handle


def take_back(pool, handle):
    """Put a live ``handle`` of ``pool`` back on its free list; ``False`` when that is not the
    whole story (not lent by ``pool``, freed twice, an unpooled strategy): the caller takes
    ``pool.free``, which raises or frees on the device. ``PooledStorageManager._take_back``'s twin.
    Lock-free for the reason given in ``lend``."""
    return take_back_hit(pool, handle)


cdef bint take_back_hit(object pool, object handle) except -1:
    """``take_back``, a C call (storage_core.pxd)."""
    core_obj = _instance_dict(pool).get("_core")
    if type(handle) is not _Handle or type(core_obj) is not PoolCore or _get(handle, H_POOL) is not pool:
        return False
    cdef PoolCore core = <PoolCore>core_obj
    if core.kind == KIND_UNPOOLED:
        return False
    key, block = _get(handle, H_KEY), _get(handle, H_BLOCK)
    cdef unsigned long long k = key
    cdef list blocks = core._free.get(key)
    if blocks is None:                  # made before any change: allocating may collect
        blocks = core._free[key] = []
    _put(handle, H_POOL, _FREED)
    _put(handle, H_BLOCK, None)
    cdef long long size = core._block_size(k)
    core.num_free += 1
    core.bytes_in_use -= size
    blocks.append(block)
    core.bytes_pooled += size
    _put(handle, H_BUFFER, None)        # last: dropping the view may free memory (no Python code)
    return True
