"""Distributed LeNet: ``Module.fit`` with ``kvstore='dist_sync'`` on the bundled digits.

    mpiexec -launcher fork -iface lo -n 3 python examples/ps_lenet.py            # 2 workers + 1 server
    python -m mxref.tools.launch -n 4 -s 2 -- python examples/ps_lenet.py --num-epochs 8

The single-process LeNet of ``examples/module_lenet.py`` turned data-parallel: each worker reads
its own contiguous part of the training split (``num_parts=kv.num_workers, part_index=kv.rank``),
every worker runs the same number of batches per epoch (``ResizeIter``) so that sync rounds line
up, and the SGD optimizer runs on the servers (``Module`` sends it with ``kv.set_optimizer``).
Every batch each worker pushes its gradients and pulls the weights, so all workers hold the same
model: they print the same validation accuracy.
"""
import argparse
import os
import sys

import numpy as np

import mxref as mx
from mxref.io import DigitsIter, load_digits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from module_lenet import lenet_symbol  # noqa: E402 - the very network of the one-process example


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--num-epochs", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=25, help="per worker")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--kv-store", default="dist_sync")
    args = p.parse_args(argv)
    kv = mx.kv.create(args.kv_store)          # server ranks serve in here and exit
    rank, nworkers = kv.rank, kv.num_workers
    mx.random.seed(0)                          # same initial weights on every worker (worker 0's win)
    np.random.seed(rank)                       # ... but each shuffles its own shard its own way

    train = DigitsIter(args.batch_size, "train", shuffle=True, num_parts=nworkers, part_index=rank)
    per_worker = load_digits("train")[1].shape[0] // nworkers // args.batch_size
    train = mx.io.ResizeIter(train, per_worker)
    val = DigitsIter(args.batch_size, "val")

    mod = mx.mod.Module(lenet_symbol())
    mod.fit(train, eval_metric="acc", kvstore=kv, optimizer="sgd",
            optimizer_params={"learning_rate": args.lr, "momentum": 0.9, "wd": 1e-4},
            initializer=mx.init.Xavier(magnitude=2.0), num_epoch=args.num_epochs)
    accuracy = float((mod.predict(val).asnumpy().argmax(axis=1) == load_digits("val")[1]).mean())
    print(f"worker {rank} of {nworkers}: {per_worker} batches of {args.batch_size} per epoch, "
          f"{args.num_epochs} epochs, validation accuracy {accuracy:.4f}")
    return accuracy


if __name__ == "__main__":
    main()
