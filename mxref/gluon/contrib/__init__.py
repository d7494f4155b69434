"""``mx.gluon.contrib``: layers outside the core set (``contrib.nn.SparseEmbedding``)."""
from . import nn  # noqa: F401
