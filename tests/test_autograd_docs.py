"""docs/architecture/autograd.md: its walkthrough runs and its asserts hold."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "docs/architecture/autograd.md").read_text(), re.S)


def test_walkthrough_asserts_hold():
    """Recording, saved values, backward and the executor comparison in the walkthrough all hold."""
    assert len(BLOCKS) == 1
    exec(compile(BLOCKS[0], "autograd.md", "exec"), {})
