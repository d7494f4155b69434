"""Densities ``_random_pdf_<dist>(sample, params..., is_log)``: the pdf (pmf) of each sample, or its log.

The parameter arrays have one shape ``P``, a leading part of the sample's shape ``S``; every
element of the parameters holds one distribution, and all samples below it are evaluated under it
(``S = P + trailing``, output shape ``S``). Dirichlet's parameters are vectors: ``alpha`` has shape
``P + (k,)`` for samples ``S + (k,)``, and the output drops the last axis. Log densities (MXNet's
``pdf_op.h``; gamma's ``beta`` is a *rate* here, unlike the sampler's scale)::

    uniform       -log(high - low)                                     (no support check)
    normal        -(x-mu)^2 / (2 sigma^2) - log(sqrt(2 pi) sigma)
    gamma         alpha log beta + (alpha-1) log x - beta x - lgamma(alpha)
    exponential   log lam - lam x
    poisson       x log lam - lgamma(x+1) - lam
    negative_binomial   lgamma(x+k) - lgamma(x+1) - lgamma(k) + k log p + x log(1-p)
    generalized_negative_binomial   negative_binomial at k = 1/alpha, p = 1/(mu alpha + 1)
    dirichlet     sum_j (alpha_j - 1) log x_j + lgamma(sum_j alpha_j) - sum_j lgamma(alpha_j)

Gradients (``_backward_pdf_<dist>``, inputs ``(ograd, sample, params..., out)``): with
``s = ograd`` for the log density and ``s = ograd * pdf`` otherwise, each input gets ``s`` times
the partial derivative of the log density, summed over the samples that share a parameter. The
partials (ψ = digamma, ``special.py``): normal ``d/dmu = (x-mu)/sigma^2``, ``d/dsigma = ((x-mu)^2 -
sigma^2)/sigma^3``, ``d/dx = (mu-x)/sigma^2``; gamma ``log beta + log x - ψ(alpha)``, ``alpha/beta -
x``, ``(alpha-1)/x - beta``; exponential ``1/lam - x``, ``d/dx = -lam``; poisson ``x/lam - 1``;
negative binomial ``ψ(x+k) - ψ(k) + log p``, ``k/p - x/(1-p)``; the generalized one by the chain
rule through ``(k, p)``; dirichlet ``log x_j + ψ(sum alpha) - ψ(alpha_j)``, ``(alpha_j - 1)/x_j``;
uniform ``1/(high-low)``, ``-1/(high-low)``. Discrete samples and the uniform's sample get 0, as in
MXNet. Kernels compute in float64 and store in the common dtype of the inputs.
"""
from __future__ import annotations

from typing import Callable, Dict, NamedTuple, Tuple

import numpy as np

from ..base import MXNetError
from .nn._util import backward_node, entry, out_entries
from .registry import OpDef, Param, assign, register
from .special import digamma, lgamma


class Pdf(NamedTuple):
    params: Tuple[str, ...]
    log: Callable        # (x, *params) -> log density
    dlog: Callable       # (x, *params) -> (d/dx or None for 0, d/dparam ...)
    vector: bool = False


def _nb_log(x, k, p):
    return lgamma(x + k) - lgamma(x + 1) - lgamma(k) + k * np.log(p) + x * np.log1p(-p)


def _nb_dlog(x, k, p):
    return None, digamma(x + k) - digamma(k) + np.log(p), k / p - x / (1 - p)


def _gnb_kp(mu, alpha):
    return 1.0 / alpha, 1.0 / (mu * alpha + 1.0)


def _gnb_dlog(x, mu, alpha):
    _, dk, dp = _nb_dlog(x, *_gnb_kp(mu, alpha))
    den2 = (mu * alpha + 1.0) ** 2
    return None, -dp * alpha / den2, -dk / (alpha * alpha) - dp * mu / den2


def _dir_log(x, a):
    return (((a - 1) * np.log(x)).sum(-1) + lgamma(a.sum(-1)) - lgamma(a).sum(-1))


def _dir_dlog(x, a):
    return (a - 1) / x, np.log(x) + digamma(a.sum(-1, keepdims=True)) - digamma(a)


PDFS: Dict[str, Pdf] = {
    "uniform": Pdf(("low", "high"), lambda x, lo, hi: np.broadcast_to(-np.log(hi - lo), x.shape),
                   lambda x, lo, hi: (None, 1 / (hi - lo), 1 / (lo - hi))),
    "normal": Pdf(("mu", "sigma"),
                  lambda x, mu, s: -0.5 * (x - mu) ** 2 / s ** 2 - np.log(np.sqrt(2 * np.pi) * s),
                  lambda x, mu, s: ((mu - x) / s ** 2, (x - mu) / s ** 2, ((x - mu) ** 2 - s ** 2) / s ** 3)),
    "gamma": Pdf(("alpha", "beta"),
                 lambda x, a, b: a * np.log(b) + (a - 1) * np.log(x) - b * x - lgamma(a),
                 lambda x, a, b: ((a - 1) / x - b, np.log(b) + np.log(x) - digamma(a), a / b - x)),
    "exponential": Pdf(("lam",), lambda x, lam: np.log(lam) - lam * x,
                       lambda x, lam: (-lam + 0 * x, 1 / lam - x)),
    "poisson": Pdf(("lam",), lambda x, lam: x * np.log(lam) - lgamma(x + 1) - lam,
                   lambda x, lam: (None, x / lam - 1)),
    "negative_binomial": Pdf(("k", "p"), _nb_log, _nb_dlog),
    "generalized_negative_binomial": Pdf(("mu", "alpha"),
                                         lambda x, mu, a: _nb_log(x, *_gnb_kp(mu, a)), _gnb_dlog),
    "dirichlet": Pdf(("alpha",), _dir_log, _dir_dlog, vector=True),
}

