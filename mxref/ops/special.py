"""Special functions: ``erf``, ``erfinv``, ``gamma`` and ``gammaln``, vectorised in numpy (no scipy).

Math and gradients (``psi`` is the digamma function, ``d/dx log Gamma(x)``)::

    erf(x)     = 2/sqrt(pi) int_0^x exp(-t^2) dt      d/dx = 2/sqrt(pi) exp(-x^2)
    erfinv(y)  = x such that erf(x) = y              d/dy = sqrt(pi)/2 exp(erfinv(y)^2)
    gamma(x)   = int_0^inf t^(x-1) e^-t dt           d/dx = gamma(x) psi(x)
    gammaln(x) = log |gamma(x)|                      d/dx = psi(x)

Values follow C's ``erf``/``tgamma``/``lgamma`` (which MXNet calls): ``erfinv(+-1) = +-inf`` and
NaN outside [-1, 1]; ``gamma`` is NaN at negative integers and ``+-inf`` at ``+-0``; ``gammaln`` is
``inf`` at non-positive integers. Everything is computed in float64 and written in the input dtype
(integers truncate, as every unary op in ``elemwise.py``).

How, in a few array passes each (``np.frompyfunc(math.erf)`` would be one Python call per element):

* ``erf``: Chebyshev interpolants made at import from ``math.erf``/``math.erfc`` — ``erf(x)/x`` in ``x^2``
  on ``|x| <= 2`` and ``erfcx(x) = exp(x^2) erfc(x)`` on ``2 < x < 6``; ``|erf| = 1`` beyond 6
  in double. Absolute error about 1e-15.
* ``erfinv``: Winitzki's closed-form guess (relative error ~2e-3), then three Halley steps on
  ``erf(x) = y`` (``erfc(x) = 1 - |y|`` for ``|y| >= 0.5``, where ``1 - |y|`` is exact).
* ``gamma``/``gammaln``: Lanczos' approximation (g = 7, 9 terms, ~1e-15), with the reflection
  ``gamma(x) gamma(1-x) = pi / sin(pi x)`` below 1/2, and exact factorials at 1 .. 171; ``psi``
  by recurrence up to ``x >= 10`` and its asymptotic series. No second derivatives (MXNet has none for these).
"""
from __future__ import annotations

import math

import numpy as np
from numpy.polynomial import chebyshev as _cheb

from .elemwise import register_unary

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _fit(f, lo: float, hi: float, deg: int):
    """``f`` on ``[lo, hi]`` as a polynomial in ``u`` (``[lo, hi]`` mapped to ``[-1, 1]``): the
    Chebyshev interpolant, in powers of ``u`` so that Horner's rule runs in place."""
    nodes = _cheb.chebpts1(deg + 1)
    coef = _cheb.cheb2poly(_cheb.chebfit(nodes, [f(v) for v in nodes * (hi - lo) / 2 + (hi + lo) / 2], deg))

    def poly(x: np.ndarray) -> np.ndarray:
        u = (x - (hi + lo) / 2) * (2 / (hi - lo))
        acc = np.full_like(u, coef[-1])
        for c in coef[-2::-1]:
            acc *= u
            acc += c
        return acc
    return poly


# erf(x)/x as a function of s = x^2 on [0, 4]; erfcx on [2, 6].
_ERF_SMALL = _fit(lambda s: math.erf(math.sqrt(s)) / math.sqrt(s) if s > 0 else _TWO_OVER_SQRT_PI,
                  0.0, 4.0, 18)
_ERFCX = _fit(lambda x: math.erfc(x) * math.exp(x * x), 2.0, 6.0, 25)


def _erf_erfc(x: np.ndarray):
    """``(erf(x), erfc(|x|))`` of float64 ``x``; erfc is accurate where it is small."""
    ax = np.abs(x)
    erf, erfc = np.empty_like(x), np.empty_like(x)
    small = ax <= 2
    erf[small] = x[small] * _ERF_SMALL(x[small] ** 2)
    erfc[small] = 1 - np.abs(erf[small])
    mid = (ax > 2) & (ax < 6)
    erfc[mid] = np.exp(-ax[mid] ** 2) * _ERFCX(ax[mid])
    erf[mid] = np.sign(x[mid]) * (1 - erfc[mid])
    big = ~(small | mid)            # |x| >= 6 and NaN
    erfc[big] = np.where(np.isnan(ax[big]), np.nan, 0.0)
    erf[big] = np.sign(x[big])
    return erf, erfc


def _erf(x, out):
    return np.copyto(out, _erf_erfc(np.asarray(x, np.float64))[0], casting="unsafe")


