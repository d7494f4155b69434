"""row_sparse keys on the parameter server, in one process (``inprocess.run_job``): the closed
forms of every consistency model, the bytes that travel (only touched rows, their ids and the
headers), the servers' memory for a 10^9-row key, and the server's lazy optimizer against the
local store's."""
import numpy as np
import pytest

import mxref as mx
from mxref.collective import local_engine
from mxref.kvstore.ps import comm as ps_comm
from mxref.kvstore.ps import server as ps_server
from mxref.kvstore.ps.inprocess import run_job
from mxref.ndarray import sparse

ROWS, WIDTH = 50, 3


def _closed_form(mode):
    kv = mx.kv.create(mode)
    if mode != "dist_sync":
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
    r, n = kv.rank, kv.num_workers
    kv.init("e", sparse.zeros("row_sparse", (ROWS, WIDTH)))
    kv.push("e", sparse.row_sparse_array((np.full((2, WIDTH), r + 1, np.float32), [r, r + 1]),
                                         shape=(ROWS, WIDTH)))
    kv.barrier()
    out = sparse.zeros("row_sparse", (ROWS, WIDTH))
    kv.row_sparse_pull("e", out=out, row_ids=mx.nd.array([n, 0, ROWS - 1, 1, n, 0]))
    dense = mx.nd.zeros((ROWS, WIDTH))
    kv.pull("e", out=dense)
    whole = sparse.zeros("row_sparse", (ROWS, WIDTH))
    kv.pull("e", out=whole)                         # ignore_sparse: left alone
    assert whole.indices.asnumpy().size == 0
    kv.pull("e", out=whole, ignore_sparse=False)    # every row the servers hold, with its id
    assert whole.indices.asnumpy().tolist() == list(range(n + 1))
    np.testing.assert_array_equal(whole.asnumpy(), dense.asnumpy())
    return out.indices.asnumpy().tolist(), out.data.asnumpy()[:, 0].tolist(), dense.asnumpy()[:, 0]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["dist_sync", "dist_async", "dist_ssp"])
@pytest.mark.parametrize("workers,servers", [(2, 1), (3, 2)])
def test_closed_forms(mode, workers, servers):
    """Worker r pushes rows {r, r+1} with value r+1: row i holds the sum of its pushers (negated
    after SGD with learning rate 1 for the models that update on arrival)."""
    want = np.zeros(ROWS)
    for r in range(workers):
        want[[r, r + 1]] += r + 1
    if mode != "dist_sync":
        want = -want
    ids = sorted({workers, 0, ROWS - 1, 1})
    for got_ids, rows, dense in run_job(_closed_form, workers, servers, mode, timeout=50):
        assert got_ids == ids
        assert rows == want[ids].tolist()
        np.testing.assert_array_equal(dense, want)


class _Counter:
    """Counts the bytes every LocalLink send carries, by tag (headers and data apart)."""

    def __init__(self):
        self.sent = {ps_comm.TAG_CTRL: 0, ps_comm.TAG_DATA: 0}
        self.messages = 0

    def install(self, monkeypatch):
        send = local_engine.LocalLink.send

        def counted(link, peer, buf, tag=0):
            if tag in self.sent:
                self.sent[tag] += np.asarray(buf).nbytes
                self.messages += tag == ps_comm.TAG_CTRL
            return send(link, peer, buf, tag)
        monkeypatch.setattr(local_engine.LocalLink, "send", counted)


N_BIG, DIM, TOUCHED = 10 ** 6, 64, 2000


def _touch_rows(counter):
    kv = mx.kv.create("dist_sync")
    kv.init(0, sparse.zeros("row_sparse", (N_BIG, DIM)))
    kv.barrier()
    ids = np.random.default_rng(kv.rank).choice(N_BIG, TOUCHED, replace=False)
    grad = sparse.row_sparse_array((np.ones((TOUCHED, DIM), np.float32), ids), shape=(N_BIG, DIM))
    grad.wait_to_read()
    kv.barrier()
    if kv.rank == 0:
        counter.mark = (dict(counter.sent), counter.messages)
    kv.barrier()
    kv.push(0, grad)
    out = sparse.zeros("row_sparse", (N_BIG, DIM))
    kv.row_sparse_pull(0, out=out, row_ids=mx.nd.array(ids, dtype="int64"))
    out.wait_to_read()
    kv.barrier()
    return out.indices.asnumpy().size


