"""docs/architecture/kvstore.md: every python example runs and its asserts hold."""
import pathlib
import re

import pytest

import mxref
from mxref import kvstore

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs/architecture/kvstore.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_doc_has_examples():
    """The page keeps its three walkthroughs (semantics, placement, a new store type)."""
    assert len(BLOCKS) == 3


def test_examples_run_in_order(monkeypatch):
    """The examples share one namespace, as a reader runs them top to bottom."""
    # ``mx.kv`` is the package's alias for mxref.kvstore; provide it if the package does not yet.
    monkeypatch.setattr(mxref, "kv", kvstore, raising=False)
    scope = {}
    for i, block in enumerate(BLOCKS):
        try:
            exec(compile(block, f"kvstore.md[python block {i}]", "exec"), scope)
        except Exception as exc:  # noqa: BLE001 - report which block failed
            pytest.fail(f"python block {i} of kvstore.md failed: {exc!r}")
