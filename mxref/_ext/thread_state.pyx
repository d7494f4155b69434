# cython: language_level=3
"""Cython twin of ``engine.base.worker_state``: the engine's per-thread state in C thread storage.

Each thread that runs an engine op names it here (``op_name``), so that a blocking wait issued
from inside the op is refused instead of waiting for itself; ``inline`` marks a thread inside
``inline_scope``. The pure-Python twin is a ``threading.local`` with the same two attributes.
Every push on the pushing thread (the idle run) sets and restores the name: a ``threading.local``
finds the thread's dict on each access (~0.15 µs per set), a thread-specific-storage slot is one
pointer read. ``engine_core`` cimports the class and calls ``swap_op_name`` directly.

Attribute access is the same as the twin's for the two attributes; any other attribute is an
``AttributeError`` (the engine keeps nothing else here).
"""
from cpython.pythread cimport PyThread_tss_create, PyThread_tss_delete, PyThread_tss_get, PyThread_tss_set
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF

IMPLEMENTATION = "cython"


cdef class WorkerState:
    """Per-thread ``op_name`` (default ``None``) and ``inline`` (default ``False``)."""

    def __cinit__(self):
        if PyThread_tss_create(&self.name_key) != 0 or PyThread_tss_create(&self.inline_key) != 0:
            raise MemoryError("thread_state: no thread-specific storage key left")

    def __dealloc__(self):
        # NOTE: names other threads still hold are not released (no key can be walked across
        # threads); every engine restores ``None`` once its op ends, so none normally remains.
        Py_XDECREF(<PyObject*>PyThread_tss_get(&self.name_key))
        PyThread_tss_delete(&self.name_key)
        PyThread_tss_delete(&self.inline_key)

    cdef object swap_op_name(self, object name):
        """Set this thread's op name (``None`` clears it) and return the one it replaces."""
        cdef PyObject* old = <PyObject*>PyThread_tss_get(&self.name_key)
        if name is None:
            PyThread_tss_set(&self.name_key, NULL)
        else:
            Py_INCREF(name)                 # the slot holds a reference
            PyThread_tss_set(&self.name_key, <void*>name)
        if old is NULL:
            return None
        result = <object>old                # a new reference for the caller ...
        Py_XDECREF(old)                     # ... and the slot's is dropped
        return result

    @property
    def op_name(self):
        """The engine op this thread is running now, ``None`` outside one."""
        cdef PyObject* p = <PyObject*>PyThread_tss_get(&self.name_key)
        return None if p is NULL else <object>p

    @op_name.setter
    def op_name(self, value):
        self.swap_op_name(value)

    @op_name.deleter
    def op_name(self):
        self.swap_op_name(None)

    @property
    def inline(self):
        """Whether this thread is inside ``inline_scope``."""
        return PyThread_tss_get(&self.inline_key) is not NULL

    @inline.setter
    def inline(self, value):
        PyThread_tss_set(&self.inline_key, <void*>1 if value else NULL)

    @inline.deleter
    def inline(self):
        PyThread_tss_set(&self.inline_key, NULL)
