"""The main demo trains data-parallel with --kv-store dist_sync on 2 workers + 1 server (mpiexec)."""
import os
import re
import sys

import numpy as np
from mpi_support import ROOT, loopback_env, needs_mpi, run_per_rank


@needs_mpi
def test_demo_trains_on_two_workers_and_one_server(tmp_path):
    """Each worker reads its own shard; both end with the same (synchronised) weights.

    BatchNorm's moving statistics are per worker (as in MXNet: auxiliary states are not pushed),
    so the two validation accuracies may differ slightly.
    """
    env = loopback_env(PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "mxref.tools.demo", "--kv-store", "dist_sync", "--num-epochs", "3",
           "--no-bar", "--out", str(tmp_path)]
    # Each rank's output in its own file: mpiexec's merge can glue or drop lines.
    proc = run_per_rank(3, cmd, 300, env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "worker 0 of 2" in out and "worker 1 of 2" in out
    accuracies = [float(a) for a in re.findall(r"validation accuracy : ([0-9.]+)", out)]
    assert len(accuracies) == 2 and min(accuracies) > 0.5, out
    import mxref as mx
    p0 = mx.nd.load(str(tmp_path / "lenet-0003.params"))
    p1 = mx.nd.load(str(tmp_path / "worker1" / "lenet-0003.params"))
    weights = [k for k in p0 if k.startswith("arg:")]
    assert weights and set(p0) == set(p1)
    for k in weights:
        assert np.array_equal(p0[k].asnumpy(), p1[k].asnumpy()), k
