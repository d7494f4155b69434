"""examples/collective/*.py run to completion (on a one-rank local world) and their asserts hold."""
import pathlib
import runpy

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples/collective").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs(path, monkeypatch, capsys):
    """Each example's own checks pass; multi-rank runs are in their docstrings and the launch tests."""
    monkeypatch.setenv("MXREF_COLLECTIVE_ENGINE", "local")
    runpy.run_path(str(path), run_name="__main__")
    out = capsys.readouterr().out
    assert "[0]" in out      # tracker_print tags every line with the rank
