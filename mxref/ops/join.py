"""Joining and splitting: ``Concat`` (``concat``), ``stack`` and ``SliceChannel`` (``split``).

``Concat`` joins along ``dim`` (default 1, as MXNet); ``stack`` adds a new axis; ``SliceChannel``
cuts ``axis`` into ``num_outputs`` equal parts (``squeeze_axis`` drops it when parts have size 1).
Inputs are named ``arg0, arg1, ...``; ``num_args`` is their count (the wrappers fill it in).

Gradients are each other: the gradient of ``Concat`` splits the head gradient at the input
boundaries (``_backward_Concat``); of ``stack``, ``SliceChannel(squeeze_axis=True)``; of
``SliceChannel``, ``Concat`` (or ``stack``) of the output gradients.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

from .. import util as _util
from ..base import MXNetError
from ..graph import NodeEntry, make_node
from .elemwise import output_grads
from .registry import OpDef, Param, assign, register
from .shape import normalize_axis


def _arg_names(params) -> List[str]:
    return [f"arg{i}" for i in range(params["num_args"])]


def _check_num_args(op: str, params, n: int) -> None:
    if n != params["num_args"]:
        raise MXNetError(f"{op}: num_args={params['num_args']} but {n} inputs were given")


def _concat_from_output(params, in_shapes, out):
    """A known output fills the inputs back in (MXNet's ConcatShape): every dim but ``dim`` from
    the output, and the one input whose size along ``dim`` is unknown gets what the others leave."""
    dim = normalize_axis("Concat", params["dim"], len(out))
    ins = [tuple(o if k != dim else 0 for k, o in enumerate(out)) if s is None else
           tuple(a or (o if k != dim else 0) for k, (a, o) in enumerate(zip(s, out))) for s in in_shapes]
    missing = [i for i, s in enumerate(ins) if not s[dim]]
    if len(missing) == 1 and out[dim]:
        rest = out[dim] - sum(s[dim] for s in ins)
        if rest <= 0:
            raise MXNetError(f"Concat: output size {out[dim]} along dim {params['dim']} is too small for "
                             f"the inputs {[tuple(x) for x in ins]}")
        i = missing[0]
        ins[i] = ins[i][:dim] + (rest,) + ins[i][dim + 1:]
    return ins


def _concat_shape(params, in_shapes, out_shapes=None):
    _check_num_args("Concat", params, len(in_shapes))
    out = out_shapes[0] if out_shapes else None
    if out is not None and any(s is None or 0 in s for s in in_shapes):
        in_shapes = _concat_from_output(params, in_shapes, out)
    known = [s for s in in_shapes if s is not None]
    if not known:
        return list(in_shapes), [None]
    ndim = len(known[0])
    dim = normalize_axis("Concat", params["dim"], ndim)
    for s in known:
        if len(s) != ndim or any(a != b and a and b for k, (a, b) in enumerate(zip(s, known[0])) if k != dim):
            raise MXNetError(f"Concat: input shapes {[tuple(x) if x else x for x in in_shapes]} differ "
                             f"outside dim {params['dim']}")
    out = list(known[0])
    sizes = [s[dim] if s is not None else 0 for s in in_shapes]
    # a 0 is an unknown size, except under NumPy shape semantics, where it is a zero-size input
    known_sizes = all(sizes) or (_util.is_np_shape() and None not in in_shapes)
    out[dim] = sum(sizes) if known_sizes else 0
    return list(in_shapes), [tuple(out)]


def _concat_kernel(octx, params, inputs, outputs, req):
    r = req[0]
    if r == "write":
        np.concatenate(inputs, axis=params["dim"] % inputs[0].ndim, out=outputs[0])
    else:
        assign(outputs[0], r, np.concatenate(inputs, axis=params["dim"] % inputs[0].ndim))


def _concat_grad(node, ograds):
    n = make_node("_backward_Concat", [ograds[0], *node.inputs], node.name + "_backward",
                  params=node.params)
    return [NodeEntry(n, i, 0) for i in range(len(node.inputs))]


register(OpDef("Concat", _concat_kernel, aliases=("concat",), arguments=_arg_names,
               params={"num_args": Param("int"), "dim": Param("int", 1)}, key_var_num_args="num_args",
               infer_shape=_concat_shape, gradient=_concat_grad,
               doc="Concat(*data, num_args, dim=1): join arrays along ``dim``."))


def _backward_concat_kernel(octx, params, inputs, outputs, req):
    g, parts = inputs[0], inputs[1:]
    dim = params["dim"] % g.ndim
    bounds = np.cumsum([p.shape[dim] for p in parts])[:-1]
    for out, r, piece in zip(outputs, req, np.split(g, bounds, axis=dim)):
        assign(out, r, piece)


register(OpDef("_backward_Concat", _backward_concat_kernel,
               arguments=lambda p: ["ograd"] + _arg_names(p),
               outputs=lambda p: [f"arg{i}_grad" for i in range(p["num_args"])],
               params={"num_args": Param("int"), "dim": Param("int", 1)},
               infer_shape=lambda p, s: (list(s), list(s[1:])),
               infer_type=lambda p, t: (list(t), [t[0]] * p["num_args"]),
               ignore_inputs=(), doc="Split the head gradient of Concat at the input boundaries."))


def _stack_shape(params, in_shapes):
    _check_num_args("stack", params, len(in_shapes))
    known = next((s for s in in_shapes if s is not None), None)
    if known is None:
        return list(in_shapes), [None]
    for s in in_shapes:
        if s is not None and tuple(s) != tuple(known):
            raise MXNetError(f"stack: all inputs must have one shape, got {[s for s in in_shapes]}")
    axis = normalize_axis("stack", params["axis"], len(known) + 1)
    out = tuple(known[:axis]) + (len(in_shapes),) + tuple(known[axis:])
    return [known] * len(in_shapes), [out]


def _stack_kernel(octx, params, inputs, outputs, req):
    axis = params["axis"] % (inputs[0].ndim + 1)
    assign(outputs[0], req[0], np.stack(inputs, axis=axis))


def _stack_grad(node, ograds):
    p = {"num_outputs": len(node.inputs), "axis": node.params["axis"], "squeeze_axis": True}
    n = make_node("SliceChannel", [ograds[0]], node.name + "_backward", params=p)
    return [NodeEntry(n, i, 0) for i in range(len(node.inputs))]


register(OpDef("stack", _stack_kernel, arguments=_arg_names,
               params={"axis": Param("int", 0), "num_args": Param("int")}, key_var_num_args="num_args",
               infer_shape=_stack_shape, gradient=_stack_grad,
               doc="stack(*data, axis=0, num_args): join same-shape arrays along a new axis."))


def _split_from_outputs(params, src, outs):
    """Known outputs fill the input back in: the other dims from any output, and the split axis
    from the parts (``num_outputs`` times a part, or ``num_outputs`` when squeezed)."""
    n = params["num_outputs"]
    for out in outs:
        if out is None:
            continue
        full = list(out)
        ndim = len(out) + 1 if params["squeeze_axis"] else len(out)
        axis = normalize_axis("SliceChannel", params["axis"], ndim)
        if params["squeeze_axis"]:
            full.insert(axis, n)
        else:
            full[axis] *= n
        if src is None:
            src = tuple(full)
        elif len(src) == ndim:
            src = tuple(a or b for a, b in zip(src, full))
    return src


def _split_shape(params, in_shapes, out_shapes=None):
    n = params["num_outputs"]
    src: Optional[Tuple[int, ...]] = in_shapes[0]
    if out_shapes and (src is None or 0 in src):
        src = _split_from_outputs(params, src, out_shapes)
        in_shapes = [src]
    if src is None:
        return list(in_shapes), [None] * n
    axis = normalize_axis("SliceChannel", params["axis"], len(src))
    if n < 1 or src[axis] % n:
        raise MXNetError(f"SliceChannel: axis {params['axis']} of {tuple(src)} (size {src[axis]}) "
                         f"does not split into num_outputs={n} equal parts")
    part = list(src)
    part[axis] = src[axis] // n
    if params["squeeze_axis"]:
        if part[axis] not in (0, 1):     # 0: not known yet
            raise MXNetError(f"SliceChannel: squeeze_axis needs parts of size 1, got {part[axis]}")
        del part[axis]
    return list(in_shapes), [tuple(part)] * n


def _split_kernel(octx, params, inputs, outputs, req):
    x = inputs[0]
    axis = params["axis"] % x.ndim
    for out, r, piece in zip(outputs, req, np.split(x, params["num_outputs"], axis=axis)):
        assign(out, r, piece.reshape(out.shape))


def _split_grad(node, ograds):
    p = node.params
    grads = output_grads(node, ograds)
    if p["squeeze_axis"]:
        n = make_node("stack", grads, node.name + "_backward",
                      params={"axis": p["axis"], "num_args": len(grads)})
    else:
        n = make_node("Concat", grads, node.name + "_backward",
                      params={"num_args": len(grads), "dim": p["axis"]})
    return [NodeEntry(n, 0, 0)]


register(OpDef("SliceChannel", _split_kernel, aliases=("split",),
               outputs=lambda p: [f"output{i}" for i in range(p["num_outputs"])],
               params={"num_outputs": Param("int"), "axis": Param("int", 1),
                       "squeeze_axis": Param("bool", False)},
               infer_shape=_split_shape, infer_type=lambda p, t: (list(t), [t[0]] * p["num_outputs"]),
               gradient=_split_grad,
               doc="SliceChannel(data, num_outputs, axis=1, squeeze_axis=False): equal parts."))
