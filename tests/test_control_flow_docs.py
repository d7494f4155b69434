"""docs/architecture/control-flow.md: its examples run and their asserts hold."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "docs/architecture/control-flow.md").read_text(), re.S)


def test_the_page_runs():
    assert len(BLOCKS) == 2
    scope = {}
    for block in BLOCKS:
        exec(compile(block, "control-flow.md", "exec"), scope)   # noqa: S102 - the page's own code
