"""The example in docs/architecture/kvstore_dist.md runs under mpiexec (2 workers + 1 server)."""
import re

from test_kvstore_dist_mpi import ROOT, pytestmark, run_job  # noqa: F401 - pytestmark skips without MPI

DOC = ROOT / "docs" / "architecture" / "kvstore_dist.md"
# NOTE: until mxref/__init__ exposes mx.kv, the prelude wires the kvstore package in. The page's
# print also reports to the rank's file (tests/mpi_programs/report.py), which the test reads.
PRELUDE = f"""import sys
sys.path.insert(0, {str(ROOT / "tests" / "mpi_programs")!r})
from report import report as print
import mxref as mx
import mxref.kvstore
if not hasattr(mx, "kv"):
    mx.kv = mxref.kvstore
"""


def test_doc_example_runs(tmp_path):
    """The page's python block, run as a script on every rank, prints OK on every worker."""
    (block,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    script = tmp_path / "kvstore_dist_doc.py"
    script.write_text(PRELUDE + block)
    proc = run_job(script, 2, 1)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(re.findall(r"worker (\d) of 2: OK", proc.reports)) == ["0", "1"], proc.stdout


