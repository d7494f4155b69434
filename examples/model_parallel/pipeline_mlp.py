"""A deep MLP trained with GPipe's micro-batch pipeline over ``cpu(0)`` and ``cpu(1)``.

    python examples/model_parallel/pipeline_mlp.py [--epochs 3] [--trace pipeline_trace.json]

The MLP (``2 * --layers`` dense layers of ``--hidden`` units) is cut in two stages, one per device.
``mxref.parallel.Pipeline`` splits each batch into ``--microbatches`` micro-batches: while
``cpu(1)`` runs stage 2 on micro-batch ``j``, ``cpu(0)`` already runs stage 1 on ``j + 1``;
backward goes in reverse, gradients are summed, and one update is made per batch. The data is
the bundled UCI handwritten digits (8x8 images, 10 classes).

It prints the validation accuracy per epoch, then the training throughput of the pipeline
against the same model on one device (both stages on ``cpu(0)``, the batch in one piece), and
writes a profiler trace of one pipelined step (open it in https://ui.perfetto.dev) with the
fraction of the step each device was computing, and both at once. For a comparison with the
same number of threads, run it with ``MXNET_OMP_MAX_THREADS=1`` (one thread per operator);
``benchmarks/bench_model_parallel.py`` does.
"""
import argparse
import json
import time

import numpy as np

import mxref as mx
from mxref.parallel import Pipeline
from mxref.parallel.trace import busy_report


def mlp_stages(layers, hidden, classes=10):
    """Two Symbols: ``layers`` dense+relu layers each; the second ends with the classifier."""
    h = mx.sym.Variable("data")
    for i in range(layers):
        h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=hidden, name=f"fc{i}"), act_type="relu")
    first = h
    h = mx.sym.Variable("data")
    for i in range(layers, 2 * layers):
        h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=hidden, name=f"fc{i}"), act_type="relu")
    second = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=classes, name="classifier"),
                                  name="softmax")
    return [first, second]


def make(contexts, microbatches, args):
    return Pipeline(mlp_stages(args.layers, args.hidden), contexts, {"data": (args.batch_size, 64)},
                    {"softmax_label": (args.batch_size,)}, num_microbatches=microbatches,
                    optimizer="sgd", optimizer_params={"learning_rate": args.lr, "momentum": 0.9},
                    initializer=mx.init.Xavier(magnitude=2.0))


def samples_per_second(pipe, x, y, steps):
    pipe.step(data=x, softmax_label=y)             # warm up: memory allocated once
    mx.nd.waitall()
    t0 = time.perf_counter()
    for _ in range(steps):
        pipe.step(data=x, softmax_label=y)
    mx.nd.waitall()
    return steps * len(x) / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--layers", type=int, default=3, help="dense layers per stage")
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--microbatches", type=int, default=4)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--steps", type=int, default=10, help="steps timed for the throughput")
    ap.add_argument("--trace", default="pipeline_trace.json")
    args = ap.parse_args()

    xtr, ytr = mx.io.load_digits("train", flat=True)
    xva, yva = mx.io.load_digits("val", flat=True)
    mx.random.seed(0)
    pipe = make([mx.cpu(0), mx.cpu(1)], args.microbatches, args)
    rng = np.random.RandomState(0)
    bs = args.batch_size
    for epoch in range(args.epochs):
        order = rng.permutation(len(xtr))
        for i in range(0, len(order) - bs + 1, bs):
            pipe.step(data=xtr[order[i:i + bs]], softmax_label=ytr[order[i:i + bs]])
        correct = 0
        for i in range(0, len(xva) - bs + 1, bs):
            correct += int((pipe.predict(data=xva[i:i + bs]).asnumpy().argmax(1) == yva[i:i + bs]).sum())
        print(f"epoch {epoch}: validation accuracy {correct / (len(xva) // bs * bs):.3f}")

    x, y = xtr[:bs], ytr[:bs]
    one = make([mx.cpu(0), mx.cpu(0)], 1, args)
    rate_one = samples_per_second(one, x, y, args.steps)
    rate_pipe = samples_per_second(pipe, x, y, args.steps)
    print(f"one device: {rate_one:.0f} samples/s   pipeline over 2 devices: {rate_pipe:.0f} samples/s   "
          f"ratio {rate_pipe / rate_one:.2f}")

    mx.profiler.dumps(reset=True)          # start from an empty record

    mx.profiler.set_config(profile_all=True, filename=args.trace)
    mx.profiler.set_state("run")
    pipe.step(data=x, softmax_label=y)
    mx.nd.waitall()
    mx.profiler.set_state("stop")
    mx.profiler.dump()
    with open(args.trace) as f:
        report = busy_report(json.load(f), ["cpu(0)", "cpu(1)"])
    print(f"trace written to {args.trace}: cpu(0) busy {report['cpu(0)']:.2f}, cpu(1) busy "
          f"{report['cpu(1)']:.2f}, both at once {report['both']:.2f} of the step")


if __name__ == "__main__":
    main()
