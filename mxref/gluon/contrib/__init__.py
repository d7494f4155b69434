"""``mx.gluon.contrib``: layers outside the core set (``contrib.nn.SparseEmbedding``, ``contrib.rnn``)."""
from . import nn, rnn  # noqa: F401
