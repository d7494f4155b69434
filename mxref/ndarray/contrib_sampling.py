"""``mx.nd.contrib.rand_zipfian``: log-uniform candidate classes and their expected counts.

MXNet's Python-level sampler for sampled softmax (``python/mxnet/ndarray/contrib.py``), written
with NDArray operations, so it draws from the context's random resource like every sampler::

    c = int(exp(u) - 1) mod range_max,    u ~ U[0, log(range_max + 1))
    P(c) = (log(c + 2) - log(c + 1)) / log(range_max + 1)
    expected count of c among num_sampled draws = P(c) * num_sampled

``ndarray/__init__.py`` puts it into the generated ``mx.nd.contrib`` namespace.
"""
from __future__ import annotations

import math

from ..base import MXNetError
from .ndarray import NDArray
from .random import uniform

__all__ = ["rand_zipfian"]


def rand_zipfian(true_classes: NDArray, num_sampled: int, range_max: int, ctx=None):
    """``num_sampled`` classes from the approximately Zipfian distribution on ``[0, range_max)``,
    with replacement; returns ``(sampled_classes (int64), expected_count_true,
    expected_count_sampled)``, the counts in float64."""
    if not isinstance(true_classes, NDArray):
        raise MXNetError(f"rand_zipfian: true_classes must be an NDArray, got {type(true_classes).__name__}")
    ctx = ctx if ctx is not None else true_classes.context
    rand = uniform(0, math.log(range_max + 1), shape=(num_sampled,), dtype="float64", ctx=ctx)
    return zipfian_from_uniform(rand, true_classes, num_sampled, range_max)


def zipfian_from_uniform(rand, true_classes, num_sampled: int, range_max: int):
    """The classes and expected counts from ``rand ~ U[0, log(range_max + 1))``; ``rand`` and
    ``true_classes`` are NDArrays or Symbols alike (``mx.sym.contrib.rand_zipfian`` shares this)."""
    log_range = math.log(range_max + 1)
    # The modulo keeps the rare exp(u) - 1 == range_max inside [0, range_max).
    sampled_classes = (rand.exp() - 1).astype("int64") % range_max
    true = true_classes.astype("float64")
    expected_count_true = ((true + 2.0) / (true + 1.0)).log() / log_range * num_sampled
    sampled = sampled_classes.astype("float64")
    expected_count_sampled = ((sampled + 2.0) / (sampled + 1.0)).log() / log_range * num_sampled
    return sampled_classes, expected_count_true, expected_count_sampled


def install(package) -> None:
    """Add the Python-level contrib samplers to ``package.contrib`` (the generated namespace)."""
    package.contrib.rand_zipfian = rand_zipfian
