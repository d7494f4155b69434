"""docs/architecture/rnn.md: its examples run and their asserts hold."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture" / "rnn.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)


def test_the_page_runs():
    assert len(BLOCKS) == 2
    scope = {}
    for block in BLOCKS:
        exec(compile(block, "rnn.md", "exec"), scope)   # noqa: S102 - the page's own code


def test_the_page_names_every_module():
    """Each module of mxref/rnn/ has its row in the page's table."""
    text = PAGE.read_text()
    for path in sorted((ROOT / "mxref" / "rnn").glob("*.py")):
        if path.name != "__init__.py":
            assert "`%s`" % path.name in text, path.name
