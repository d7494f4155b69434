"""What the control-flow operators share: the subgraph service, parameters, and input routing.

A control-flow node carries its body as subgraphs (``node.subgraphs``, also ``params['subgraphs']``).
Running or inferring a subgraph needs the graph passes and a graph interpreter, which stand on
a higher floor than operators (``mxref/passes``), so this floor only declares the three things it
asks of a subgraph and ``mxref/passes/subgraph.py`` installs the service that does them, as the
operator registry installs ``make_node``'s lookup in the graph layer.
"""
from __future__ import annotations

from typing import Any, List, Optional, Protocol, Sequence, Tuple

import numpy as np

from ...base import MXNetError
from ...graph import NodeEntry, make_node
from ..registry import OpDef, Param, register


class SubgraphService(Protocol):
    """What the loop kernels ask of a subgraph (``mxref/passes/subgraph.py`` implements it)."""

    def infer(self, graph, kind: str, in_values: list, out_values: list) -> Tuple[list, list]:
        """Shapes (``kind='shape'``) or dtypes of the subgraph's inputs and outputs, from partial ones."""

    def run(self, graph, inputs: Sequence[np.ndarray], octx) -> List[np.ndarray]:
        """The subgraph's outputs for these input arrays."""

    def record(self, graph, inputs: Sequence[np.ndarray], octx) -> Tuple[List[np.ndarray], Any]:
        """Like ``run``, keeping what the gradient needs: ``(outputs, tape)``."""

    def grad(self, graph, tape, head_grads: Sequence[Optional[np.ndarray]],
             octx) -> List[Optional[np.ndarray]]:
        """The gradient of every subgraph input of a recorded run, given the outputs' gradients
        (``None``: zero)."""


_SERVICE: List[Any] = [None]


def install_subgraph_service(service: SubgraphService) -> None:
    """Install the object that infers and runs subgraphs (done by ``mxref.passes.subgraph``)."""
    _SERVICE[0] = service


def service() -> SubgraphService:
    if _SERVICE[0] is None:
        raise MXNetError("control-flow operators need the subgraph service: import mxref.passes")
    return _SERVICE[0]


def locs_param(doc: str) -> Param:
    return Param("shape", doc=doc)


COMMON_PARAMS = {
    "num_args": Param("int", doc="Number of inputs, the subgraphs counted too (MXNet's convention)."),
    "num_outputs": Param("int", doc="Number of outputs (step outputs, then loop states)."),
}


def output_names(p) -> List[str]:
    n = p["num_outputs"]
    return ["output"] if n == 1 else [f"output{i}" for i in range(n)]


def input_names(num_subgraphs: int):
    return lambda p: [f"data{i}" for i in range(p["num_args"] - num_subgraphs)]


def merge(kind: str, a, b, what: str):
    """The value agreeing with ``a`` and ``b`` (``None``/0: unknown), or ``MXNetError`` naming ``what``."""
    if a is None:
        return b
    if b is None:
        return a
    if kind == "dtype":
        if np.dtype(a) != np.dtype(b):
            raise MXNetError(f"{what}: dtype {np.dtype(a).name} and {np.dtype(b).name} disagree")
        return a
    if len(a) != len(b) or any(x and y and x != y for x, y in zip(a, b)):
        raise MXNetError(f"{what}: shape {tuple(a)} and {tuple(b)} disagree")
    return tuple(x or y for x, y in zip(a, b))


def unstack(kind: str, value):
    """One step's value of a stacked value: the shape without its first axis, ``(1,)`` for a
    1-D value (MXNet's ``SliceFirstDim``: a step of a vector is a one-element vector)."""
    if kind == "dtype" or value is None:
        return value
    return tuple(value[1:]) if len(value) > 1 else (1,) if len(value) == 1 else None


def row(array, t: int):
    """Step ``t`` of a stacked array as a writable view; ``(1,)``-shaped for a 1-D array."""
    return array[t] if array.ndim > 1 else array[t:t + 1]


def stack(kind: str, value, length):
    """A stacked value of ``length`` steps (``length`` 0 is unknown)."""
    if kind == "dtype" or value is None:
        return value
    return (length or 0,) + tuple(value)


def gather(values: Sequence, locs: Sequence[int]) -> list:
    """The subgraph's inputs: input ``j`` of the subgraph is ``values[locs[j]]``."""
    return [values[i] for i in locs]


def scatter_add(total: list, locs: Sequence[int], grads: Sequence) -> None:
    """Add subgraph-input gradients into the gradients of the node inputs they came from."""
    for j, g in zip(locs, grads):
        if g is not None:
            total[j] = g.copy() if total[j] is None else total[j] + g


def backward_rule(p, ins):
    """Shape/type rule of a ``_backward_*`` node: inputs are ``ograds + forward inputs``, outputs
    are the forward inputs' gradients, so each output is like the forward input it belongs to."""
    return list(ins), list(ins[p["num_outputs"]:])


def gradient_of(backward_op: str):
    """The op's ``gradient``: one ``_backward_*`` node reading the output gradients and the forward
    inputs (it replays the forward iterations itself), carrying the same subgraphs."""
    def gradient(node, ograds):
        bwd = make_node(backward_op, list(ograds) + list(node.inputs), node.name + "_backward",
                        attrs=dict(node.attrs), params=node.params)
        bwd.subgraphs = list(node.subgraphs)
        bwd.control_deps.append(node)
        return [NodeEntry(bwd, i, 0) for i in range(len(node.inputs))]
    return gradient


def register_pair(name: str, num_subgraphs: int, forward, backward, params, infer, doc: str) -> None:
    """Register ``name`` (inputs ``data0..``, outputs ``output``/``output<i>``) and its
    ``_backward<name>`` node (inputs the output gradients then the forward inputs, outputs the
    forward inputs' gradients), as the three control-flow operators all have them."""
    inputs = input_names(num_subgraphs)
    register(OpDef(name, forward, params=params, arguments=inputs, outputs=output_names,
                   infer_shape=infer("shape"), infer_type=infer("dtype"),
                   gradient=gradient_of(f"_backward{name}"), doc=doc))
    register(OpDef(f"_backward{name}", backward, params=params,
                   arguments=lambda p: [f"ograd{i}" for i in range(p["num_outputs"])] + inputs(p),
                   outputs=lambda p: [f"grad{i}" for i in range(p["num_args"] - num_subgraphs)],
                   infer_shape=backward_rule, infer_type=backward_rule))


def write_outputs(outputs, req, values) -> None:
    """Write each value as its ``req`` says; a ``None`` value is zero (a gradient that is not)."""
    for out, r, v in zip(outputs, req, values):
        if r == "null":
            continue
        if v is None:
            if r != "add":
                out[...] = 0
        elif r == "add":
            out += v
        else:
            out[...] = v


def scalar_bool(x, what: str) -> bool:
    """The truth of a one-element array (a predicate's result); ``MXNetError`` for any other."""
    arr = np.asarray(x)
    if arr.size != 1:
        raise MXNetError(f"{what} must be a scalar (one element), got shape {arr.shape}")
    return bool(arr.reshape(()))
