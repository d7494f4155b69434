"""foreach vs the same RNN unrolled into a plain graph: forward+backward time per step.

A tanh RNN step (FullyConnected on [x_t, h_t]) over ``T`` steps, once as one ``_foreach`` node
and once unrolled into ``T`` copies of the step; both bound for training, then timed. The loop
replays its forward inside the backward node (docs/architecture/control-flow.md), so it costs
about one more forward pass than the unrolled graph. Runs under mxref, or under MXNet 1.9.1 with
``--mxnet`` (the same script, ``import mxnet``), for a side-by-side.

Run::

    .venv/bin/python benchmarks/bench_control_flow.py
    /path/to/mxnet-1.9.1/python benchmarks/bench_control_flow.py --mxnet
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build(mx, T: int, H: int):
    w = mx.sym.var("w")

    def step(x, h):
        return mx.sym.tanh(mx.sym.FullyConnected(mx.sym.concat(x, h, dim=1), weight=w, no_bias=True,
                                                 num_hidden=H))
    outs, states = mx.sym.contrib.foreach(lambda x, s: (lambda h: (h, [h]))(step(x, s[0])),
                                          mx.sym.var("data"), [mx.sym.var("h0")])
    loop = mx.sym.Group([outs] + states)
    h, hs = mx.sym.var("h0"), []
    for x in mx.sym.split(mx.sym.var("data"), num_outputs=T, axis=0, squeeze_axis=True):
        h = step(x, h)
        hs.append(h)
    return {"foreach": loop, "unrolled": mx.sym.Group([mx.sym.stack(*hs, axis=0), h])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mxnet", action="store_true", help="run under MXNet instead of mxref")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    if args.mxnet:
        import mxnet as mx
    else:
        import mxref as mx
    T, B, H = args.steps, args.batch, args.hidden
    rng = np.random.RandomState(0)
    values = {"data": rng.uniform(-1, 1, (T, B, H)), "h0": np.zeros((B, H)),
              "w": rng.uniform(-0.1, 0.1, (H, 2 * H))}
    result = {}
    for name, net in build(mx, T, H).items():
        ex = net.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in values.items()},
                      args_grad={k: mx.nd.zeros(v.shape) for k, v in values.items()})
        ograds = [mx.nd.ones(o.shape) for o in ex.forward(is_train=True)]
        ex.backward(ograds)
        mx.nd.waitall()
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            ex.forward(is_train=True)
            ex.backward(ograds)
            mx.nd.waitall()
            times.append(time.perf_counter() - t)
        result[name] = statistics.median(times) * 1000
        print(f"{'mxnet' if args.mxnet else 'mxref'} {name:9s} {result[name]:7.1f} ms per "
              f"forward+backward (T={T}, batch={B}, hidden={H})")
    print(f"foreach / unrolled: {result['foreach'] / result['unrolled']:.2f}")


if __name__ == "__main__":
    main()
