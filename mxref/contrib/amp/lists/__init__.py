"""The operator lists AMP decides casts by (``symbol_fp16``: float16 as the low precision)."""
from . import symbol_fp16  # noqa: F401
