"""A softmax loss written in Python as a custom operator, trained on the bundled digits with Module.

    python examples/custom_op.py --num-epochs 10

MXNet's classic ``numpy-ops/custom_softmax.py``: ``forward`` and ``backward`` compute through
numpy (``asnumpy`` inside an operator is fine: it runs inside the engine op, inline) and write
results with ``self.assign``. The prop declares two arguments (``data``, ``label``), so the symbol
gets a ``softmax_label`` input, and ``need_top_grad=False`` makes it a loss layer: ``backward()``
needs no head gradient, exactly like the built-in ``SoftmaxOutput``, whose output it reproduces.
"""
import argparse
import logging

import numpy as np

import mxref as mx
from mxref.io import DigitsIter


class Softmax(mx.operator.CustomOp):
    """Forward: row-wise softmax. Backward: ``p - onehot(label)``, the gradient of cross-entropy."""

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        y = np.exp(x - x.max(axis=1, keepdims=True))
        y /= y.sum(axis=1, keepdims=True)
        self.assign(out_data[0], req[0], mx.nd.array(y))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        label = in_data[1].asnumpy().ravel().astype(np.int64)
        y = out_data[0].asnumpy()
        y[np.arange(label.shape[0]), label] -= 1.0
        self.assign(in_grad[0], req[0], mx.nd.array(y))
        self.assign(in_grad[1], req[1], 0)       # labels get no gradient


@mx.operator.register("softmax")
class SoftmaxProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=False)

    def list_arguments(self):
        return ["data", "label"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        data_shape = in_shape[0]
        label_shape = (in_shape[0][0],)
        return [data_shape, label_shape], [data_shape], []

    def infer_type(self, in_type):
        return in_type, [in_type[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return Softmax()


def mlp_symbol(num_classes: int = 10):
    """data (N, 64) -> fc 128 -> relu -> fc 64 -> relu -> fc 10 -> Custom softmax (op_type='softmax')."""
    data = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=128, name="fc1"), act_type="relu")
    h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=64, name="fc2"), act_type="relu")
    h = mx.sym.FullyConnected(h, num_hidden=num_classes, name="fc3")
    return mx.sym.Custom(data=h, name="softmax", op_type="softmax")


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--num-epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=50)
    p.add_argument("--lr", type=float, default=0.2)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    mx.random.seed(0)
    np.random.seed(0)
    net = mlp_symbol()
    print("arguments:", net.list_arguments())
    train = DigitsIter(args.batch_size, split="train", shuffle=True, flat=True)
    val = DigitsIter(args.batch_size, split="val", flat=True)
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.fit(train, eval_data=val, eval_metric="acc", num_epoch=args.num_epochs,
            optimizer="sgd", optimizer_params={"learning_rate": args.lr, "momentum": 0.9, "wd": 1e-4},
            initializer=mx.init.Xavier(),
            batch_end_callback=mx.callback.Speedometer(args.batch_size, frequent=10))
    accuracy = dict(mod.score(val, mx.metric.Accuracy()))["accuracy"]

    # The custom op computes what the built-in softmax computes, on the trained network's logits.
    val.reset()
    batch = next(val)
    mod.forward(batch, is_train=False)
    ours = mod.get_outputs()[0].asnumpy()
    internals = net.get_internals()
    fc3 = mx.mod.Module(internals["fc3_output"], label_names=None, context=mx.cpu())
    fc3.bind(data_shapes=val.provide_data, for_training=False)
    fc3.set_params(*mod.get_params())
    fc3.forward(batch, is_train=False)
    logits = fc3.get_outputs()[0]
    builtin = mx.nd.softmax(logits).asnumpy()
    gap = float(np.abs(ours - builtin).max())
    print(f"validation accuracy {accuracy:.4f}; custom vs built-in softmax: max difference {gap:.2e}")
    assert gap < 1e-5, gap
    return accuracy


if __name__ == "__main__":
    main()
