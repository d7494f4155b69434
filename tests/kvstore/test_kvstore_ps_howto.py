"""docs/howto/add_a_consistency_model.md runs: its python blocks, in order, in one namespace."""
import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "howto" / "add_a_consistency_model.md"


@pytest.mark.timeout(120)
def test_howto_blocks_run(any_engine):
    """Every block runs on both engines; a failing assert reports the markdown line."""
    text = DOC.read_text()
    found = [(text[:m.start()].count("\n") + 2, m.group(1))
             for m in re.finditer(r"```python\n(.*?)```", text, re.S)]
    assert len(found) == 3 and sum(code.count("assert ") for _, code in found) >= 3
    scope = {"__name__": "howto_consistency"}
    for line, code in found:
        exec(compile("\n" * (line - 1) + code, str(DOC), "exec"), scope)


def test_links_resolve():
    for target in re.findall(r"\]\(([^)#:]+\.md)\)", DOC.read_text()):
        assert (DOC.parent / target).resolve().exists(), target
