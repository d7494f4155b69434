"""``count_flops``: floating-point operations per node, from the inferred shapes (a small example pass).

A multiply-add counts as 2 operations. ``FullyConnected`` and ``Convolution`` (and their
backward ops, which cost twice the forward: one product for the data gradient, one for the
weight gradient) use their matrix-product sizes; every other op counts one operation per output
element. ``docs/howto/add_a_graph_pass.md`` walks through this file.
"""
from __future__ import annotations

from typing import List

import numpy as np

from ..graph import Graph, register_pass

__all__ = ["count_flops"]


def _elements(shape) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape is not None else 0


def _matmul_flops(weight, out) -> int:
    """Forward cost of FullyConnected / Convolution: each output element is a dot product.

    Its length is the weight's size past the first axis: ``in_dim`` for a ``(num_hidden, in_dim)``
    FullyConnected weight, ``C / group * prod(kernel)`` for a Convolution weight.
    """
    return 2 * _elements(out) * _elements(weight[1:])


@register_pass("count_flops", requires=("shape",), provides=("flops", "total_flops"))
def count_flops(graph: Graph, **_ignored) -> Graph:
    """Attach ``flops`` (one count per node id; 0 for variables) and ``total_flops``."""
    idx = graph.indexed
    shape = graph.attrs["shape"]
    flops: List[int] = []
    for nid, node in enumerate(idx.nodes):
        if node.is_variable:
            flops.append(0)
            continue
        ins = [shape[idx.entry_id(e)] for e in node.inputs]
        outs = [shape[idx.entry_id(nid, i)] for i in range(node.num_outputs())]
        name = node.op.name
        if name in ("FullyConnected", "Convolution"):
            flops.append(_matmul_flops(ins[1], outs[0]))
        elif name in ("_backward_FullyConnected", "_backward_Convolution"):
            # inputs are (ograd, data, weight): ograd is shaped like the forward output
            flops.append(2 * _matmul_flops(ins[2], ins[0]))
        else:
            flops.append(sum(_elements(s) for s in outs))
    out = Graph(graph.outputs, graph.attrs)
    out._indexed = idx
    out.attrs.update(flops=flops, total_flops=sum(flops))
    return out
