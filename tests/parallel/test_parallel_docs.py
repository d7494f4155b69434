"""docs/tutorials/model_parallel.md: its code blocks run, in order, and their asserts hold (on the
threaded engine, the default: the profiled pipeline needs its worker threads)."""
import pathlib
import re

import pytest

import mxref as mx

ROOT = pathlib.Path(__file__).resolve().parents[2]
TEXT = (ROOT / "docs/tutorials/model_parallel.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", TEXT, re.S)


@pytest.mark.timeout(120)
def test_tutorial_blocks_run():
    assert len(BLOCKS) == 5
    old = mx.engine.get().name
    mx.engine.set_engine("ThreadedEnginePerDevice")
    try:
        scope = {}
        for i, block in enumerate(BLOCKS):
            exec(compile(block, f"model_parallel.md block {i}", "exec"), scope)
    finally:
        for d in (mx.cpu(5), mx.cpu(6)):
            mx.context.set_memory_limit(d, None)
        mx.engine.set_engine(old)


def test_links_resolve():
    for target in re.findall(r"\]\(([^)#:]+\.md)\)", TEXT):
        assert (ROOT / "docs" / "tutorials" / target).resolve().exists(), target
