"""``_contrib_SparseEmbedding`` (``mx.nd.contrib.SparseEmbedding``): MXNet's older name for an
``Embedding`` whose weight gradient is always row_sparse (deprecated there in favour of
``Embedding(sparse_grad=True)``).

Math: ``out[..., :] = weight[clip(data[...], 0, input_dim - 1), :]``; ``dweight`` holds only the
rows the batch used, each the sum of its positions' head gradients (``_backward_Embedding`` with
``sparse_grad=True``). A row_sparse weight reads zeros for rows it does not store.
"""
from __future__ import annotations

from ...graph import NodeEntry, make_node
from ..nn import embedding
from ..registry import OpDef, register
from .base import register_storage
from .indexing import _embedding_ex, _embedding_storage


def _gradient(node, ograds):
    bwd = make_node("_backward_Embedding", [ograds[0], node.inputs[0]], node.name + "_backward",
                    params=dict(node.params, sparse_grad=True))
    bwd.control_deps.append(node)
    bwd.extra["forward_node"] = node
    return [None, NodeEntry(bwd, 0, 0)]


register(OpDef("_contrib_SparseEmbedding", embedding.forward, arguments=["data", "weight"],
               params=embedding.PARAMS, infer_shape=embedding.infer_shape,
               infer_type=embedding.infer_type, gradient=_gradient, validate=embedding._validate,
               doc=__doc__))
register_storage("_contrib_SparseEmbedding", _embedding_storage, _embedding_ex)
