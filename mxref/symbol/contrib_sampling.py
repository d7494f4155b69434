"""``mx.sym.contrib.rand_zipfian``: the graph form of ``mx.nd.contrib.rand_zipfian``.

Same formulas as ``mxref/ndarray/contrib_sampling.py`` (MXNet's ``python/mxnet/symbol/contrib.py``),
built from a ``_random_uniform`` node and elementwise nodes; ``symbol/__init__.py`` puts it into the
generated ``mx.sym.contrib`` namespace.
"""
from __future__ import annotations

import math

from ..base import MXNetError
from .register import wrapper
from .symbol import Symbol

__all__ = ["rand_zipfian"]


def rand_zipfian(true_classes: Symbol, num_sampled: int, range_max: int):
    """``(sampled_classes (int64), expected_count_true, expected_count_sampled)`` as Symbols."""
    if not isinstance(true_classes, Symbol):
        raise MXNetError(f"rand_zipfian: true_classes must be a Symbol, got {type(true_classes).__name__}")
    log_range = math.log(range_max + 1)
    rand = wrapper("_random_uniform")(low=0, high=log_range, shape=(num_sampled,), dtype="float64")
    sampled_classes = (rand.exp() - 1).astype("int64") % range_max
    true = true_classes.astype("float64")
    expected_count_true = ((true + 2.0) / (true + 1.0)).log() / log_range * num_sampled
    sampled = sampled_classes.astype("float64")
    expected_count_sampled = ((sampled + 2.0) / (sampled + 1.0)).log() / log_range * num_sampled
    return sampled_classes, expected_count_true, expected_count_sampled
