"""``mx.sym.random``'s samplers with MXNet 1.x's signatures (``python/mxnet/symbol/random.py``).

Number parameters make a ``_random_<dist>`` node, Symbol parameters a ``_sample_<dist>`` node (one
distribution per element of the parameter arrays). ``exponential(scale)`` feeds the operators
the rate ``1/scale`` (an ``_RDivScalar`` node when ``scale`` is a Symbol), and ``multinomial``
returns the log-probabilities too unless ``get_prob=False`` — both as MXNet's front end does.
``register.populate`` puts these functions into the generated ``mx.sym.random`` namespace, next to
the ``_like`` samplers.
"""
from __future__ import annotations

import numbers

from ..base import MXNetError, _Null
from .register import wrapper
from .symbol import Symbol

__all__ = ["uniform", "normal", "randn", "poisson", "exponential", "gamma", "multinomial",
           "negative_binomial", "generalized_negative_binomial", "shuffle", "randint"]


def _random_helper(dist: str, names, params, shape, dtype, kwargs) -> Symbol:
    if all(isinstance(p, Symbol) for p in params):
        return wrapper(f"_sample_{dist}")(*params, shape=shape, dtype=dtype, **kwargs)
    if all(isinstance(p, numbers.Number) for p in params):
        return wrapper(f"_random_{dist}")(shape=shape, dtype=dtype, **dict(zip(names, params)), **kwargs)
    raise MXNetError(f"random.{dist}: {', '.join(names)} must be all Symbols or all numbers, got "
                     f"{[type(p).__name__ for p in params]}")


def uniform(low=0, high=1, shape=_Null, dtype=_Null, **kwargs) -> Symbol:
    """Samples from U[``low``, ``high``)."""
    return _random_helper("uniform", ("low", "high"), (low, high), shape, dtype, kwargs)


def normal(loc=0, scale=1, shape=_Null, dtype=_Null, **kwargs) -> Symbol:
    """Samples from N(``loc``, ``scale``²)."""
    return _random_helper("normal", ("loc", "scale"), (loc, scale), shape, dtype, kwargs)


def randn(*shape, **kwargs) -> Symbol:
    """Samples from N(``loc``, ``scale``²) with the shape given positionally."""
    loc, scale, dtype = kwargs.pop("loc", 0), kwargs.pop("scale", 1), kwargs.pop("dtype", _Null)
    return _random_helper("normal", ("loc", "scale"), (loc, scale), shape, dtype, kwargs)


def poisson(lam=1, shape=_Null, dtype=_Null, **kwargs) -> Symbol:
    """Samples from the Poisson distribution with rate ``lam``."""
    return _random_helper("poisson", ("lam",), (lam,), shape, dtype, kwargs)


def exponential(scale=1, shape=_Null, dtype=_Null, **kwargs) -> Symbol:
    """Samples from the exponential distribution with mean ``scale``."""
    return _random_helper("exponential", ("lam",), (1.0 / scale,), shape, dtype, kwargs)


def gamma(alpha=1, beta=1, shape=_Null, dtype=_Null, **kwargs) -> Symbol:
    """Samples from the gamma distribution with shape ``alpha`` and scale ``beta``."""
    return _random_helper("gamma", ("alpha", "beta"), (alpha, beta), shape, dtype, kwargs)


def negative_binomial(k=1, p=1, shape=_Null, dtype=_Null, **kwargs) -> Symbol:
    """Samples the number of failures before ``k`` successes of probability ``p``."""
    return _random_helper("negative_binomial", ("k", "p"), (k, p), shape, dtype, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=_Null, dtype=_Null, **kwargs) -> Symbol:
    """Samples the negative binomial with mean ``mu`` and dispersion ``alpha``."""
    return _random_helper("generalized_negative_binomial", ("mu", "alpha"), (mu, alpha), shape,
                          dtype, kwargs)


def multinomial(data, shape=_Null, get_prob=True, dtype="int32", **kwargs) -> Symbol:
    """Class indices drawn from the distributions in ``data``'s last axis (and their
    log-probabilities, the second output, unless ``get_prob=False``)."""
    return wrapper("_sample_multinomial")(data, shape=shape, get_prob=get_prob, dtype=dtype, **kwargs)


def shuffle(data, **kwargs) -> Symbol:
    """``data`` with its first axis randomly permuted."""
    return wrapper("_shuffle")(data, **kwargs)


def randint(low, high, shape=_Null, dtype=_Null, **kwargs) -> Symbol:
    """Integers drawn uniformly from [``low``, ``high``)."""
    return _random_helper("randint", ("low", "high"), (low, high), shape, dtype, kwargs)
