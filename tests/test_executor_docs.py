"""The Executor section of docs/architecture/symbol-and-executor.md: its examples run and hold."""
import pathlib
import re

import numpy as np

import mxref as mx
from mxref.test_utils import OpTestCase

ROOT = pathlib.Path(__file__).resolve().parents[1]
SECTION = (ROOT / "docs/architecture/symbol-and-executor.md").read_text().split("## Executor", 1)[1]
BLOCKS = re.findall(r"```python\n(.*?)```", SECTION, re.S)


def test_running_example_asserts_hold():
    """The bind/forward/backward walk-through runs and its asserts (gradient, MB line) pass."""
    exec(compile(BLOCKS[0], "symbol-and-executor.md", "exec"), {})


def test_optestcase_example_is_a_complete_test():
    """The declared OpTestCase passes every inherited test."""
    scope = {"OpTestCase": OpTestCase, "np": np, "mx": mx}
    exec(compile(BLOCKS[1], "symbol-and-executor.md", "exec"), scope)
    case = scope["TestTanh"]()
    for name in ("test_forward", "test_imperative", "test_numeric_gradient", "test_consistency"):
        getattr(case, name)()
