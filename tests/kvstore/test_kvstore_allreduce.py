"""dist_sync_allreduce: closed forms on thread worlds in-process, then real jobs under mpiexec and
the robust launcher (Module.fit, gluon.Trainer, the demo, and training that survives a killed worker).

In-process tests run the ranks as threads of one process (``collective.run_local``) on the naive
engine, which runs each op on the pushing thread, so each rank's ops reach its own collective.
Jobs run on loopback only, in a subprocess with a hard timeout.
"""
import re
import sys

import numpy as np
import pytest
from mpi_support import loopback_env, mpiexec, needs_mpi, run_reporting

import mxref as mx
from mxref import collective, engine


@pytest.fixture
def naive():
    old = engine.get().name
    engine.set_engine("NaiveEngine")
    yield
    engine.set_engine(old)


def _closed_forms():
    kv = mx.kv.create("DIST_SYNC_ALLREDUCE")
    r, n = kv.rank, kv.num_workers
    total = n * (n + 1) / 2
    kv.init([0, 1], [mx.nd.full((2, 3), 10.0 * (r + 1)), mx.nd.full((5,), -1.0 * r)])
    out = [mx.nd.zeros((2, 3)), mx.nd.zeros((5,))]
    kv.pull([0, 1], out=out)
    init = (out[0].asnumpy(), out[1].asnumpy())
    sums = []
    for t in range(2):
        kv.push(0, [mx.nd.full((2, 3), (r + 1) * (t + 1) / 2, ctx=mx.cpu(c)) for c in range(2)])
        kv.push(1, mx.nd.full((5,), r + 1.0))
        kv.pull([0, 1], out=out)
        sums.append((out[0].asnumpy() / (t + 1), out[1].asnumpy()))
    kv.barrier()
    return r, n, total, init, sums


@pytest.mark.parametrize("world", [2, 3])
def test_closed_forms_on_thread_worlds(naive, world):
    """Init leaves rank 0's value everywhere; each rank pushing (rank+1) from two contexts pulls
    n(n+1)/2 (devices reduced first, then the workers); rank and num_workers come from the world."""
    results = collective.run_local(world, _closed_forms)
    assert [res[:2] for res in results] == [(r, world) for r in range(world)]
    for _, _, total, init, sums in results:
        assert (init[0] == 10).all() and (init[1] == 0).all()
        for a, b in sums:
            assert (a == total).all() and (b == total).all()


def _local_optimizer():
    kv = mx.kv.create("dist_sync_allreduce")
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    kv.init("w", mx.nd.ones((3,)))
    for t in range(3):
        kv.push("w", mx.nd.full((3,), (kv.rank + 1.0) * (t + 1)))
    out = mx.nd.zeros((3,))
    kv.pull("w", out=out)
    return out.asnumpy()


def test_optimizer_runs_identically_on_every_worker(naive):
    """set_optimizer installs a local updater fed with the allreduced sum: SGD with momentum
    matches the closed form on every rank."""
    w, mom = np.ones(3), np.zeros(3)
    for t in range(3):
        mom = 0.9 * mom - 0.1 * 3 * (t + 1)
        w = w + mom
    for got in collective.run_local(2, _local_optimizer):
        assert np.allclose(got, w, rtol=1e-6)


def _after_checkpoint():
    collective.checkpoint({"step": 1})
    kv = mx.kv.create("dist_sync_allreduce")
    kv.init(0, mx.nd.full((2,), collective.get_rank() + 5.0))
    out = mx.nd.zeros((2,))
    kv.pull(0, out=out)
    return out.asnumpy()[0]


def test_init_after_a_checkpoint_broadcasts_nothing(naive):
    """Once a checkpoint exists, init keeps each rank's value (no collective call a restarted
    worker could not match); the checkpointed model is what makes them equal."""
    assert collective.run_local(2, _after_checkpoint) == [5.0, 6.0]


def _capabilities():
    kv = mx.kv.create("dist_sync_allreduce")
    with pytest.raises(mx.MXNetError, match="compression is not supported"):
        kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    with pytest.raises(mx.MXNetError, match="Unknown capability"):
        kv.is_capable("teleport")
    return kv.is_capable("optimizer"), kv.type


def test_store_updates_on_workers_and_refuses_compression(naive):
    """is_capable('optimizer') is False, so Module and Trainer keep update_on_kvstore=False;
    2-bit compression and unknown capabilities raise MXNetError."""
    assert collective.run_local(2, _capabilities) == [(False, "dist_sync_allreduce")] * 2


def _run(cmd, timeout, **env):
    return run_reporting(cmd, timeout, loopback_env(**env))


def _mpiexec(n, *program, timeout=90, **env):
    return _run([*mpiexec(n), sys.executable, *program],
                timeout, **env)


def _robust(n, *program, timeout=90, **env):
    return _run([sys.executable, "-m", "mxref.tools.launch", "-n", str(n), "--engine", "robust", "--",
                 sys.executable, *program], timeout, **env)


def _assert_ok(proc, n):
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert sorted(re.findall(r"worker (\d+) of (\d+): OK", proc.reports)) == \
        [(str(r), str(n)) for r in range(n)], out


