"""Autograd basics: record, backward, head gradients, accumulation, Function, 2nd derivatives, training.

    python examples/autograd_basics.py --steps 200

Each step prints what it computed and checks it against the closed form, so the file doubles as
a test of ``mx.autograd`` (MXNet 1.x's imperative differentiation).
"""
import argparse

import numpy as np

import mxref as mx
from mxref import autograd


def check(what: str, got, want, tol: float = 1e-5) -> None:
    got = got.asnumpy() if isinstance(got, mx.nd.NDArray) else np.asarray(got)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)
    print(f"{what:<44} {np.array2string(np.asarray(got).ravel()[:4], precision=4)}  ok")


def basics() -> None:
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()                      # x.grad: a zero buffer; x is now a leaf of recorded graphs
    with autograd.record():              # operators run as usual and are also recorded
        y = x * x + 2 * x
    y.backward()                         # d(sum y)/dx: the head gradient defaults to ones
    check("dy/dx of x^2 + 2x = 2x + 2", x.grad, 2 * x.asnumpy() + 2)

    with autograd.record():
        y = mx.nd.exp(x)
    y.backward(mx.nd.array([1.0, 0.5, 0.0]))    # a head gradient weights each output
    check("exp(x) with head gradient (1, .5, 0)", x.grad, np.exp([1, 2, 3]) * [1, 0.5, 0], 1e-4)


def accumulate() -> None:
    w = mx.nd.array([2.0])
    w.attach_grad(grad_req="add")        # 'add': each backward adds to w.grad (MXNet's grad_req)
    for _ in range(3):
        with autograd.record():
            loss = w * w
        loss.backward()
    check("three backward passes of w^2 with 'add'", w.grad, [3 * 2 * 2.0])


class Cube(autograd.Function):
    """x^3 with a hand-written gradient: ``backward`` uses NDArray ops, so it can be recorded too."""

    def forward(self, x):
        self.save_for_backward(x)
        return x * x * x

    def backward(self, dy):
        (x,) = self.saved_tensors
        return dy * 3 * x * x


def custom_function_and_higher_order() -> None:
    x = mx.nd.array([0.5, 1.0])
    x.attach_grad()
    with autograd.record():
        y = Cube()(x)
        dy = autograd.grad(y, [x], create_graph=True)[0]    # 3x^2, itself recorded
    dy.backward()                                          # d(3x^2)/dx = 6x
    check("grad(x^3) = 3x^2 (autograd.Function)", dy, 3 * x.asnumpy() ** 2)
    check("second derivative of x^3 = 6x", x.grad, 6 * x.asnumpy())


def train_and_predict_mode() -> None:
    x = mx.nd.ones((1, 1000))
    with autograd.record():              # recording implies training mode: Dropout drops
        dropped = mx.nd.Dropout(x, p=0.5)
    with autograd.record(train_mode=False):
        kept = mx.nd.Dropout(x, p=0.5)   # predict mode: Dropout is the identity
    print(f"{'Dropout in train mode zeroes about half':<44} {float((dropped == 0).mean().asscalar()):.2f}")
    assert 0.35 < float((dropped == 0).mean().asscalar()) < 0.65
    check("Dropout in predict mode is the identity", kept, np.ones((1, 1000)))
    assert autograd.is_recording() is False and autograd.is_training() is False


def linear_regression(steps: int, lr: float = 0.1) -> float:
    """Fit y = 2 x0 - 3.4 x1 + 4.2 with plain SGD written against autograd."""
    rng = np.random.default_rng(0)
    X = mx.nd.array(rng.standard_normal((256, 2)))
    true_w, true_b = np.array([2.0, -3.4]), 4.2
    y = mx.nd.array(X.asnumpy() @ true_w + true_b)
    w, b = mx.nd.zeros((2,)), mx.nd.zeros((1,))
    for p in (w, b):
        p.attach_grad()
    for step in range(steps):
        with autograd.record():
            pred = mx.nd.dot(X, w) + b
            loss = mx.nd.mean((pred - y) ** 2)
        loss.backward()
        for p in (w, b):
            p[:] = p - lr * p.grad       # the update runs outside record(): not differentiated
        if step % max(1, steps // 5) == 0:
            print(f"step {step:4d}  loss {loss.asscalar():.6f}")
    final = float(loss.asscalar())
    print(f"learned w={w.asnumpy().round(3)} b={b.asnumpy().round(3)} (true {true_w}, {true_b})")
    return final


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=200, help="SGD steps of the linear regression")
    args = p.parse_args(argv)
    mx.random.seed(0)
    basics()
    accumulate()
    custom_function_and_higher_order()
    train_and_predict_mode()
    return linear_regression(args.steps)


if __name__ == "__main__":
    main()
