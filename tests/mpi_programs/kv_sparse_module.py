"""Module with a row_sparse weight on dist_sync: each worker trains on its shard of a LibSVM file
(``num_parts``/``part_index``) with ``Module.prepare`` pulling the batch's rows; the trained
weights must equal numpy SGD whose every step sums the shards' batch gradients, on every worker.
"""
import os
import sys
import tempfile

import numpy as np
from report import report

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "module"))
import sparse_logreg as lr  # noqa: E402

import mxref as mx  # noqa: E402


def main():
    kv = mx.kv.create("dist_sync")
    n, r = kv.num_workers, kv.rank
    with tempfile.TemporaryDirectory() as tmp:      # every rank writes the same file for itself
        path = os.path.join(tmp, "d.libsvm")
        lr.write_data(path)
        counts = [sum(1 for _ in lr._all(lr.batches(path, n, p))) for p in range(n)]
        assert len(set(counts)) == 1, f"shards have different batch counts {counts}"
        w, b, pulled = lr.train_module(path, kv, n, r)
        ref_w, ref_b = lr.train_numpy(path, n)
        acc = lr.accuracy(path, w[:, 0], b)
    np.testing.assert_allclose(w[:, 0], ref_w, rtol=1e-4, atol=1e-5)
    assert abs(b - ref_b) < 1e-4, (b, ref_b)
    assert all(got == want for got, want in pulled)
    assert acc > 0.8, acc
    report(f"worker {r}: accuracy {acc:.3f} after {len(pulled)} steps")
    report(f"worker {r} of {n}: OK")


if __name__ == "__main__":
    main()
    sys.stdout.flush()
