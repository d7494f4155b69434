"""docs/architecture/collective.md: its thread-world walkthrough runs and its asserts hold."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "docs/architecture/collective.md").read_text(), re.S)


def test_walkthrough_asserts_hold():
    """run_local allreduce/broadcast and a mock-killed robust job equal to a clean one, as written."""
    assert len(BLOCKS) == 1
    exec(compile(BLOCKS[0], "collective.md", "exec"), {})
