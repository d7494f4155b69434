"""dist_sync_allreduce closed forms, run under plain mpiexec (no servers) or the robust launcher.

Every process is a worker. Each pushes ``(rank + 1) * factor`` from two contexts, so every worker
must pull ``n(n+1)/2 * factor``; init must leave rank 0's value everywhere; with a local SGD
optimizer every worker must hold the single-process formula's weights; the store refuses to run
the optimizer itself (``is_capable``) and ignores ``MXREF_NUM_SERVERS``.
"""
import os

import numpy as np
from report import report

import mxref as mx


def main():
    kv = mx.kv.create("dist_sync_allreduce")
    r, n = kv.rank, kv.num_workers
    assert n == int(os.environ.get("EXPECT_WORKERS", n)), (n, "MXREF_NUM_SERVERS must be ignored")
    assert not kv.is_capable("optimizer")
    total = n * (n + 1) / 2

    shapes = {3: (2, 3), 5: (7,), 9: (1000, 3)}
    keys = list(shapes)
    kv.init(keys, [mx.nd.ones(s) * (r * 10 + 1) for s in shapes.values()])
    out = [mx.nd.zeros(s) for s in shapes.values()]
    kv.pull(keys, out=out)
    assert all((o.asnumpy() == 1).all() for o in out), "every worker must see rank 0's init"
    for t in range(3):
        for i, k in enumerate(keys):
            factor = (i + 1) * (t + 1)
            kv.push(k, [mx.nd.ones(shapes[k], ctx=mx.cpu(c)) * ((r + 1) * factor / 2) for c in range(2)],
                    priority=-i)
        kv.pull(keys, out=out)
        for i, o in enumerate(out):
            want = total * (i + 1) * (t + 1)
            assert np.allclose(o.asnumpy(), want), (keys[i], t, o.asnumpy().ravel()[:3], want)

    # str keys (a second store), one value per worker, pushpull in place
    kvs = mx.kv.create("dist_sync_allreduce")
    kvs.init("w", mx.nd.zeros((4,)))
    g = mx.nd.full((4,), float(r + 1))
    kvs.pushpull("w", g, out=g)
    assert (g.asnumpy() == total).all(), g.asnumpy()

    # a local optimizer runs identically on every worker: w <- w - lr * (sum of grads) * rescale
    kv2 = mx.kv.create("dist_sync_allreduce")
    kv2.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, rescale_grad=0.5))
    kv2.init(0, mx.nd.ones((5,)))
    w, mom = np.ones(5, np.float32), np.zeros(5, np.float32)
    for t in range(4):
        kv2.push(0, mx.nd.full((5,), (r + 1.0) * (t + 1)))
        mom = 0.9 * mom - 0.1 * (0.5 * total * (t + 1))
        w = w + mom
    out = mx.nd.zeros((5,))
    kv2.pull(0, out=out)
    assert np.allclose(out.asnumpy(), w, rtol=1e-6), (out.asnumpy(), w)
    kv2.barrier()
    report(f"worker {r} of {n}: OK")


if __name__ == "__main__":
    main()
