"""The dist kvstore under mpiexec: each script in tests/mpi_programs checks closed forms on every rank.

Every job runs on loopback only, in a subprocess with a hard timeout, so a hang fails the test
instead of the CI run; the tests skip when mpi4py or mpiexec is missing.
"""
import re
import sys
import time

import pytest
from mpi_support import MPIEXEC, ROOT, loopback_env, mpiexec, needs_mpi, run_reporting

SCRIPTS = ROOT / "tests" / "mpi_programs"

pytestmark = needs_mpi


def run_job(script, workers, servers, *args, timeout=60, extra_flags=(), launcher=False, **env):
    """Run ``script`` on ``workers + servers`` loopback processes (with mpiexec, or through
    ``python -m mxref.tools.launch``); return the finished process, its ranks' report lines
    in ``proc.reports``."""
    environ = loopback_env(**{"MXREF_NUM_SERVERS": servers, "MXREF_KV_TIMEOUT": 20, **env})
    program = [sys.executable, str(SCRIPTS / script), *map(str, args)]
    if launcher:
        cmd = [sys.executable, "-m", "mxref.tools.launch", "-n", str(workers), "-s", str(servers),
               "--mpiexec", MPIEXEC, "--", *program]
    else:
        cmd = [*mpiexec(workers + servers)[:-2], *extra_flags, "-n", str(workers + servers), *program]
    return run_reporting(cmd, timeout, environ)


def assert_all_ok(proc, workers):
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert sorted(re.findall(r"worker (\d+) of (\d+): OK", proc.reports)) == \
        [(str(r), str(workers)) for r in range(workers)], out


@pytest.mark.parametrize("workers,servers,engine", [(1, 1, "NaiveEngine"), (2, 1, "ThreadedEnginePerDevice"),
                                                    (3, 2, "ThreadedEnginePerDevice")])
def test_sync_closed_forms_and_server_optimizer(workers, servers, engine):
    """Every worker pulls n(n+1)/2 x factor each round (int/str keys, split arrays, two contexts,
    40 keys in one call); server-side SGD with momentum equals the single-process formula. On the
    naive engine, which runs ops at push, the comm ops wait for their replies instead."""
    assert_all_ok(run_job("kv_sync.py", workers, servers, MXNET_KVSTORE_BIGARRAY_BOUND=1000,
                          MXNET_ENGINE_TYPE=engine), workers)


def test_async_refusal_exact_totals_and_convergence():
    """dist_async: a push without a server optimizer is refused; updates apply on arrival."""
    assert_all_ok(run_job("kv_async.py", 2, 1), 2)


def test_ssp_staleness_bound():
    """No pull is more than tau clocks stale (tau=0 from 'dist_ssp:0', tau=2 from
    MXREF_KV_STALENESS), and a straggler makes the fast worker reach exactly tau."""
    proc = run_job("kv_ssp.py", 3, 1, MXREF_KV_STALENESS=2)
    assert_all_ok(proc, 3)
    assert "worker 0: tau=0 max gap 0" in proc.reports and "worker 0: tau=2 max gap 2" in proc.reports


def test_unequal_batch_counts_finish():
    """Workers with 3, 5 and 7 steps all finish; sync rounds count only the workers still running.
    (Started through ``python -m mxref.tools.launch -n 3 -s 1``.)"""
    assert_all_ok(run_job("kv_unequal.py", 3, 1, launcher=True), 3)


def test_compression_matches_numpy_reference():
    """2-bit pushes (residual on the worker, dequantized on the server) sum to the numpy reference."""
    assert_all_ok(run_job("kv_compress.py", 3, 2, MXNET_KVSTORE_BIGARRAY_BOUND=1000), 3)


def test_timeout_names_the_missing_worker():
    """A worker that never pushes: the others' pulls fail with an error naming its ranks."""
    proc = run_job("kv_timeout.py", 2, 1, MXREF_KV_TIMEOUT=2)
    assert_all_ok(proc, 2)
    assert "worker 1 (MPI rank 2) did not push within MXREF_KV_TIMEOUT=2s" in proc.reports


@pytest.mark.parametrize("cleanup", [True, False])
def test_killed_worker_ends_the_job(cleanup):
    """A worker killed mid-training ends the job with a failure, well before the test timeout:
    mpiexec ends the others, or (auto cleanup off) the server's timeout names the dead worker."""
    t0 = time.monotonic()
    proc = run_job("kv_killed.py", 2, 1, MXREF_KV_TIMEOUT=2,
                   extra_flags=() if cleanup else ("-disable-auto-cleanup",))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert time.monotonic() - t0 < 30, out
    assert "worker 1: exiting abruptly" in proc.reports and "finished all rounds" not in out
    if not cleanup:
        assert "worker 1 (MPI rank 2) did not push" in out, out


def test_module_fit_and_gluon_trainer_data_parallel():
    """Module.fit and gluon.Trainer over dist_sync on sharded data give the single-process weights."""
    assert_all_ok(run_job("kv_module.py", 2, 1), 2)


@pytest.mark.timeout(150)
@pytest.mark.parametrize("mode,workers,servers", [("dist_sync", 2, 1), ("dist_sync", 3, 2),
                                                  ("dist_async", 3, 1), ("dist_ssp", 2, 2),
                                                  ("dist_ssp", 3, 1)])
def test_row_sparse_closed_forms(mode, workers, servers):
    """Worker r pushes rows {r, r+1} with value r+1: every pull of row i sees the sum of its
    pushers (row_sparse_pull of unsorted, repeated ids over the servers' row ranges, and a pull)."""
    assert_all_ok(run_job("kv_sparse.py", workers, servers, mode, timeout=120), workers)


@pytest.mark.timeout(150)
@pytest.mark.parametrize("workers,servers", [(2, 1), (3, 2)])
def test_module_row_sparse_weight_on_dist_sync(workers, servers):
    """Module with a row_sparse weight, Module.prepare and update_on_kvstore: every worker's
    weights equal numpy SGD summing the shards' gradients each step."""
    assert_all_ok(run_job("kv_sparse_module.py", workers, servers, timeout=120), workers)
