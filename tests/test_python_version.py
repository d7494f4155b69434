"""The declared Python floor is the one the code needs and the one lint checks against."""
import pathlib
import re
import sys

PYPROJECT = (pathlib.Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()


def _declared():
    match = re.search(r'^requires-python\s*=\s*">=(\d+)\.(\d+)"', PYPROJECT, re.M)
    assert match, "pyproject.toml declares requires-python as '>=X.Y'"
    return int(match.group(1)), int(match.group(2))


def test_interpreter_meets_the_declared_floor():
    """CI runs the oldest declared version where it can; never an older one."""
    assert sys.version_info[:2] >= _declared()


def test_lint_targets_the_declared_floor():
    """ruff's target-version is the declared floor, so syntax newer than it is flagged."""
    major, minor = _declared()
    assert re.search(rf'^target-version\s*=\s*"py{major}{minor}"', PYPROJECT, re.M)


def test_floor_covers_what_the_code_uses():
    """BaseException.add_note (used for async error context) appeared in 3.11."""
    assert _declared() >= (3, 11)
    assert hasattr(BaseException, "add_note")
