"""Run an example script in a fresh interpreter, as a user would, with the repository importable."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# mxref imports mxref.operator itself once wired (mx.operator); importing it first keeps the runs
# independent of that.
PRELUDE = ("import runpy, sys; import mxref.operator; sys.argv = sys.argv[1:]; "
           "runpy.run_path(sys.argv[0], run_name='__main__')")


@pytest.fixture
def run_example():
    """``run_example('name.py', *args, timeout=120) -> stdout``; a failure shows the stderr tail."""
    def run(name: str, *args: str, timeout: float = 120) -> str:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        proc = subprocess.run([sys.executable, "-c", PRELUDE, str(ROOT / "examples" / name), *args],
                              capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
        assert proc.returncode == 0, proc.stderr[-4000:]
        return proc.stdout
    return run
