"""Distributed multinomial logistic regression on the digits with allreduce'd gradients and checkpoints.

Full-batch gradient descent: each rank computes the gradient of the softmax cross-entropy on its
shard, one allreduce sums them, and every rank applies the same update, so the weights stay
identical everywhere (bulk synchronous). The weights are checkpointed every iteration; the
optimizer's step counter rides along as the local model to show both halves of the API.

Run::

    FI_TCP_IFACE=lo mpiexec -launcher fork -iface lo -n 4 python examples/collective/logistic_regression.py
    python -m mxref.tools.launch -n 4 --engine robust -- python examples/collective/logistic_regression.py
"""
import numpy as np

from mxref import collective as rabit
from mxref.io import load_digits

ITERS, LR, L2 = 60, 0.5, 1e-4

rabit.init()
rank, world = rabit.get_rank(), rabit.get_world_size()
x_train, y_train = load_digits("train", flat=True)
x_val, y_val = load_digits("val", flat=True)
x, y = x_train[rank::world], y_train[rank::world].astype(int)
n_total = np.array([len(x)], np.int64)
rabit.allreduce(n_total, rabit.SUM)


def softmax(z):
    z = z - z.max(1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(1, keepdims=True)


version, weights, steps = rabit.load_checkpoint()
if weights is None:
    weights, steps = np.zeros((65, 10)), 0          # 64 pixels + bias
xb = np.hstack([x, np.ones((len(x), 1), np.float32)])
for it in range(version, ITERS):
    p = softmax(xb @ weights)
    p[np.arange(len(y)), y] -= 1.0
    grad = xb.T @ p                                  # this shard's share of the summed gradient
    loss = np.array([-np.log(softmax(xb @ weights)[np.arange(len(y)), y] + 1e-12).sum()])
    rabit.allreduce(grad, rabit.SUM)
    rabit.allreduce(loss, rabit.SUM)
    weights -= LR * (grad / n_total[0] + L2 * weights)
    steps += 1
    if rank == 0 and it % 10 == 0:
        rabit.tracker_print(f"iteration {it}: mean loss {loss[0] / n_total[0]:.4f}")
    rabit.checkpoint(weights, steps)

xv = np.hstack([x_val, np.ones((len(x_val), 1), np.float32)])
acc = (np.argmax(xv @ weights, 1) == y_val).mean()
if rank == 0:
    rabit.tracker_print(f"validation accuracy {acc:.3f} after {steps} local steps")
rabit.finalize()
