"""``imperative.invoke(..., req=)``: one request per output, honoured alike by the compiled, the
Python and the plain ``invoke``; a wrong count is an error naming the operator."""
import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError
from mxref.ndarray import imperative
from mxref.ops import registry

PATHS = ["compiled", "python", "plain"]


@pytest.fixture(params=PATHS)
def path(request):
    old_compiled = imperative.use_compiled(request.param == "compiled")
    old_plain = imperative.use_plain(request.param == "plain")
    yield request.param
    imperative.use_plain(old_plain)
    imperative.use_compiled(old_compiled)


def _fc_backward_inputs():
    rng = np.random.RandomState(0)
    og, x, w = rng.randn(4, 3), rng.randn(4, 5), rng.randn(3, 5)
    return og, x, w, [mx.nd.array(a, dtype="float32") for a in (og, x, w)]


def test_null_request_leaves_its_output_unwritten(path):
    op = registry.get("_backward_FullyConnected")
    pkey, params = imperative.parse_params(op, {"num_hidden": 3})
    og, x, w, ins = _fc_backward_inputs()
    outs = [mx.nd.full(s, 7.0) for s in ((4, 5), (3, 5), (3,))]
    imperative.invoke(op, pkey, params, ins, outs, req=("null", "write", "write"))
    dx, dw, db = (o.asnumpy() for o in outs)
    assert (dx == 7.0).all()                                 # 'null': not computed, not touched
    np.testing.assert_allclose(dw, og.T @ x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(db, og.sum(axis=0), rtol=1e-5, atol=1e-5)


def test_add_request_accumulates(path):
    op = registry.get("elemwise_add")
    pkey, params = imperative.parse_params(op, {})
    a, b, out = mx.nd.ones((3,)), mx.nd.ones((3,)), mx.nd.full((3,), 5.0)
    imperative.invoke(op, pkey, params, [a, b], out, req=("add",))
    assert out.asnumpy().tolist() == [7.0, 7.0, 7.0]


def test_one_request_per_output_or_an_error(path):
    op = registry.get("elemwise_add")
    pkey, params = imperative.parse_params(op, {})
    a, b = mx.nd.ones((3,)), mx.nd.ones((3,))
    with pytest.raises(MXNetError, match="elemwise_add.*one request per output"):
        imperative.invoke(op, pkey, params, [a, b], req=("write", "write"))
