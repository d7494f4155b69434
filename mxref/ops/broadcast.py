"""Broadcasting operators: ``broadcast_add`` ... ``broadcast_logical_xor``, ``broadcast_to/like/axis``.

Shapes broadcast as in numpy: align on the right, a dimension of 1 stretches. MXNet's NDArray
``a + b`` of two arrays is ``broadcast_add``. An unknown dimension (0) is resolved from the other
side when that side is larger than 1.

Gradient of ``z = f(l, r)``: the elementwise partials, summed over the broadcast axes back to each
input's shape (``_backward_broadcast_<op>``, built by ``elemwise.register_binary_backward``);
``broadcast_to(x)`` and friends send ``sum over broadcast axes of g`` (``_reduce_sum_like``).
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from ..base import MXNetError
from ..graph import NodeEntry, make_node
from .d2 import Builder, differentiable
from .elemwise import BINARY_MATH, COMPARISONS, output_grads, register_binary, sum_to_shape
from .registry import OpDef, Param, assign, register

__all__ = ["broadcast_shapes", "broadcast_infer_shape"]

Shape = Optional[Tuple[int, ...]]


def broadcast_shapes(op: str, lhs: Shape, rhs: Shape) -> Shape:
    """The output shape of broadcasting ``lhs`` with ``rhs`` (``None`` if either is unknown)."""
    if lhs is None or rhs is None:
        return None
    n = max(len(lhs), len(rhs))
    a, b = (1,) * (n - len(lhs)) + tuple(lhs), (1,) * (n - len(rhs)) + tuple(rhs)
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        elif x == 0 or y == 0:
            out.append(max(x, y))  # the unknown side must be 1 or equal to the known side
        else:
            raise MXNetError(f"{op}: operands could not be broadcast together with shapes "
                             f"{tuple(lhs)} {tuple(rhs)}")
    return tuple(out)


def broadcast_infer_shape(name: str):
    def infer(params, in_shapes):
        return list(in_shapes), [broadcast_shapes(name, in_shapes[0], in_shapes[1])]
    return infer


_SHAPE_ONLY = {"add": (1, 2), "sub": (1, 2)}   # these partials read only the inputs' shapes

for _name, (_fn, _partials) in BINARY_MATH.items():
    _op = f"broadcast_{_name}"
    _aliases = {"add": ("broadcast_plus",), "sub": ("broadcast_minus",)}.get(_name, ())
    register_binary(_op, _fn, _partials, aliases=_aliases, infer_shape=broadcast_infer_shape(_op),
                    ignore_inputs=_SHAPE_ONLY.get(_name, ()))
for _name, _fn in COMPARISONS.items():
    _op = f"broadcast_{_name}"
    register_binary(_op, _fn, infer_shape=broadcast_infer_shape(_op))


def _backward_broadcast_mul_gradient(node, ograds):
    """broadcast_mul's second derivative, as ``_backward_mul``'s with broadcasting: products are
    ``broadcast_mul`` (they take the head gradient's shape) and the inputs' parts are summed back
    to their shapes (``_reduce_sum_like``)."""
    h0, h1 = output_grads(node, ograds)
    og, a, b = node.inputs
    mk = Builder(node)
    d_og = mk("broadcast_add", mk("broadcast_mul", h0, b), mk("broadcast_mul", h1, a))
    return [d_og, mk("_reduce_sum_like", mk("broadcast_mul", h1, og), a),
            mk("_reduce_sum_like", mk("broadcast_mul", h0, og), b)]


differentiable("_backward_broadcast_mul", _backward_broadcast_mul_gradient)


# ---------------------------------------------------------------------------------------------
# Explicit broadcasts
# ---------------------------------------------------------------------------------------------

def _reduce_sum_like_kernel(octx, params, inputs, outputs, req):
    assign(outputs[0], req[0], sum_to_shape(inputs[0], inputs[1].shape))


def _reduce_sum_like_type(params, in_types):
    return list(in_types), [in_types[0]]


register(OpDef("_reduce_sum_like", _reduce_sum_like_kernel, arguments=("data", "like"),
               infer_shape=lambda p, s: (list(s), [s[1]]), infer_type=_reduce_sum_like_type,
               ignore_inputs=(1,), doc="Sum ``data`` over the axes where ``like`` has size 1."))


def _sum_back_grad(node, ograds):
    """Gradient of an explicit broadcast: sum the head gradient back to the input's shape."""
    n = make_node("_reduce_sum_like", [ograds[0], node.inputs[0]], node.name + "_backward")
    grads = [NodeEntry(n, 0, 0)]
    for i, e in enumerate(node.inputs[1:]):   # broadcast_like's rhs only lends its shape
        grads.append(NodeEntry(make_node("zeros_like", [e], f"{node.name}_zero{i + 1}"), 0, 0))
    return grads


def _broadcast_kernel(octx, params, inputs, outputs, req):
    assign(outputs[0], req[0], np.broadcast_to(inputs[0], outputs[0].shape))


def _to_shape(params, in_shapes):
    src, target = in_shapes[0], params["shape"]
    if src is None:
        return list(in_shapes), [None]
    if len(target) != len(src):
        raise MXNetError(f"broadcast_to: shape {target} must have as many dims as the input {src}")
    out = tuple(s if t == 0 else t for s, t in zip(src, target))
    for s, t in zip(src, out):
        if s not in (1, t) and s != 0:
            raise MXNetError(f"broadcast_to: cannot broadcast input shape {src} to {target}")
    return list(in_shapes), [out]


register(OpDef("broadcast_to", _broadcast_kernel, params={"shape": Param("shape", ())},
               infer_shape=_to_shape, gradient=_sum_back_grad,
               doc="broadcast_to(data, shape): 0 in ``shape`` keeps the input's dimension."))


def _axis_shape(params, in_shapes):
    src = in_shapes[0]
    axes, sizes = params["axis"], params["size"]
    if len(axes) != len(sizes):
        raise MXNetError(f"broadcast_axis: axis {axes} and size {sizes} must have the same length")
    if src is None:
        return list(in_shapes), [None]
    out = list(src)
    for a, n in zip(axes, sizes):
        if not -len(src) <= a < len(src):
            raise MXNetError(f"broadcast_axis: axis {a} out of range for shape {src}")
        if src[a] not in (1, 0):
            raise MXNetError(f"broadcast_axis: input shape {src} has size {src[a]} != 1 on axis {a}")
        out[a] = n
    return list(in_shapes), [tuple(out)]


register(OpDef("broadcast_axis", _broadcast_kernel, aliases=("broadcast_axes",),
               params={"axis": Param("shape", ()), "size": Param("shape", ())},
               infer_shape=_axis_shape, gradient=_sum_back_grad,
               doc="broadcast_axis(data, axis, size): stretch size-1 axes to ``size``."))


def _like_shape(params, in_shapes):
    lhs, rhs = in_shapes
    la, ra = params["lhs_axes"], params["rhs_axes"]
    for what, axes in (("lhs_axes", la), ("rhs_axes", ra)):
        if axes is not None and len(axes) == 0:
            raise MXNetError(f"broadcast_like: empty {what} tuple is not allowed (leave it out to "
                             "broadcast every axis)")
    if lhs is None or rhs is None:
        return list(in_shapes), [None]
    if la is None and ra is None:
        if len(lhs) != len(rhs):
            raise MXNetError(f"broadcast_like: lhs {lhs} and rhs {rhs} must have the same ndim")
        out = broadcast_shapes("broadcast_like", lhs, rhs)
        if out != tuple(rhs):
            raise MXNetError(f"broadcast_like: cannot broadcast {lhs} like {rhs}")
        return list(in_shapes), [out]
    if la is None or ra is None or len(la) != len(ra):
        raise MXNetError(f"broadcast_like: lhs_axes {la} and rhs_axes {ra} must have equal length")
    out = list(lhs)
    for a, b in zip(la, ra):
        if lhs[a] != 1:
            raise MXNetError(f"broadcast_like: lhs {lhs} has size {lhs[a]} != 1 on axis {a}")
        out[a] = rhs[b]
    return list(in_shapes), [tuple(out)]


register(OpDef("broadcast_like", _broadcast_kernel, arguments=("lhs", "rhs"),
               params={"lhs_axes": Param("axis", None), "rhs_axes": Param("axis", None)},
               infer_shape=_like_shape, infer_type=lambda p, t: (list(t), [t[0]]),
               gradient=_sum_back_grad, ignore_inputs=(1,),
               doc="broadcast_like(lhs, rhs): broadcast ``lhs`` to the shape of ``rhs``."))
