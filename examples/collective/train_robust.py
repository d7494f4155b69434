"""Fault-tolerant data-parallel training: a worker SIGKILLs itself mid-epoch and the job still ends right.

Run (the robust engine needs the launcher: it starts the tracker and restarts dead workers)::

    python -m mxref.tools.launch -n 3 --engine robust -- python examples/collective/train_robust.py

Every worker trains the same small MLP with ``gluon.Trainer`` over the ``dist_sync_allreduce``
store (gradients summed by the robust engine's allreduce) on its shard of a synthetic data set,
and calls ``collective.checkpoint`` after each epoch with the weights and the optimizer state.
In its first life rank 1 kills itself in the middle of epoch ``--kill-epoch``. The survivors block
in their next allreduce; the launcher restarts rank 1, whose ``load_checkpoint`` returns the last
epoch's model from a survivor's memory; it rebuilds its net, trainer and store from it, replays the
epoch's allreduces (answered from the survivors' caches) and catches up. The final weights are
bit-identical to a run without the failure (``--kill-epoch -1``), which the tests check.
"""
import argparse
import os
import signal
import tempfile

import numpy as np

import mxref as mx
from mxref import autograd, collective, gluon

BATCH, BATCHES, IN, CLASSES = 8, 6, 8, 3


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--kill-epoch", type=int, default=2, help="epoch in which rank 1 dies (-1: never)")
    p.add_argument("--kill-batch", type=int, default=3, help="batch of that epoch in which it dies")
    p.add_argument("--out", default=None, help="each rank saves its final weights to OUT-rankR.npz")
    # NOTE: unknown arguments are ignored: tests/collective/test_collective_examples.py runs every
    # example in-process (one rank, 'local' engine), where sys.argv is the test runner's.
    return p.parse_known_args()[0]


def shard(rank: int, world: int):
    """This rank's rows of a fixed synthetic 3-class problem (rows rank, rank+world, ...)."""
    rs = np.random.RandomState(42)
    X = rs.randn(world * BATCH * BATCHES, IN).astype(np.float32)
    y = (X @ rs.randn(IN, CLASSES)).argmax(1).astype(np.float32)
    return X[rank::world], y[rank::world]


def build(state):
    """The net, its trainer and store; from the checkpoint ``state`` when there is one."""
    mx.random.seed(0)
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(16, activation="relu", in_units=IN), gluon.nn.Dense(CLASSES, in_units=16))
    net.initialize(mx.init.Xavier())
    params = [p for _, p in sorted(net.collect_params().items())]
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9},
                            kvstore=mx.kv.create("dist_sync_allreduce"))
    if state is not None:
        for p, w in zip(params, state["params"]):
            p.set_data(mx.nd.array(w))
        # NOTE: the store is initialised here (load_states prepares the trainer); after a
        # checkpoint its init broadcasts nothing, as the survivors make no such call.
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trainer.states")
            with open(path, "wb") as f:
                f.write(state["trainer"])
            trainer.load_states(path)
    return net, params, trainer


def snapshot(params, trainer):
    """The checkpoint: weights and optimizer state, equal on every rank."""
    mx.nd.waitall()      # every queued allreduce has run before the checkpoint's own collective
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trainer.states")
        trainer.save_states(path)
        with open(path, "rb") as f:
            states = f.read()
    return {"params": [p.data().asnumpy() for p in params], "trainer": states}


def main():
    args = parse()
    collective.init()                      # 'robust' under the robust launcher
    rank, world = collective.get_rank(), collective.get_world_size()
    attempt = int(os.environ.get("MXREF_NUM_ATTEMPT", 0))
    version, state, _ = collective.load_checkpoint()    # before any other collective call
    if version:
        collective.tracker_print(f"restarted (attempt {attempt}): resuming at epoch {version}")
    net, params, trainer = build(state)
    X, y = shard(rank, world)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for epoch in range(version, args.epochs):
        total = 0.0
        for b in range(BATCHES):
            if rank == 1 and attempt == 0 and epoch == args.kill_epoch and b == args.kill_batch:
                collective.tracker_print(f"killing myself with SIGKILL in epoch {epoch}, batch {b}")
                os.kill(os.getpid(), signal.SIGKILL)
            data = mx.nd.array(X[b * BATCH:(b + 1) * BATCH])
            label = mx.nd.array(y[b * BATCH:(b + 1) * BATCH])
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(BATCH * world)     # the store sums over workers: mean over the global batch
            total += float(loss.sum().asscalar())
        collective.checkpoint(snapshot(params, trainer))
        if rank == 0:
            collective.tracker_print(f"epoch {epoch}: mean loss on rank 0's shard {total / len(X):.4f}")
    weights = [p.data().asnumpy() for p in params]
    if args.out:
        np.savez(f"{args.out}-rank{rank}.npz", *weights)
    collective.tracker_print(f"done after {collective.version_number()} checkpoints")
    mx.nd.waitall()
    collective.finalize()


if __name__ == "__main__":
    main()
