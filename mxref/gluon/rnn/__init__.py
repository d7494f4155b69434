"""``mx.gluon.rnn``: fused recurrent layers and single-step cells."""
from .cell_wrappers import *  # noqa: F401,F403
from .rnn_cell import *  # noqa: F401,F403
from .rnn_layer import *  # noqa: F401,F403
