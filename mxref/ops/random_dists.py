"""The sampling distributions shared by ``_random_<d>``, ``_random_<d>_like`` and ``_sample_<d>``.

One row per distribution: its scalar parameters (the ``_random_`` operators' arguments, MXNet's
names and defaults), the names of the parameter arrays of the per-element ``_sample_`` operator,
a check of the parameter values and a draw from a ``numpy.random.Generator``::

    uniform                     U[low, high)                    mean (low+high)/2
    normal                      N(loc, scale^2)                 mean loc, sd scale
    gamma                       x^(a-1) e^(-x/b) / (Γ(a) b^a)   mean a b (alpha shape, beta scale)
    exponential                 lam e^(-lam x)                  mean 1/lam
    poisson                     lam^x e^-lam / x!               mean lam
    negative_binomial           Γ(x+k)/(x! Γ(k)) p^k (1-p)^x    failures before k successes, mean k(1-p)/p
    generalized_negative_binomial   NB(k=1/alpha, p=1/(1+mu alpha))  mean mu, variance mu + alpha mu^2

The two negative binomials are drawn as MXNet draws them (``src/operator/random/sampler.h``): a
Poisson draw whose rate is itself a Gamma draw, ``Poisson(Gamma(k, (1-p)/p))`` and
``Poisson(Gamma(1/alpha, alpha mu))`` (``alpha = 0`` is the Poisson limit). Parameters arrive as
float64 arrays already broadcast against the output; samples come back as float64 and are cast by
the caller. A bad parameter value is an error raised by the kernel, so it surfaces at the next
wait, as in MXNet.
"""
from __future__ import annotations

from typing import Callable, Dict, NamedTuple, Optional, Tuple

import numpy as np

from ..base import MXNetError
from .registry import Param


class Dist(NamedTuple):
    params: Dict[str, Param]                 # the _random_ operators' distribution arguments
    inputs: Tuple[str, ...]                  # the _sample_ operator's parameter arrays
    check: Callable[..., Optional[str]]      # (*params) -> what is wrong, or None
    draw: Callable[..., np.ndarray]          # (rng, size, *params) -> float64 samples


def _gamma_poisson(rng, size, shape, scale):
    # Poisson(Gamma(shape, scale)); a zero shape is a zero rate (numpy's gamma allows shape 0).
    return rng.poisson(rng.gamma(shape, scale, size=size)).astype(np.float64)


def _nb_draw(rng, size, k, p):
    return _gamma_poisson(rng, size, k, (1.0 - p) / p)


def _gnb_draw(rng, size, mu, alpha):
    alpha = np.broadcast_to(alpha, size)
    safe = np.where(alpha > 0, alpha, 1.0)
    rate = np.where(alpha > 0, rng.gamma(1.0 / safe, safe * mu, size=size), mu)
    return rng.poisson(rate).astype(np.float64)


def _bad(cond, what: str) -> Optional[str]:
    return what if np.any(cond) else None


def _f(default: float, doc: str) -> Param:
    return Param("float", default, doc=doc)


DISTS: Dict[str, Dist] = {
    "uniform": Dist(
        {"low": _f(0.0, "Lower bound of the distribution."),
         "high": _f(1.0, "Upper bound of the distribution.")}, ("low", "high"),
        lambda lo, hi: _bad(lo > hi, "low must be less or equal to high"),
        lambda rng, size, lo, hi: rng.uniform(lo, hi, size=size)),
    "normal": Dist(
        {"loc": _f(0.0, "Mean of the distribution."),
         "scale": _f(1.0, "Standard deviation of the distribution.")}, ("mu", "sigma"),
        lambda mu, sd: _bad(sd < 0, "scale must be non-negative"),
        lambda rng, size, mu, sd: rng.normal(mu, sd, size=size)),
    "gamma": Dist(
        {"alpha": _f(1.0, "Alpha parameter (shape) of the gamma distribution."),
         "beta": _f(1.0, "Beta parameter (scale) of the gamma distribution.")}, ("alpha", "beta"),
        lambda a, b: _bad((a <= 0) | (b <= 0), "alpha and beta must be positive"),
        lambda rng, size, a, b: rng.gamma(a, b, size=size)),
    "exponential": Dist(
        {"lam": _f(1.0, "Lambda parameter (rate) of the exponential distribution.")}, ("lam",),
        lambda lam: _bad(lam <= 0, "lam must be positive"),
        lambda rng, size, lam: rng.exponential(1.0 / lam, size=size)),
    "poisson": Dist(
        {"lam": _f(1.0, "Lambda parameter (rate) of the Poisson distribution.")}, ("lam",),
        lambda lam: _bad(lam < 0, "lam must be non-negative"),
        lambda rng, size, lam: rng.poisson(lam, size=size).astype(np.float64)),
    "negative_binomial": Dist(
        {"k": Param("int", 1, doc="Limit of unsuccessful experiments."),
         "p": _f(1.0, "Failure probability in each experiment.")}, ("k", "p"),
        lambda k, p: _bad((k < 0) | (p <= 0) | (p > 1), "k must be non-negative and p in (0, 1]"),
        _nb_draw),
    "generalized_negative_binomial": Dist(
        {"mu": _f(1.0, "Mean of the negative binomial distribution."),
         "alpha": _f(1.0, "Alpha (dispersion) parameter of the negative binomial distribution.")},
        ("mu", "alpha"),
        lambda mu, a: _bad((mu < 0) | (a < 0), "mu and alpha must be non-negative"),
        _gnb_draw),
}


def sample(op: str, dist: str, rng: np.random.Generator, size, params) -> np.ndarray:
    """Check ``params`` (floats or arrays broadcastable to ``size``) and draw float64 samples."""
    d = DISTS[dist]
    params = [np.asarray(p, dtype=np.float64) for p in params]
    problem = d.check(*params)
    if problem is not None:
        got = ", ".join(f"{n} in [{p.min()}, {p.max()}]" for n, p in zip(d.params, params) if p.size)
        raise MXNetError(f"{op}: {problem} in the {dist} distribution (got {got})")
    return d.draw(rng, tuple(size), *params)