def _erfinv64(y: np.ndarray) -> np.ndarray:
    ay = np.abs(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = 0.147
        ln = np.log1p(-ay * ay)
        b = 2 / (math.pi * a) + ln / 2
        x = np.sqrt(np.sqrt(b * b - ln / a) - b)          # Winitzki's guess for |y|
        q = 1 - ay                                        # exact where it is used (|y| >= 0.5)
        tail = ay >= 0.5
        for _ in range(3):
            erf, erfc = _erf_erfc(x)
            f = np.where(tail, q - erfc, erf - ay)        # f(x) with f' = 2/sqrt(pi) exp(-x^2)
            d = f / (_TWO_OVER_SQRT_PI * np.exp(-x * x))
            step = d / (1 + x * d)                        # Halley: f''/f' = -2x
            x = np.where(np.isfinite(step), x - step, x)
    x = np.where(ay == 1, np.inf, x)
    return np.copysign(np.where(ay > 1, np.nan, x), y)


def _erfinv(x, out):
    return np.copyto(out, _erfinv64(np.asarray(x, np.float64)), casting="unsafe")


_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# Exact at the positive integers (where the approximation is 1 ulp off, and an integer dtype would
# truncate gamma(1) = 0.99999... to 0): (n - 1)! and its log, for n = 1 .. 171.
_FACTORIAL = np.array([float(math.factorial(n)) for n in range(171)])
_LOG_FACTORIAL = np.array([math.lgamma(n + 1) for n in range(171)])


def _at_integers(x: np.ndarray, values: np.ndarray, table: np.ndarray) -> np.ndarray:
    hit = (x >= 1) & (x <= table.size) & (x == np.floor(x))
    if hit.any():
        values[hit] = table[x[hit].astype(np.int64) - 1]
    return values


def _lanczos(z: np.ndarray):
    """``(t, s)`` with ``gamma(z + 1) = sqrt(2 pi) t^(z + 1/2) e^-t s`` for ``z >= -1/2``."""
    s = np.full_like(z, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], start=1):
        s += c / (z + i)
    return z + _LANCZOS_G + 0.5, s


def _sin_pi(x: np.ndarray) -> np.ndarray:
    # sin(pi x) from x reduced to [-1, 1] first (exactly): pi * x itself rounds away the
    # fraction that matters near the poles of gamma.
    return np.sin(math.pi * (x - 2 * np.round(x / 2)))


def _gamma64(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        refl = x < 0.5
        z = np.where(refl, -x, x - 1)                     # gamma(1 - x) for the reflected ones
        t, s = _lanczos(z)
        half = t ** ((z + 0.5) / 2)                       # two halves: t^(z+1/2) alone overflows
        g = math.sqrt(2 * math.pi) * half * np.exp(-t) * half * s
        out = np.where(refl, math.pi / (_sin_pi(x) * g), g)
        pole = refl & (x == np.floor(x))
        out[pole] = np.where(x[pole] == 0, np.copysign(np.inf, x[pole]), np.nan)
    return _at_integers(x, out, _FACTORIAL)


def _gammaln64(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        refl = x < 0.5
        z = np.where(refl, -x, x - 1)
        t, s = _lanczos(z)
        lg = _HALF_LOG_2PI + (z + 0.5) * np.log(t) - t + np.log(s)
        out = np.where(refl, math.log(math.pi) - np.log(np.abs(_sin_pi(x))) - lg, lg)
        out[refl & (x == np.floor(x))] = np.inf
    return _at_integers(x, out, _LOG_FACTORIAL)


# B_2n / (2n) for n = 1..7: the asymptotic series of digamma.
_PSI_SERIES = (1.0 / 12, -1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132, -691.0 / 32760, 1.0 / 12)


def _digamma64(x: np.ndarray) -> np.ndarray:
    """psi(x): shift x up to at least 10 with psi(x) = psi(x+1) - 1/x, then the asymptotic series
    (about 1e-15); below zero the reflection psi(1-x) - psi(x) = pi / tan(pi x), as cephes' psi
    (which MXNet calls) does; NaN at the poles 0, -1, -2, ..."""
    x = np.array(x, dtype=np.float64)
    out = np.zeros_like(x)
    neg = x <= 0
    if neg.any():
        xn = x[neg]
        with np.errstate(divide="ignore", invalid="ignore"):
            out[neg] = -np.pi / np.tan(np.pi * xn)
        out[neg & (x == np.floor(x))] = np.nan
        x[neg] = 1.0 - xn
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(10):              # x >= 0 reaches 10 within ten shifts
            small = x < 10.0
            out -= np.where(small, 1.0 / np.where(small, x, 1.0), 0.0)
            x = np.where(small, x + 1.0, x)
        inv2 = 1.0 / (x * x)
        series = np.zeros_like(x)
        for c in reversed(_PSI_SERIES):
            series = (series + c) * inv2
        out += np.log(x) - 0.5 / x - series
    return out


def _unary64(fn):
    return lambda x, out: np.copyto(out, fn(np.asarray(x, np.float64)), casting="unsafe")


register_unary("erf", _erf, lambda x: _TWO_OVER_SQRT_PI * np.exp(-np.square(x, dtype=np.float64)), "x",
               doc="erf(data): the Gauss error function, elementwise. " + __doc__)
register_unary("erfinv", _erfinv, lambda y: math.sqrt(math.pi) / 2 * np.exp(np.square(y, dtype=np.float64)),
               "y", doc="erfinv(data): the inverse of erf, elementwise. " + __doc__)
register_unary("gamma", _unary64(_gamma64), lambda x: _gamma64(x.astype(np.float64)) * _digamma64(
    x.astype(np.float64)), "x", doc="gamma(data): the gamma function, elementwise. " + __doc__)
register_unary("gammaln", _unary64(_gammaln64), lambda x: _digamma64(x.astype(np.float64)), "x",
               doc="gammaln(data): log |gamma(data)|, elementwise. " + __doc__)


# -- the same functions on plain arrays, for other operators' kernels (the densities of pdf.py) --

def lgamma(x) -> np.ndarray:
    """log |Gamma(x)| elementwise in float64; ``inf`` at the poles 0, -1, -2, ..."""
    return _gammaln64(np.asarray(x, dtype=np.float64))


def digamma(x) -> np.ndarray:
    """psi(x) = Gamma'(x) / Gamma(x) elementwise in float64."""
    return _digamma64(np.asarray(x, dtype=np.float64))
