"""``mx.image``: decode, resize and crop images as HxWxC NDArrays (MXNet 1.x's image functions)."""
from .augmenters import *  # noqa: F401,F403,E402
from .augmenters import __all__ as _aug_all  # noqa: E402
from .image import *  # noqa: F401,F403
from .image import __all__  # noqa: F401
from .image_iter import ImageIter  # noqa: F401,E402
from .rotate import imrotate, random_rotate  # noqa: F401,E402

__all__ = list(__all__) + list(_aug_all) + ["ImageIter", "imrotate", "random_rotate"]
