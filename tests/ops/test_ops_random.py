"""Random operators' shapes: a missing ``shape`` is unknown, as in MXNet 1.9.1 — a graph infers it
from the consumers, and a bare imperative call without it is an error."""
import numpy as np
import pytest

import mxref as mx


def test_graph_infers_a_missing_shape_from_the_consumer():
    """random.uniform() + x takes x's shape (MXNet 1.9.1: ([(2, 3)], [(2, 3)], []))."""
    s = mx.sym.random.uniform() + mx.sym.var("x")
    assert s.infer_shape(x=(2, 3)) == ([(2, 3)], [(2, 3)], [])
    out = s.bind(mx.cpu(), {"x": mx.nd.zeros((2, 3))}).forward()[0].asnumpy()
    assert out.shape == (2, 3) and (out >= 0).all() and (out < 1).all()
    assert mx.sym.random.normal(shape=(4,)).infer_shape()[1] == [(4,)]


def test_bare_op_without_shape_raises_and_front_end_gives_one_sample():
    with pytest.raises(mx.MXNetError, match="_random_uniform: cannot infer the shape"):
        mx.nd._internal._random_uniform()
    with pytest.raises(mx.MXNetError, match="_random_randint: cannot infer the shape"):
        mx.nd._internal._random_randint(low=0, high=3)
    assert mx.nd.random.normal().shape == (1,)
    assert np.isfinite(mx.nd.random.normal(shape=(2, 2)).asnumpy()).all()
