"""``ResizeIter``: make an iterator's epoch a fixed number of batches, wrapping or cutting short."""
from __future__ import annotations

from ..base import MXNetError
from .base import DataBatch, DataIter, WrappingIter

__all__ = ["ResizeIter"]


class ResizeIter(WrappingIter):
    """Give ``data_iter`` an epoch of exactly ``size`` batches.

    When the inner iterator runs out first it is reset and iteration continues from its start;
    when it has more, the rest of its epoch is served by the next epoch of this iterator (unless
    ``reset_internal`` resets it at every ``reset``). Useful to make workers with different
    amounts of data run the same number of batches.

    Parameters
    ----------
    data_iter : DataIter
        The iterator to resize.
    size : int
        Batches per epoch.
    reset_internal : bool
        Whether ``reset`` also resets ``data_iter``.

    Examples
    --------
    >>> it = mx.io.ResizeIter(mx.io.NDArrayIter(mx.nd.ones((100, 10)), batch_size=25), 2)
    >>> sum(1 for _ in it)
    2
    """

    def __init__(self, data_iter: DataIter, size: int, reset_internal: bool = True):
        super().__init__()
        if int(size) < 0:
            raise MXNetError(f"ResizeIter: size must be non-negative, got {size}")
        self.data_iter = data_iter
        self.size = int(size)
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch: DataBatch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self) -> None:
        """Start a new epoch of ``size`` batches."""
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self) -> bool:
        """Fetch the next batch of the inner iterator, wrapping around at its end."""
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            try:
                self.current_batch = self.data_iter.next()
            except StopIteration:
                raise MXNetError("ResizeIter: the inner iterator yields no batch at all") from None
        self.cur += 1
        return True
