"""MXNet's ``mxnet.util``: the NumPy-semantics switches, environment access, and small decorators.

MXNet 1.9.1 has two global modes for its ``mx.np`` front end: NumPy *shape* semantics (``()`` is
a scalar, ``0`` a zero-size dimension, ``-1`` unknown) and NumPy *array* semantics (Gluon makes
``mx.np.ndarray`` parameters). mxref implements MXNet's legacy ``mx.nd`` / ``mx.sym`` front ends.
The shape switch works where legacy code meets it (shape inference's markers, the JSON flag,
the array file format; ``set_np_shape``) and in ``mx.nd``: off (legacy), ``mx.nd.zeros/ones`` of a
shape ``()`` or with a ``0`` raise ``MXNetError`` (an unknown shape), as in MXNet; on, they make
real scalars and zero-size arrays that ``mx.nd`` operators run on. There is no ``mx.np`` array
type, so NumPy *array* semantics stays off: the query answers ``False``, scopes that keep it off
work, and anything that would turn it on raises ``MXNetError`` instead of running with the wrong semantics.
"""
from __future__ import annotations

import functools
import inspect
import os
import threading
from typing import Optional

from .base import MXNetError

__all__ = ["is_np_shape", "set_np_shape", "np_shape", "use_np_shape", "is_np_array", "np_array",
           "use_np_array", "use_np", "set_np", "reset_np", "getenv", "setenv", "set_module",
           "get_gpu_count", "get_gpu_memory"]


def _no_numpy_mode(what: str) -> MXNetError:
    return MXNetError(f"{what}: mxref has no mx.np front end (NumPy-compatible arrays); it implements "
                      "MXNet's legacy mx.nd / mx.sym front ends (NumPy shape semantics: set_np_shape)")


# -- NumPy shape semantics ---------------------------------------------------------------------
# MXNet's Imperative::is_np_shape: off (0), on for this thread (1) or on for every thread (2).
_np_shape_global = False
_np_shape_local = threading.local()


_np_shape_state = threading.local()


def is_np_shape() -> bool:
    """Whether NumPy shape semantics is on in this thread (see ``set_np_shape``)."""
    return _np_shape_global or getattr(_np_shape_local, "value", False)


def np_shape_mode() -> int:
    """0 (off), 1 (on in this thread) or 2 (on in every thread), as MXNet's C API reports it."""
    return 2 if _np_shape_global else int(getattr(_np_shape_local, "value", False))


def set_np_shape(active) -> bool:
    """Turn NumPy shape semantics on or off and return the previous state (of this thread).

    ``active`` is a bool (this thread) or MXNet's int: 0 off (also the global switch), 1 this
    thread, 2 every thread. What it changes in mxref: shape inference reports unknown
    dimensions as -1 and unknown shapes as ``None`` (and reads -1 as unknown), ``tojson`` marks
    the graph ``is_np_shape``, and ``save``/``load`` use MXNet's V3 array format (the one that
    holds 0-d arrays), refusing files saved in the other mode, as MXNet does.

    NOTE: mxref's shape inference keeps one marker for an unknown dimension, 0; so a real
    zero-size dimension given to ``infer_shape`` in this mode is taken as unknown.
    """
    global _np_shape_global
    prev = is_np_shape()
    mode = int(active) if isinstance(active, (bool, int)) else (1 if active else 0)
    if mode not in (0, 1, 2):
        raise MXNetError(f"set_np_shape: expected 0 (off), 1 (this thread) or 2 (global), got {active!r}")
    if mode == 2:
        _np_shape_global = True
        _np_shape_local.value = True
    elif mode == 1:
        _np_shape_local.value = True
    else:
        _np_shape_global = False
        _np_shape_local.value = False
    return prev


class _NumpyShapeScope:
    """``with`` scope for NumPy shape semantics (use ``np_shape(active)``)."""

    def __init__(self, is_np_shape: Optional[bool]):   # noqa: F811 - MXNet's parameter name
        self._enter_is_np_shape = is_np_shape
        self._prev_is_np_shape = None

    def __enter__(self):
        if self._enter_is_np_shape is not None:
            self._prev_is_np_shape = set_np_shape(self._enter_is_np_shape)
        return self

    def __exit__(self, *exc):
        if self._enter_is_np_shape is not None and self._prev_is_np_shape != self._enter_is_np_shape:
            set_np_shape(self._prev_is_np_shape)


