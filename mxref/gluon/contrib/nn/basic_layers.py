"""``SparseEmbedding``: an embedding whose weight and gradient are both row_sparse (MXNet's contrib layer).

The weight is a ``Parameter(stype='row_sparse', grad_stype='row_sparse')``; ``forward`` looks
rows up through ``weight.row_sparse_data(x)``, so a Trainer whose store pulls rows fetches only
the rows of the batch, and backward yields the gradient of those rows only. Not hybridizable, as
in MXNet (a graph has no way to ask for the rows first).
"""
from __future__ import annotations

from .... import ndarray
from ...block import Block


class SparseEmbedding(Block):
    """Rows of a row_sparse ``weight`` ``(input_dim, output_dim)`` picked by integer indices."""

    def __init__(self, input_dim: int, output_dim: int, dtype="float32", weight_initializer=None, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype,
                        "sparse_grad": True}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim), init=weight_initializer,
                                      dtype=dtype, grad_stype="row_sparse", stype="row_sparse")

    def forward(self, x):
        weight = self.weight.row_sparse_data(x)
        return ndarray.Embedding(x, weight, name="fwd", **self._kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._kwargs['input_dim']} -> {self._kwargs['output_dim']}, " \
               f"{self._kwargs['dtype']})"
