"""mx.sym.pow/power/maximum/minimum/hypot on symbols and numbers (mxref/symbol/ufunc.py)."""
import math

import numpy as np
import pytest

import mxref as mx

A, B = np.array([1.0, 4.0, -2.0]), np.array([3.0, 2.0, 0.5])
CASES = [(mx.sym.maximum, np.maximum), (mx.sym.minimum, np.minimum), (mx.sym.pow, np.power),
         (mx.sym.power, np.power), (mx.sym.hypot, np.hypot)]


@pytest.mark.parametrize("f, ref", CASES)
def test_symbol_symbol_scalar_and_numbers(f, ref):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    both = f(a, b)
    assert both.infer_shape(a=(3,), b=(3,))[1] == [(3,)]
    got = both.eval(a=mx.nd.array(A), b=mx.nd.array(B))[0].asnumpy()
    np.testing.assert_allclose(got, ref(A, B).astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(f(a, 2.0).eval(a=mx.nd.array(A))[0].asnumpy(), ref(A, 2.0), rtol=1e-6)
    np.testing.assert_allclose(f(3.0, a).eval(a=mx.nd.array(B))[0].asnumpy(), ref(3.0, B), rtol=1e-6)
    assert f(2, 3) == ref(2, 3)
    with pytest.raises(TypeError):
        f(a, "x")


def test_bind_and_gradient_of_maximum():
    """maximum of two symbols binds; the gradient goes to the larger operand."""
    a, b = mx.sym.var("a"), mx.sym.var("b")
    ex = mx.sym.maximum(a, b).bind(mx.cpu(), {"a": mx.nd.array(A), "b": mx.nd.array(B)},
                                   args_grad={"a": mx.nd.zeros(3), "b": mx.nd.zeros(3)})
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones(3))
    np.testing.assert_array_equal(ex.grad_dict["a"].asnumpy(), (A > B).astype(np.float32))
    np.testing.assert_array_equal(ex.grad_dict["b"].asnumpy(), (A <= B).astype(np.float32))
    assert math.isclose(mx.sym.hypot(3, 4), 5.0)
