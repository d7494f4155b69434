"""A reference interpreter: run a graph of nodes with numpy, no engine, no memory planning.

It is the simplest possible executor (micrograd-sized), used to test operators and their gradient
graphs before and beside the real ``Executor``.
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Union

import numpy as np

from ..base import MXNetError
from ..context import cpu
from ..graph import Node, NodeEntry, topo_sort
from ..ops.registry import OpContext, get_kernel

__all__ = ["evaluate"]


class _LocalRandom:
    """A stand-in for the 'random' / 'temp_space' resources, private to one evaluation."""

    def __init__(self, kind, seed):
        self.kind = kind
        self.generator = np.random.default_rng(seed)

    def get_space(self, nbytes):
        return np.empty(nbytes, dtype=np.uint8)


def evaluate(outputs: Sequence[NodeEntry], feed: Dict[Union[str, Node], np.ndarray],
             is_train: bool = False, seed: int = 0) -> List[np.ndarray]:
    """Values of ``outputs``; ``feed`` maps variable nodes (or their names) to arrays.

    Auxiliary states in ``feed`` are updated in place, as the real executor does.
    """
    values: Dict[int, List[np.ndarray]] = {}
    for node in topo_sort(outputs):
        if node.is_variable:
            val = feed.get(node, feed.get(node.name))
            if val is None:
                raise MXNetError(f"evaluate: no value fed for variable '{node.name}'")
            values[id(node)] = [val if isinstance(val, np.ndarray) else np.asarray(val)]
            continue
        params = node.params
        ins = [values[id(e.node)][e.index] for e in node.inputs]
        _, out_shapes = node.op.infer_shape(params, [x.shape for x in ins])
        _, out_types = node.op.infer_type(params, [x.dtype for x in ins])
        if any(s is None for s in out_shapes) or any(t is None for t in out_types):
            raise MXNetError(f"evaluate: cannot infer outputs of {node.name} ({node.op.name})")
        outs = [np.zeros(s, dtype=t) for s, t in zip(out_shapes, out_types)]
        res = [_LocalRandom(kind, seed) for kind in node.op.resources]
        octx = OpContext(is_train=is_train, ctx=cpu(), resources=res)
        get_kernel(node.op, "cpu")(octx, params, ins, outs, ["write"] * len(outs))
        values[id(node)] = outs
    return [values[id(e.node)][e.index] for e in outputs]
