"""dist_ssp under mpiexec: with a straggler, no pull is ever more than tau clocks stale.

Worker ``r`` pushes the one-hot vector ``e_r`` each step and the servers add it (SGD with
``lr=-1``), so ``value[v]`` counts the pushes of worker ``v`` applied so far. After its own
``c``-th push is acknowledged, worker ``r`` pulls and must see ``value[v] >= c - tau`` for
every ``v``. The last worker sleeps every step, so the others really run ahead: the largest
gap they observe must be exactly ``tau``. At the end everyone sees every push.
"""
import os
import time

import numpy as np
from report import report

import mxref as mx
from mxref import kvstore

STEPS = 10


def check(name, tau):
    """One store: push one-hots for STEPS clocks, check every pull against tau."""
    kv = kvstore.create(name)
    n, r = kv.num_workers, kv.rank
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=-1.0))
    kv.init(7, mx.nd.zeros((n,)))
    onehot = np.zeros(n, np.float32)
    onehot[r] = 1
    out = mx.nd.zeros((n,))
    max_gap = 0
    for c in range(1, STEPS + 1):
        if r == n - 1:
            time.sleep(0.05)
        kv.push(7, mx.nd.array(onehot))
        kv.pull(7, out=out)
        seen = out.asnumpy()
        assert seen[r] == c, (seen, c)
        gap = c - seen.min()
        assert gap <= tau, f"worker {r} at clock {c} saw {seen}: more than tau={tau} stale"
        max_gap = max(max_gap, gap)
    if r == 0 and n > 1:
        assert max_gap == tau, f"the straggler never held worker 0 back at tau={tau} (max gap {max_gap})"
    kv.barrier()
    kv.pull(7, out=out)
    assert (out.asnumpy() == STEPS).all(), out.asnumpy()
    return n, r, max_gap


def main():
    # tau from the name, then from MXREF_KV_STALENESS (the driver sets it to 2).
    for name, tau in (("dist_ssp:0", 0), ("dist_ssp", int(os.environ["MXREF_KV_STALENESS"]))):
        n, r, gap = check(name, tau)
        report(f"worker {r}: tau={tau} max gap {gap:g}")
    report(f"worker {r} of {n}: OK")


if __name__ == "__main__":
    main()
