# The pool's C entry points (storage_core.pyx has the bodies): ``dispatch_core`` allocates a fresh
# output and ``engine_core`` frees a dropped one through these, as C calls, when the pool's
# ``_lend`` / ``_give_back`` are this module's ``lend`` / ``take_back``.

cdef object lend_hit(object pool, Py_ssize_t nbytes)
cdef bint take_back_hit(object pool, object handle) except -1
