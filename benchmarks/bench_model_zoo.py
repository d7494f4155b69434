"""Model-zoo throughput: samples/s of ResNet-18 v1 and MobileNet v2 1.0, mxref vs MXNet 1.9.1 vs PyTorch.

Two workloads per model, both on a fixed synthetic batch of 32:

* ``infer``: the 1000-class model on 3x224x224 images, hybridized (``static_alloc=True,
  static_shape=True``), ``net(x)`` then ``waitall`` (PyTorch: ``torch.no_grad()``, eval mode);
* ``train``: the model built with ``classes=10`` on CIFAR-sized 3x32x32 inputs, hybridized, one
  step = forward under ``autograd.record()``, ``SoftmaxCrossEntropyLoss``, ``backward()`` and
  ``Trainer.step`` with SGD (learning rate 0.01, momentum 0.9) (PyTorch: ``CrossEntropyLoss``,
  ``torch.optim.SGD``).

mxref and MXNet build the models with their own ``gluon.model_zoo.vision.get_model``
(``resnet18_v1``, ``mobilenetv2_1.0``); PyTorch has no torchvision here, so the script builds the
same layer structure in ``torch.nn`` (same convolutions, strides, paddings, groups, BatchNorm,
ReLU / ReLU6, pooling and shortcuts). Each system runs in its own subprocess with the same thread
count ``T`` (``OMP_NUM_THREADS`` = ``OPENBLAS_NUM_THREADS`` = ``MKL_NUM_THREADS`` = T,
``torch.set_num_threads(T)``, ``MXNET_CPU_WORKER_NTHREADS`` = 1); the systems take turns in
each of ``--rounds`` rounds and the table gives the median of all timed blocks and the ratio to
MXNet 1.9.1.

Run::

    python benchmarks/bench_model_zoo.py                       # both models, both workloads, T=2
    python benchmarks/bench_model_zoo.py --models resnet18_v1 --modes train --rounds 3
    MXREF_BASELINE_ROOT=/path/to/other/checkout python benchmarks/bench_model_zoo.py \
        --systems mxref base mxnet     # ``base``: mxref imported from that checkout (before/after)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from bench_common import MXNET_PY, import_system, interleaved_runs, time_steps

TORCH_PY = os.environ.get("TORCH213_PYTHON", "/work/venvs/torch213/bin/python")
BASELINE = os.environ.get("MXREF_BASELINE_ROOT")
MODELS = ("resnet18_v1", "mobilenetv2_1.0")
BATCH = 32
SHAPE = {"infer": (3, 224, 224), "train": (3, 32, 32)}
CLASSES = {"infer": 1000, "train": 10}
ITERS = {"infer": 2, "train": 5}
SGD = {"learning_rate": 0.01, "momentum": 0.9}


def _data(mode):
    import numpy as np  # noqa: PLC0415
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (BATCH,) + SHAPE[mode]).astype("float32")
    return x, rng.randint(0, CLASSES[mode], BATCH).astype("float32")


def run_gluon(mx, model, mode, iters, repeats):
    """Samples/s of the MXNet-1.x Gluon code (mxref or MXNet)."""
    x, y = _data(mode)
    net = mx.gluon.model_zoo.vision.get_model(model, classes=CLASSES[mode])
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    data, label = mx.nd.array(x), mx.nd.array(y)
    if mode == "infer":
        def step():
            net(data)
    else:
        loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
        trainer = mx.gluon.Trainer(net.collect_params(), "sgd", SGD)

        def step():
            with mx.autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(BATCH)
    return time_steps(step, mx.nd.waitall, iters, repeats, BATCH)


# -- the same networks in plain torch.nn ----------------------------------------------------------

def torch_net(model, classes):
    """ResNet-18 v1 or MobileNet v2 1.0 as MXNet's model zoo lays them out."""
    import torch  # noqa: PLC0415
    nn = torch.nn

    def conv_bn(cin, cout, k, s, p, groups=1, act=None):
        layers = [nn.Conv2d(cin, cout, k, s, p, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        return layers + ([act()] if act else [])

    class Residual(nn.Module):
        def __init__(self, body, down=None, relu=True):
            super().__init__()
            self.body, self.down, self.relu = body, down, relu

        def forward(self, x):
            out = self.body(x) + (self.down(x) if self.down is not None else x)
            return torch.relu(out) if self.relu else out

    if model == "resnet18_v1":
        layers = conv_bn(3, 64, 7, 2, 3, act=nn.ReLU) + [nn.MaxPool2d(3, 2, 1)]
        cin = 64
        for i, c in enumerate((64, 128, 256, 512)):
            for j in range(2):
                s = 2 if i and not j else 1
                body = nn.Sequential(*conv_bn(cin, c, 3, s, 1, act=nn.ReLU), *conv_bn(c, c, 3, 1, 1))
                down = nn.Sequential(*conv_bn(cin, c, 1, s, 0)) if s != 1 or cin != c else None
                layers.append(Residual(body, down))
                cin = c
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes)]
        return nn.Sequential(*layers)
    layers = conv_bn(3, 32, 3, 2, 1, act=nn.ReLU6)
    ins = [32, 16, 24, 24, 32, 32, 32, 64, 64, 64, 64, 96, 96, 96, 160, 160, 160]
    outs = ins[1:] + [320]
    strides = [1, 2] * 2 + [1, 1, 2] + [1] * 6 + [2] + [1] * 3
    for cin, c, t, s in zip(ins, outs, [1] + [6] * 16, strides):
        e = cin * t
        body = nn.Sequential(*conv_bn(cin, e, 1, 1, 0, act=nn.ReLU6),
                             *conv_bn(e, e, 3, s, 1, groups=e, act=nn.ReLU6), *conv_bn(e, c, 1, 1, 0))
        layers.append(Residual(body, relu=False) if s == 1 and cin == c else body)
    layers += conv_bn(320, 1280, 1, 1, 0, act=nn.ReLU6)
    layers += [nn.AdaptiveAvgPool2d(1), nn.Conv2d(1280, classes, 1, bias=False), nn.Flatten()]
    return nn.Sequential(*layers)


