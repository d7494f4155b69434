"""make_loss (the unary operator): identity forward, a gradient of ones whatever the head gradient."""
import numpy as np
from nn_check import forward, grads

import mxref as mx


def test_make_loss_forward_gradient_and_executor():
    x = np.array([[1.5, -2.0], [0.25, 3.0]])
    np.testing.assert_array_equal(forward("make_loss", [x])[0], x)
    np.testing.assert_array_equal(grads("make_loss", [x], [np.full((2, 2), 7.0)])[0], np.ones((2, 2)))
    s = mx.sym.make_loss(mx.sym.square(mx.sym.var("x")), name="ml")
    assert s.list_outputs() == ["ml_loss"]
    ex = s.simple_bind(mx.cpu(), x=(2, 2))
    ex.forward(is_train=True, x=x)
    ex.backward()                       # no head gradient: make_loss's gradient does not read one
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), 2 * x)
