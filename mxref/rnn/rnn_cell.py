"""MXNet's ``mx.rnn.rnn_cell`` namespace: every symbolic cell class, gathered from this package's modules."""
from .base_cell import BaseRNNCell, RNNParams  # noqa: F401
from .cells import GRUCell, LSTMCell, RNNCell  # noqa: F401
from .conv_cells import BaseConvRNNCell, ConvGRUCell, ConvLSTMCell, ConvRNNCell  # noqa: F401
from .fused import FusedRNNCell  # noqa: F401
from .wrappers import (  # noqa: F401
                       BidirectionalCell,
                       DropoutCell,
                       ModifierCell,
                       ResidualCell,
                       SequentialRNNCell,
                       ZoneoutCell,
)

__all__ = ["RNNParams", "BaseRNNCell", "RNNCell", "LSTMCell", "GRUCell", "FusedRNNCell",
           "SequentialRNNCell", "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell",
           "BidirectionalCell", "BaseConvRNNCell", "ConvRNNCell", "ConvLSTMCell", "ConvGRUCell"]
