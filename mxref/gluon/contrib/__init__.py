"""``mx.gluon.contrib``: layers outside the core set (``contrib.nn``, ``contrib.rnn``) and the ``estimator``
training loop."""
from . import (
    estimator,  # noqa: F401,E402
    nn,  # noqa: F401
    rnn,  # noqa: F401
)
