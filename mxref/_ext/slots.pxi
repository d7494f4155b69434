# ``__slots__`` fields read and written by offset (included by dispatch_core and storage_core).
#
# NDArray, Chunk, _Plan, Context and Handle keep their fields in ``__slots__``. Python reaches one
# through the class's member descriptor (a type lookup, then the descriptor's get): ~30 ns a time,
# and one ``c = a + b`` reads or writes some forty of them. The descriptor knows where the field
# lives inside the object: ``_slot`` asks it once (at import), ``_get``/``_put`` then read and
# write that pointer exactly as the descriptor's own get and set do.
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF


cdef extern from "Python.h":
    ctypedef struct PyMemberDef:
        const char* name
        int type
        Py_ssize_t offset
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member
    object PyType_GenericAlloc(type t, Py_ssize_t nitems)
    object PyObject_GenericGetDict(object obj, void* context)

cdef extern from "structmember.h":
    int T_OBJECT_EX


cdef Py_ssize_t _slot(object cls, str name) except -1:
    """The byte offset of ``cls``'s ``__slots__`` field ``name`` (an object field, as all are)."""
    for klass in cls.__mro__:
        descr = klass.__dict__.get(name)
        if descr is not None:
            break
    if type(descr).__name__ != "member_descriptor":
        raise TypeError(f"{cls.__name__}.{name} is not a __slots__ field")
    cdef PyMemberDef* member = (<PyMemberDescrObject*>descr).d_member
    if member.type != T_OBJECT_EX:
        raise TypeError(f"{cls.__name__}.{name} is not an object field")
    return member.offset


cdef inline object _get(object obj, Py_ssize_t offset):
    """``obj.<field at offset>``; ``AttributeError`` when it was never set, as Python raises."""
    cdef PyObject* value = (<PyObject**>((<char*><PyObject*>obj) + offset))[0]
    if value is NULL:
        _unset(obj)
    return <object>value


cdef int _unset(object obj) except -1:
    # Apart from ``_get`` so that the compiler inlines ``_get`` (a pointer read and a test).
    raise AttributeError(f"{type(obj).__name__} object has an unset field")


cdef inline void _put(object obj, Py_ssize_t offset, object value):
    """``obj.<field at offset> = value`` (the old value dropped after the new one is in place)."""
    cdef PyObject** field = <PyObject**>((<char*><PyObject*>obj) + offset)
    cdef PyObject* old = field[0]
    Py_INCREF(value)
    field[0] = <PyObject*>value
    Py_XDECREF(old)


cdef inline dict _instance_dict(object obj):
    """``obj.__dict__`` without the attribute lookup (the getter itself): for objects without
    ``__slots__`` whose several attributes one call reads, each then one dict lookup."""
    return <dict>PyObject_GenericGetDict(obj, NULL)
