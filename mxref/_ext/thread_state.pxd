# The compiled per-thread worker state (thread_state.pyx); engine_core cimports it to name and
# unname the op it runs on the pushing thread without an attribute lookup (``Py_tss_t`` is one
# of Cython's built-in types).


cdef class WorkerState:
    cdef Py_tss_t name_key       # the thread's op name: a PyObject* holding a reference, or NULL
    cdef Py_tss_t inline_key     # NULL, or non-NULL inside ``inline_scope``
    cdef object swap_op_name(self, object name)
