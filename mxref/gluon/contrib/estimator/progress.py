"""A progress bar for training epochs: tqdm when it is installed, a plain text bar otherwise.

Both bars have the three methods the LoggingHandler uses: ``update(n)``, ``set_postfix_str(s)``
and ``close()``. tqdm is optional (the ``viz`` extra): a bar is a display nicety, and the core
package depends only on numpy and Pillow.
"""
from __future__ import annotations

import sys
import time
from typing import Optional, TextIO

__all__ = ["progress_bar", "TextProgressBar"]


class TextProgressBar:
    """``[Epoch 0]  12/45 [######......]  27% 3.1 batch/s training accuracy: 0.53``.

    On a terminal the line is redrawn in place (at most ten times a second); in a log file (not a
    terminal) a line is written at each tenth of the way, so a log holds at most ~10 lines per bar.
    """

    WIDTH = 24

    def __init__(self, total: Optional[int], desc: str = "", file: Optional[TextIO] = None):
        self.total = total if total and total > 0 else None
        self.desc = desc
        self.file = file if file is not None else sys.stderr
        self.n = 0
        self.postfix = ""
        self._start = self._last_draw = time.time()
        self._tty = bool(getattr(self.file, "isatty", lambda: False)())
        self._last_tenth = 0

    def _line(self) -> str:
        rate = self.n / max(time.time() - self._start, 1e-9)
        if self.total:
            filled = int(self.WIDTH * min(self.n, self.total) / self.total)
            bar = "#" * filled + "." * (self.WIDTH - filled)
            head = f"{self.desc} {self.n:>{len(str(self.total))}}/{self.total} [{bar}] " \
                   f"{100 * self.n // self.total:3d}%"
        else:
            head = f"{self.desc} {self.n}"
        return f"{head} {rate:.1f} batch/s {self.postfix}".rstrip()

    def _draw(self, final: bool = False) -> None:
        if self._tty:
            self.file.write("\r" + self._line() + ("\n" if final else ""))
        else:
            self.file.write(self._line() + "\n")
        self.file.flush()
        self._last_draw = time.time()

    def update(self, n: int = 1) -> None:
        self.n += n
        if self._tty:
            if time.time() - self._last_draw >= 0.1:
                self._draw()
        elif self.total:
            tenth = 10 * self.n // self.total
            if tenth > self._last_tenth and self.n < self.total:
                self._last_tenth = tenth
                self._draw()

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = s

    def close(self) -> None:
        self._draw(final=True)


def progress_bar(total: Optional[int], desc: str = "", file: Optional[TextIO] = None,
                 use_tqdm: Optional[bool] = None):
    """A bar over ``total`` steps (None: unknown): tqdm's if importable (or ``use_tqdm``), else text."""
    if use_tqdm is not False:
        try:
            from tqdm import tqdm  # noqa: PLC0415 - optional dependency
        except ImportError:
            if use_tqdm:
                raise
        else:
            return tqdm(total=total, desc=desc, file=file, unit="batch", leave=True, dynamic_ncols=True)
    return TextProgressBar(total, desc, file)
