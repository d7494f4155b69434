"""Shape operators: ``Reshape`` (with MXNet's special codes), ``transpose``, ``expand_dims``,
``squeeze``, ``Flatten``, ``SwapAxis``, ``reshape_like``, ``reverse``, ``shape_array``, ``size_array``.

Reshape codes (``shape`` parameter, read left to right against the input's dims):
``0`` copy this input dim, ``-1`` infer from the remaining size, ``-2`` copy all remaining dims,
``-3`` merge the next two dims, ``-4, a, b`` split the next dim into ``a x b`` (one may be -1).
``reverse=True`` matches codes right to left. Reshapes and the others here only move data, so
their gradients reshape or permute the head gradient back (``reshape_like(g, x)``).
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

from .. import util as _util
from ..base import MXNetError
from ..graph import NodeEntry, make_node
from .elemwise import zero_grads
from .registry import OpDef, Param, assign, register

__all__ = ["infer_reshape", "normalize_axis"]


def normalize_axis(op: str, axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise MXNetError(f"{op}: axis {axis} is out of range for {ndim}-d input")
    return axis % ndim


def _prod(dims: Sequence[int]) -> int:
    return int(np.prod(dims, dtype=np.int64)) if dims else 1


def infer_reshape(src: Sequence[int], codes: Sequence[int], reverse: bool = False,
                  check_size: bool = True) -> Tuple[int, ...]:
    """The output shape of ``Reshape(shape=codes)`` on input shape ``src`` (see the module doc);
    ``check_size=False`` leaves a size mismatch to the caller (``NDArray.reshape``'s ValueError)."""
    src, codes = list(src), list(codes)
    if reverse:   # MXNet reverses both lists literally, so -2/-4 rarely make sense reversed
        src, codes = src[::-1], codes[::-1]
    out: List[int] = []
    i = j = 0
    infer_at = -1
    while i < len(codes):
        c = codes[i]
        if c == 0:
            if j >= len(src):
                raise MXNetError(f"Reshape: code 0 at position {i} has no input dim to copy in {tuple(src)}")
            out.append(src[j])
            j += 1
        elif c == -1:
            if infer_at >= 0:
                raise MXNetError(f"Reshape: more than one -1 in shape {tuple(codes)}")
            infer_at = len(out)
            out.append(1)
            j += 1
        elif c == -2:
            out.extend(src[j:])
            j = len(src)
        elif c == -3:
            if j + 2 > len(src):
                raise MXNetError(f"Reshape: code -3 needs two input dims, {tuple(src)} has too few")
            out.append(src[j] * src[j + 1])
            j += 2
        elif c == -4:
            if i + 2 >= len(codes) or j >= len(src):
                raise MXNetError(f"Reshape: code -4 in {tuple(codes)} needs two following values "
                                 "and an input dim")
            d, a, b = src[j], codes[i + 1], codes[i + 2]
            if a == -1 and b == -1:
                raise MXNetError("Reshape: split dims after -4 cannot both be -1")
            a = d // b if a == -1 else a
            b = d // a if b == -1 else b
            if a * b != d:
                raise MXNetError(f"Reshape: cannot split dim {d} into {a} x {b}")
            out += [a, b]
            i += 2
            j += 1
        elif c > 0:
            out.append(c)
            j += 1
        else:
            raise MXNetError(f"Reshape: invalid code {c} in shape {tuple(codes)}")
        i += 1
    total = _prod(src)
    if infer_at >= 0:
        rest = _prod(out) // out[infer_at] if out[infer_at] else 0
        if rest == 0 or total % rest:
            raise MXNetError(f"Reshape: cannot infer -1 in {tuple(codes)} for input {tuple(src)}")
        out[infer_at] = total // rest
    if check_size and _prod(out) != total:
        raise MXNetError(f"Reshape: target shape {tuple(out)} (from {tuple(codes)}) has a different "
                         f"size than the input {tuple(src)}")
    return tuple(out[::-1] if reverse else out)


def _reshape_shape(params, in_shapes, out_shapes=(None,)):
    src, dst = in_shapes[0], out_shapes[0]
    if src is not None and src.count(0) == 1 and dst is not None and 0 not in dst:
        # back from a known output, as MXNet's ReverseReshapeInferShape: the one unknown input
        # dim is whatever makes the sizes agree
        known = _prod([d for d in src if d])
        if known and _prod(dst) % known == 0:
            src = tuple(d or _prod(dst) // known for d in src)
    if src is None or 0 in src:
        return list(in_shapes), [None]
    codes = params["shape"]
    if not codes and params["target_shape"]:    # the deprecated form: 0 means "infer"
        target = list(params["target_shape"])
        if params["keep_highest"]:
            target = [src[0]] + target
        codes = [-1 if d == 0 else d for d in target]
    if not codes:
        raise MXNetError("Reshape: parameter 'shape' must be given")
    return [src], [infer_reshape(src, codes, params["reverse"])]


def _reshape_kernel(octx, params, inputs, outputs, req):
    out = outputs[0]
    assign(out, req[0], inputs[0].reshape(out.shape))


def _like_grad(node, ograds):
    """The head gradient reshaped to the input's shape (for ops that only rearrange dims)."""
    n = make_node("reshape_like", [ograds[0], node.inputs[0]], node.name + "_backward")
    return [NodeEntry(n, 0, 0)]


register(OpDef("Reshape", _reshape_kernel, aliases=("reshape",),
               params={"shape": Param("shape", ()), "reverse": Param("bool", False),
                       "target_shape": Param("shape", ()), "keep_highest": Param("bool", False)},
               infer_shape=_reshape_shape, gradient=_like_grad, inplace=[(0, 0)], inplace_identity=[True],
               doc="Reshape(data, shape, reverse=False): codes 0, -1, -2, -3, -4 as in MXNet."))


def _flatten_shape(params, in_shapes):
    src = in_shapes[0]
    if src is None:
        return list(in_shapes), [None]
    return list(in_shapes), [(src[0] if src else 1, _prod(src[1:]))]


register(OpDef("Flatten", _reshape_kernel, aliases=("flatten",), infer_shape=_flatten_shape,
               gradient=_like_grad, inplace=[(0, 0)], inplace_identity=[True],
               doc="Flatten(data): collapse every axis after the first: (d0, d1*...*dk)."))


def _expand_shape(params, in_shapes):
    src = in_shapes[0]
    if src is None:
        return list(in_shapes), [None]
    axis = normalize_axis("expand_dims", params["axis"], len(src) + 1)
    return list(in_shapes), [tuple(src[:axis]) + (1,) + tuple(src[axis:])]


register(OpDef("expand_dims", _reshape_kernel, params={"axis": Param("int")}, infer_shape=_expand_shape,
               gradient=_like_grad, inplace=[(0, 0)], inplace_identity=[True],
               doc="expand_dims(data, axis): insert a size-1 axis at ``axis``."))


def _squeeze_shape(params, in_shapes):
    src = in_shapes[0]
    if src is None:
        return list(in_shapes), [None]
    if params["axis"] is None:
        out = tuple(d for d in src if d != 1)
    else:
        axes = {normalize_axis("squeeze", a, len(src)) for a in params["axis"]}
        for a in axes:
            if src[a] != 1:
                raise MXNetError(f"squeeze: cannot squeeze axis {a} of size {src[a]} in {tuple(src)}")
        out = tuple(d for k, d in enumerate(src) if k not in axes)
    return list(in_shapes), [out or (1,)]


register(OpDef("squeeze", _reshape_kernel, params={"axis": Param("axis", None)},
               infer_shape=_squeeze_shape, gradient=_like_grad, inplace=[(0, 0)], inplace_identity=[True],
               doc="squeeze(data, axis=None): drop size-1 axes (all of them when ``axis`` is None)."))


def _reshape_like_range(params, prefix: str, ndim: int) -> Tuple[int, int]:
    b, e = params[prefix + "_begin"], params[prefix + "_end"]
    b = 0 if b is None else (b + ndim if b < 0 else b)
    e = ndim if e is None else (e + ndim if e < 0 else e)
    if not 0 <= b <= e <= ndim:
        raise MXNetError(f"reshape_like: {prefix}_begin/{prefix}_end select an invalid range of {ndim} dims")
    return b, e


def _reshape_like_shape(params, in_shapes):
    lhs, rhs = in_shapes
    if lhs is None or rhs is None:
        return list(in_shapes), [None]
    lb, le = _reshape_like_range(params, "lhs", len(lhs))
    rb, re = _reshape_like_range(params, "rhs", len(rhs))
    out = tuple(lhs[:lb]) + tuple(rhs[rb:re]) + tuple(lhs[le:])
    if _prod(out) != _prod(lhs):
        raise MXNetError(f"reshape_like: cannot reshape {tuple(lhs)} to {out} (sizes differ)")
    return list(in_shapes), [out]


def _reshape_like_grad(node, ograds):
    return _like_grad(node, ograds) + zero_grads(node)[1:]


register(OpDef("reshape_like", _reshape_kernel, arguments=("lhs", "rhs"),
               params={k: Param("int_or_none", None)
                       for k in ("lhs_begin", "lhs_end", "rhs_begin", "rhs_end")},
               infer_shape=_reshape_like_shape, infer_type=lambda p, t: (list(t), [t[0]]),
               gradient=_reshape_like_grad, ignore_inputs=(1,), inplace=[(0, 0)], inplace_identity=[True],
               doc="reshape_like(lhs, rhs): ``lhs`` reshaped to (part of) ``rhs``'s shape."))


# ---------------------------------------------------------------------------------------------
# Permutations
# ---------------------------------------------------------------------------------------------

def _perm(params, ndim: int) -> Tuple[int, ...]:
    axes = params["axes"]
    if not axes:
        return tuple(range(ndim))[::-1]
    if len(axes) != ndim or sorted(a % ndim for a in axes) != list(range(ndim)):
        raise MXNetError(f"transpose: axes {axes} is not a permutation of {ndim} dims")
    return tuple(a % ndim for a in axes)


def _transpose_shape(params, in_shapes, out_shapes=(None,)):
    src, dst = in_shapes[0], out_shapes[0]
    if src is None and dst is None:
        return list(in_shapes), [None]
    perm = _perm(params, len(src if src is not None else dst))
    back = [0] * len(perm)                 # the output carries dims back to the input (MXNet too)
    if dst is not None:
        for i, a in enumerate(perm):
            back[a] = dst[i]
    src = tuple(a or b for a, b in zip(src, back)) if src is not None else tuple(back)
    return [src], [tuple(src[a] for a in perm)]


def _transpose_kernel(octx, params, inputs, outputs, req):
    x = inputs[0]
    assign(outputs[0], req[0], x.transpose(_perm(params, x.ndim)))


def _transpose_grad(node, ograds):
    axes = node.params["axes"]
    inverse = tuple(int(i) for i in np.argsort([a % len(axes) for a in axes])) if axes else ()
    n = make_node("transpose", [ograds[0]], node.name + "_backward", params={"axes": inverse})
    return [NodeEntry(n, 0, 0)]


register(OpDef("transpose", _transpose_kernel, params={"axes": Param("shape", ())},
               infer_shape=_transpose_shape, gradient=_transpose_grad,
               doc="transpose(data, axes=()): permute axes (reverse them when ``axes`` is empty)."))


def _swap_shape(params, in_shapes):
    src = in_shapes[0]
    if src is None:
        return list(in_shapes), [None]
    a = normalize_axis("SwapAxis", params["dim1"], len(src))
    b = normalize_axis("SwapAxis", params["dim2"], len(src))
    out = list(src)
    out[a], out[b] = out[b], out[a]
    return list(in_shapes), [tuple(out)]


def _swap_kernel(octx, params, inputs, outputs, req):
    assign(outputs[0], req[0], np.swapaxes(inputs[0], params["dim1"], params["dim2"]))


def _swap_grad(node, ograds):
    return [NodeEntry(make_node("SwapAxis", [ograds[0]], node.name + "_backward", params=node.params), 0, 0)]


register(OpDef("SwapAxis", _swap_kernel, aliases=("swapaxes",),
               params={"dim1": Param("int", 0), "dim2": Param("int", 0)}, infer_shape=_swap_shape,
               gradient=_swap_grad, doc="SwapAxis(data, dim1=0, dim2=0): exchange two axes."))


def _reverse_axes(params, ndim: int) -> Tuple[int, ...]:
    return tuple(normalize_axis("reverse", a, ndim) for a in params["axis"])


def _reverse_kernel(octx, params, inputs, outputs, req):
    x = inputs[0]
    assign(outputs[0], req[0], np.flip(x, _reverse_axes(params, x.ndim)))


def _reverse_shape(params, in_shapes):
    if in_shapes[0] is not None:
        _reverse_axes(params, len(in_shapes[0]))
    return list(in_shapes), [in_shapes[0]]


def _reverse_grad(node, ograds):
    return [NodeEntry(make_node("reverse", [ograds[0]], node.name + "_backward", params=node.params), 0, 0)]


register(OpDef("reverse", _reverse_kernel, aliases=("flip",), params={"axis": Param("shape")},
               infer_shape=_reverse_shape, gradient=_reverse_grad,
               doc="reverse(data, axis): reverse the order of elements along the given axes."))


# ---------------------------------------------------------------------------------------------
# Shape as data
# ---------------------------------------------------------------------------------------------

def _shape_array_kernel(octx, params, inputs, outputs, req):
    assign(outputs[0], req[0], np.array(inputs[0].shape, dtype=np.int64))


def _size_array_kernel(octx, params, inputs, outputs, req):
    assign(outputs[0], req[0], np.array([inputs[0].size], dtype=np.int64))


def _int64(params, in_types):
    return list(in_types), [np.dtype(np.int64)]


def _shape_of(n_of):
    def infer(params, in_shapes):
        src: Optional[Tuple[int, ...]] = in_shapes[0]
        return list(in_shapes), [None if src is None else (n_of(src),)]
    return infer


register(OpDef("shape_array", _shape_array_kernel, infer_shape=_shape_of(len), infer_type=_int64,
               gradient=zero_grads, ignore_inputs=(0,), doc="shape_array(data): the shape as int64 data."))
register(OpDef("size_array", _size_array_kernel, infer_shape=_shape_of(lambda s: 1), infer_type=_int64,
               gradient=zero_grads, ignore_inputs=(0,), doc="size_array(data): the size as int64 data."))


# ---------------------------------------------------------------------------------------------
# tile and repeat
# ---------------------------------------------------------------------------------------------

def _tile_reps(params, ndim: int) -> Tuple[Tuple[int, ...], int]:
    reps = tuple(params["reps"])
    if any(r < 0 for r in reps):
        raise MXNetError(f"tile: reps {reps} must be non-negative")
    if 0 in reps and not _util.is_np_shape():
        # the output would have a 0 dim, which legacy shape semantics reads as unknown (MXNet's
        # TileOpShape fails); under mx.np_shape() it is a zero-size array
        raise MXNetError(f"tile: reps {reps} has a 0, which makes a zero-size output; that needs "
                         "NumPy shape semantics (mx.np_shape())")
    n = max(ndim, len(reps))
    return (1,) * (n - len(reps)) + reps, n


def _tile_shape(params, in_shapes):
    src = in_shapes[0]
    if src is None:
        return list(in_shapes), [None]
    reps, n = _tile_reps(params, len(src))
    full = (1,) * (n - len(src)) + tuple(src)
    return list(in_shapes), [tuple(d * r for d, r in zip(full, reps))]


def _tile_kernel(octx, params, inputs, outputs, req):
    assign(outputs[0], req[0], np.tile(inputs[0], params["reps"]))


def _tile_backward(octx, params, inputs, outputs, req):
    g, x = inputs
    reps, n = _tile_reps(params, x.ndim)
    full = (1,) * (n - x.ndim) + x.shape
    split = [v for r, d in zip(reps, full) for v in (r, d)]     # (r0, d0, r1, d1, ...)
    summed = g.reshape(split).sum(axis=tuple(range(0, 2 * n, 2)))
    assign(outputs[0], req[0], summed.reshape(x.shape))


def _with_data_grad(bname: str):
    def grad(node, ograds):
        n = make_node(bname, [ograds[0], node.inputs[0]], node.name + "_backward", params=node.params)
        return [NodeEntry(n, 0, 0)]
    return grad


def _backward_like_data(params, in_shapes):
    return list(in_shapes), [in_shapes[1]]


register(OpDef("tile", _tile_kernel, params={"reps": Param("shape")}, infer_shape=_tile_shape,
               gradient=_with_data_grad("_backward_tile"),
               doc="tile(data, reps): repeat the whole array ``reps[i]`` times along axis i."))
register(OpDef("_backward_tile", _tile_backward, arguments=("ograd", "data"), params={"reps": Param("shape")},
               infer_shape=_backward_like_data, ignore_inputs=(1,)))


def _repeat_shape(params, in_shapes):
    src = in_shapes[0]
    if src is None:
        return list(in_shapes), [None]
    if params["repeats"] < 0:
        raise MXNetError(f"repeat: repeats {params['repeats']} must be non-negative")
    if params["axis"] is None:
        return list(in_shapes), [(_prod(src) * params["repeats"],)]
    axis = normalize_axis("repeat", params["axis"], len(src))
    out = list(src)
    out[axis] *= params["repeats"]
    return list(in_shapes), [tuple(out)]


def _repeat_kernel(octx, params, inputs, outputs, req):
    assign(outputs[0], req[0], np.repeat(inputs[0], params["repeats"], axis=params["axis"]))


def _repeat_backward(octx, params, inputs, outputs, req):
    g, x = inputs
    r, axis = params["repeats"], params["axis"]
    if axis is None:
        summed = g.reshape(-1, r).sum(axis=1)
    else:
        axis %= x.ndim
        summed = g.reshape(x.shape[:axis] + (x.shape[axis], r) + x.shape[axis + 1:]).sum(axis=axis + 1)
    assign(outputs[0], req[0], summed.reshape(x.shape))


_REPEAT_PARAMS = {"repeats": Param("int"), "axis": Param("int_or_none", None)}
register(OpDef("repeat", _repeat_kernel, params=_REPEAT_PARAMS, infer_shape=_repeat_shape,
               gradient=_with_data_grad("_backward_repeat"),
               doc="repeat(data, repeats, axis=None): repeat each element (flattened when axis is None)."))
register(OpDef("_backward_repeat", _repeat_backward, arguments=("ograd", "data"), params=_REPEAT_PARAMS,
               infer_shape=_backward_like_data, ignore_inputs=(1,)))
