"""``mx.image``: decode, resize and crop images as HxWxC NDArrays (MXNet 1.x's image functions)."""
from .image import *  # noqa: F401,F403
from .image import __all__  # noqa: F401
from .rotate import imrotate, random_rotate  # noqa: F401,E402

__all__ = list(__all__) + ["imrotate", "random_rotate"]
