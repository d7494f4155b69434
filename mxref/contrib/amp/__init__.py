"""``mx.contrib.amp``: automatic mixed precision (float16 casts by operator lists, dynamic loss
scaling for Gluon Trainers, graph conversion for inference)."""
from . import lists  # noqa: F401
from .amp import *  # noqa: F401,F403
from .amp import __all__ as _amp_all
from .loss_scaler import LossScaler

__all__ = list(_amp_all) + ["LossScaler", "lists"]
