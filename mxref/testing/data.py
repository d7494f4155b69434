"""Data for tests: an iterator that repeats one batch (for timing without input cost)."""
from __future__ import annotations

from ..io import DataIter


class DummyIter(DataIter):
    """Returns the first batch of ``real_iter`` forever (it never raises ``StopIteration``).

    Used to time a model without the cost of reading data.
    """

    def __init__(self, real_iter):
        super().__init__()
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.batch_size = real_iter.batch_size
        self.the_batch = next(real_iter)

    def next(self):
        return self.the_batch
