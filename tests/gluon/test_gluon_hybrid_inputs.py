"""HybridBlock inputs as MXNet 1.9.1 takes them: nested lists and ``None``, the errors for mixed
or unsupported inputs, the input structure a hybridized block keeps, inlining of small graphs under
record (``inline_limit``), and the warnings for Blocks kept in containers."""
import json
import warnings

import numpy as np
import pytest

import mxref as mx
from mxref import autograd, gluon
from mxref.gluon import nn


class AddAB(gluon.HybridBlock):
    """a + b, where either may be None or a list (summed)."""

    def hybrid_forward(self, F, a, b=None):
        if isinstance(a, (list, tuple)):
            a = sum(a[1:], a[0])
        if isinstance(b, (list, tuple)):
            b = sum(b[1:], b[0])
        if a is None:
            return b
        return a if b is None else a + b


@pytest.mark.parametrize("hybridize", [False, True])
def test_none_and_list_inputs(hybridize):
    """``None`` inputs and lists of arrays reach hybrid_forward alike, hybridized or not."""
    one = mx.nd.ones((3,))
    for args, want in [((None, one), 1.0), ((one, None), 1.0), (([one, one], [one, one, one]), 5.0)]:
        net = AddAB()
        if hybridize:
            net.hybridize()
        for _ in range(2):      # the second call goes through the cached executor
            np.testing.assert_allclose(net(*args).asnumpy(), [want] * 3)


def test_input_structure_is_kept_after_the_first_call():
    """A hybridized block refuses another input structure, except trailing None inputs."""
    one = mx.nd.ones((3,))
    net = AddAB()
    net.hybridize()
    net(None, one)
    with pytest.raises(ValueError, match="does not match"):
        net(one, one)
    net = AddAB()
    net.hybridize()
    np.testing.assert_allclose(net(one, None).asnumpy(), net(one).asnumpy())
    with pytest.raises(ValueError):
        net(one, one)


def test_bad_inputs_raise_value_error():
    """All None, NDArrays mixed with Symbols, scalars when hybridized, or two contexts: ValueError."""
    one = mx.nd.ones((3,))
    for hybridize in (False, True):
        net = AddAB()
        if hybridize:
            net.hybridize()
        with pytest.raises(ValueError, match="there must be one NDArray or one Symbol"):
            net(None, None)
        with pytest.raises(ValueError, match="mixed NDArrays and Symbols"):
            net(one, mx.sym.var("b"))
    np.testing.assert_allclose(AddAB()(one, 2).asnumpy(), [3.0] * 3)   # imperative: any Python value
    net = AddAB()
    net.hybridize()
    with pytest.raises(ValueError, match="list of Symbol or NDArray"):
        net(one, 2)
    net = AddAB()
    net.hybridize()
    with pytest.raises(ValueError, match="multiple contexts"):
        net(mx.nd.ones((3,), ctx=mx.cpu(1)), mx.nd.ones((3,), ctx=mx.cpu(2)))


def _recorded_nodes(net, x):
    with autograd.record():
        y = net(x)
    n = len(json.loads(autograd.get_symbol(y).tojson())["nodes"])
    y.backward()
    return n


def test_inline_limit():
    """Under record, a graph of at most ``inline_limit`` operators is recorded op by op (MXNet's
    CachedOp inlines it); a bigger one, or ``static_alloc``, is one node. Gradients agree."""
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(4), nn.Dense(4), nn.Dense(4))
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(0).rand(2, 5))
    net.hybridize(inline_limit=3)
    inlined = _recorded_nodes(net, x)              # data + 3 x (weight, bias, FullyConnected)
    grad_inlined = net[0].weight.grad().asnumpy().copy()
    net.hybridize(inline_limit=0)
    assert _recorded_nodes(net, x) == 8           # data, 6 parameters, one cached call
    assert inlined == 10
    np.testing.assert_allclose(net[0].weight.grad().asnumpy(), grad_inlined, rtol=1e-6)
    net.hybridize(inline_limit=3, static_alloc=True)
    assert _recorded_nodes(net, x) == 8


def test_blocks_in_containers_warn():
    """Blocks in a list or dict attribute are not children: collect_params warns about them."""
    class InList(gluon.Block):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Dense(2), nn.Dense(3)]

    class InDict(gluon.Block):
        def __init__(self):
            super().__init__()
            self.layers = {"a": [nn.Dense(2)]}
            self.data = {"a": "4", "b": 123}

    for cls, count in ((InList, 1), (InDict, 1)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            cls().collect_params()
        assert len(w) == count and "unregistered container" in str(w[0].message)
    seq = nn.Sequential()
    seq.add(nn.Dense(2))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        seq.collect_params()
        assert not w
        seq.hybridize()
    assert len(w) == 1 and "HybridSequential" in str(w[0].message)


def test_symbol_block_refuses_row_sparse_variables():
    """A row_sparse variable cannot be a SymbolBlock parameter (AssertionError, as in MXNet)."""
    data = mx.sym.var("data")
    weight = mx.sym.var("weight", stype="row_sparse")
    with pytest.raises(AssertionError, match="row_sparse"):
        gluon.SymbolBlock(mx.sym.dot(data, weight), data)


def test_blocks_are_freed_without_the_cycle_collector():
    """A block and its naming scope form no reference cycle: a hybridized block and its bound
    executors go as soon as the last reference does; deepcopy gives the copy its own scope."""
    import copy
    import gc
    import weakref

    def run():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(3), nn.Dense(2))
        net.initialize()
        net.hybridize()
        with autograd.record():
            net(mx.nd.ones((2, 4))).backward()
        return weakref.ref(net)

    gc.disable()
    try:
        ref = run()
        mx.nd.waitall()
        assert ref() is None
    finally:
        gc.enable()
    net = nn.HybridSequential()
    net2 = copy.deepcopy(net)
    with net2.name_scope():
        net2.add(nn.Dense(2))
    assert net2[0].prefix.startswith(net2.prefix) and len(net) == 0
