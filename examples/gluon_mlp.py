"""Train a multilayer perceptron on the bundled digits with Gluon, imperative or hybridized.

    python examples/gluon_mlp.py --num-epochs 10 [--hybridize]

The Gluon recipe of MXNet 1.x: a ``HybridSequential`` of ``Dense`` layers, a ``DataLoader`` over
``gluon.data.vision.Digits``, and per batch ``autograd.record()`` -> loss -> ``backward()`` ->
``Trainer.step``. Without ``--hybridize`` every layer runs operator by operator as NDArray calls;
with it, the first call traces ``hybrid_forward`` into a Symbol and later calls run that graph
through one executor with a memory plan. Both give the same numbers (up to float rounding).
"""
import argparse
import time

import numpy as np

import mxref as mx
from mxref import autograd, gluon


def mlp(num_classes: int = 10) -> gluon.nn.HybridSequential:
    """(N, 64) -> Dense 128 relu -> Dense 64 relu -> Dense num_classes (logits)."""
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(128, activation="relu"), gluon.nn.Dense(64, activation="relu"),
                gluon.nn.Dense(num_classes))
    return net


def evaluate(net, loader) -> float:
    """Accuracy of ``net`` over ``loader`` (predict mode: no recording)."""
    metric = mx.metric.Accuracy()
    for data, label in loader:
        metric.update([label], [net(data)])
    return metric.get()[1]


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--num-epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=50)
    p.add_argument("--lr", type=float, default=0.2)
    p.add_argument("--max-batches", type=int, default=0, help="stop each epoch after this many batches")
    p.add_argument("--hybridize", action="store_true", help="trace the network into one Symbol graph")
    args = p.parse_args(argv)
    mx.random.seed(0)
    np.random.seed(0)                       # the DataLoader's shuffle
    train = gluon.data.DataLoader(gluon.data.vision.Digits("train", flat=True), args.batch_size,
                                  shuffle=True)
    val = gluon.data.DataLoader(gluon.data.vision.Digits("val", flat=True), args.batch_size)

    net = mlp()
    net.initialize(mx.init.Xavier())
    if args.hybridize:
        net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": args.lr, "momentum": 0.9, "wd": 1e-4})
    for epoch in range(args.num_epochs):
        metric, total, seen, tic = mx.metric.Accuracy(), 0.0, 0, time.time()
        for i, (data, label) in enumerate(train):
            if args.max_batches and i >= args.max_batches:
                break
            with autograd.record():
                out = net(data)
                loss = loss_fn(out, label)
            loss.backward()
            trainer.step(data.shape[0])     # gradients are sums over the batch: rescale by 1/N
            metric.update([label], [out])
            total += float(loss.sum().asscalar())
            seen += data.shape[0]
        print(f"epoch {epoch}: loss {total / seen:.4f} train {metric.get()[0]} {metric.get()[1]:.4f} "
              f"({seen / (time.time() - tic):.0f} samples/s)")
    accuracy = evaluate(net, val)
    mode = "hybridized" if args.hybridize else "imperative"
    print(f"validation accuracy {accuracy:.4f} ({mode})")
    return accuracy


if __name__ == "__main__":
    main()
