"""The parameter-server protocol in one process: servers and workers as threads over the in-process link.

The same ``Comm``, ``Server``, consistency models and worker stores as under ``mpiexec``
(``test_kvstore_dist_mpi.py`` runs those), only the ``Link`` differs, so init / push / pull /
barrier / done, sync / async / ssp, sharding and splitting over servers, timeouts naming ranks,
unequal batch counts, compression and ``set_optimizer`` are checked here in milliseconds. Every
worker checks a closed form on its own; where a test needs an order between workers it uses
events, never sleeps. Each job has a hard timeout; both engines run everything.
"""
import importlib.util
import pathlib
import sys
import threading

import numpy as np
import pytest

import mxref as mx
from mxref import kvstore
from mxref.kvstore.ps.inprocess import run_job

pytestmark = pytest.mark.timeout(120)
PROGRAMS = pathlib.Path(__file__).resolve().parents[1] / "mpi_programs"


def program(name):
    """A script of tests/mpi_programs as a module: its ``main()`` runs unchanged on a worker thread."""
    if str(PROGRAMS) not in sys.path:
        sys.path.insert(0, str(PROGRAMS))       # the scripts import their folder's report.py
    spec = importlib.util.spec_from_file_location(f"mpi_program_{name}", PROGRAMS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def _engines(any_engine):
    """Every test on the naive engine (ops wait inside push) and the threaded one."""
    return any_engine


@pytest.mark.parametrize("workers,servers", [(1, 1), (2, 1), (3, 2)])
def test_sync_sum_optimizer_and_split(workers, servers, monkeypatch):
    """Each worker pushes rank+1: every pull sees n(n+1)/2; with SGD on the servers the weight
    follows the single-process formula; a big array is split over all servers."""
    monkeypatch.setenv("MXNET_KVSTORE_BIGARRAY_BOUND", "1000")

    def work():
        kv = kvstore.create("dist_sync")
        n, r = kv.num_workers, kv.rank
        kv.init(3, mx.nd.zeros((5,)))
        kv.init(9, mx.nd.zeros((40, 50)))               # 2000 elements: split
        out, big = mx.nd.zeros((5,)), mx.nd.zeros((40, 50))
        for _ in range(2):
            kv.push(3, mx.nd.ones((5,)) * (r + 1))
            kv.push(9, mx.nd.ones((40, 50)) * (r + 1))
            kv.pull(3, out=out)
            kv.pull(9, out=big)
            assert (out.asnumpy() == n * (n + 1) / 2).all() and (big.asnumpy() == n * (n + 1) / 2).all()
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
        w = mx.nd.zeros((5,))
        kv.init(4, w)
        for _ in range(3):
            kv.push(4, mx.nd.ones((5,)) * (r + 1))
            kv.pull(4, out=w)
        assert np.allclose(w.asnumpy(), -0.3 * n * (n + 1) / 2, atol=1e-5)
        return [p.server for p in kv.placement[9]], kv.type, kv.is_capable("synchronous")
    results = run_job(work, workers, servers)
    assert results == [(list(range(servers)), "dist_sync", True)] * workers


def test_async_applies_every_push_and_needs_an_optimizer():
    """dist_async: every push goes through the optimizer; after a barrier all see the total."""
    def work():
        kv = kvstore.create("dist_async")
        r = kv.rank
        kv.init(0, mx.nd.zeros((4,)))
        with pytest.raises(mx.MXNetError, match="Updater needs to be set for async mode"):
            kv.push(0, mx.nd.ones((4,)))
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
        for _ in range(5):
            kv.push(0, mx.nd.ones((4,)) * (r + 1))
        mx.nd.waitall()          # pushes are engine ops: acknowledged (applied) before the barrier
        kv.barrier()
        out = mx.nd.zeros((4,))
        kv.pull(0, out=out)
        return out.asnumpy().tolist(), kv.is_capable("async"), kv.is_capable("synchronous")
    assert run_job(work, 2) == [([-15.0] * 4, True, False)] * 2


def test_async_never_waits_for_a_straggler():
    """dist_async: worker 0 pushes and pulls all its steps while the straggler has not pushed
    once (it starts only when worker 0 is done). A store that waited for the straggler would
    deadlock here, and the event's wait would fail the test; nothing depends on timing."""
    steps, fast_done = 12, threading.Event()

    def work():
        kv = kvstore.create("dist_async")
        r = kv.rank
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=-1.0))     # the weight counts the pushes
        kv.init(3, mx.nd.zeros((2,)))
        out = mx.nd.zeros((2,))
        if r == 1:
            assert fast_done.wait(60), "worker 0 was held back by the straggler"
        seen = []
        for _ in range(steps):
            kv.push(3, mx.nd.array(np.eye(2, dtype=np.float32)[r]))
            kv.pull(3, out=out)
            seen.append(out.asnumpy().tolist())
        if r == 0:
            fast_done.set()
        return seen
    fast, straggler = run_job(work, 2)
    assert fast == [[float(c), 0.0] for c in range(1, steps + 1)]    # the straggler's part is 0
    assert straggler[0] == [float(steps), 1.0] and straggler[-1] == [float(steps), float(steps)]


