"""Training throughput: samples/s of full SGD steps for an MLP and LeNet-5, mxref vs MXNet 1.9.1 vs PyTorch.

A step is forward, backward and the SGD update (learning rate 0.01, momentum 0.9) on a fixed
synthetic batch:

* MLP 784-512-512-10 (ReLU), batch 128;
* LeNet-5 on 1x28x28 (conv5x5x20, tanh, maxpool2, conv5x5x50, tanh, maxpool2, fc500, tanh, fc10), batch 64;
* ``dense8`` (not run by default): the MLP's layers shrunk to 8-8-3 on 8 features, batch 4, so
  that a step is nearly all framework overhead (Python, engine operations), not arithmetic.

Systems, each in its own subprocess with the same thread count ``T`` (``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` = T, ``torch.set_num_threads(T)``,
``MXNET_CPU_WORKER_NTHREADS`` = 1, threaded engine):

* ``mxref-module`` / ``mxnet-module``: ``mx.mod.Module`` on the symbol with ``SoftmaxOutput``,
  ``forward(batch, is_train=True)``, ``backward()``, ``update()``;
* ``mxref-hybrid`` / ``mxnet-hybrid``: a ``HybridSequential`` hybridized with
  ``static_alloc=True, static_shape=True``, ``SoftmaxCrossEntropyLoss``, ``autograd.record()``,
  ``backward()``, ``Trainer.step(batch)``;
* ``mxref-imperative`` / ``mxnet-imperative``: the same Gluon code, not hybridized;
* ``torch``: eager ``nn.Sequential``, ``CrossEntropyLoss``, ``torch.optim.SGD``;
* ``base-module`` / ``base-hybrid`` / ``base-imperative`` (only with ``MXREF_BASELINE_ROOT`` set
  to another mxref checkout): mxref's systems imported from that checkout, for before/after.

The same script body drives mxref and MXNet (both speak MXNet 1.x Python). Each worker times
``--repeats`` blocks of ``--iters`` steps after a warm-up and ``waitall`` at the end of each block;
the table gives the median and the ratios of every system to MXNet 1.9.1's same API, then
hybridized / Module and imperative / hybridized (the targets: >= 0.9x and >= 0.5x), and mxref's
imperative Gluon / MXNet's (the target: >= 1.2x).

Run::

    .venv/bin/python benchmarks/bench_training.py                      # both models, T=2, wall clock
    .venv/bin/python benchmarks/bench_training.py --models mlp --clock cpu --rounds 3
    .venv/bin/python benchmarks/bench_training.py --models mlp --rounds 3 \
        --systems mxref-imperative mxnet-imperative mxref-hybrid     # the imperative target
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from bench_common import add_timing_arguments, alternate, symbol_net, time_steps
from bench_common import measure as _measure

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MXREF = os.path.join(ROOT, ".venv", "bin", "python")
MXNET = os.environ.get("MXNET191_PYTHON", "/work/venvs/mxnet191/bin/python")
TORCH = os.environ.get("TORCH213_PYTHON", "/work/venvs/torch213/bin/python")
SYSTEMS = {"mxref-module": MXREF, "mxref-hybrid": MXREF, "mxref-imperative": MXREF,
           "mxnet-module": MXNET, "mxnet-hybrid": MXNET, "mxnet-imperative": MXNET, "torch": TORCH}
# ``MXREF_BASELINE_ROOT=/path/to/other/checkout``: also ``base-module``, ``base-hybrid`` and
# ``base-imperative``, mxref imported from that checkout, for before/after numbers in one run.
BASELINE = os.environ.get("MXREF_BASELINE_ROOT")
if BASELINE:
    SYSTEMS.update({f"base-{api}": MXREF for api in ("module", "hybrid", "imperative")})
BATCH = {"mlp": 128, "lenet": 64, "dense8": 4}
SHAPE = {"mlp": (784,), "lenet": (1, 28, 28), "dense8": (8,)}
ITERS = {"mlp": 20, "lenet": 5, "dense8": 200}
HIDDEN = {"mlp": (512, 512, 10), "dense8": (8, 8, 3)}
SGD = {"learning_rate": 0.01, "momentum": 0.9}


def _data(model):
    import numpy as np  # noqa: PLC0415
    rng = np.random.RandomState(0)
    batch = BATCH[model]
    return (rng.normal(0, 1, (batch,) + SHAPE[model]).astype("float32"),
            rng.randint(0, HIDDEN[model][2] if model in HIDDEN else 10, batch).astype("float32"))


def gluon_net(gluon, model):
    """The same model as a ``HybridSequential`` producing logits."""
    nn = gluon.nn
    net = nn.HybridSequential()
    with net.name_scope():
        if model in HIDDEN:
            h1, h2, out = HIDDEN[model]
            net.add(nn.Dense(h1, activation="relu"), nn.Dense(h2, activation="relu"), nn.Dense(out))
        else:
            net.add(nn.Conv2D(20, 5, activation="tanh"), nn.MaxPool2D(2, 2),
                    nn.Conv2D(50, 5, activation="tanh"), nn.MaxPool2D(2, 2),
                    nn.Flatten(), nn.Dense(500, activation="tanh"), nn.Dense(10))
    return net


def _symbol(sym, model):
    """``symbol_net``'s networks, plus ``dense8``."""
    if model != "dense8":
        return symbol_net(sym, model)
    h = sym.Variable("data")
    for i, n in enumerate(HIDDEN[model][:2]):
        h = sym.Activation(sym.FullyConnected(h, num_hidden=n, name=f"fc{i + 1}"), act_type="relu")
    return sym.SoftmaxOutput(sym.FullyConnected(h, num_hidden=HIDDEN[model][2], name="fc3"), name="softmax")


