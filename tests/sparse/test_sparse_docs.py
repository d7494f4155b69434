"""docs/howto/sparse.md is executable: its python blocks run in order in one namespace and their
asserts hold; docs/architecture/sparse.md keeps the section the kvstore part fills in."""
import pathlib
import re

import pytest

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.timeout(120)
def test_sparse_howto_runs():
    path = DOCS / "howto" / "sparse.md"
    text = path.read_text()
    found = [(text[:m.start()].count("\n") + 2, m.group(1))
             for m in re.finditer(r"```python\n(.*?)```", text, re.S)]
    assert len(found) >= 4 and sum(code.count("assert ") for _, code in found) >= 10
    scope = {"__name__": "howto_sparse"}
    for line, code in found:
        exec(compile("\n" * (line - 1) + code, str(path), "exec"), scope)


def test_architecture_page_has_its_sections():
    text = (DOCS / "architecture" / "sparse.md").read_text()
    for heading in ("## Sparse arrays and the engine", "## Variable-size buffers and the storage pool",
                    "## Fallback", "## Sparse on the wire and the lazy server store"):
        assert heading in text
