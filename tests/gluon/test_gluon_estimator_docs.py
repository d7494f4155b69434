"""docs/howto/estimator.md is executable: its python blocks run in order, in one namespace, and pass."""
import os
import re

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "howto", "estimator.md")


def test_estimator_howto_runs(capsys):
    """Every code block of the Estimator how-to runs without error (its asserts are the checks)."""
    with open(DOC) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) == 5
    namespace = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"estimator.md block {i}", "exec"), namespace)
    out = capsys.readouterr().out
    assert "['training accuracy', 'training softmaxcrossentropyloss']" in out
    assert "mlp-best.params" in out and "mlp-symbol.json" in out
