"""mxref/ndarray/methods.py: operator methods, and the reshaping ones' ``inplace=True`` views."""
import numpy as np
import pytest

import mxref as mx
from mxref import autograd


@pytest.mark.parametrize("call, shape", [(lambda a: a.expand_dims(0, inplace=True), (1, 2, 1, 3)),
                                         (lambda a: a.expand_dims(axis=3, inplace=True), (2, 1, 3, 1)),
                                         (lambda a: a.squeeze(inplace=True), (2, 3)),
                                         (lambda a: a.squeeze(axis=1, inplace=True), (2, 3)),
                                         (lambda a: a.flatten(inplace=True), (2, 3))])
def test_inplace_reshaping_methods_return_views(call, shape):
    """As MXNet: with inplace=True the result shares the array's memory."""
    a = mx.nd.zeros((2, 1, 3))
    view = call(a)
    assert view.shape == shape
    view[:] = 1
    assert a.asnumpy().sum() == 6


def test_without_inplace_they_are_the_operators():
    a = mx.nd.array(np.arange(6.0).reshape(2, 1, 3))
    b = a.squeeze(axis=1)
    b[:] = 0
    assert a.asnumpy().sum() == 15 and a.expand_dims(axis=2).shape == (2, 1, 1, 3)


def test_inplace_view_is_differentiable():
    a = mx.nd.ones((2, 1, 3))
    a.attach_grad()
    with autograd.record():
        y = (a.squeeze(inplace=True) * 3).sum()
    y.backward()
    np.testing.assert_array_equal(a.grad.asnumpy(), np.full((2, 1, 3), 3.0))
