"""Small helpers shared by the neural-network operators: shape checks, type rules, backward nodes."""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

from ... import graph as _graph
from ...base import MXNetError
from ..parallel import parallel_matmul

Shape = Optional[Tuple[int, ...]]


def known(shape: Shape) -> bool:
    """A shape with every dimension known (``None`` is an unknown shape, 0 an unknown dimension)."""
    return shape is not None and 0 not in shape


def merge_shape(op: str, what: str, got: Shape, want: Shape) -> Shape:
    """``want`` where ``got`` is unknown; an error naming ``op`` and ``what`` if they disagree."""
    if got is None:
        return want
    if want is None:
        return got
    if len(got) != len(want) or any(a and b and a != b for a, b in zip(got, want)):
        raise MXNetError(f"{op}: shape of '{what}' is {tuple(got)}, expected {tuple(want)}")
    return tuple(a or b for a, b in zip(got, want))


def need_ndim(op: str, what: str, shape: Shape, ndims: Sequence[int]) -> None:
    if shape is not None and len(shape) not in ndims:
        want = " or ".join(f"{n}-D" for n in ndims)
        raise MXNetError(f"{op}: '{what}' must be {want}, got shape {tuple(shape)}")


def uniform_type(num_outputs: int = 1):
    """Type rule: every input and all ``num_outputs`` outputs share the first known dtype."""
    def infer_type(params, in_types):
        dt = next((t for t in in_types if t is not None), None)
        for t in in_types:
            if t is not None and t != dt:
                names = [getattr(x, "name", x) for x in in_types]
                raise MXNetError(f"inputs have mixed dtypes {names}; this operator needs one dtype")
        n = num_outputs(params) if callable(num_outputs) else num_outputs
        return [dt] * len(in_types), [dt] * n
    return infer_type


def backward_node(fwd: "_graph.Node", op_name: str, inputs: Sequence["_graph.NodeEntry"]):
    """The ``_backward_*`` node of forward node ``fwd``: same parameters, and, as in nnvm, a control
    dependency on ``fwd`` (recorded in ``extra['forward_node']`` too) so passes can pair them."""
    node = _graph.make_node(op_name, list(inputs), fwd.name + "_backward", params=fwd.params)
    node.control_deps.append(fwd)
    node.extra["forward_node"] = fwd
    return node


def out_entries(node, n: int) -> List["_graph.NodeEntry"]:
    return [_graph.NodeEntry(node, i, 0) for i in range(n)]


def entry(node, index: int = 0) -> "_graph.NodeEntry":
    return _graph.NodeEntry(node, index, 0)


def matmul_into(out: np.ndarray, req: str, a: np.ndarray, b: np.ndarray, split: bool = True) -> None:
    """``out (req)= a @ b`` without a temporary when writing into a contiguous output; ``split``
    (2-D operands) lets the operator threads share it, ``False`` keeps it one BLAS call."""
    if req == "null":
        return
    if req != "add" and out.flags.c_contiguous and out.dtype == np.result_type(a, b):
        parallel_matmul(a, b, out) if split and a.ndim == b.ndim == 2 else np.matmul(a, b, out=out)
    elif req == "add":
        out += a @ b
    else:
        out[...] = a @ b


def normalized_dx(w: np.ndarray, xhat: np.ndarray, std: np.ndarray, axis) -> np.ndarray:
    """The input gradient of a normalisation ``xhat = (x - mean) / std`` taken over ``axis``, given
    ``w`` = the head gradient times the scale: ``(w - mean(w) - xhat * mean(w * xhat)) / std``
    (LayerNorm, GroupNorm and InstanceNorm share it)."""
    return (w - w.mean(axis=axis, keepdims=True) - xhat * (w * xhat).mean(axis=axis, keepdims=True)) / std
