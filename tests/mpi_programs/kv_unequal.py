"""dist_sync under mpiexec with unequal batch counts: worker r runs 3 + 2r steps; all finish.

While worker ``v`` is still running it pushes ``v + 1``; a worker that has finished (its process
exits, which sends DONE) no longer counts, so at step ``t`` everyone still running must pull the
sum of ``v + 1`` over the workers with ``3 + 2v > t``. The job must end with exit code 0.
"""
import numpy as np
from report import report

import mxref as mx
from mxref import kvstore


def steps(rank):
    return 3 + 2 * rank


def main():
    kv = kvstore.create("dist_sync")
    n, r = kv.num_workers, kv.rank
    kv.init("g", mx.nd.zeros((6,)))
    out = mx.nd.zeros((6,))
    for t in range(steps(r)):
        kv.push("g", mx.nd.ones((6,)) * (r + 1))
        kv.pull("g", out=out)
        want = sum(v + 1 for v in range(n) if steps(v) > t)
        assert np.array_equal(out.asnumpy(), np.full(6, want, np.float32)), (t, out.asnumpy(), want)
    report(f"worker {r} of {n}: OK after {steps(r)} steps")


if __name__ == "__main__":
    main()
