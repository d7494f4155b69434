"""Module.fit and gluon.Trainer over dist_sync_allreduce equal one process on the whole batch.

Worker ``r`` of ``n`` reads rows ``r, r+n, ...`` with batch ``B``, so batch ``t`` of all workers
together is rows ``[nBt, nB(t+1))``. Module (two contexts per worker: the devices are reduced
first, then the workers) rescales by ``1/(B*n)`` for a ``dist`` ``_sync`` store and updates on
each worker, so its weights must equal a single-process ``fit`` with batch ``n*B``. The Trainer
starts every worker from a *different* random init, then broadcasts rank 0's parameters through
``mx.collective`` (the Trainer only creates its store at the first ``step``, after the first
backward pass), so the result equals one process starting from rank 0's init over the ``n*B`` rows.
"""
import numpy as np
from report import report

import mxref as mx
from mxref import autograd, gluon
from mxref import module as mod

B = 8


def train_module(X, y, batch_size, kvstore, ctx):
    it = mx.io.NDArrayIter(X, y, batch_size=batch_size, shuffle=False)
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc"),
                               name="softmax")
    m = mod.Module(net, context=ctx)
    mx.random.seed(1)
    m.fit(it, kvstore=kvstore, optimizer="sgd", num_epoch=3, initializer=mx.init.Uniform(0.1),
          optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    args, _ = m.get_params()
    return {k: v.asnumpy() for k, v in args.items()}, m.score(it, "acc")[0][1]


def train_gluon(X, y, kvstore, batch_size, seed):
    mx.random.seed(seed)
    net = gluon.nn.Dense(3, in_units=10)
    net.initialize(mx.init.Uniform(0.1))
    if kvstore is not None:
        for _, p in sorted(net.collect_params().items()):
            mx.collective.broadcast(p.data(), 0)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.5},
                            kvstore=kvstore)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    rows = len(X) // 6
    for t in range(6):
        data, label = mx.nd.array(X[t * rows:(t + 1) * rows]), mx.nd.array(y[t * rows:(t + 1) * rows])
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(batch_size)
    return [v.data().asnumpy() for _, v in sorted(net.collect_params().items())]


def main():
    kv = mx.kv.create("dist_sync_allreduce")
    n, r = kv.num_workers, kv.rank
    rs = np.random.RandomState(0)
    X = rs.randn(n * B * 6, 10).astype(np.float32)
    y = (X @ rs.randn(10, 3)).argmax(1).astype(np.float32)
    got, acc = train_module(X[r::n], y[r::n], B, kv, [mx.cpu(0), mx.cpu(1)])
    want, acc_one = train_module(X, y, n * B, None, mx.cpu(0))
    for k in want:
        assert np.allclose(got[k], want[k], rtol=1e-4, atol=1e-5), (k, np.abs(got[k] - want[k]).max())
    assert acc > 0.8, acc
    got = train_gluon(X[r::n], y[r::n], mx.kv.create("dist_sync_allreduce"), B, seed=10 + r)
    want = train_gluon(X, y, None, B, seed=10)
    for a, b in zip(got, want):
        assert np.allclose(a, b, rtol=1e-4, atol=1e-5), np.abs(a - b).max()
    report(f"worker {r} of {n}: OK (accuracy {acc:.3f} on its shard, {acc_one:.3f} in one process)")


if __name__ == "__main__":
    main()
