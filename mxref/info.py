"""``mxref.info()``: versions, active fast paths and why, engine type and thread counts."""
from __future__ import annotations

import platform
import sys

import numpy as np


def info(file=None) -> dict:
    """Print (and return) what this mxref runs with: versions, extensions, engine and threads."""
    from . import __version__, engine  # noqa: PLC0415
    report = {
        "mxref": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "numpy": np.__version__,
        "engine": engine.engine_type(),
    }
    width = max(map(len, report))
    for k, v in report.items():
        print(f"{k:<{width}} : {v}", file=file)
    return report
