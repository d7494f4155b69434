"""Samplers: the order of sample indices (``SequentialSampler``, ``RandomSampler``) and their
grouping into batches (``BatchSampler`` with ``last_batch`` 'keep', 'discard' or 'rollover')."""
from __future__ import annotations

from typing import Iterator, List

import numpy as np

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "BatchSampler"]


class Sampler:
    """Iterates over indices of a dataset."""

    def __iter__(self) -> Iterator:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``start, start+1, ..., start+length-1``."""

    def __init__(self, length: int, start: int = 0):
        self._length, self._start = length, start

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self) -> int:
        return self._length


class RandomSampler(Sampler):
    """A fresh permutation of ``range(length)`` every epoch (from numpy's global generator)."""

    def __init__(self, length: int):
        self._length = length

    def __iter__(self):
        indices = np.arange(self._length)
        np.random.shuffle(indices)
        return iter(indices)

    def __len__(self) -> int:
        return self._length


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler``.

    ``last_batch``: 'keep' yields the short last batch, 'discard' drops it, 'rollover' carries
    its indices over to the start of the next epoch.
    """

    def __init__(self, sampler: Sampler, batch_size: int, last_batch: str = "keep"):
        if last_batch not in ("keep", "discard", "rollover"):
            raise ValueError("last_batch must be one of 'keep', 'discard', or 'rollover', but got "
                             f"{last_batch}")
        self._sampler, self._batch_size, self._last_batch = sampler, batch_size, last_batch
        self._prev: List[int] = []

    def __iter__(self):
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch

    def __len__(self) -> int:
        if self._last_batch == "keep":
            return (len(self._sampler) + self._batch_size - 1) // self._batch_size
        if self._last_batch == "discard":
            return len(self._sampler) // self._batch_size
        return (len(self._prev) + len(self._sampler)) // self._batch_size
