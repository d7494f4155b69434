"""``mx.nd.random``: the samplers with MXNet 1.x's signatures (``python/mxnet/ndarray/random.py``).

Number parameters run ``_random_<dist>`` (one distribution for the whole output, ``shape`` samples,
one when no shape is given); NDArray parameters run ``_sample_<dist>`` (``shape`` samples for each
element of the parameter arrays, output shape ``param.shape + shape``). ``exponential`` takes a
*scale* and hands the operators its inverse, the rate ``lam``. The ``_like`` samplers
(``uniform_like(data, low, high)``, ...) are the generated ``_random_<dist>_like`` functions.
"""
from __future__ import annotations

import numbers

from ..base import MXNetError, _Null
from ..ops import registry
from . import imperative as _imperative
from .ndarray import NDArray
from .register import _context_arg, make_function

__all__ = ["uniform", "normal", "randn", "poisson", "exponential", "gamma", "multinomial",
           "negative_binomial", "generalized_negative_binomial", "shuffle", "randint"]


def _run(op_name: str, inputs, out, ctx, kwargs):
    op = registry.get(op_name)
    kwargs = {k: v for k, v in kwargs.items() if v is not _Null}
    ctx = _context_arg(ctx)
    if "ctx" in op.params and ctx is not None:
        kwargs["ctx"] = str(ctx)
    pkey, params = _imperative.parse_params(op, kwargs)
    res = _imperative.invoke(op, pkey, params, inputs, out, ctx)
    if out is not None:
        return out
    return res[0] if len(res) == 1 else list(res)


def _random_helper(dist: str, names, params, shape, dtype, ctx, out, kwargs) -> NDArray:
    if all(isinstance(p, NDArray) for p in params):
        return _run(f"_sample_{dist}", list(params), out, None, dict(kwargs, shape=shape, dtype=dtype))
    if all(isinstance(p, numbers.Number) for p in params):
        kwargs.update(zip(names, params))
        if shape is _Null and out is None:
            shape = 1       # as MXNet's front end: no shape means one sample, or out='s shape
        elif shape is _Null:
            shape = out.shape
        return _run(f"_random_{dist}", [], out, ctx, dict(kwargs, shape=shape, dtype=dtype))
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


def randn(*shape, **kwargs) -> NDArray:
    """Samples from N(``loc``, ``scale``²) with the shape given positionally: ``randn(2, 3, loc=5)``."""
    loc, scale = kwargs.pop("loc", 0), kwargs.pop("scale", 1)
    dtype, ctx, out = kwargs.pop("dtype", _Null), kwargs.pop("ctx", None), kwargs.pop("out", None)
    return _random_helper("normal", ("loc", "scale"), (loc, scale), shape, dtype, ctx, out, kwargs)


def poisson(lam=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs) -> NDArray:
    """Samples from the Poisson distribution with rate ``lam`` (as floats)."""
    return _random_helper("poisson", ("lam",), (lam,), shape, dtype, ctx, out, kwargs)


def exponential(scale=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs) -> NDArray:
    """Samples from the exponential distribution with mean ``scale`` (rate ``1/scale``)."""
    return _random_helper("exponential", ("lam",), (1.0 / scale,), shape, dtype, ctx, out, kwargs)


def gamma(alpha=1, beta=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs) -> NDArray:
    """Samples from the gamma distribution with shape ``alpha`` and scale ``beta`` (mean alpha*beta)."""
    return _random_helper("gamma", ("alpha", "beta"), (alpha, beta), shape, dtype, ctx, out, kwargs)


def negative_binomial(k=1, p=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs) -> NDArray:
    """Samples the number of failures before ``k`` successes of probability ``p`` (as floats)."""
    return _random_helper("negative_binomial", ("k", "p"), (k, p), shape, dtype, ctx, out, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=_Null, dtype=_Null, ctx=None, out=None,
                                  **kwargs) -> NDArray:
    """Samples the negative binomial with mean ``mu`` and dispersion ``alpha`` (variance mu + alpha mu²)."""
    return _random_helper("generalized_negative_binomial", ("mu", "alpha"), (mu, alpha), shape, dtype,
                          ctx, out, kwargs)


def multinomial(data, shape=_Null, get_prob=False, out=None, dtype="int32", **kwargs):
    """Class indices drawn from the distributions in ``data``'s last axis (``_sample_multinomial``).

    With ``get_prob=True`` returns ``[indices, log_probabilities]``; the second output's gradient
    is the score-function estimator (see ``mxref/ops/sample_multinomial.py``).
    """
    return _run("_sample_multinomial", [data], out, None,
                dict(kwargs, shape=shape, get_prob=get_prob, dtype=dtype))


def randint(low, high, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs) -> NDArray:
    """Samples integers uniformly from ``[low, high)`` (int32 unless ``dtype`` says otherwise)."""
    if isinstance(low, NDArray) or isinstance(high, NDArray):
        raise MXNetError("random.randint: low and high must be numbers, got "
                         f"{type(low).__name__} and {type(high).__name__}")
    return _random_helper("randint", ("low", "high"), (low, high), shape, dtype, ctx, out, kwargs)


def shuffle(data: NDArray, **kwargs) -> NDArray:
    """A copy of ``data`` with its rows (axis 0) in random order."""
    return _run("_shuffle", [data], kwargs.pop("out", None), None, kwargs)


def _like_functions() -> None:
    """``uniform_like`` & co.: the generated functions of the ``_random_<dist>_like`` operators."""
    for name in registry.list_ops():
        if name.startswith("_random_") and name.endswith("_like"):
            short = name[len("_random_"):]
            globals()[short] = make_function(registry.get(name), short)


_like_functions()
