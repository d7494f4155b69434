"""``ruff check`` covers every tracked ``.py`` file: none is skipped by a default exclude.

ruff skips folders named like build outputs (``dist``, ``build``, ``.venv`` ...) unless told
otherwise; a source folder that happens to carry such a name is then silently never linted (the
parameter server once lived in ``mxref/kvstore/dist/``). This test lists what ruff would check and
names every tracked file missing from it.
"""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# What ``make lint`` and ``tox -e lint`` run: the whole checkout.
LINT_PATHS = ["."]


def _ruff() -> list:
    exe = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if exe is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    return [exe]


def _tracked() -> set:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    proc = subprocess.run(["git", "ls-files", "-z", "--", "*.py"], cwd=ROOT, capture_output=True,
                          timeout=60)
    if proc.returncode != 0:
        pytest.skip(f"git ls-files failed: {proc.stderr.decode(errors='replace')}")
    return {p for p in proc.stdout.decode().split("\0") if p and (ROOT / p).exists()}


def test_ruff_checks_every_tracked_python_file():
    """Every file of ``git ls-files '*.py'`` appears in ``ruff check --show-files``."""
    tracked = _tracked()
    proc = subprocess.run(_ruff() + ["check", "--show-files", *LINT_PATHS], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    checked = {Path(line).resolve().relative_to(ROOT).as_posix()
               for line in proc.stdout.splitlines() if line.strip()}
    skipped = sorted(tracked - checked)
    assert not skipped, ("ruff skips these tracked files (a default exclude such as 'dist' or "
                         "'build' in their path?): " + ", ".join(skipped))


def test_the_lint_command_is_the_one_this_test_checks():
    """``make lint`` and ``tox -e lint`` run ``ruff check .``, the paths checked above."""
    assert "ruff check ." in (ROOT / "Makefile").read_text()
    assert "ruff check ." in (ROOT / "tox.ini").read_text()