def np_shape(active: bool = True) -> _NumpyShapeScope:
    """A scope with NumPy shape semantics ``active`` (in this thread)."""
    return _NumpyShapeScope(active)


def _decorate(func, scope_factory, name: str):
    """Run ``func`` (or every method and property of a class) inside ``scope_factory()``."""
    if inspect.isclass(func):
        members = inspect.getmembers(
            func, predicate=lambda f: inspect.isfunction(f) or inspect.ismethod(f) or isinstance(f, property))
        for attr, method in members:
            if isinstance(method, property):
                setattr(func, attr, property(_decorate(method.__get__, scope_factory, name),
                                             method.__set__, method.__delattr__, method.__doc__))
            else:
                setattr(func, attr, _decorate(method, scope_factory, name))
        return func
    if callable(func):
        @functools.wraps(func)
        def scoped(*args, **kwargs):
            with scope_factory():
                return func(*args, **kwargs)
        return scoped
    raise TypeError(f"{name} can only decorate classes and callable objects, while received a {type(func)}")


def use_np_shape(func):
    """Decorate a function or class to run with NumPy shape semantics (``np_shape(True)``)."""
    return _decorate(func, lambda: np_shape(True), "use_np_shape")


# -- NumPy array semantics ---------------------------------------------------------------------

class _NumpyArrayScope:
    """``with`` scope for NumPy array semantics (use ``np_array(active)``); one stack per thread."""

    _current = threading.local()

    def __init__(self, is_np_array: bool):               # noqa: F811 - MXNet's parameter name
        self._old_scope = None
        self._is_np_array = is_np_array

    def __enter__(self):
        if self._is_np_array:
            raise _no_numpy_mode("np_array(True)")
        if not hasattr(_NumpyArrayScope._current, "value"):
            _NumpyArrayScope._current.value = _NumpyArrayScope(False)
        self._old_scope = _NumpyArrayScope._current.value
        _NumpyArrayScope._current.value = self
        return self

    def __exit__(self, *exc):
        assert self._old_scope is not None
        _NumpyArrayScope._current.value = self._old_scope


def np_array(active: bool = True) -> _NumpyArrayScope:
    """A scope with NumPy array semantics ``active``; entering one with ``active=True`` raises."""
    return _NumpyArrayScope(active)


def is_np_array() -> bool:
    """Whether NumPy array semantics is on in this thread: never in mxref (see the module doc)."""
    current = getattr(_NumpyArrayScope._current, "value", None)
    return bool(current._is_np_array) if current is not None else False


def use_np_array(func):
    """Decorate a function or class to run with NumPy array semantics (raises when called in mxref)."""
    return _decorate(func, lambda: np_array(True), "use_np_array")


def use_np(func):
    """``use_np_shape`` and ``use_np_array`` together (raises when the decorated code runs)."""
    return use_np_shape(use_np_array(func))


def set_np(shape: bool = True, array: bool = True) -> None:
    """Turn NumPy shape/array semantics on or off globally; array semantics cannot be turned on
    in mxref (there is no ``mx.np`` array type)."""
    if not shape and array:
        raise ValueError("NumPy Shape semantics is required in using NumPy array semantics.")
    if array:
        raise _no_numpy_mode(f"set_np(shape={shape}, array={array})")
    set_np_shape(2 if shape else 0)


def reset_np() -> None:
    """Turn NumPy shape and array semantics off."""
    set_np(shape=False, array=False)


# -- environment and small helpers -------------------------------------------------------------

def getenv(name: str) -> Optional[str]:
    """The value of environment variable ``name``, or ``None``.

    MXNet reads the C runtime's copy of the environment; mxref's flags are read from
    ``os.environ``, so this is ``os.environ.get``.
    """
    return os.environ.get(name)


def setenv(name: str, value: Optional[str]) -> None:
    """Set environment variable ``name`` (``None`` unsets it)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def set_module(module: Optional[str]):
    """Decorator that sets ``__module__`` of a function or class (for the names documentation shows)."""
    def decorator(func):
        if module is not None:
            func.__module__ = module
        return func
    return decorator


def get_gpu_count() -> int:
    """Number of GPUs visible to mxref (``mx.context.num_gpus()``)."""
    from .context import num_gpus
    return num_gpus()


def get_gpu_memory(gpu_dev_id: int):
    """``(free, total)`` bytes of GPU ``gpu_dev_id``."""
    from .context import gpu_memory_info
    return gpu_memory_info(gpu_dev_id)
