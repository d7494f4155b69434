"""``mx.nd.random``: uniform, normal, randint and shuffle with MXNet 1.x signatures.

Scalar parameters run ``_random_<dist>`` (one distribution for the whole output); NDArray
parameters run ``_sample_<dist>`` (one distribution per element of the parameter arrays), as in
MXNet's ``python/mxnet/ndarray/random.py``.
"""
from __future__ import annotations

from ..base import MXNetError, _Null
from ..ops import registry
from . import imperative as _imperative
from .ndarray import NDArray
from .register import _context_arg

__all__ = ["uniform", "normal", "randint", "shuffle"]


def _run(op_name: str, inputs, out, ctx, kwargs) -> NDArray:
    op = registry.get(op_name)
    kwargs = {k: v for k, v in kwargs.items() if v is not _Null}
    ctx = _context_arg(ctx)
    if "ctx" in op.params and ctx is not None:
        kwargs["ctx"] = str(ctx)
    pkey, params = _imperative.parse_params(op, kwargs)
    res = _imperative.invoke(op, pkey, params, inputs, out, ctx)[0]
    return out if out is not None else res


def _random_helper(dist: str, names, params, shape, dtype, ctx, out, kwargs) -> NDArray:
    if all(not isinstance(p, NDArray) for p in params):
        kwargs.update(zip(names, params))
        if shape is _Null:
            # NOTE: as MXNet's front end: no shape means one sample, shape (1,), or out='s shape
            shape = 1 if out is None else out.shape
        return _run(f"_random_{dist}", [], out, ctx, dict(kwargs, shape=shape, dtype=dtype))
    if all(isinstance(p, NDArray) for p in params):
        return _run(f"_sample_{dist}", list(params), out, None, dict(kwargs, shape=shape, dtype=dtype))
    raise MXNetError(f"random.{dist}: {', '.join(names)} must all be numbers or all be NDArrays, got "
                     f"{[type(p).__name__ for p in params]}")


def uniform(low=0, high=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs) -> NDArray:
    """Samples from the uniform distribution on ``[low, high)``.

    With NDArray ``low``/``high``, draws ``shape`` samples for each of their elements.
    """
    return _random_helper("uniform", ("low", "high"), (low, high), shape, dtype, ctx, out, kwargs)


def normal(loc=0, scale=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs) -> NDArray:
    """Samples from the normal distribution N(``loc``, ``scale``²).

    A negative ``scale`` is an error raised at the next wait (as MXNet reports it).
    """
    return _random_helper("normal", ("loc", "scale"), (loc, scale), shape, dtype, ctx, out, kwargs)


def randint(low, high, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs) -> NDArray:
    """Samples integers uniformly from ``[low, high)`` (int32 unless ``dtype`` says otherwise)."""
    if isinstance(low, NDArray) or isinstance(high, NDArray):
        raise MXNetError("random.randint: low and high must be numbers, got "
                         f"{type(low).__name__} and {type(high).__name__}")
    return _random_helper("randint", ("low", "high"), (low, high), shape, dtype, ctx, out, kwargs)


def shuffle(data: NDArray, **kwargs) -> NDArray:
    """A copy of ``data`` with its rows (axis 0) in random order."""
    return _run("_shuffle", [data], kwargs.pop("out", None), None, kwargs)
