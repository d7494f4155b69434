"""The classic parameter-server example: gradient descent on one machine, then the same loop distributed.

    mpiexec -launcher fork -iface lo -n 3 python examples/ps_gradient_descent.py   # 2 workers + 1 server
    python -m mxref.tools.launch -n 4 -s 2 -- python examples/ps_gradient_descent.py --updater sgd

Least squares, ``min_w |X w - y|^2 / 2N``, by full-batch gradient descent. On one machine the loop is
``w -= lr * grad(w)``. Distributed, the weight lives on the servers: each worker holds a shard of
the rows, computes its part of the gradient, ``push``es it and ``pull``s the new weight. The
server sums the workers' parts (a sync round) and applies the update, either a custom updater
installed with ``kv.set_updater`` (``--updater custom``, the default) or an optimizer sent with
``kv.set_optimizer`` (``--updater sgd``). Since the parts add up to the full gradient, every
worker ends with the single-machine weight, and checks that it does.
"""
import argparse

import numpy as np

import mxref as mx


class GradientStep:
    """``weight -= lr * grad``: the updater the servers run. A module-level class, so it pickles
    by reference and every rank (they all run this script) can rebuild it."""

    def __init__(self, lr: float):
        self.lr = lr

    def __call__(self, key, grad, weight):
        weight -= self.lr * grad


def make_data(n: int = 1000, d: int = 20, seed: int = 0):
    """Rows ``X`` (n, d), targets ``y = X w* + noise``; the same on every rank (same seed)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    w_true = rng.standard_normal(d).astype(np.float32)
    y = x @ w_true + 0.01 * rng.standard_normal(n).astype(np.float32)
    return x, y


def gradient(x, y, w, n_total):
    """This shard's share of the full gradient: ``X_s^T (X_s w - y_s) / N`` (the shares sum to it)."""
    return x.T @ (x @ w - y) / n_total


def loss(x, y, w) -> float:
    return float(((x @ w - y) ** 2).mean() / 2)


def train_single(x, y, lr, steps):
    """The single-machine loop the distributed one reproduces."""
    w = np.zeros(x.shape[1], np.float32)
    for _ in range(steps):
        w -= lr * gradient(x, y, w, len(y))
    return w


def train_distributed(x, y, lr, steps, kv_type, updater):
    kv = mx.kv.create(kv_type)                      # servers serve inside create and exit there
    rank, nworkers = kv.rank, kv.num_workers
    xs, ys = x[rank::nworkers], y[rank::nworkers]   # this worker's rows
    kv.init("w", mx.nd.zeros((x.shape[1],)))        # worker 0's value; then every worker meets
    if updater == "sgd":
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=lr))
    else:
        kv.set_updater(GradientStep(lr))
    weight = mx.nd.zeros((x.shape[1],))
    for _ in range(steps):
        w = weight.asnumpy()
        kv.push("w", mx.nd.array(gradient(xs, ys, w, len(y))))   # the server sums all workers' parts
        kv.pull("w", out=weight)                                  # ... and this waits for the update
    return kv, weight.asnumpy()


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--kv-store", default="dist_sync")
    p.add_argument("--updater", choices=["custom", "sgd"], default="custom")
    args = p.parse_args(argv)
    x, y = make_data()
    kv, w_dist = train_distributed(x, y, args.lr, args.steps, args.kv_store, args.updater)
    w_single = train_single(x, y, args.lr, args.steps)
    diff = float(np.abs(w_dist - w_single).max())
    print(f"worker {kv.rank} of {kv.num_workers}: loss {loss(x, y, np.zeros_like(w_dist)):.4f} -> "
          f"{loss(x, y, w_dist):.6f} after {args.steps} steps ({args.updater} updater); "
          f"max |w_dist - w_single| = {diff:.2e}")
    # float32 sums in a different order: equal to a few ulps, not bit for bit.
    assert diff < 1e-4, f"the distributed weight differs from the single-machine one by {diff}"
    return diff


if __name__ == "__main__":
    main()
