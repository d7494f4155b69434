"""docs/tutorials/NN_*.md (the numbered path from NDArray to hybridize) are executable: each file's
python blocks run in order in one namespace and their asserts hold, and their links point at files
that exist. (Other tutorials there, such as module.md, are run by their own package's tests.)"""
import pathlib
import re

import pytest

TUTORIALS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "tutorials"
FILES = sorted(TUTORIALS.glob("[0-9][0-9]_*.md"))


def blocks(path: pathlib.Path):
    """``(first line number, code)`` of every fenced python block."""
    text = path.read_text()
    return [(text[:m.start()].count("\n") + 2, m.group(1))
            for m in re.finditer(r"```python\n(.*?)```", text, re.S)]


def test_the_tutorials_are_there():
    """The four numbered tutorials exist, in reading order."""
    assert [f.name for f in FILES] == ["01_ndarray.md", "02_symbol_and_executor.md", "03_autograd.md",
                                       "04_hybridize.md"]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_tutorial_runs(path):
    """Every block runs; a failing assert reports the markdown file and line."""
    found = blocks(path)
    assert len(found) >= 4 and sum(code.count("assert ") for _, code in found) >= 5
    scope = {"__name__": f"tutorial_{path.stem}"}
    for line, code in found:
        # Pad with newlines so tracebacks show the line number inside the markdown file.
        exec(compile("\n" * (line - 1) + code, str(path), "exec"), scope)


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_links_resolve(path):
    """Relative links ('Next: ...') name files in docs/tutorials."""
    for target in re.findall(r"\]\(([^)#:]+\.md)\)", path.read_text()):
        assert (TUTORIALS / target).exists(), f"{path.name} links to missing {target}"
