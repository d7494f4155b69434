"""Train LeNet on the bundled digits step by step with ``Module``'s intermediate API.

    python examples/module_lenet.py --num-epochs 8

Instead of ``fit``, the loop is written out: ``bind``, ``init_params``, ``init_optimizer``, then
per batch ``forward`` / ``backward`` / ``update`` / ``update_metric``. Then ``predict`` on the
validation split, and a checkpoint reloaded with ``Module.load``.
"""
import argparse
import os
import tempfile

import mxref as mx
from mxref.io import DigitsIter, load_digits


def lenet_symbol(num_classes: int = 10):
    """Two 3x3 conv + relu + 2x2 max-pool stages (16, 32 filters), then fc 64 and fc num_classes."""
    h = mx.sym.Variable("data")
    for i, filters in enumerate((16, 32), start=1):
        h = mx.sym.Convolution(h, kernel=(3, 3), pad=(1, 1), num_filter=filters, name=f"conv{i}")
        h = mx.sym.Activation(h, act_type="relu", name=f"relu{i}")
        h = mx.sym.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type="max", name=f"pool{i}")
    h = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.flatten(h), num_hidden=64, name="fc1"),
                          act_type="relu", name="relu3")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=num_classes, name="fc2"), name="softmax")


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--num-epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=50)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--prefix", default=os.path.join(tempfile.gettempdir(), "module_lenet"))
    args = p.parse_args(argv)
    mx.random.seed(0)
    train = DigitsIter(args.batch_size, split="train", shuffle=True)
    val = DigitsIter(args.batch_size, split="val")

    mod = mx.mod.Module(lenet_symbol(), data_names=["data"], label_names=["softmax_label"])
    mod.bind(data_shapes=train.provide_data, label_shapes=train.provide_label)
    mod.init_params(initializer=mx.init.Xavier(magnitude=2.0))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": args.lr, "momentum": 0.9})
    metric = mx.metric.Accuracy()
    for epoch in range(args.num_epochs):
        train.reset()
        metric.reset()
        for batch in train:
            mod.forward(batch, is_train=True)     # pushed to the engine; nothing waits here
            mod.backward()
            mod.update()
            mod.update_metric(metric, batch.label)  # reads the outputs, so it waits for them
        print(f"epoch {epoch}: train {metric.get()[0]} {metric.get()[1]:.4f}")

    mod.save_checkpoint(args.prefix, args.num_epochs)
    loaded = mx.mod.Module.load(args.prefix, args.num_epochs)
    loaded.bind(data_shapes=val.provide_data, label_shapes=val.provide_label, for_training=False)
    prob = loaded.predict(val).asnumpy()          # (359, 10): the pad of the last batch is dropped
    accuracy = float((prob.argmax(axis=1) == load_digits("val")[1]).mean())
    print(f"validation accuracy {accuracy:.4f} (reloaded from {args.prefix}-{args.num_epochs:04d}.params)")
    return accuracy


if __name__ == "__main__":
    main()