PARAMS = {"is_log": Param("bool", False, doc="If set, compute the density of the log-probability "
                                             "instead of the probability.")}


def _shape(op: str, vector: bool):
    def infer(params, in_shapes):
        s, p = in_shapes[0], next((x for x in in_shapes[1:] if x is not None), None)
        for x in in_shapes[1:]:
            if x is not None and tuple(x) != tuple(p):
                raise MXNetError(f"{op}: the parameter arrays must have one shape, got {in_shapes[1:]}")
        if s is None or p is None:
            return list(in_shapes), [None]
        s, p = tuple(s), tuple(p)
        if len(p) > len(s) or (not vector and s[:len(p)] != p) or \
                (vector and (s[:len(p) - 1] != p[:-1] or s[-1] != p[-1])):
            raise MXNetError(f"{op}: the parameters' shape {p} must be a leading part of the sample "
                             f"shape {s}" + (" (with the same last axis)" if vector else ""))
        out = (s[:-1] or (1,)) if vector else s
        return [s] + [p] * (len(in_shapes) - 1), [out]
    return infer


def _expand(p: np.ndarray, sample_ndim: int, vector: bool) -> np.ndarray:
    """A parameter array broadcast against the samples (vector parameters keep their last axis)."""
    extra = (1,) * (sample_ndim - p.ndim)
    return p.reshape(p.shape[:-1] + extra + p.shape[-1:]) if vector else p.reshape(p.shape + extra)


def _prepare(pdf: Pdf, sample, params):
    x = np.asarray(sample, dtype=np.float64)
    ps = [_expand(np.asarray(p, dtype=np.float64), x.ndim, pdf.vector) for p in params]
    return x, ps


def _forward(pdf: Pdf):
    def forward(octx, params, inputs, outputs, req):
        x, ps = _prepare(pdf, inputs[0], inputs[1:])
        with np.errstate(divide="ignore", invalid="ignore"):
            lp = pdf.log(x, *ps)
        out = outputs[0]
        assign(out, req[0], (lp if params["is_log"] else np.exp(lp)).reshape(out.shape).astype(out.dtype))
    return forward


def _backward(pdf: Pdf):
    def backward(octx, params, inputs, outputs, req):
        ograd, sample, *pin, out = inputs
        x, ps = _prepare(pdf, sample, pin)
        shape = x.shape[:-1] if pdf.vector else x.shape
        scale = ograd.astype(np.float64).reshape(shape)
        if not params["is_log"]:
            scale = scale * out.astype(np.float64).reshape(shape)
        if pdf.vector:
            scale = scale[..., None]
        with np.errstate(divide="ignore", invalid="ignore"):
            dx, *dps = pdf.dlog(x, *ps)
        assign(outputs[0], req[0], np.zeros(x.shape) if dx is None else scale * dx)
        for g, d, r, p in zip(outputs[1:], dps, req[1:], pin):
            full = np.broadcast_to(scale * d, x.shape)
            # Sum over the samples that share one parameter: the axes the parameter lacks.
            axes = tuple(range(p.ndim - 1, x.ndim - 1)) if pdf.vector else tuple(range(p.ndim, x.ndim))
            assign(g, r, full.sum(axis=axes).reshape(p.shape).astype(g.dtype))
    return backward


def _gradient(node, ograds):
    n_in = len(node.inputs)
    bwd = backward_node(node, "_backward_pdf_" + node.op.name[len("_random_pdf_"):],
                        [ograds[0], *node.inputs, entry(node)])
    return out_entries(bwd, n_in)


def _backward_shape(params, in_shapes):
    return list(in_shapes), list(in_shapes[1:-1])


def _backward_type(params, in_types):
    return list(in_types), list(in_types[1:-1])


for _dist, _pdf in PDFS.items():
    _name = f"_random_pdf_{_dist}"
    register(OpDef(_name, _forward(_pdf), arguments=("sample",) + _pdf.params, params=PARAMS,
                   infer_shape=_shape(_name, _pdf.vector), gradient=_gradient,
                   aliases=(f"random_pdf_{_dist}",),
                   doc=f"{_name}(sample, {', '.join(_pdf.params)}, is_log=False): the {_dist} density "
                       "of each sample under the distribution its leading indices pick (see "
                       "mxref/ops/pdf.py for the formulas)."))
    register(OpDef(f"_backward_pdf_{_dist}", _backward(_pdf), params=PARAMS,
                   arguments=("ograd", "sample") + _pdf.params + ("output",),
                   outputs=tuple(f"{n}_grad" for n in ("sample",) + _pdf.params),
                   infer_shape=_backward_shape, infer_type=_backward_type))
