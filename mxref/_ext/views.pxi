# numpy views over memory another array owns, made through numpy's C API (included by
# dispatch_core and storage_core).
#
# ``np.ndarray(shape, dtype, buffer, offset)`` parses its arguments and asks the buffer for its
# memory through the buffer protocol (~190 ns); ``block[:n]`` goes through the slicing machinery
# (~115 ns). Both only make an array header over memory that ``owner`` already holds: ``_view_of``
# makes that header directly (``PyArray_NewFromDescr`` over the owner's data, then the owner as
# its base, as both Python forms leave it), ~60 ns. Where the Python form would raise (a view
# that does not fit, a read-only owner, an object dtype), it answers ``None`` and the caller
# takes the Python form, which reports the error.
cimport numpy as cnp
from cpython.object cimport PyTypeObject
from cpython.ref cimport Py_INCREF

cnp.import_array()

cdef extern from "numpy/arrayobject.h":
    # Declared here: numpy's own .pxd does not declare it. It steals a reference to ``descr``.
    object PyArray_NewFromDescr(PyTypeObject* subtype, cnp.dtype descr, int nd, cnp.npy_intp* dims,
                                cnp.npy_intp* strides, void* data, int flags, object obj)

cdef enum:
    _MAX_DIMS = 32


cdef object _view_of(object owner, tuple shape, object dtype, Py_ssize_t offset):
    """``np.ndarray(shape, dtype, owner, offset)`` for a writeable C-contiguous numpy ``owner``, or
    ``None`` for the caller to take that Python call."""
    cdef cnp.npy_intp dims[_MAX_DIMS]
    cdef Py_ssize_t nd = len(shape), i, n
    cdef cnp.ndarray o
    cdef cnp.dtype d
    if type(owner) is not cnp.ndarray or not isinstance(dtype, cnp.dtype) or nd > _MAX_DIMS:
        return None
    o = <cnp.ndarray>owner
    d = <cnp.dtype>dtype
    if (not cnp.PyArray_IS_C_CONTIGUOUS(o) or not cnp.PyArray_ISWRITEABLE(o) or offset < 0
            or not (d.type_num <= cnp.NPY_CLONGDOUBLE or d.type_num == cnp.NPY_FLOAT16)):
        return None
    cdef Py_ssize_t room = cnp.PyArray_NBYTES(o) - offset
    n = d.itemsize
    for i in range(nd):
        dims[i] = shape[i]
        if dims[i] < 0 or (dims[i] and n > room // dims[i]):
            return None                 # a negative size, or more bytes than the owner has left
        n *= dims[i]
    if n > room:
        return None
    Py_INCREF(d)                        # PyArray_NewFromDescr steals it
    view = PyArray_NewFromDescr(<PyTypeObject*>cnp.ndarray, d, <int>nd, dims, NULL,
                                <char*>cnp.PyArray_DATA(o) + offset, cnp.NPY_ARRAY_CARRAY, None)
    cnp.set_array_base(<cnp.ndarray>view, o)
    return view
