"""``mx.contrib``: MXNet's older spelling of the contrib operator namespaces (``mx.contrib.nd.box_nms``
is ``mx.nd.contrib.box_nms``)."""
from ..ndarray import contrib as ndarray
from ..symbol import contrib as symbol

nd = ndarray
sym = symbol

__all__ = ["ndarray", "symbol", "nd", "sym"]
