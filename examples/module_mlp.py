"""Train a multilayer perceptron on the bundled digits with ``mx.mod.Module.fit``.

    python examples/module_mlp.py --num-epochs 10

The classic MXNet 1.x recipe: a Symbol, a data iterator, ``Module.fit`` with a Speedometer, then
``score`` on the validation split and a checkpoint that MXNet 1.9.1 can load.
"""
import argparse
import logging
import os
import tempfile

import mxref as mx
from mxref.io import DigitsIter


def mlp_symbol(num_classes: int = 10):
    """data (N, 64) -> fc 128 -> relu -> fc 64 -> relu -> fc num_classes -> softmax."""
    data = mx.sym.Variable("data")
    h = mx.sym.FullyConnected(data, num_hidden=128, name="fc1")
    h = mx.sym.Activation(h, act_type="relu", name="relu1")
    h = mx.sym.FullyConnected(h, num_hidden=64, name="fc2")
    h = mx.sym.Activation(h, act_type="relu", name="relu2")
    h = mx.sym.FullyConnected(h, num_hidden=num_classes, name="fc3")
    return mx.sym.SoftmaxOutput(h, name="softmax")


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--num-epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=50)
    p.add_argument("--lr", type=float, default=0.2)
    p.add_argument("--prefix", default=os.path.join(tempfile.gettempdir(), "module_mlp"),
                   help="checkpoint prefix")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    mx.random.seed(0)
    train = DigitsIter(args.batch_size, split="train", shuffle=True, flat=True)
    val = DigitsIter(args.batch_size, split="val", flat=True)
    mod = mx.mod.Module(mlp_symbol(), context=mx.cpu())
    mod.fit(train, eval_data=val, eval_metric="acc", num_epoch=args.num_epochs,
            optimizer="sgd", optimizer_params={"learning_rate": args.lr, "momentum": 0.9, "wd": 1e-4},
            initializer=mx.init.Xavier(),
            batch_end_callback=mx.callback.Speedometer(args.batch_size, frequent=10),
            epoch_end_callback=mx.callback.do_checkpoint(args.prefix, period=args.num_epochs))
    accuracy = dict(mod.score(val, mx.metric.Accuracy()))["accuracy"]
    print(f"validation accuracy {accuracy:.4f}; checkpoint {args.prefix}-{args.num_epochs:04d}.params")
    return accuracy


if __name__ == "__main__":
    main()