@needs_mpi
@pytest.mark.parametrize("n,engine_type", [(2, "NaiveEngine"), (3, "ThreadedEnginePerDevice")])
def test_closed_forms_under_mpiexec(n, engine_type):
    """Plain mpiexec, no server ranks (MXREF_NUM_SERVERS=1 is ignored): closed forms over int and
    str keys, two contexts, prioritized pushes, and a local SGD optimizer."""
    _assert_ok(_mpiexec(n, "tests/mpi_programs/kv_allreduce.py", MXREF_NUM_SERVERS=1, EXPECT_WORKERS=n,
                        MXNET_ENGINE_TYPE=engine_type), n)


@needs_mpi
def test_closed_forms_under_the_robust_launcher():
    """The same script on the robust collective engine (TCP, tracker), started by the launcher."""
    _assert_ok(_robust(3, "tests/mpi_programs/kv_allreduce.py", EXPECT_WORKERS=3), 3)


@needs_mpi
@pytest.mark.parametrize("n", [2, 3])
def test_module_and_trainer_equal_one_process(n):
    """Module.fit and gluon.Trainer over the store end with the weights of one process that
    trains on the whole batch (checked by every worker)."""
    _assert_ok(_mpiexec(n, "tests/mpi_programs/kv_allreduce_train.py"), n)


@needs_mpi
def test_demo_trains_with_allreduce_on_two_workers(tmp_path):
    """The demo with --kv-store dist_sync_allreduce under mpiexec -n 2 (no server): both workers
    train and end with identical weights."""
    proc = _mpiexec(2, "-m", "mxref.tools.demo", "--kv-store", "dist_sync_allreduce", "--network", "mlp",
                    "--num-epochs", "2", "--no-bar", "--out", str(tmp_path), timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "worker 0 of 2" in out and "worker 1 of 2" in out
    accuracies = [float(a) for a in re.findall(r"validation accuracy : ([0-9.]+)", out)]
    assert len(accuracies) == 2 and min(accuracies) > 0.5, out
    p0 = mx.nd.load(str(tmp_path / "mlp-0002.params"))
    p1 = mx.nd.load(str(tmp_path / "worker1" / "mlp-0002.params"))
    weights = [k for k in p0 if k.startswith("arg:")]
    assert weights and set(p0) == set(p1)
    for k in weights:
        assert np.array_equal(p0[k].asnumpy(), p1[k].asnumpy()), k


@needs_mpi
def test_training_survives_a_killed_worker(tmp_path):
    """examples/collective/train_robust.py: rank 1 SIGKILLs itself mid-epoch, the launcher restarts
    it, it resumes from load_checkpoint, and every rank's final weights equal a failure-free run's
    bit for bit."""
    script = "examples/collective/train_robust.py"
    killed = _robust(3, script, "--out", str(tmp_path / "killed"))
    out = killed.stdout + killed.stderr
    assert killed.returncode == 0, out
    assert "killing myself" in out and "resuming at epoch 2" in out, out
    clean = _robust(3, script, "--kill-epoch", "-1", "--out", str(tmp_path / "clean"))
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "resuming" not in clean.stdout + clean.stderr
    reference = np.load(tmp_path / "clean-rank0.npz")
    for r in range(3):
        for name, want in [("clean", reference), ("killed", reference)]:
            got = np.load(tmp_path / f"{name}-rank{r}.npz")
            assert len(got.files) == 4
            for k in want.files:
                assert np.array_equal(got[k], want[k]), (name, r, k)


@needs_mpi
def test_straggler_experiment_bsp_over_servers_equals_bsp_over_allreduce(tmp_path):
    """examples/straggler.py (tiny): with a slowed worker, BSP over a parameter server and BSP over
    allreduce take the same steps, so their loss curves agree step by step."""
    csv = tmp_path / "curves.csv"
    proc = _run([sys.executable, "examples/straggler.py", "--modes", "dist_sync", "dist_sync_allreduce",
                 "--workers", "2", "--steps", "8", "--delay", "0.01", "--out", str(csv)], 200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [line.split(",") for line in csv.read_text().splitlines()[1:]]
    curves = {m: [float(r[3]) for r in rows if r[0] == m] for m in ("dist_sync", "dist_sync_allreduce")}
    assert len(curves["dist_sync"]) == 8 and np.allclose(curves["dist_sync"], curves["dist_sync_allreduce"],
                                                         rtol=1e-5)
    assert curves["dist_sync"][-1] < curves["dist_sync"][0]


def _misordered():
    kv = mx.kv.create("dist_sync_allreduce")
    kv.init([0, 1], [mx.nd.zeros((2,)), mx.nd.zeros((3,))])
    order = [0, 1] if kv.rank == 0 else [1, 0]
    for k in order:
        kv.push(k, mx.nd.ones((2,) if k == 0 else (3,)))
    out = mx.nd.zeros((2,))
    kv.pull(0, out=out)
    out.asnumpy()


def test_keys_pushed_in_different_orders_raise(naive):
    """Collectives match by position: workers pushing keys of different sizes in different orders
    get an MXNetError from the collective's agreement check instead of a hang or a mixed sum."""
    with pytest.raises(mx.MXNetError, match="disagree"):
        collective.run_local(2, _misordered)
