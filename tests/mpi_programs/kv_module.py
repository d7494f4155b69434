"""Module.fit and gluon.Trainer with kvstore='dist_sync' are data-parallel SGD over the servers.

Worker ``r`` of ``n`` reads rows ``r, r+n, ...`` with batch size ``B``; batch ``t`` of all workers
together is exactly rows ``[nBt, nB(t+1))``, and Module rescales by ``1/(B*n)`` for dist_sync.
So every worker's trained weights must equal a single-process ``fit`` with batch ``n*B`` over the
whole data set, which each worker also runs locally to compare. ``gluon.Trainer.step(B)`` rescales
by ``1/B`` on each worker and the servers sum, so it equals one process taking the ``n*B`` rows
with ``step(B)``.
"""
import numpy as np
from report import report

import mxref as mx
from mxref import kvstore as kvs
from mxref import module as mod

B = 20


def train(X, y, batch_size, kvstore):
    it = mx.io.NDArrayIter(X, y, batch_size=batch_size, shuffle=False)
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc"),
                               name="softmax")
    m = mod.Module(net)
    mx.random.seed(1)
    m.fit(it, kvstore=kvstore, optimizer="sgd", num_epoch=3, initializer=mx.init.Uniform(0.1),
          optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    args, _ = m.get_params()
    return {k: v.asnumpy() for k, v in args.items()}, m.score(it, "acc")[0][1]


def train_gluon(X, y, kvstore, batch_size):
    from mxref import autograd, gluon  # noqa: PLC0415
    mx.random.seed(2)
    net = gluon.nn.Dense(3, in_units=10)
    net.initialize(mx.init.Uniform(0.1))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, kvstore=kvstore)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    rows = len(X) // 6
    for t in range(6):
        data, label = mx.nd.array(X[t * rows:(t + 1) * rows]), mx.nd.array(y[t * rows:(t + 1) * rows])
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(batch_size)
    return {k: v.data().asnumpy() for k, v in net.collect_params().items()}


def main():
    kv = kvs.create("dist_sync")
    n, r = kv.num_workers, kv.rank
    rs = np.random.RandomState(0)
    X = rs.randn(n * B * 6, 10).astype(np.float32)
    y = (X @ rs.randn(10, 3)).argmax(1).astype(np.float32)
    got, acc = train(X[r::n], y[r::n], B, kv)
    want, acc_one = train(X, y, n * B, None)
    for k in want:
        assert np.allclose(got[k], want[k], rtol=1e-4, atol=1e-5), (k, np.abs(got[k] - want[k]).max())
    assert acc > 0.8, acc
    got = train_gluon(X[r::n], y[r::n], kvs.create("dist_sync"), B)
    want = train_gluon(X, y, None, B)
    for (k, a), b in zip(sorted(got.items()), [v for _, v in sorted(want.items())]):
        assert np.allclose(a, b, rtol=1e-4, atol=1e-5), (k, np.abs(a - b).max())
    report(f"worker {r} of {n}: OK (accuracy {acc:.3f} on its shard, {acc_one:.3f} in one process)")


if __name__ == "__main__":
    main()