@pytest.mark.timeout(60)
def test_only_touched_rows_travel(monkeypatch):
    """A push and a row_sparse_pull of 2,000 rows of a 10^6 x 64 key, 2 workers and 2 servers:
    the data bytes are exactly the rows and their int64 ids (push: ids + rows; pull: ids out,
    rows back), nothing of the dense table; headers stay small."""
    counter = _Counter()
    counter.install(monkeypatch)
    got = run_job(_touch_rows, 2, 2, counter, timeout=50)
    assert got == [TOUCHED, TOUCHED]
    # Everything after the mark of worker 0 (set between two barriers): the two workers' push
    # and pull, one barrier's messages, and their replies.
    data = counter.sent[ps_comm.TAG_DATA] - counter.mark[0][ps_comm.TAG_DATA]
    row_bytes = DIM * 4
    per_worker = TOUCHED * (8 + row_bytes) + TOUCHED * 8 + TOUCHED * row_bytes
    assert data == 2 * per_worker, (data, 2 * per_worker)
    headers = counter.sent[ps_comm.TAG_CTRL] - counter.mark[0][ps_comm.TAG_CTRL]
    messages = counter.messages - counter.mark[1]
    assert headers < 400 * messages and messages < 40, (headers, messages)
    assert data < 0.05 * N_BIG * row_bytes


def _memory(servers_seen):
    kv = mx.kv.create("dist_sync")
    kv.set_optimizer(mx.optimizer.Adam(learning_rate=0.01))
    kv.init("huge", sparse.zeros("row_sparse", (10 ** 9, 8)))
    ids = (np.arange(500) * 1999993 + kv.rank) % 10 ** 9
    for _ in range(3):
        kv.push("huge", sparse.row_sparse_array((np.ones((500, 8), np.float32), ids), shape=(10 ** 9, 8)))
    out = sparse.zeros("row_sparse", (10 ** 9, 8))
    kv.row_sparse_pull("huge", out=out, row_ids=mx.nd.array(ids[:5], dtype="int64"))
    return out.data.asnumpy()


@pytest.mark.timeout(60)
def test_server_memory_of_a_billion_row_key(monkeypatch):
    """A 10^9 x 8 key with Adam on 2 servers: each server holds bytes in proportion to the rows
    pushed (1,000 distinct rows: weights, mean, var), not the 32 GB of the dense table."""
    servers = []
    init = ps_server.Server.__init__

    def keep(self, *a, **k):
        init(self, *a, **k)
        servers.append(self)
    monkeypatch.setattr(ps_server.Server, "__init__", keep)
    rows = run_job(_memory, 2, 2, servers, timeout=50)
    assert all(np.isfinite(r).all() and (r < 0).all() for r in rows)    # Adam moved them down
    held = sum(s.held_bytes for s in servers)
    pushed_rows = 1000
    # three row stores (weight, mean, var): values at most doubled capacity, plus 16 bytes of ids
    assert 0 < held <= 3 * pushed_rows * (2 * 8 * 4 + 16) + 3 * 2 * 16 * 8 * 4, held


def _sgd(kind, opt):
    kv = mx.kv.create(kind)
    kv.set_optimizer(opt())
    kv.init(0, sparse.row_sparse_array((np.ones((6, 2), np.float32), np.arange(6)), shape=(6, 2)))
    for rows, ids in [([[2, 2], [2, 2]], [0, 3]), ([[5, 5]], [3]), ([[1, -1]], [5])]:
        kv.push(0, sparse.row_sparse_array((np.array(rows, np.float32), ids), shape=(6, 2)))
    out = sparse.zeros("row_sparse", (6, 2))
    kv.row_sparse_pull(0, out=out, row_ids=mx.nd.arange(6))
    return out.asnumpy()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("opt", [lambda: mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01),
                                 lambda: mx.optimizer.Adam(learning_rate=0.1),
                                 lambda: mx.optimizer.AdaGrad(learning_rate=0.1)],
                         ids=["sgd_momentum", "adam", "adagrad"])
def test_server_lazy_update_equals_local(opt):
    """The server's lazy optimizer on one worker gives the local store's result: touched rows
    updated (their state too), untouched rows (1, 2, 4) left at 1 even with weight decay."""
    (remote,) = run_job(_sgd, 1, 2, "dist_async", opt, timeout=50)
    local = _sgd("local", opt)
    np.testing.assert_allclose(remote, local, rtol=1e-6)
    assert (local[[1, 2, 4]] == 1).all() and (local[[0, 3, 5]] != 1).all()