@pytest.mark.parametrize("name,tau", [("dist_ssp:0", 0), ("dist_ssp:2", 2), ("dist_ssp", 1)])
def test_ssp_pulls_are_at_most_tau_stale(name, tau, monkeypatch):
    """Worker r pushes the one-hot e_r (SGD lr=-1 counts pushes). No pull misses more than tau
    clocks of anyone; the straggler starts only once worker 0 is tau clocks ahead, so worker 0
    sees a gap of exactly tau."""
    monkeypatch.setenv("MXREF_KV_STALENESS", "1")
    steps, ahead = 6, threading.Event()

    def work():
        kv = kvstore.create(name)
        n, r = kv.num_workers, kv.rank
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=-1.0))
        kv.init(7, mx.nd.zeros((n,)))
        onehot = np.eye(n, dtype=np.float32)[r]
        out, max_gap = mx.nd.zeros((n,)), 0
        if r == 0 and tau == 0:
            ahead.set()
        for c in range(1, steps + 1):
            if r == n - 1 and c == 1:
                assert ahead.wait(60)
            kv.push(7, mx.nd.array(onehot))
            kv.pull(7, out=out)
            seen = out.asnumpy()
            assert seen[r] == c and c - seen.min() <= tau, (r, c, seen)
            max_gap = max(max_gap, c - seen.min())
            if r == 0 and c == tau:
                ahead.set()
        kv.barrier()
        kv.pull(7, out=out)
        assert (out.asnumpy() == steps).all()
        return max_gap
    gaps = run_job(work, 3)
    assert gaps[0] == tau and max(gaps) <= tau


def test_unequal_batches_do_not_hang():
    """tests/mpi_programs/kv_unequal.py, in threads: worker r runs 3 + 2r steps; finished workers
    stop counting, so each round sums the pushes of the workers still running."""
    assert run_job(program("kv_unequal").main, 3) == [None] * 3


def test_round_timeout_names_the_worker_that_did_not_push(monkeypatch):
    """Worker 1 never pushes: worker 0's push fails naming it, through the engine, at the wait."""
    monkeypatch.setenv("MXREF_KV_TIMEOUT", "0.5")
    failed = threading.Event()

    def work():
        kv = kvstore.create("dist_sync")
        kv.init(0, mx.nd.zeros((2,)))
        if kv.rank == 1:
            assert failed.wait(60)         # stay active (no DONE) until worker 0 has its error
            return None
        kv.push(0, mx.nd.ones((2,)))
        out = mx.nd.zeros((2,))
        with pytest.raises(mx.MXNetError) as info:
            kv.pull(0, out=out)
            out.wait_to_read()
        failed.set()
        return str(info.value)
    msg = run_job(work, 2)[0]
    assert "sync round of key 0: worker 1 (MPI rank 2) did not push" in msg
    assert "pushed: worker 0 (MPI rank 1)" in msg


