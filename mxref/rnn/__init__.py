"""MXNet 1.x's legacy symbolic RNN package, ``mx.rnn``: step cells unrolled into Symbol graphs,
the fused ``RNN`` cell, bucketed sentence batches and checkpoints with unpacked weights.

Names, weight names and unrolled graphs are MXNet 1.9.1's (``tests/fixtures/rnn/`` holds its
graphs); see ``docs/architecture/rnn.md``.
"""
from . import io, rnn, rnn_cell  # noqa: F401
from .io import BucketSentenceIter, encode_sentences  # noqa: F401
from .rnn import do_rnn_checkpoint, load_rnn_checkpoint, rnn_unroll, save_rnn_checkpoint  # noqa: F401
from .rnn_cell import *  # noqa: F401,F403
from .rnn_cell import __all__ as _cells

__all__ = list(_cells) + ["BucketSentenceIter", "encode_sentences", "rnn_unroll", "save_rnn_checkpoint",
                          "load_rnn_checkpoint", "do_rnn_checkpoint"]