def run_module(mx, model, iters, repeats):
    x, y = _data(model)
    batch = BATCH[model]
    mod = mx.mod.Module(_symbol(mx.sym, model), context=mx.cpu())
    mod.bind(data_shapes=[("data", x.shape)], label_shapes=[("softmax_label", y.shape)])
    mod.init_params(initializer=mx.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params=dict(SGD, rescale_grad=1.0 / batch))
    data_batch = mx.io.DataBatch(data=[mx.nd.array(x)], label=[mx.nd.array(y)])

    def step():
        mod.forward(data_batch, is_train=True)
        mod.backward()
        mod.update()
    return time_steps(step, mx.nd.waitall, iters, repeats, batch, _CLOCK_NAME)


def run_gluon(mx, model, iters, repeats, hybridize):
    x, y = _data(model)
    batch = BATCH[model]
    net = gluon_net(mx.gluon, model)
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", SGD)
    data, label = mx.nd.array(x), mx.nd.array(y)

    def step():
        with mx.autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(batch)
    return time_steps(step, mx.nd.waitall, iters, repeats, batch, _CLOCK_NAME)


def run_torch(model, iters, repeats, threads):
    import torch  # noqa: PLC0415
    torch.set_num_threads(threads)
    nn = torch.nn
    if model in HIDDEN:
        (h1, h2, out), (n_in,) = HIDDEN[model], SHAPE[model]
        net = nn.Sequential(nn.Linear(n_in, h1), nn.ReLU(), nn.Linear(h1, h2), nn.ReLU(), nn.Linear(h2, out))
    else:
        net = nn.Sequential(nn.Conv2d(1, 20, 5), nn.Tanh(), nn.MaxPool2d(2), nn.Conv2d(20, 50, 5), nn.Tanh(),
                            nn.MaxPool2d(2), nn.Flatten(), nn.Linear(800, 500), nn.Tanh(), nn.Linear(500, 10))
    x, y = _data(model)
    x, y = torch.from_numpy(x), torch.from_numpy(y).long()
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(net.parameters(), lr=SGD["learning_rate"], momentum=SGD["momentum"])

    def step():
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        opt.step()
    return time_steps(step, lambda: None, iters, repeats, BATCH[model], _CLOCK_NAME)


def worker(args) -> None:
    global _CLOCK_NAME
    _CLOCK_NAME = args.clock
    if args.worker == "torch":
        print(json.dumps(run_torch(args.model, args.iters, args.repeats, args.threads)))
        return
    if args.worker.startswith(("mxref", "base")):
        sys.path.insert(0, BASELINE if args.worker.startswith("base") else ROOT)
        import mxref as mx  # noqa: PLC0415
    else:
        import mxnet as mx  # noqa: PLC0415
    api = args.worker.split("-")[1]
    if api == "module":
        rates = run_module(mx, args.model, args.iters, args.repeats)
    else:
        rates = run_gluon(mx, args.model, args.iters, args.repeats, hybridize=api == "hybrid")
    print(json.dumps(rates))


_CLOCK_NAME = "wall"


def measure(system, model, threads, iters, repeats, clock="wall"):
    return _measure(SYSTEMS[system], __file__, system, model, threads, iters, repeats, clock)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=["mlp", "lenet"], choices=sorted(BATCH))
    parser.add_argument("--systems", nargs="*", default=list(SYSTEMS), choices=list(SYSTEMS))
    add_timing_arguments(parser, SYSTEMS, "steps per timed block (default per model)")
    args = parser.parse_args(argv)
    if args.worker:
        args.iters = args.iters or ITERS[args.model]
        worker(args)
        return
    print(f"training samples/s ({args.clock} clock), {args.threads} thread(s), median of "
          f"{args.repeats} x {args.rounds} blocks")
    print(f"{'model':6} {'system':17} {'samples/s':>10} {'min':>8} {'max':>8} | "
          f"{'/ mxnet-module':>14} {'/ mxnet-hybrid':>14} {'/ mxnet-imper.':>14}")
    for model in args.models:
        rates = alternate(measure, args.systems, model, args, args.iters or ITERS[model])
        med = {s: statistics.median(r) for s, r in rates.items()}
        for s in args.systems:
            ratios = [f"{med[s] / med[ref]:13.2f}x" if ref in med else f"{'':14}"
                      for ref in ("mxnet-module", "mxnet-hybrid", "mxnet-imperative")]
            print(f"{model:6} {s:17} {med[s]:10.0f} {min(rates[s]):8.0f} {max(rates[s]):8.0f} | "
                  + " ".join(ratios))
        # The targets between mxref's own APIs.
        for num, den, target in (("mxref-hybrid", "mxref-module", 0.9),
                                 ("mxref-imperative", "mxref-hybrid", 0.5),
                                 ("mxref-imperative", "mxnet-imperative", 1.2),
                                 ("mxref-imperative", "base-imperative", None)):
            if num in med and den in med:
                goal = f" (target >= {target}x)" if target else ""
                print(f"{model:6} {num} / {den}: {med[num] / med[den]:.2f}x{goal}")


if __name__ == "__main__":
    main()
