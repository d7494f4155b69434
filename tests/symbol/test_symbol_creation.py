"""mx.sym.zeros / ones / full / arange / eye: node attributes as MXNet 1.9.1 writes them, values."""
import json

import numpy as np
import pytest

import mxref as mx
import mxref.name


@pytest.fixture(autouse=True)
def fresh_names():
    with mxref.name.NameManager():
        yield


def _node(s):
    n = json.loads(s.tojson())["nodes"][-1]
    return n["op"], n["name"], n.get("attrs")


def _value(s):
    return s.bind(mx.cpu(), {}).forward()[0]


def test_zeros_ones_full_write_mxnets_attrs_and_fill():
    """float32 unless told; shape written as given; full's value as a float (as MXNet 1.9.1)."""
    z = mx.sym.zeros((2, 3))
    assert _node(z) == ("_zeros", "_zeros0", {"dtype": "float32", "shape": "(2, 3)"})
    assert _value(z).dtype == np.float32 and not _value(z).asnumpy().any()
    o = mx.sym.ones(4, dtype="int32", name="o")
    assert _node(o) == ("_ones", "o", {"dtype": "int32", "shape": "4"})
    assert _value(o).dtype == np.int32 and _value(o).asnumpy().tolist() == [1, 1, 1, 1]
    f = mx.sym.full((2,), 7)
    assert _node(f) == ("_full", "_full0", {"dtype": "float32", "shape": "(2,)", "value": "7.0"})
    assert _value(f).asnumpy().tolist() == [7.0, 7.0]


def test_arange_and_eye():
    """arange(5) is [0, 5) with stop written 'None'; repeat repeats each value in a row."""
    a = mx.sym.arange(5)
    assert _node(a) == ("_arange", "_arange0", {"dtype": "float32", "infer_range": "False",
                                                "repeat": "1", "start": "5", "step": "1.0",
                                                "stop": "None"})
    assert _value(a).asnumpy().tolist() == [0, 1, 2, 3, 4]
    r = mx.sym.arange(1, 2.5, 0.5, repeat=2, name="ar", dtype="float64")
    assert _node(r)[1] == "ar" and _value(r).dtype == np.float64
    assert _value(r).asnumpy().tolist() == [1.0, 1.0, 1.5, 1.5, 2.0, 2.0]
    e = mx.sym.eye(3, k=1)
    assert _node(e) == ("_eye", "_eye0", {"M": "0", "N": "3", "dtype": "float32", "k": "1"})
    assert np.array_equal(_value(e).asnumpy(), np.eye(3, k=1))


def test_creation_symbols_compose_with_inputs():
    """A created constant joins a graph like any node: x + ones(shape) infers and runs."""
    x = mx.sym.var("x")
    y = x + mx.sym.ones((2,))
    assert y.list_arguments() == ["x"]
    out = y.bind(mx.cpu(), {"x": mx.nd.array([1, 2])}).forward()[0]
    assert out.asnumpy().tolist() == [2, 3]
