"""``mx.random``: seeding, and the samplers of ``mx.nd.random`` under their MXNet 1.x names.

The samplers are the ``mx.nd.random`` functions themselves (as in MXNet, where
``mx.random.uniform is mx.nd.random.uniform``); ``seed`` reseeds every context's generator, or
one context's (``seed(s, ctx=mx.cpu(1))``).
"""
from .ndarray.random import (
    exponential,
    gamma,
    generalized_negative_binomial,
    multinomial,
    negative_binomial,
    normal,
    poisson,
    randint,
    randn,
    shuffle,
    uniform,
)
from .resource import seed

__all__ = ["seed", "uniform", "normal", "randn", "poisson", "exponential", "gamma", "multinomial",
           "negative_binomial", "generalized_negative_binomial", "shuffle", "randint"]
