"""dist_sync closed forms, run under mpiexec: every worker checks alone what it must pull.

Each worker pushes ``rank + 1`` (times a key-dependent factor), so after a round every worker
must pull ``n(n+1)/2`` times that factor, for int and str keys, small and big (split) arrays,
one value or a list over two contexts (two-level: reduced locally first), and 40 keys of
random sizes in one call. Then a server-side SGD optimizer, compared with the single-process
formula.
"""
import sys

import numpy as np
from report import report

import mxref as mx
from mxref import kvstore

ROUNDS = 3


def check_rounds(kv, shapes, n, r):
    """Each round every worker pushes (rank+1)*factor from two contexts and must pull the sum."""
    total = n * (n + 1) / 2
    keys = list(shapes)
    kv.init(keys, [mx.nd.ones(s) * (0 if r == 0 else 99) for s in shapes.values()])
    out = [mx.nd.zeros(s) for s in shapes.values()]
    kv.pull(keys, out=out)
    for o in out:
        assert (o.asnumpy() == 0).all(), "every worker must see worker 0's initial values"
    for t in range(ROUNDS):
        for i, k in enumerate(keys):
            factor = (i + 1) * (t + 1)
            vals = [mx.nd.ones(shapes[k], ctx=mx.cpu(c)) * ((r + 1) * factor / 2) for c in range(2)]
            kv.push(k, vals)
        kv.pull(keys, out=out)
        for i, (k, o) in enumerate(zip(keys, out)):
            want = total * (i + 1) * (t + 1)
            got = o.asnumpy()
            assert np.allclose(got, want), (k, t, got.ravel()[:4], want)


def main():
    kv = kvstore.create("dist_sync")
    n, r = kv.num_workers, kv.rank
    check_rounds(kv, {3: (2, 3), 5: (7,), 9: (1200,), 11: (50, 30)}, n, r)
    many = kvstore.create("dist_sync")
    sizes = np.random.RandomState(5).randint(1, 1500, size=40)
    check_rounds(many, {i: (int(sz),) for i, sz in enumerate(sizes)}, n, r)
    kv_str = kvstore.create("dist_sync")
    check_rounds(kv_str, {"w": (4, 4), "big": (3000,)}, n, r)
    # A pushed value of the wrong shape is refused at the call, naming the key.
    try:
        kv_str.push("w", mx.nd.ones((3, 3)))
    except mx.MXNetError as e:
        assert "'w'" in str(e) and "(3, 3)" in str(e), str(e)
    else:
        raise AssertionError("shape mismatch was not rejected")
    total = n * (n + 1) / 2

    # Server-side optimizer: SGD with lr=0.1, rescale 1/n, on the sum of the workers' gradients.
    kv2 = kvstore.create("dist_sync")
    kv2.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, rescale_grad=1.0 / n, momentum=0.9))
    kv2.init(0, mx.nd.ones((5, 6)))
    w = mx.nd.zeros((5, 6))
    ref_w, mom = np.ones((5, 6), np.float32), np.zeros((5, 6), np.float32)
    for t in range(ROUNDS):
        g = np.arange(30, dtype=np.float32).reshape(5, 6) * (r + 1) * (t + 1) / 10
        kv2.push(0, mx.nd.array(g))
        kv2.pull(0, out=w)
        gsum = np.arange(30, dtype=np.float32).reshape(5, 6) * total * (t + 1) / 10
        mom = 0.9 * mom - 0.1 * (gsum / n)
        ref_w = ref_w + mom
        assert np.allclose(w.asnumpy(), ref_w, rtol=1e-5, atol=1e-6), (t, w.asnumpy()[0], ref_w[0])
    report(f"worker {r}: placement {sorted(map(str, kv.placement))} loads {kv.server_loads}")
    report(f"worker {r} of {n}: OK")


if __name__ == "__main__":
    main()
    sys.stdout.flush()