def run_torch(model, mode, iters, repeats, threads):
    import torch  # noqa: PLC0415
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    x, y = _data(mode)
    x, y = torch.from_numpy(x), torch.from_numpy(y).long()
    net = torch_net(model, CLASSES[mode])
    if mode == "infer":
        net.eval()

        def step():
            with torch.no_grad():
                net(x)
    else:
        loss_fn = torch.nn.CrossEntropyLoss()
        opt = torch.optim.SGD(net.parameters(), lr=SGD["learning_rate"], momentum=SGD["momentum"])

        def step():
            opt.zero_grad()
            loss_fn(net(x), y).backward()
            opt.step()
    return time_steps(step, lambda: None, iters, repeats, BATCH)


def worker(a) -> None:
    if a.worker == "torch":
        rates = run_torch(a.model, a.mode, a.iters, a.repeats, a.threads)
    elif a.worker == "base":
        sys.path.insert(0, BASELINE)
        import mxref  # noqa: PLC0415 - from the baseline checkout, first on sys.path just above
        rates = run_gluon(mxref, a.model, a.mode, a.iters, a.repeats)
    else:
        rates = run_gluon(import_system(a.worker), a.model, a.mode, a.iters, a.repeats)
    print(json.dumps(rates))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=list(MODELS), choices=MODELS)
    ap.add_argument("--modes", nargs="*", default=["infer", "train"], choices=sorted(SHAPE))
    ap.add_argument("--systems", nargs="*", default=["mxref", "mxnet", "torch"],
                    choices=["mxref", "base", "mxnet", "torch"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=0, help="steps per timed block (default per mode)")
    ap.add_argument("--repeats", type=int, default=3, help="timed blocks per run")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each system, taking turns")
    ap.add_argument("--worker", choices=["mxref", "base", "mxnet", "torch"], help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--mode", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        worker(a)
        return
    t = str(a.threads)
    env = dict(os.environ, OMP_NUM_THREADS=t, OPENBLAS_NUM_THREADS=t, MKL_NUM_THREADS=t,
               MXNET_CPU_WORKER_NTHREADS="1")
    if "base" in a.systems and not BASELINE:
        ap.error("--systems base needs MXREF_BASELINE_ROOT (the checkout to compare with)")
    pythons = {"mxref": sys.executable, "base": sys.executable, "mxnet": MXNET_PY, "torch": TORCH_PY}
    systems = [(s, pythons[s]) for s in a.systems]
    print(f"samples/s, batch {BATCH}, {a.threads} thread(s), median of {a.repeats} blocks x "
          f"{a.rounds} rounds; load average {os.getloadavg()[0]:.1f}")
    print(f"{'model':16} {'mode':6} {'system':6} {'samples/s':>10} {'min':>8} {'max':>8} {'/ mxnet':>8}")
    for model in a.models:
        for mode in a.modes:
            args = ["--model", model, "--mode", mode, "--threads", t,
                    "--iters", str(a.iters or ITERS[mode]), "--repeats", str(a.repeats)]
            runs = interleaved_runs(__file__, systems, args, a.rounds, env=env, timeout=3600)
            rates = {s: [r for run in rs for r in run] for s, rs in runs.items()}
            med = {s: statistics.median(r) for s, r in rates.items()}
            for s, _ in systems:
                if s not in med:
                    continue
                ratio = f"{med[s] / med['mxnet']:7.2f}x" if "mxnet" in med else ""
                print(f"{model:16} {mode:6} {s:6} {med[s]:10.1f} {min(rates[s]):8.1f} "
                      f"{max(rates[s]):8.1f} {ratio:>8}", flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
