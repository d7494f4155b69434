"""Array functions after numpy's: ``cumsum``, ``diag``, ``_linspace`` (``mx.nd.linspace``) and
``_histogram`` (``mx.nd.histogram``).

Math::

    cumsum(a, axis)[.., i, ..] = sum_{j <= i} a[.., j, ..]     (axis=None: of the flattened array)
    diag(x, k)     1-D x: the (n+|k|)^2 matrix with x on diagonal k; N-D x: the diagonal k of the
                   planes (axis1, axis2), as a new last axis (numpy.diagonal)
    linspace(start, stop, num, endpoint)[i] = start + i (stop - start) / (num - 1 or num)
    histogram(data, bins): counts[j] = #{x : edge_j <= x < edge_{j+1}}, the last bin closed;
                   values outside [edge_0, edge_last] are not counted

``cumsum`` keeps the input dtype unless ``dtype`` says otherwise (MXNet's kernel does not widen
int32 as numpy does) and accepts a negative ``axis`` (MXNet 1.9.1 rejects it). Histogram counts
are int64 and the edges have the data's dtype (``bin_cnt`` edges are computed in double, then
cast; values are binned against the cast edges, as MXNet does).

Gradients: ``d cumsum = reverse cumsum of g`` (``_backward_np_cumsum``); ``d diag`` takes the
diagonal of ``g`` back (``_backward_diag``); ``linspace`` has no inputs, ``histogram`` none.
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .nn._util import backward_node, out_entries
from .registry import OpDef, Param, _parse_literal, assign, register

# ---------------------------------------------------------------------------------------------
# cumsum
# ---------------------------------------------------------------------------------------------

_CUMSUM_PARAMS = {"axis": Param("int_or_none", None, doc="Axis of the sum; None: flattened."),
                  "dtype": Param("dtype", None, doc="Type of the result and the accumulator.")}


def _cumsum_axis(p, shape):
    axis = p["axis"]
    if axis is not None and not -len(shape) <= axis < len(shape):
        raise MXNetError(f"cumsum: axis {axis} out of range for a of shape {tuple(shape)}")
    return axis


def _cumsum_shape(p, in_shapes):
    s = in_shapes[0]
    if s is None:
        return list(in_shapes), [None]
    return list(in_shapes), [(int(np.prod(s)),) if _cumsum_axis(p, s) is None else tuple(s)]


def _cumsum(octx, p, inputs, outputs, req):
    a = inputs[0]
    axis = _cumsum_axis(p, a.shape)
    assign(outputs[0], req[0], np.cumsum(a, axis=axis, dtype=outputs[0].dtype))


def _backward_cumsum(octx, p, inputs, outputs, req):
    g, a = inputs
    axis = _cumsum_axis(p, a.shape)
    flat = g.reshape(-1) if axis is None else g
    ax = 0 if axis is None else axis
    rev = np.flip(np.cumsum(np.flip(flat, ax), axis=ax), ax)
    assign(outputs[0], req[0], rev.reshape(a.shape))


register(OpDef("_np_cumsum", _cumsum, arguments=("a",), params=_CUMSUM_PARAMS, aliases=("cumsum",),
               infer_shape=_cumsum_shape, infer_type=lambda p, t: (list(t), [p["dtype"] or t[0]]),
               gradient=lambda node, og: out_entries(backward_node(
                   node, "_backward_np_cumsum", [og[0], node.inputs[0]]), 1),
               doc="cumsum(a, axis=None, dtype=None): the cumulative sum along ``axis``."))
register(OpDef("_backward_np_cumsum", _backward_cumsum, arguments=("ograd", "a"), params=_CUMSUM_PARAMS,
               infer_shape=lambda p, s: (list(s), [s[1]]), infer_type=lambda p, t: (list(t), [t[1]]),
               ignore_inputs=(1,)))


# ---------------------------------------------------------------------------------------------
# diag
# ---------------------------------------------------------------------------------------------

_DIAG_PARAMS = {"k": Param("int", 0, doc="Diagonal offset: > 0 above, < 0 below the main one."),
                "axis1": Param("int", 0, doc="First axis of the planes (N-D input)."),
                "axis2": Param("int", 1, doc="Second axis of the planes (N-D input).")}


def _diag_shape(p, in_shapes):
    s = in_shapes[0]
    if s is None:
        return list(in_shapes), [None]
    k = p["k"]
    if len(s) == 0:
        raise MXNetError("diag: data must have at least one dimension, got a scalar")
    if len(s) == 1:
        n = s[0] + abs(k)
        return list(in_shapes), [(n, n)]
    a1, a2 = p["axis1"], p["axis2"]
    if not (-len(s) <= a1 < len(s) and -len(s) <= a2 < len(s)) or a1 % len(s) == a2 % len(s):
        raise MXNetError(f"diag: axis1={a1} and axis2={a2} must be two different axes of shape "
                         f"{tuple(s)}")
    a1, a2 = a1 % len(s), a2 % len(s)
    length = min(s[a1], s[a2] - k) if k >= 0 else min(s[a1] + k, s[a2])
    if length <= 0:
        raise MXNetError(f"diag: diagonal k={k} does not exist in data of shape {tuple(s)}")
    rest = tuple(d for i, d in enumerate(s) if i not in (a1, a2))
    return list(in_shapes), [rest + (length,)]


def _diag(octx, p, inputs, outputs, req):
    x = inputs[0]
    if x.ndim == 1:
        assign(outputs[0], req[0], np.diag(x, p["k"]))
    else:
        assign(outputs[0], req[0], np.diagonal(x, p["k"], p["axis1"] % x.ndim, p["axis2"] % x.ndim))


def _backward_diag(octx, p, inputs, outputs, req):
    g, x = inputs
    if x.ndim == 1:
        assign(outputs[0], req[0], np.diagonal(g, p["k"]))
        return
    grad = np.zeros(x.shape, g.dtype)
    # np.diagonal of a writeable array is a read-only view; write through an explicit view.
    view = np.diagonal(grad, p["k"], p["axis1"] % x.ndim, p["axis2"] % x.ndim)
    view.setflags(write=True)
    view[...] = g
    assign(outputs[0], req[0], grad)


register(OpDef("diag", _diag, params=_DIAG_PARAMS, infer_shape=_diag_shape,
               infer_type=lambda p, t: (list(t), [t[0]]),
               gradient=lambda node, og: out_entries(backward_node(node, "_backward_diag",
                                                                   [og[0], node.inputs[0]]), 1),
               doc="diag(data, k=0, axis1=0, axis2=1): builds a diagonal matrix from a 1-D array, or "
                   "extracts diagonal ``k`` of an N-D one."))
register(OpDef("_backward_diag", _backward_diag, arguments=("ograd", "data"), params=_DIAG_PARAMS,
               infer_shape=lambda p, s: (list(s), [s[1]]), infer_type=lambda p, t: (list(t), [t[0]]),
               ignore_inputs=(1,)))


# ---------------------------------------------------------------------------------------------
# _linspace
# ---------------------------------------------------------------------------------------------

def _linspace(octx, p, inputs, outputs, req):
    num, div = p["num"], p["num"] - 1 if p["endpoint"] else p["num"]
    step = (p["stop"] - p["start"]) / div if div > 0 else 0.0
    values = p["start"] + np.arange(num, dtype=np.float64) * step
    assign(outputs[0], req[0], values.astype(outputs[0].dtype))


def _linspace_num(p):
    if p["num"] < 0:
        raise MXNetError(f"linspace: num must be non-negative, got {p['num']}")


register(OpDef("_linspace", _linspace, arguments=(), aliases=("_npi_linspace",),
               validate=_linspace_num,
               params={"start": Param("float"), "stop": Param("float"), "num": Param("int"),
                       "endpoint": Param("bool", True), "ctx": Param("str", ""),
                       "dtype": Param("dtype", np.dtype(np.float32))},
               infer_shape=lambda p, s: ([], [(p["num"],)]), infer_type=lambda p, t: ([], [p["dtype"]]),
               doc="_linspace(start, stop, num, endpoint=True): ``num`` evenly spaced values."))


# ---------------------------------------------------------------------------------------------
# _histogram
# ---------------------------------------------------------------------------------------------

def _hist_validate(p):
    rng = p["range"]
    if isinstance(rng, str):          # from a JSON graph: "(0, 5)"
        rng = _parse_literal(rng)
    p["range"] = None if rng is None else tuple(float(v) for v in rng)
    if (p["bin_cnt"] is None) != (p["range"] is None):
        raise MXNetError("histogram: bin_cnt and range must be given both or neither")
    if p["range"] is not None and (len(p["range"]) != 2 or p["range"][0] > p["range"][1]):
        raise MXNetError(f"histogram: range must be (low, high) with low <= high, got {p['range']}")


def _hist_shape(p, in_shapes):
    if p["bin_cnt"] is not None:
        return list(in_shapes), [(p["bin_cnt"],), (p["bin_cnt"] + 1,)]
    bins = in_shapes[1]
    if bins is not None and (len(bins) != 1 or bins[0] < 2):
        raise MXNetError(f"histogram: bins must be 1-D with at least two edges, got shape "
                         f"{tuple(bins)}")
    return list(in_shapes), [None if bins is None else (bins[0] - 1,), bins]


def _histogram(octx, p, inputs, outputs, req):
    data = inputs[0].reshape(-1)
    if p["bin_cnt"] is not None:
        lo, hi = p["range"]
        cnt = p["bin_cnt"]
        edges = (lo + np.arange(cnt + 1) * ((hi - lo) / cnt)).astype(data.dtype)
    else:
        edges = inputs[1].astype(data.dtype)
        lo, hi, cnt = edges[0], edges[-1], edges.size - 1
    inside = data[(data >= lo) & (data <= hi)]
    which = np.minimum(np.searchsorted(edges, inside, side="right") - 1, cnt - 1)
    assign(outputs[0], req[0], np.bincount(which[which >= 0], minlength=cnt)[:cnt])
    assign(outputs[1], req[1], edges)


def _hist_arguments(p):
    return ["data"] if p["bin_cnt"] is not None else ["data", "bins"]


register(OpDef("_histogram", _histogram, arguments=_hist_arguments,
               outputs=("counts", "edges"), validate=_hist_validate, aliases=("_npi_histogram",),
               params={"bin_cnt": Param("int_or_none", None, doc="Number of bins for uniform bins."),
                       "range": Param("any", None, doc="(low, high) of the uniform bins.")},
               infer_shape=_hist_shape, infer_type=lambda p, t: (list(t), [np.dtype(np.int64), t[0]]),
               doc=__doc__))
