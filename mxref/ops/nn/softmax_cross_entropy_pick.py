"""_softmax_cross_entropy_pick: ``-log_softmax(data)[label]`` along ``axis`` in one kernel (Gluon's loss).

Math (``p = softmax(x)`` along ``axis``, ``l`` the class index of each row, clipped as ``pick``)::

    loss = -(x[l] - max - log sum exp(x - max))          dx = g * (p - onehot(l))

The label gets no gradient (a variable label gets zeros from the gradient pass), so the backward
operator has one output and allocates nothing for it.

``gluon.loss.SoftmaxCrossEntropyLoss`` called imperatively takes this instead of the four
operators ``log_softmax``, ``pick``, ``negative`` and ``mean``: one engine operation forward and
one backward (``_backward_softmax_cross_entropy_pick`` takes ``(ograd, data, label)`` and
recomputes ``p``, cheaper than keeping it). Not an MXNet operator: traced graphs keep the four.

Kernels: the numpy functions below are the reference. The C loops of ``mxref/_ext/loss_kernels.pyx``
register as the 'cpu' fast kernels of both operators and take a float32/float64 matrix with the
classes along its last axis (a classifier's batch, ``_c_takes``); every other call, and everything
under ``MXREF_ENABLE_EXT=0``, runs the reference. Besides skipping a dozen numpy
calls, the C loops keep the GIL for a small matrix: numpy's ufuncs give it up on arrays of more
than a few hundred elements, and getting it back while the training loop's thread runs Python
took the operator several times its own run time.
"""
from __future__ import annotations

import numpy as np

from ..._ext import loader
from ...base import MXNetError
from ...graph import NodeEntry, make_node
from ..registry import OpDef, Param, assign, register, register_kernel, write
from .softmax import softmax_into

PARAMS = {"axis": Param("int", -1, doc="The class axis.")}


def _rows(p, data: np.ndarray, label: np.ndarray):
    """The class axis and an index that picks each row's class out of ``data``: a pair of integer
    arrays for a matrix (plain fancy indexing, much cheaper than ``take_along_axis`` on a small
    batch), else the class indices shaped to broadcast against ``data``."""
    axis = p["axis"] % data.ndim
    idx = label.astype(np.int64)
    # (np.clip's Python wrapper costs more than these two ufuncs on a batch of labels)
    np.minimum(np.maximum(idx, 0, out=idx), data.shape[axis] - 1, out=idx)
    if data.ndim == 2:
        rows = np.arange(data.shape[1 - axis])
        return axis, ((rows, idx.reshape(-1)) if axis == 1 else (idx.reshape(-1), rows))
    kept = tuple(1 if i == axis else d for i, d in enumerate(data.shape))
    return axis, idx.reshape(kept)


def _forward(octx, p, inputs, outputs, req):
    data, label = inputs
    out, req = outputs[0], req[0]
    axis, idx = _rows(p, data, label)
    logp = np.empty(data.shape, data.dtype)
    softmax_into(data, axis, logp, log=True)
    picked = logp[idx] if isinstance(idx, tuple) else np.take_along_axis(logp, idx, axis)
    assign(out, req, -picked.reshape(out.shape))


def _backward(octx, p, inputs, outputs, req):
    g, data, label = inputs
    out, req = outputs[0], req[0]
    axis, idx = _rows(p, data, label)
    grad = np.empty(data.shape, data.dtype)
    softmax_into(data, axis, grad)
    if isinstance(idx, tuple):
        grad[idx] -= 1                                   # one class per row: no collisions
    else:
        hit = np.take_along_axis(grad, idx, axis)
        np.put_along_axis(grad, idx, hit - 1, axis)
    grad *= g.reshape(g.shape[:axis] + (1,) + g.shape[axis:])     # g broadcast over the classes
    assign(out, req, grad)


# --- fast kernels: the C loops of mxref/_ext/loss_kernels.pyx ------------------------------------

def _c_takes(p, inputs, outputs, req) -> bool:
    """A non-empty float32/float64 matrix with the classes along axis 1 (and, backward, an ograd of
    its dtype); everything else runs the reference above."""
    data = inputs[-2]
    if data.ndim != 2 or p["axis"] not in (-1, 1) or data.shape[1] == 0 or data.dtype not in _C_DTYPES:
        return False
    return len(inputs) == 2 or inputs[0].dtype == data.dtype


_C_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _c_forward(ext):
    def kernel(octx, p, inputs, outputs, req):
        data, label = inputs
        x, labels = np.ascontiguousarray(data), label.reshape(-1).astype(np.int64)
        write(outputs[0], req[0], lambda dst: ext.softmax_ce_forward(x, labels, dst.reshape(-1)))
    kernel.__qualname__ = "loss_kernels.softmax_ce_forward"
    return kernel


def _c_backward(ext):
    def kernel(octx, p, inputs, outputs, req):
        g, data, label = inputs
        g1, x = np.ascontiguousarray(g).reshape(-1), np.ascontiguousarray(data)
        labels = label.reshape(-1).astype(np.int64)
        write(outputs[0], req[0], lambda dst: ext.softmax_ce_backward(g1, x, labels, dst))
    kernel.__qualname__ = "loss_kernels.softmax_ce_backward"
    return kernel


def _shape(p, in_shapes):
    data, label = in_shapes
    if data is None:
        return list(in_shapes), [None]
    if not -len(data) <= p["axis"] < len(data):
        raise MXNetError(f"_softmax_cross_entropy_pick: axis {p['axis']} out of range for data {data}")
    axis = p["axis"] % len(data)
    out = tuple(d for i, d in enumerate(data) if i != axis)
    if label is not None and int(np.prod(label)) != int(np.prod(out)):
        raise MXNetError(f"_softmax_cross_entropy_pick: label shape {tuple(label)} does not match data "
                         f"{tuple(data)} without axis {axis}")
    return [data, label if label is not None else out], [out]


def _gradient(node, ograds):
    n = make_node("_backward_softmax_cross_entropy_pick", [ograds[0], *node.inputs],
                  node.name + "_backward", params=node.params)
    return [NodeEntry(n, 0, 0), None]


register(OpDef("_softmax_cross_entropy_pick", _forward, arguments=("data", "label"), params=PARAMS,
               infer_shape=_shape, infer_type=lambda p, t: (list(t), [t[0]]), gradient=_gradient,
               doc=__doc__))
register(OpDef("_backward_softmax_cross_entropy_pick", _backward, arguments=("ograd", "data", "label"),
               params=PARAMS, outputs=("data_grad",),
               infer_shape=lambda p, s: (list(s), [s[1]]),
               infer_type=lambda p, t: (list(t), [t[1]])))

_EXT = loader.load("loss_kernels", "softmax cross-entropy loss kernels")
if _EXT is not None:
    register_kernel("_softmax_cross_entropy_pick", "cpu", _c_forward(_EXT), applies=_c_takes,
                    exact=False, tol={"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-12)})
    register_kernel("_backward_softmax_cross_entropy_pick", "cpu", _c_backward(_EXT), applies=_c_takes,
                    exact=False, tol={"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-12)})
