"""``mx.gluon.contrib.estimator``: the Estimator training loop, its event handlers and BatchProcessor."""
from . import batch_processor, estimator, event_handler  # noqa: F401
from .batch_processor import *  # noqa: F401,F403
from .estimator import *  # noqa: F401,F403
from .event_handler import *  # noqa: F401,F403
