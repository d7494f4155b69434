"""dist_async under mpiexec: refused without a server optimizer; exact totals; convergence.

1. A push before ``set_optimizer`` raises a clear ``MXNetError`` at the call.
2. With SGD(lr=1) every push of ``g = 1`` subtracts 1 on arrival: once every worker has pushed
   ``K`` times and met at a barrier, everyone pulls ``init - n*K`` exactly.
3. Each worker runs SGD on ``f(w) = |w - target|^2 / 2`` by pull/push with no rounds; the shared
   weight converges to ``target``.
"""
import numpy as np
from report import report

import mxref as mx
from mxref import kvstore

K = 20


def main():
    kv = kvstore.create("dist_async")
    n, r = kv.num_workers, kv.rank
    kv.init("w", mx.nd.zeros((3,)))
    try:
        kv.push("w", mx.nd.ones((3,)))
    except mx.MXNetError as e:
        assert "set_optimizer" in str(e) and "'w'" in str(e), str(e)
    else:
        raise AssertionError("dist_async accepted a push without a server-side optimizer")

    kv = kvstore.create("dist_async")
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
    kv.init(0, mx.nd.ones((4, 5)) * 100)
    for _ in range(K):
        kv.push(0, mx.nd.ones((4, 5)))
    out = mx.nd.zeros((4, 5))
    kv.pull(0, out=out)
    out.wait_to_read()
    kv.barrier()
    kv.pull(0, out=out)
    assert np.array_equal(out.asnumpy(), np.full((4, 5), 100.0 - n * K, np.float32)), out.asnumpy()

    target = np.array([1.0, -2.0, 3.0, 0.5], np.float32)
    kv = kvstore.create("dist_async")
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    kv.init("x", mx.nd.zeros((4,)))
    x = mx.nd.zeros((4,))
    for _ in range(60):
        kv.pull("x", out=x)
        kv.push("x", x - mx.nd.array(target))
    kv.barrier()
    kv.pull("x", out=x)
    err = np.abs(x.asnumpy() - target).max()
    assert err < 1e-2, (x.asnumpy(), target)
    report(f"worker {r} of {n}: OK (async error {err:.2e})")


if __name__ == "__main__":
    main()
