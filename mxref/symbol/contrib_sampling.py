"""``mx.sym.contrib.rand_zipfian``: the graph form of ``mx.nd.contrib.rand_zipfian``.

Same formulas as ``mxref/ndarray/contrib_sampling.py`` (MXNet's ``python/mxnet/symbol/contrib.py``),
built from a ``_random_uniform`` node and elementwise nodes; ``symbol/__init__.py`` puts it into the
generated ``mx.sym.contrib`` namespace.
"""
from __future__ import annotations

import math

from ..base import MXNetError
from ..ndarray.contrib_sampling import zipfian_from_uniform
from .register import wrapper
from .symbol import Symbol

__all__ = ["rand_zipfian"]


def rand_zipfian(true_classes: Symbol, num_sampled: int, range_max: int):
    """``(sampled_classes (int64), expected_count_true, expected_count_sampled)`` as Symbols."""
    if not isinstance(true_classes, Symbol):
        raise MXNetError(f"rand_zipfian: true_classes must be a Symbol, got {type(true_classes).__name__}")
    rand = wrapper("_random_uniform")(low=0, high=math.log(range_max + 1), shape=(num_sampled,),
                                      dtype="float64")
    return zipfian_from_uniform(rand, true_classes, num_sampled, range_max)
