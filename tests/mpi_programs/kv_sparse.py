"""row_sparse keys under mpiexec: closed forms every worker checks alone.

Worker ``r`` pushes rows ``{r, r+1}`` with value ``r+1``; every pull of row ``i`` must then see
the sum of the pushers of ``i`` (dist_sync: after the round; dist_async / dist_ssp with SGD of
learning rate 1 from zeros: minus that sum, once every worker has pushed and met at a barrier).
Rows are requested unsorted and repeated, across the servers' row ranges (the key's rows are cut
over all servers), and a plain pull into a dense array gives the same values. Argument: the
store type.
"""
import sys

import numpy as np
from report import report

import mxref as mx
from mxref import kvstore
from mxref.ndarray import sparse

ROWS, WIDTH = 1000, 4


def expected(n):
    """Row i: the sum of (r + 1) over the workers r that push it (r == i or r + 1 == i)."""
    want = np.zeros((ROWS, WIDTH), np.float32)
    for r in range(n):
        want[[r, r + 1]] += r + 1
    return want


def main(mode):
    kv = kvstore.create(mode)
    n, r = kv.num_workers, kv.rank
    if mode != "dist_sync":
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
    kv.init("emb", sparse.zeros("row_sparse", (ROWS, WIDTH)))
    # Row ROWS-1 too, so the last server's range is touched (a 0.0 push adds nothing).
    g = sparse.row_sparse_array((np.array([[r + 1] * WIDTH, [r + 1] * WIDTH, [0] * WIDTH], np.float32),
                                 [r, r + 1, ROWS - 1]), shape=(ROWS, WIDTH))
    kv.push("emb", [g])
    kv.barrier()
    sign = 1 if mode == "dist_sync" else -1
    want = sign * expected(n)
    ids = [n, 0, ROWS - 1, n // 2, 0, 777, n]
    out = sparse.zeros("row_sparse", (ROWS, WIDTH))
    kv.row_sparse_pull("emb", out=out, row_ids=mx.nd.array(ids, dtype="int64"))
    got_ids = out.indices.asnumpy().tolist()
    assert got_ids == sorted(set(ids)), got_ids
    np.testing.assert_array_equal(out.data.asnumpy(), want[got_ids])
    dense = mx.nd.zeros((ROWS, WIDTH))
    kv.pull("emb", out=dense)
    np.testing.assert_array_equal(dense.asnumpy(), want)
    report(f"worker {r}: rows {got_ids} servers {len(kv._rsp['emb'].parts)}")
    report(f"worker {r} of {n}: OK")


if __name__ == "__main__":
    main(sys.argv[1])
    sys.stdout.flush()
