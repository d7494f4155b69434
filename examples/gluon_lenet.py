"""Train LeNet on the bundled digits with Gluon, imperative or hybridized, and export it.

    python examples/gluon_lenet.py --num-epochs 8 [--hybridize]

A ``HybridSequential`` of ``Conv2D`` / ``MaxPool2D`` / ``Dense`` trained with
``autograd.record()`` and a ``Trainer``. Hybridized, the network can be exported as MXNet's
``-symbol.json`` + ``.params`` pair and loaded back as a ``SymbolBlock`` (``--export PREFIX``);
the reloaded block must predict exactly what the trained one does.
"""
import argparse
import time

import numpy as np

import mxref as mx
from mxref import autograd, gluon


def lenet(num_classes: int = 10) -> gluon.nn.HybridSequential:
    """Two 3x3 conv + relu + 2x2 max-pool stages (16, 32 filters), Dense 64 relu, Dense num_classes."""
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        for filters in (16, 32):
            net.add(gluon.nn.Conv2D(filters, kernel_size=3, padding=1, activation="relu"),
                    gluon.nn.MaxPool2D(pool_size=2, strides=2))
        net.add(gluon.nn.Flatten(), gluon.nn.Dense(64, activation="relu"), gluon.nn.Dense(num_classes))
    return net


def predict(net, loader) -> np.ndarray:
    """Class probabilities of every example in ``loader``, in order."""
    return np.concatenate([mx.nd.softmax(net(data)).asnumpy() for data, _ in loader])


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--num-epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=50)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--max-batches", type=int, default=0, help="stop each epoch after this many batches")
    p.add_argument("--hybridize", action="store_true", help="trace the network into one Symbol graph")
    p.add_argument("--export", default="", help="with --hybridize: export to PREFIX and reload it")
    args = p.parse_args(argv)
    mx.random.seed(0)
    np.random.seed(0)                       # the DataLoader's shuffle
    train = gluon.data.DataLoader(gluon.data.vision.Digits("train"), args.batch_size, shuffle=True)
    val = gluon.data.DataLoader(gluon.data.vision.Digits("val"), args.batch_size)
    labels = np.concatenate([label.asnumpy() for _, label in val])

    net = lenet()
    net.initialize(mx.init.Xavier(magnitude=2.0))
    if args.hybridize:
        net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": args.lr, "momentum": 0.9})
    for epoch in range(args.num_epochs):
        metric, seen, tic = mx.metric.Accuracy(), 0, time.time()
        for i, (data, label) in enumerate(train):
            if args.max_batches and i >= args.max_batches:
                break
            with autograd.record():
                out = net(data)
                loss = loss_fn(out, label)
            loss.backward()
            trainer.step(data.shape[0])
            metric.update([label], [out])
            seen += data.shape[0]
        print(f"epoch {epoch}: train {metric.get()[0]} {metric.get()[1]:.4f} "
              f"({seen / (time.time() - tic):.0f} samples/s)")

    prob = predict(net, val)
    accuracy = float((prob.argmax(axis=1) == labels).mean())
    mode = "hybridized" if args.hybridize else "imperative"
    print(f"validation accuracy {accuracy:.4f} ({mode})")
    if args.export and args.hybridize:
        net.export(args.export, epoch=args.num_epochs)
        loaded = gluon.SymbolBlock.imports(f"{args.export}-symbol.json", ["data"],
                                           f"{args.export}-{args.num_epochs:04d}.params")
        diff = float(np.abs(predict(loaded, val) - prob).max())
        print(f"exported to {args.export}-symbol.json; reloaded max |difference| {diff:.2e}")
    return accuracy


if __name__ == "__main__":
    main()
