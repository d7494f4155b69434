"""``autograd.Function``: an operation whose forward and backward are Python methods on NDArrays.

While recording, calling a Function records one ``_CustomFunction`` node. Its gradient is a
``_backward_CustomFunction`` node that the autograd executor runs by calling the Function's
``backward`` with the output gradients, instead of a kernel. The Function object (and whatever it
kept with ``save_for_backward``) lives on the recorded node, so it is freed with the graph.
"""
from __future__ import annotations

from typing import Dict, List, Tuple

from . import autograd
from .base import MXNetError
from .graph import Node, NodeEntry, make_node
from .ndarray.ndarray import NDArray
from .ops.registry import OpDef, Param, register

__all__ = ["Function"]


class Function:
    """User-defined differentiable function (MXNet's ``mx.autograd.Function``).

    Override ``forward`` and ``backward``; each instance may be called once::

        class sigmoid(mx.autograd.Function):
            def forward(self, x):
                y = 1 / (1 + mx.nd.exp(-x))
                self.save_for_backward(y)
                return y

            def backward(self, dy):
                y, = self.saved_tensors
                return dy * y * (1 - y)

    ``forward`` runs with recording paused; ``backward`` receives one gradient per output and
    returns one gradient per input.
    """

    def __init__(self):
        self._used = False
        self.saved_tensors = ()

    def save_for_backward(self, *args) -> None:
        """Keep ``args`` for ``backward`` (as ``self.saved_tensors``)."""
        self.saved_tensors = args

    def forward(self, *inputs):
        raise NotImplementedError

    def backward(self, *output_grads):
        raise NotImplementedError

    def __call__(self, *inputs):
        if self._used:
            raise MXNetError("autograd.Function: each Function instance can only be called once; "
                             "create another instance")
        self._used = True
        # Only this thread's flag: ``set_recording`` would also re-count the recording threads
        # under a lock and reinstall the invoke hook, twice per call.
        state = autograd._state
        prev, state.is_recording = state.is_recording, False
        try:
            outputs = self.forward(*inputs)
        finally:
            state.is_recording = prev
        if prev:
            outs = [outputs] if isinstance(outputs, NDArray) else list(outputs)
            for o in [*inputs, *outs]:
                if not isinstance(o, NDArray):
                    raise MXNetError(f"autograd.Function takes and returns NDArrays, got {type(o).__name__}")
            params = _params(len(inputs), len(outs))
            autograd._record(_FORWARD, params, list(inputs), outs,
                             {"function": self, "input_shapes": [x.shape for x in inputs]})
        return outputs


_parsed: Dict[Tuple[int, int], dict] = {}


def _params(num_inputs: int, num_outputs: int) -> dict:
    """The parsed parameters of a ``_CustomFunction`` node (parsed once per arity)."""
    p = _parsed.get((num_inputs, num_outputs))
    if p is None:
        p = _parsed[(num_inputs, num_outputs)] = _FORWARD.parse_params(
            {"num_inputs": num_inputs, "num_outputs": num_outputs})
    return p


def run_backward(func: Function, shapes: List[tuple], ograds: List[NDArray]) -> List[NDArray]:
    """Run ``func.backward`` (the Function of a recorded node whose inputs had ``shapes``)."""
    grads = func.backward(*ograds)
    grads = [grads] if isinstance(grads, NDArray) else list(grads)
    if len(grads) != len(shapes):
        raise MXNetError(f"autograd.Function.backward ({type(func).__name__}) returned {len(grads)} "
                         f"gradients for {len(shapes)} inputs")
    for i, (g, shape) in enumerate(zip(grads, shapes)):
        if not isinstance(g, NDArray):
            raise MXNetError(f"autograd.Function.backward ({type(func).__name__}) must return NDArrays, "
                             f"got {type(g).__name__} for input {i}")
        if g._shape != shape:
            raise MXNetError(f"autograd.Function.backward ({type(func).__name__}): gradient {i} has shape "
                             f"{g._shape}, but input {i} has shape {shape}")
    return grads


def _gradient(node: Node, ograds) -> List[NodeEntry]:
    n = make_node("_backward_CustomFunction", list(ograds), node.name + "_backward", params=node.params)
    # .get: autograd also builds this gradient on a placeholder node, to see what it reads.
    n.extra["function"] = node.extra.get("function")
    n.extra["input_shapes"] = node.extra.get("input_shapes")
    return [NodeEntry(n, i, 0) for i in range(node.params["num_inputs"])]


def _unknown_shapes(params, in_shapes):
    raise MXNetError("_CustomFunction: runs only through autograd.Function, not as an operator")


_PARAMS = {"num_inputs": Param("int", doc="Number of inputs."),
           "num_outputs": Param("int", doc="Number of outputs.")}
_FORWARD = register(OpDef(
    "_CustomFunction", None, params=_PARAMS, gradient=_gradient, infer_shape=_unknown_shapes,
    arguments=lambda p: [f"data{i}" for i in range(p["num_inputs"])],
    outputs=lambda p: [f"output{i}" for i in range(p["num_outputs"])],
    doc="An autograd.Function call recorded in a graph (forward and backward are Python methods)."))
register(OpDef(
    "_backward_CustomFunction", None, params=_PARAMS, infer_shape=_unknown_shapes,
    arguments=lambda p: [f"ograd{i}" for i in range(p["num_outputs"])],
    outputs=lambda p: [f"igrad{i}" for i in range(p["num_inputs"])]))
