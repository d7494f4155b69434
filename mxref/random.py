"""``mx.random``: seeding, and the random operators (uniform, normal, randint, shuffle).

The samplers are the ``mx.nd.random`` functions themselves (as in MXNet, where
``mx.random.uniform is mx.nd.random.uniform``); ``seed`` reseeds every context's generator.
"""
from .ndarray.random import normal, randint, shuffle, uniform
from .resource import seed

__all__ = ["seed", "uniform", "normal", "randint", "shuffle"]
