"""The process around a test: environment variables set for a block, stderr silenced for a block."""
from __future__ import annotations

import contextlib
import os
import sys


@contextlib.contextmanager
def environment(*args):
    """Set environment variables for the ``with`` block, restoring them afterwards (also on error).

    ``environment(name, value)`` or ``environment({name: value, ...})``; a value of ``None``
    unsets the variable. mxref reads its flags from ``os.environ`` (there is no separate C runtime
    environment as in MXNet), so ``mx.util.getenv`` sees the change at once.
    """
    if len(args) == 1 and isinstance(args[0], dict):
        wanted = dict(args[0])
    else:
        assert len(args) == 2, "environment() takes a dict, or a variable name and its value"
        wanted = {args[0]: args[1]}
    saved = {name: os.environ.get(name) for name in wanted}

    def apply(values):
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    apply(wanted)
    try:
        yield
    finally:
        apply(saved)


def set_env_var(key: str, val: str, default_val: str = "") -> str:
    """Set ``key`` to ``val``; return its previous value (``default_val`` when it was unset)."""
    prev = os.environ.get(key, default_val)
    os.environ[key] = val
    return prev


@contextlib.contextmanager
def discard_stderr():
    """Send everything written to standard error in the block, by Python or by C code, to
    ``os.devnull`` (descriptor 2, and ``sys.stderr``'s own descriptor when that is another one)."""
    fds = {2}
    try:
        fds.add(sys.stderr.fileno())
    except (AttributeError, OSError, ValueError):
        pass        # an IDE's or a capture's stderr object may have no descriptor
    sys.stderr.flush()
    with open(os.devnull, "w") as bit_bucket:
        saved = {fd: os.dup(fd) for fd in fds}
        try:
            for fd in fds:
                os.dup2(bit_bucket.fileno(), fd)
            yield
        finally:
            sys.stderr.flush()
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
