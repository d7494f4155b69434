"""docs/howto/add_an_operator.md §4 quotes the real Activation/FullyConnected code (and the relu
card) and its test runs."""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
SECTION = (ROOT / "docs/howto/add_an_operator.md").read_text().split("## 4.", 1)[1]
BLOCKS = re.findall(r"```python\n(.*?)```", SECTION, re.S)
SOURCES = [(ROOT / "mxref/ops" / f).read_text()
           for f in ("nn/activation.py", "nn/fully_connected.py", "activations.py")]


@pytest.mark.parametrize("block", BLOCKS[:-1])
def test_quoted_code_is_in_the_source(block):
    """Every quoted block appears verbatim in activation.py, fully_connected.py or activations.py."""
    assert any(block in src for src in SOURCES), block


def test_the_example_test_passes():
    """The how-to's example test file runs and passes."""
    scope = {}
    exec(compile(BLOCKS[-1], "add_an_operator.md", "exec"), scope)
    scope["test_tanh_gradient"]()
    for dtype in ("float32", "float64"):
        scope["test_tanh_forward"](dtype)
