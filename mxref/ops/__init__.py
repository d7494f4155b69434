"""Operators: ``registry`` holds one ``OpDef`` per operator; importing this package registers them all."""
from . import registry  # noqa: F401
