"""``mx.gluon.contrib.rnn``: more recurrent cells (variational dropout, LSTM with projection)."""
from .rnn_cell import LSTMPCell, VariationalDropoutCell  # noqa: F401

__all__ = ["VariationalDropoutCell", "LSTMPCell"]
