"""2-bit compressed dist_sync pushes against a numpy reference each worker computes alone.

Worker ``v`` pushes ``g(v, t)`` (seeded by ``v`` and ``t``) with threshold 0.5 and keeps a
residual; the server dequantizes and sums. Every worker recomputes every worker's quantized
gradient with the plain reference below and must pull exactly their sum, including the split
big array (``MXNET_KVSTORE_BIGARRAY_BOUND`` is small in the test).
"""
import numpy as np
from report import report

import mxref as mx
from mxref import kvstore

T = 0.5
ROUNDS = 4
SHAPE = (3, 700)


def grad(v, t):
    return np.random.RandomState(100 * v + t).uniform(-1.2, 1.2, SHAPE).astype(np.float32)


def reference_2bit(g, residual):
    """What the receiver sees: +T, -T or 0 per element; the rest stays in the residual."""
    residual += g
    sent = np.where(residual >= T, T, np.where(residual <= -T, -T, 0)).astype(np.float32)
    residual -= sent
    return sent


def main():
    kv = kvstore.create("dist_sync")
    n, r = kv.num_workers, kv.rank
    kv.set_gradient_compression({"type": "2bit", "threshold": T})
    kv.init("c", mx.nd.zeros(SHAPE))
    residuals = [np.zeros(SHAPE, np.float32) for _ in range(n)]
    out = mx.nd.zeros(SHAPE)
    for t in range(ROUNDS):
        kv.push("c", mx.nd.array(grad(r, t)))
        kv.pull("c", out=out)
        want = sum(reference_2bit(grad(v, t), residuals[v]) for v in range(n))
        got = out.asnumpy()
        assert np.array_equal(got, want), (t, np.abs(got - want).max())
    report(f"worker {r} of {n}: OK (compressed, parts {kv.placement['c']})")


if __name__ == "__main__":
    main()
