"""docs/tutorials/module.md: its code blocks run, in order, and their asserts hold."""
import pathlib
import re

import pytest

import mxref as mx

ROOT = pathlib.Path(__file__).resolve().parents[2]
TEXT = (ROOT / "docs/tutorials/module.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", TEXT, re.S)


@pytest.mark.skipif(not (hasattr(mx, "mod") and hasattr(mx, "callback") and hasattr(mx, "model")),
                    reason="mxref/__init__.py does not export mod, callback and model yet")
def test_tutorial_blocks_run():
    """Every python block of the Module tutorial runs and its asserts pass."""
    assert len(BLOCKS) == 6
    scope = {}
    for i, block in enumerate(BLOCKS):
        exec(compile(block, f"module.md block {i}", "exec"), scope)
