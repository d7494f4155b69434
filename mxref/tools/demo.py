"""The main demo: train a LeNet-style network on the bundled handwritten digits with ``mx.mod.Module``.

Run with ``make demo`` (or ``python -m mxref.tools.demo --help``). It trains on the 1438-image
training split of the bundled UCI digits (8x8 images, 10 classes), shows a progress bar and each
epoch's train / validation accuracy, and ends with: the validation accuracy on the 359 held-out
images, the training speed in samples/s, the executor's memory plan (planned MB against every
value in its own buffer), a checkpoint in MXNet's format (``<out>/<network>-symbol.json`` and
``-NNNN.params``, loadable by MXNet 1.9.1), a training curve (PNG with matplotlib, CSV always) and
a profiler trace of the last epoch (open it in chrome://tracing or https://ui.perfetto.dev).
The engine demo (two matrix chains run in parallel) is ``python -m mxref.tools.engine_demo``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time


def _parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m mxref.tools.demo", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--network", choices=("lenet", "mlp"), default="lenet",
                   help="lenet: two conv+batchnorm+pool stages and two dense; mlp: three dense "
                        "(default lenet)")
    p.add_argument("--num-epochs", type=int, default=10, help="training epochs (default 10)")
    p.add_argument("--batch-size", type=int, default=50, help="examples per batch (default 50)")
    p.add_argument("--lr", type=float, default=0.1, help="SGD learning rate (default 0.1, momentum 0.9, "
                   "multiplied by 0.3 every 5 epochs)")
    p.add_argument("--ctx", default="cpu",
                   help="devices: 'cpu', 'cpu:0' or a data-parallel list 'cpu:0,cpu:1' (default cpu)")
    p.add_argument("--kv-store", default="local",
                   help="kvstore type: local, device, dist_sync, ... (with one device none is needed; "
                        "default local)")
    p.add_argument("--engine", default=None,
                   help="MXNET_ENGINE_TYPE: ThreadedEnginePerDevice (default) or NaiveEngine")
    p.add_argument("--out", default="demo_out", help="output folder (default ./demo_out)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--no-bar", action="store_true", help="no progress bar")
    return p.parse_args(argv)


def _contexts(spec: str, mx):
    """``'cpu'`` / ``'cpu:1'`` / ``'cpu:0,cpu:1'`` / ``'gpu:0'`` as a list of Contexts."""
    out = []
    for part in spec.split(","):
        kind, _, dev = part.strip().partition(":")
        if kind not in ("cpu", "gpu"):
            raise SystemExit(f"--ctx: unknown device {part!r}; use cpu, cpu:N or gpu:N")
        out.append(getattr(mx, kind)(int(dev) if dev else 0))
    return out


def build_network(name: str, mx):
    """``lenet`` (conv 16 - bn - pool - conv 32 - bn - pool - fc 64 - fc 10) or ``mlp`` (fc 128, 64, 10).

    The BatchNorm layers (learned gamma) make training fast and steady at a high learning rate, and
    give the checkpoint ``aux:`` entries (moving mean and variance).
    """
    data = mx.sym.Variable("data")
    if name == "lenet":
        x = data
        for i, filters in enumerate((16, 32), start=1):
            x = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=filters, name=f"conv{i}")
            x = mx.sym.BatchNorm(x, fix_gamma=False, name=f"bn{i}")
            x = mx.sym.Activation(x, act_type="relu", name=f"relu{i}")
            x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name=f"pool{i}")
        x = mx.sym.flatten(x, name="flatten")
        x = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=64, name="fc1"), act_type="relu",
                              name="relu3")
    else:
        x = mx.sym.flatten(data, name="flatten")
        for i, hidden in enumerate((128, 64), start=1):
            x = mx.sym.FullyConnected(x, num_hidden=hidden, name=f"fc{i}")
            x = mx.sym.Activation(x, act_type="relu", name=f"relu{i}")
    x = mx.sym.FullyConnected(x, num_hidden=10, name="fc_out")
    return mx.sym.SoftmaxOutput(x, name="softmax")


class _Progress:
    """A batch-end callback: a tqdm bar when tqdm is importable, else a one-line text bar.

    It also times the batches after the first of each epoch (the first includes binding and
    warm-up), which gives the samples/s figure.
    """

    def __init__(self, total: int, batch_size: int, enabled: bool):
        self.total, self.batch_size = total, batch_size
        self.speeds = []
        self._bar = None
        self._t0 = None
        try:
            import tqdm  # noqa: PLC0415 - optional
            self._tqdm = tqdm.tqdm
        except ImportError:
            self._tqdm = None
        # The built-in bar redraws one line with '\r': only on a terminal, not in a log file.
        self.enabled = enabled and (self._tqdm is not None or sys.stdout.isatty())

    def __call__(self, param) -> None:
        n = param.nbatch + 1
        if param.nbatch == 0:
            self._t0 = time.perf_counter()
            if self.enabled and self._tqdm is not None:
                self._bar = self._tqdm(total=self.total, desc=f"epoch {param.epoch}", leave=False)
        if n == self.total and n > 1:
            self.speeds.append((n - 1) * self.batch_size / (time.perf_counter() - self._t0))
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(1)
            if n == self.total:
                self._bar.close()
                self._bar = None
            return
        width = 30
        filled = int(round(width * n / self.total))
        name, value = param.eval_metric.get_name_value()[0]
        sys.stdout.write(f"\r  epoch {param.epoch:2d} [{'=' * filled}{'.' * (width - filled)}] "
                         f"{n:3d}/{self.total} {name}={value:.3f}")
        if n == self.total:
            sys.stdout.write("\r" + " " * 79 + "\r")
        sys.stdout.flush()


def _write_curve(path_prefix: str, history: list) -> str:
    """The curve as CSV, and as PNG when matplotlib is importable; returns what was written."""
    with open(path_prefix + ".csv", "w") as f:
        f.write("epoch,train_accuracy,val_accuracy\n")
        for epoch, tr, va in history:
            f.write(f"{epoch},{tr:.6f},{va:.6f}\n")
    try:
        import matplotlib  # noqa: PLC0415 - optional
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return f"{path_prefix}.csv (matplotlib is not installed, so no PNG)"
    epochs = [h[0] for h in history]
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(epochs, [h[1] for h in history], marker="o", label="train")
    ax.plot(epochs, [h[2] for h in history], marker="o", label="validation")
    ax.set_xlabel("epoch")
    ax.set_ylabel("accuracy")
    ax.set_title("LeNet-style network on the bundled digits")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path_prefix + ".png", dpi=100)
    plt.close(fig)
    return f"{path_prefix}.png and {path_prefix}.csv"


def main(argv=None) -> dict:
    """Run the demo; returns the figures it printed (for tests)."""
    args = _parse(argv)
    if args.engine:
        os.environ["MXNET_ENGINE_TYPE"] = args.engine
    import logging  # noqa: PLC0415

    import numpy as np  # noqa: PLC0415

    import mxref as mx  # noqa: PLC0415 - after MXNET_ENGINE_TYPE is set
    from mxref import callback, model  # noqa: PLC0415
    from mxref.io import DigitsIter, load_digits  # noqa: PLC0415
    from mxref.module import Module  # noqa: PLC0415
    from mxref.passes.memory_report import memory_report  # noqa: PLC0415

    logging.getLogger().setLevel(logging.WARNING)   # the demo prints its own lines
    kv, rank, num_workers = args.kv_store, 0, 1
    if args.kv_store.startswith("dist"):
        # NOTE: on a server rank create() runs the server loop and exits the process; on a worker
        # it returns, and each worker then reads its own shard of the training data.
        kv = mx.kv.create(args.kv_store)
        rank, num_workers = kv.rank, kv.num_workers
        if rank:
            args.out = os.path.join(args.out, f"worker{rank}")
    os.makedirs(args.out, exist_ok=True)
    mx.random.seed(args.seed)
    np.random.seed(args.seed)
    ctx = _contexts(args.ctx, mx)
    net = build_network(args.network, mx)
    train = DigitsIter(args.batch_size, "train", shuffle=True, flat=args.network == "mlp",
                       num_parts=num_workers, part_index=rank)
    if num_workers > 1:
        # Every worker runs the same number of batches per epoch, so sync rounds line up.
        per_worker = load_digits("train")[1].shape[0] // num_workers // args.batch_size
        train = mx.io.ResizeIter(train, per_worker)
    val = DigitsIter(args.batch_size, "val", flat=args.network == "mlp")
    val_label = load_digits("val")[1]
    nbatch = train.size if num_workers > 1 else -(-train.num_data // args.batch_size)
    where = f", worker {rank} of {num_workers}" if num_workers > 1 else ""
    n_train = per_worker * args.batch_size if num_workers > 1 else train.num_data
    print(f"mxref {mx.__version__}{where}: {args.network} on the bundled digits ({n_train} train / "
          f"{len(val_label)} validation images, 8x8), batch {args.batch_size}, "
          f"{args.num_epochs} epochs, ctx {ctx}, kvstore {args.kv_store}, "
          f"engine {type(mx.engine.get()).__name__}")

    mod = Module(net, context=ctx)
    progress = _Progress(nbatch, args.batch_size, not args.no_bar)
    train_metric = mx.metric.Accuracy()
    history = []
    trace = os.path.join(args.out, "profile.json")
    prefix = os.path.join(args.out, args.network)

    def val_accuracy() -> float:
        pred = mod.predict(val).asnumpy().argmax(axis=1)       # padding already dropped
        return float((pred == val_label).mean())

    def on_epoch_end(epoch, symbol, arg_params, aux_params):
        if mx.profiler.state() == "run":
            mx.profiler.set_state("stop")
        va = val_accuracy()
        history.append((epoch, train_metric.get_global()[1], va))
        print(f"  epoch {epoch:2d}  train-accuracy {history[-1][1]:.4f}  validation-accuracy {va:.4f}")
        if epoch == args.num_epochs - 2:         # profile the last epoch
            mx.profiler.set_config(profile_all=True, filename=trace, aggregate_stats=True)
            mx.profiler.set_state("run")

    if args.num_epochs == 1:
        mx.profiler.set_config(profile_all=True, filename=trace, aggregate_stats=True)
        mx.profiler.set_state("run")
    steps = max(1, 5 * nbatch)
    lr_sched = mx.lr_scheduler.FactorScheduler(step=steps, factor=0.3, base_lr=args.lr)
    t_fit = time.perf_counter()
    try:
        mod.fit(train, eval_metric=train_metric, kvstore=kv, optimizer="sgd",
                optimizer_params={"learning_rate": args.lr, "momentum": 0.9, "wd": 1e-4,
                                  "lr_scheduler": lr_sched},
                initializer=mx.init.Xavier(magnitude=2.0), num_epoch=args.num_epochs,
                batch_end_callback=progress,
                epoch_end_callback=[on_epoch_end, callback.do_checkpoint(prefix, args.num_epochs)])
    except mx.MXNetError as exc:
        raise SystemExit(f"training failed: {exc}") from None
    t_fit = time.perf_counter() - t_fit
    mx.profiler.dump()

    accuracy = history[-1][2]
    speed = float(np.median(progress.speeds)) if progress.speeds else float("nan")
    # The first device's executor; its planned graph carries the storage plan memory_report reads.
    report = memory_report(mod._exec_group.execs[0]._plan.graph)
    mb = {k: v / 2 ** 20 for k, v in report.items()}
    sym2, arg2, aux2 = model.load_checkpoint(prefix, args.num_epochs)
    reloaded = Module(sym2, context=ctx[0])
    reloaded.bind(val.provide_data, val.provide_label, for_training=False)
    reloaded.set_params(arg2, aux2)
    same = bool(np.allclose(reloaded.predict(val).asnumpy(), mod.predict(val).asnumpy(), atol=1e-6))
    curve = _write_curve(os.path.join(args.out, "training_curve"), history)

    print()
    print(f"validation accuracy : {accuracy:.4f} ({int(round(accuracy * len(val_label)))}/"
          f"{len(val_label)} held-out digits)")
    print(f"training speed      : {speed:,.0f} samples/s (median over epochs; fit took {t_fit:.1f} s "
          "with per-epoch validation)")
    print(f"memory plan         : {mb['planned']:.3f} MB planned vs {mb['no_sharing']:.3f} MB without "
          f"sharing ({100 * (1 - report['planned'] / max(report['no_sharing'], 1)):.0f}% saved; lower "
          f"bound {mb['lower_bound']:.3f} MB) per executor")
    print(f"checkpoint          : {prefix}-symbol.json, {prefix}-{args.num_epochs:04d}.params "
          f"(MXNet format; reloads with the same predictions: {same})")
    print(f"training curve      : {curve}")
    with open(trace) as f:
        n_events = len(json.load(f)["traceEvents"])
    note = "" if n_events else "; this engine records no operator events"
    print(f"profiler trace      : {trace} (last epoch, {n_events} events{note})")
    return {"accuracy": accuracy, "samples_per_s": speed, "memory_mb": mb, "history": history,
            "checkpoint": prefix, "trace": trace, "same_after_reload": same}


if __name__ == "__main__":
    main()
