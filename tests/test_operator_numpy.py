"""mx.operator.NumpyOp: numpy forward/backward in a graph, defaults and overrides, need_top_grad."""
import numpy as np
import pytest

import mxref as mx


def test_default_numpy_op_is_identity_with_unit_gradient():
    with pytest.warns(DeprecationWarning):
        op = mx.operator.NumpyOp()
    s = op.get_symbol(mx.sym.Variable("X"), name="numpy_op")
    assert s.list_arguments() == ["X"] and s.list_outputs() == ["numpy_op_output"]
    x, dx = mx.nd.ones(10) * 10, mx.nd.zeros(10)
    ex = s.bind(mx.cpu(), args=[x], args_grad={"X": dx})
    np.testing.assert_array_equal(ex.forward(is_train=True)[0].asnumpy(), x.asnumpy())
    ex.backward(mx.nd.ones(10) * 3)
    np.testing.assert_array_equal(dx.asnumpy(), np.ones(10))          # ones, not the head grad


class _Square(mx.operator.NumpyOp):
    def list_arguments(self):
        return ["a", "b"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]]

    def forward(self, in_data, out_data):
        out_data[0][:] = in_data[0] ** 2 + in_data[1]

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = 2 * in_data[0] * out_grad[0]
        in_grad[1][:] = out_grad[0]


def test_overridden_methods_and_numeric_gradient():
    op = _Square()
    s = op(mx.sym.var("a"), mx.sym.var("b"), name="sq")
    a, b = np.array([1.0, -2.0, 3.0]), np.array([0.5, 0.5, 0.5])
    ex = s.simple_bind(mx.cpu(), a=(3,), b=(3,))
    out = ex.forward(is_train=True, a=mx.nd.array(a), b=mx.nd.array(b))[0].asnumpy()
    np.testing.assert_allclose(out, a ** 2 + b)
    ex.backward(mx.nd.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(ex.grad_dict["a"].asnumpy(), 2 * a * [1, 2, 3])
    np.testing.assert_allclose(ex.grad_dict["b"].asnumpy(), [1, 2, 3])
    mx.test_utils.check_numeric_gradient(s, [a, b], numeric_eps=1e-3, rtol=1e-2)
