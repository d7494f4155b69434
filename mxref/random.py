"""``mx.random``: seeding, and the random operators (uniform, normal, randint, shuffle)."""
from .resource import seed  # noqa: F401
