"""gluon.data DataLoader worker processes (mxref/gluon/data/worker_pool.py): releasing the pool with
batches in flight, abandoned epochs, and a deadline on every wait (a hung or dead worker is an
error, never a hang). Each scenario that could deadlock runs in a subprocess with a hard timeout,
so a deadlock fails the test instead of hanging the suite."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mxref.base import MXNetError
from mxref.gluon import data as gdata

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str, timeout: float = 120) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.timeout(180)
def test_release_pool_with_batches_in_flight():
    """MXNet's test_multi_worker_dataloader_release_pool: ten loaders with 8 workers, one batch
    taken, iterator and loader deleted while 16 batches (128 KiB each, larger than a pipe) are in
    flight. With multiprocessing.Pool this deadlocked (terminate() waited on the result queue's
    lock, held by a worker blocked writing its batch). Every worker must be gone and no pipe
    left open afterwards."""
    out = _run("""
        import multiprocessing, os
        import numpy as np
        import mxref as mx
        fds = len(os.listdir('/proc/self/fd'))
        for _ in range(10):
            A = np.random.rand(999, 2000)
            D = mx.gluon.data.DataLoader(A, batch_size=8, num_workers=8)
            the_iter = iter(D)
            first = next(the_iter)
            assert first.shape == (8, 2000)
            pids = [p.pid for p in D._pool._procs]
            del the_iter
            del D
            assert multiprocessing.active_children() == [], multiprocessing.active_children()
            for pid in pids:                     # reaped: no such process any more
                assert not os.path.exists(f'/proc/{pid}'), pid
        assert len(os.listdir('/proc/self/fd')) == fds
        print('RELEASED')
    """, timeout=150)
    assert "RELEASED" in out


@pytest.mark.timeout(120)
def test_big_batches_one_worker_long_prefetch_match_main_process():
    """One worker, 40 batches queued, each result larger than a pipe: the main process never blocks
    sending a task to a worker that is itself blocked sending a batch; batches equal the main
    process's, in order, over two epochs and after an abandoned one."""
    out = _run("""
        import numpy as np
        import mxref as mx
        A = np.random.RandomState(0).rand(300, 3000)
        main = [b.asnumpy() for b in mx.gluon.data.DataLoader(A, batch_size=7, last_batch='keep')]
        D = mx.gluon.data.DataLoader(A, batch_size=7, num_workers=1, prefetch=40)
        it = iter(D)
        next(it); next(it)
        del it                                   # abandoned with 40 batches in flight
        for _ in range(2):
            got = [b.asnumpy() for b in D]
            assert len(got) == len(main) == 43
            for g, m in zip(got, main):
                np.testing.assert_array_equal(g, m)
        print('SAME')
    """)
    assert "SAME" in out


class _Hangs(gdata.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            import threading
            threading.Event().wait()          # never answers
        return np.float32(i)


class _Dies(_Hangs):
    def __getitem__(self, i):
        if i == 2:
            os._exit(7)
        return np.float32(i)


class _Raises(_Hangs):
    def __getitem__(self, i):
        if i == 2:
            raise KeyError("sample 2 is missing")
        return np.float32(i)


@pytest.mark.timeout(60)
def test_a_worker_that_never_answers_is_an_error_after_the_timeout():
    """The wait for a batch has the DataLoader's deadline (``timeout``); the release after it does
    not wait on the hung worker either."""
    loader = gdata.DataLoader(_Hangs(), batch_size=1, num_workers=2, timeout=1)
    it = iter(loader)
    assert next(it).asnumpy().tolist() == [0] and next(it).asnumpy().tolist() == [1]
    with pytest.raises(MXNetError, match="gave no batch .* within 1 s"):
        next(it)
    procs = loader._pool._procs
    del it
    loader.__del__()
    assert all(p.exitcode is not None for p in procs)


@pytest.mark.timeout(60)
def test_a_worker_that_dies_is_an_error_naming_it():
    """A worker that exits mid-epoch is an error with its pid and exit code, not a lost batch."""
    loader = gdata.DataLoader(_Dies(), batch_size=1, num_workers=2)
    with pytest.raises(MXNetError, match=r"worker \(pid \d+\) exited with code 7"):
        list(loader)


@pytest.mark.timeout(60)
def test_a_worker_exception_is_raised_in_the_main_process_with_its_type():
    """A dataset's exception in a worker re-raises in the main process with its type; the pool
    stays usable for the next epoch."""
    loader = gdata.DataLoader(_Raises(), batch_size=1, num_workers=2)
    for _ in range(2):
        seen = []
        with pytest.raises(KeyError, match="sample 2 is missing"):
            for b in loader:
                seen.append(b.asnumpy().tolist())
        assert seen == [[0], [1]]
