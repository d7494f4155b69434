"""``_sample_unique_zipfian(range_max, shape=(batch, n))``: ``n`` distinct classes per row, log-uniform.

Candidates are drawn from the approximately Zipfian (log-uniform) distribution on ``[0, range_max)``::

    c = round(exp(u * log(range_max))) - 1,   u ~ U[0, 1)
    P(c) ~ (log(c + 2) - log(c + 1)) / log(range_max + 1)

and kept in the order drawn, skipping repeats, until the row holds ``n`` distinct classes
(sampling without replacement, as for sampled softmax). The second output counts the candidates
each row needed (MXNet's ``num_tries``, which sampled-softmax uses to correct expected counts).
Both outputs are int64; the op has no inputs, so no gradient. It draws from the ``'random'``
resource; ``n > range_max`` is an error at the next wait.
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .registry import OpDef, Param, register


def _shape(params, in_shapes):
    shape = params["shape"]
    if shape is None or len(shape) != 2:
        raise MXNetError(f"_sample_unique_zipfian: shape must be 2-D (batch_size, num_sampled), got {shape}")
    return [], [tuple(shape), (shape[0],)]


def _type(params, in_types):
    return [], [np.dtype(np.int64), np.dtype(np.int64)]


def _row(rng: np.random.Generator, n: int, log_range: float):
    """``n`` distinct candidates in draw order, and how many draws that took."""
    stream = np.empty(0, dtype=np.int64)
    while True:
        more = np.rint(np.exp(rng.random(max(2 * n, 64)) * log_range)).astype(np.int64) - 1
        stream = np.concatenate([stream, more])
        _, first = np.unique(stream, return_index=True)
        if len(first) >= n:
            keep = np.sort(first)[:n]
            return stream[keep], (int(keep[-1]) + 1 if n else 0)


def forward(octx, params, inputs, outputs, req):
    range_max = params["range_max"]
    batch, n = params["shape"]
    if n > range_max:
        raise MXNetError(f"_sample_unique_zipfian: num_sampled ({n}) cannot exceed the number of "
                         f"possible classes (range_max={range_max})")
    log_range = np.log(range_max)
    for i in range(batch):
        outputs[0][i], outputs[1][i] = _row(octx.rng, n, log_range)


register(OpDef("_sample_unique_zipfian", forward, arguments=(), outputs=("output0", "output1"),
               params={"range_max": Param("int", doc="The number of possible classes."),
                       "shape": Param("shape", None, doc="2-D shape of the output (batch_size, "
                                                         "num_sampled).")},
               infer_shape=_shape, infer_type=_type, resources=("random",),
               gradient=lambda node, ograds: [], doc=__doc__))
