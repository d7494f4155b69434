"""docs/architecture/gluon.md: its hybridize walk-through runs and its asserts hold."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "docs/architecture/gluon.md").read_text(), re.S)


def test_hybridize_walkthrough_runs():
    """Naming, deferred init, tracing, one recorded node per hybridized call, backward into grads."""
    assert len(BLOCKS) == 1
    exec(compile(BLOCKS[0], "gluon.md", "exec"), {})
