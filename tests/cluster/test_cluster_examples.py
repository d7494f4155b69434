"""examples/cluster/: the experiments' job and harness on the test cluster (tiny sizes), and the
scaling experiment's model in closed form."""
import sys
from pathlib import Path

import pytest
from cluster_support import PREFIX, needs_cluster

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "cluster"
sys.path.insert(0, str(EXAMPLES))

import common  # noqa: E402
import scaling  # noqa: E402


def test_the_scaling_model_in_closed_form():
    """1 MB per worker at 8 Mbit/s (1 MB/s): the link term W·2P/B with framing, or the overlap form."""
    f = 1514 / 1448
    assert scaling.model(0.5, 0.1, 3, 1e6, 8e6) == pytest.approx(0.5 + 6 * f)
    assert scaling.model(0.5, 0.1, 3, 1e6, 8e6, overlap_keys=4) == pytest.approx(0.5 + 3 * f * 1.25)
    assert scaling.model(0.5, 9.0, 1, 1e6, 8e6) == 9.5               # the fixed cost dominates
    assert scaling.model(0.5, 0.1, 4, 1e6, None) == pytest.approx(0.6)   # unlimited: no link term


@needs_cluster
@pytest.mark.timeout(120)
def test_the_job_runs_on_the_hosts_under_the_store_and_the_allreduce(hosts):
    state, folder = hosts
    state = dict(state, folder=folder)
    res, _, _ = common.run_job(state, common.place(state, [1, 1]), 1, 1,
                               ["--steps", 2, "--dim", 32, "--layers", 2, "--devices", 2], timeout=60)
    assert sorted(res) == [0] and res[0]["host"] == f"{PREFIX}h1"   # worker 0 is MPI rank 1, on h1
    assert res[0]["bytes"] == 2 * 32 * 32 * 4 and res[0]["step"] > 0 and res[0]["comm"] > 0
    res, _, _ = common.run_job(state, common.place(state, [1, 1]), 2, 0,
                               ["--steps", 3, "--dim", 16, "--kv-store", "allreduce:ring"], timeout=60)
    assert [res[r]["host"] for r in (0, 1)] == [f"{PREFIX}h0", f"{PREFIX}h1"]
    assert all(len(res[r]["ends"]) == 3 for r in (0, 1))
