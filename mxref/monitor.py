"""``mx.mon.Monitor``: statistics of every node output, weight and gradient of bound executors.

A monitor installs itself as each executor's monitor callback (``set_monitor_callback``). Between
``tic()`` and ``toc()`` of every ``interval``-th batch it keeps ``(step, name, stat_func(array))``
for each node output whose name matches ``pattern`` (inputs too with ``monitor_all``); ``toc()``
adds the executors' arguments and auxiliary states (weights and data after the update) and returns
the statistics as text, sorted by name if asked.
"""
from __future__ import annotations

import logging
import math
import re
from typing import Callable, List, Optional, Tuple

from . import ndarray as nd
from .ndarray import NDArray

__all__ = ["Monitor"]


def _norm_stat(x: NDArray) -> NDArray:
    """MXNet's default statistic: ``||x||_2 / sqrt(size(x))``, pushed asynchronously."""
    return nd.norm(x) / math.sqrt(x.size)


class Monitor:
    """Monitor inputs, outputs, weights and gradients for debugging.

    Parameters
    ----------
    interval : int
        Number of batches between two collections.
    stat_func : callable, optional
        ``NDArray -> NDArray`` (or a list of them); defaults to ``norm(x) / sqrt(x.size)``.
    pattern : str
        Regular expression a name must match (``re.match``) to be kept; ``'.*backward.*'`` keeps
        the gradients, ``'.*weight|.*output'`` the weights and outputs.
    sort : bool
        Sort the results of ``toc()`` by name.
    monitor_all : bool
        Monitor node inputs as well as outputs.
    """

    def __init__(self, interval: int, stat_func: Optional[Callable] = None, pattern: str = ".*",
                 sort: bool = False, monitor_all: bool = False):
        self.stat_func = stat_func if stat_func is not None else _norm_stat
        self.interval = interval
        self.activated = False
        self.queue: List[Tuple[int, str, object]] = []
        self.step = 0
        self.exes: list = []
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all

    def stat_helper(self, name: str, array: NDArray) -> None:
        """The executor callback: keep ``stat_func(array)`` while collecting and the name matches."""
        if not self.activated or not self.re_prog.match(name):
            return
        self.queue.append((self.step, name, self.stat_func(array)))

    def install(self, exe) -> None:
        """Install the callback on ``exe`` (several executors may share one monitor)."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def _wait_params(self) -> None:
        for exe in self.exes:
            for array in list(exe.arg_arrays) + list(exe.aux_arrays):
                array.wait_to_read()

    def tic(self) -> None:
        """Start collecting for this batch (every ``interval``-th call); call before forward."""
        if self.step % self.interval == 0:
            self._wait_params()
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self) -> List[Tuple[int, str, str]]:
        """Stop collecting and return ``[(step, name, text of the statistic), ...]``."""
        if not self.activated:
            return []
        self._wait_params()
        for exe in self.exes:
            sym = exe._symbol
            named = list(zip(sym.list_arguments(), exe.arg_arrays)) + \
                list(zip(sym.list_auxiliary_states(), exe.aux_arrays))
            for name, array in named:
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda item: item[1])
        res = []
        for step, name, stats in self.queue:
            if isinstance(stats, NDArray):
                stats = [stats]
            if not isinstance(stats, list) or not all(isinstance(v, NDArray) for v in stats):
                raise TypeError(f"Monitor: stat_func must return an NDArray or a list of them, "
                                f"got {type(stats).__name__} for '{name}'")
            text = "".join((str(v.asscalar()) if v.shape == (1,) else str(v.asnumpy())) + "\t"
                           for v in stats)
            res.append((step, name, text))
        self.queue = []
        return res

    def toc_print(self) -> None:
        """``toc()`` and log each statistic."""
        for step, name, text in self.toc():
            logging.info("Batch: {:7d} {:30s} {:s}".format(step, name, text))