def test_barrier_timeout_names_who_did_not_arrive(monkeypatch):
    """A barrier that one worker never reaches fails naming that worker."""
    monkeypatch.setenv("MXREF_KV_TIMEOUT", "0.5")
    failed = threading.Event()

    def work():
        kv = kvstore.create("dist_sync")
        kv.init(0, mx.nd.zeros((2,)))
        if kv.rank == 1:
            assert failed.wait(60)
            return None
        with pytest.raises(mx.MXNetError, match=r"barrier: worker 1 \(MPI rank 2\) did not arrive"):
            kv.barrier()
        failed.set()
        return "ok"
    assert run_job(work, 2)[0] == "ok"


def test_compressed_pushes_match_a_numpy_reference(monkeypatch):
    """tests/mpi_programs/kv_compress.py, in threads: 2-bit pushes (threshold 0.5, a residual per
    worker) sum to a numpy reference, the split array too."""
    monkeypatch.setenv("MXNET_KVSTORE_BIGARRAY_BOUND", "1000")
    assert run_job(program("kv_compress").main, 3, 2) == [None] * 3


def test_set_optimizer_needs_a_picklable_updater():
    """The updater travels to the servers pickled: a closure is refused on the worker."""
    def work():
        kv = kvstore.create("dist_sync")
        with pytest.raises(mx.MXNetError, match="must be picklable"):
            kv._set_updater(lambda key, grad, weight: None)
        return kv.is_capable("optimizer") and kv.is_capable("distributed")
    assert run_job(work, 2) == [True, True]


def test_a_failing_worker_is_reported_and_the_others_finish():
    """A worker raising ends its part of the job (it still sends DONE); the error comes back."""
    def work():
        kv = kvstore.create("dist_sync")
        kv.init(0, mx.nd.zeros((2,)))
        if kv.rank == 1:
            raise ValueError("worker 1 broke")
        out = mx.nd.zeros((2,))
        kv.push(0, mx.nd.ones((2,)))
        kv.pull(0, out=out)
        return out.asnumpy().tolist()
    with pytest.raises(ValueError, match="worker 1 broke"):
        run_job(work, 2)


def test_a_worker_failing_before_its_first_store_ends_the_job_with_its_error():
    """A worker that raises before it made any store still tells the servers it is done, so the
    job ends with that error; before, the servers waited for it until the job's timeout."""
    def work():
        if threading.current_thread().name == "ps worker 0":
            raise ValueError("no store made")
        kv = kvstore.create("dist_sync")
        kv.init(0, mx.nd.zeros((2,)))
        return kv.rank
    with pytest.raises(ValueError, match="no store made"):
        run_job(work, 3, 2, timeout=60)


def test_a_job_needs_a_server_and_a_worker():
    """The same refusal as under mpiexec, before any thread starts."""
    with pytest.raises(mx.MXNetError, match="cannot hold 1 server"):
        run_job(lambda: None, 0, 1)


@pytest.mark.parametrize("name,klass,model,options,caps", [
    ("dist_sync", "DistKVStore", "dist_sync", {}, {"optimizer", "distributed", "synchronous"}),
    ("dist", "DistKVStore", "dist_sync", {}, {"optimizer", "distributed", "synchronous"}),
    ("dist_device_sync", "DistKVStore", "dist_sync", {}, {"optimizer", "distributed", "synchronous"}),
    ("dist_async", "DistAsyncKVStore", "dist_async", {}, {"optimizer", "distributed", "async"}),
    ("dist_ssp:3", "DistSSPKVStore", "dist_ssp", {"tau": 3}, {"optimizer", "distributed"}),
    ("DIST_SSP", "DistSSPKVStore", "dist_ssp", {"tau": 2}, {"optimizer", "distributed"}),
])
def test_type_names_pick_model_options_and_capabilities(name, klass, model, options, caps):
    """Each dist type name makes the store class it always made, with its consistency model,
    its options (tau from the name, else the default 2) and what it says it can do."""
    def work():
        kv = kvstore.create(name)
        have = {c for c in kvstore.base.KVStore.CAPABILITIES if kv.is_capable(c)}
        return type(kv).__name__, kv.type, kv.consistency.name, kv._options, have
    assert run_job(work, 1) == [(klass, name.lower(), model, options, caps)]
