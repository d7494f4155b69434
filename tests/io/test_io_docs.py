"""docs/howto/data.md is executable: its python blocks run in order, in one namespace, and pass."""
import os
import re
import tempfile

import mxref.io  # noqa: F401 - mx.io and mx.recordio, as `import mxref` provides them once wired
import mxref.recordio  # noqa: F401

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "howto", "data.md")


def test_data_howto_runs(tmp_path, monkeypatch, capsys):
    """Every code block of the data how-to runs without error (its asserts are the checks)."""
    with open(DOC) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) >= 6
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))   # the doc writes its files here
    namespace = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"data.md block {i}", "exec"), namespace)
    assert "DataDesc[data,(4, 2)" in capsys.readouterr().out
