"""Optional C fast paths (Cython); ``import mxref`` never requires them.

``reference_kernels()`` (from ``switch``) is the one switch to reference implementations, for a
block; ``MXREF_ENABLE_EXT=0`` sets it for the whole process.
"""
from .switch import reference_kernels, reference_only

__all__ = ["reference_kernels", "reference_only"]
