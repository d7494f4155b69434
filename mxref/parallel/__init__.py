"""Model parallelism beyond one graph's placement: the GPipe micro-batch ``Pipeline``."""
from .pipeline import Pipeline

__all__ = ["Pipeline"]
