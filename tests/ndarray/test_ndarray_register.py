"""Generated mx.nd functions: names, docstrings, signatures, namespaces, argument binding, methods."""
import inspect

import numpy as np
import pytest

import mxref as mx
from mxref.base import _Null
from mxref.ndarray import register
from mxref.ops import registry
from mxref.ops.registry import OpDef, Param, assign


def _affine(octx, params, inputs, outputs, req):
    w = inputs[1] if len(inputs) > 1 else 1.0
    b = inputs[2] if len(inputs) > 2 else 0.0
    assign(outputs[0], req[0], inputs[0] * w * params["gain"] + b)


def _stack_sum(octx, params, inputs, outputs, req):
    assign(outputs[0], req[0], sum(inputs))


_AFFINE = OpDef("_test_reg_affine", _affine,
                arguments=lambda p: ["data", "weight"] + ([] if p["no_bias"] else ["bias"]),
                params={"gain": Param("float", 1.0, "scales the product"),
                        "no_bias": Param("bool", False, "drop the bias input")},
                doc="An affine map used to test wrapper generation.")
_SUM = OpDef("_test_reg_sum", _stack_sum, arguments=lambda p: [f"arg{i}" for i in range(p["num_args"])],
             params={"num_args": Param("int", doc="number of inputs")}, key_var_num_args="num_args")
for _op in (_AFFINE, _SUM):
    if not registry.exists(_op.name):
        registry.register(_op)


def test_public_ops_are_module_functions_with_doc_and_signature():
    """mx.nd.relu exists, carries the op's doc plus a Parameters section, and MXNet's signature."""
    relu = mx.nd.relu
    assert relu.__name__ == "relu" and mx.nd.op.relu is relu
    assert registry.get("relu").doc.strip().splitlines()[0] in relu.__doc__
    assert "Parameters\n----------\ndata : NDArray" in relu.__doc__
    assert "out : NDArray, optional" in relu.__doc__
    assert str(inspect.signature(relu)) == "(data=None, out=None, name=None, **kwargs)"
    fc = inspect.signature(mx.nd.FullyConnected)
    assert list(fc.parameters)[:3] == ["data", "weight", "bias"]
    assert fc.parameters["num_hidden"].default is _Null and "out" in fc.parameters


def test_internal_and_contrib_namespaces():
    """_-prefixed ops live in mx.nd._internal, _contrib_ ops in mx.nd.contrib, public ones in mx.nd.op."""
    assert register.namespace_of("_plus_scalar") == ("_internal", "_plus_scalar")
    assert register.namespace_of("_contrib_box_nms") == ("contrib", "box_nms")
    assert register.namespace_of("relu") == ("op", "relu")
    assert callable(mx.nd._internal._plus_scalar) and not hasattr(mx.nd, "_plus_scalar")
    import mxref.ndarray.op as op_module  # the namespaces are importable modules
    assert op_module.broadcast_add is mx.nd.broadcast_add
    assert not hasattr(mx.nd.op, "no_such_operator")


def test_inputs_by_position_or_keyword_and_params_positionally():
    """Inputs bind by position or name; non-array positionals fill the op's parameters in order."""
    x, w, b = mx.nd.array([1, 2]), mx.nd.array([3, 3]), mx.nd.array([1, 1])
    f = mx.nd._internal._test_reg_affine
    assert f(x, w, b, gain=2).asnumpy().tolist() == [7, 13]
    assert f(data=x, weight=w, bias=b).asnumpy().tolist() == [4, 7]
    assert f(x, weight=w, bias=b).asnumpy().tolist() == [4, 7]
    assert f(x, w, None, 2.0, True).asnumpy().tolist() == [6, 12]   # gain, no_bias positionally
    assert f(x, w, no_bias=True).asnumpy().tolist() == [3, 6]
    sig = inspect.signature(f)
    assert list(sig.parameters)[:5] == ["data", "weight", "bias", "gain", "no_bias"]
    assert "gain : float, optional, default=1.0\n    scales the product" in f.__doc__


def test_binding_errors_are_mxneterrors():
    x = mx.nd.array([1, 2])
    f = mx.nd._internal._test_reg_affine
    with pytest.raises(mx.MXNetError, match=r"expects 2 input\(s\) \(data, weight\), got 1"):
        f(x, no_bias=True)
    with pytest.raises(mx.MXNetError, match=r"missing input\(s\) \['weight'\]"):
        f(x, bias=x)
    with pytest.raises(mx.MXNetError, match=r"unknown input\(s\) \['bias'\]"):
        f(x, x, bias=x, no_bias=True)
    with pytest.raises(mx.MXNetError, match="input 'weight' must be an NDArray"):
        f(x, weight=np.ones(2), no_bias=True)
    with pytest.raises(mx.MXNetError, match="at most 5 positional"):
        f(x, x, x, 1.0, False, 7)


def test_variadic_ops_take_star_args_or_a_list_and_set_num_args():
    a, b, c = mx.nd.ones((2,)), mx.nd.ones((2,)) * 2, mx.nd.ones((2,)) * 3
    s = mx.nd._internal._test_reg_sum
    assert str(inspect.signature(s)) == "(*data, **kwargs)"
    assert s(a, b, c).asnumpy().tolist() == [6, 6]
    assert s([a, b]).asnumpy().tolist() == [3, 3]
    with pytest.raises(mx.MXNetError, match="expects 3 input"):
        s(a, b, num_args=3)
    with pytest.raises(mx.MXNetError, match="must be NDArrays"):
        s(a, 1.0)


def test_out_ctx_and_name_keywords():
    x = mx.nd.array([1, 2])
    out = mx.nd.zeros((2,))
    assert mx.nd.relu(x, out=out, name="ignored") is out and out.asnumpy().tolist() == [1, 2]
    z = mx.nd._internal._zeros(shape=(2,), ctx="cpu(1)")
    assert z.context == mx.cpu(1)


def test_ops_registered_later_appear_on_first_use():
    name = "_test_reg_late_square"
    if not registry.exists(name):
        registry.register(OpDef(name, lambda o, p, i, out, r: assign(out[0], r[0], i[0] ** 2)))
    assert mx.nd._internal._test_reg_late_square(mx.nd.array([3])).asscalar() == 9


def test_ndarray_methods_forward_to_ops():
    """a.relu(), a.exp(), a.flatten(), a.transpose() and a.T run the operator of that name."""
    a = mx.nd.array([[-1, 2], [3, -4]])
    np.testing.assert_array_equal(a.relu().asnumpy(), [[0, 2], [3, 0]])
    np.testing.assert_allclose(a.exp().asnumpy(), np.exp(a.asnumpy()), rtol=1e-6)
    assert a.T.asnumpy().tolist() == [[-1, 3], [2, -4]] and a.transpose().shape == (2, 2)
    assert mx.nd.ones((2, 3, 4)).flatten().shape == (2, 12)
    assert mx.nd.NDArray.exp.__name__ == "exp"


def test_positional_inputs_follow_the_parameters_input_list():
    """Inputs that exist only under some parameters (Deconvolution's bias with no_bias=False,
    LeakyReLU's gamma for prelu, RNN's state_cell for lstm) bind by position, as in MXNet."""
    rng = np.random.RandomState(0)
    x, w, b = (mx.nd.array(rng.rand(*s)) for s in [(1, 2, 3, 3), (2, 3, 2, 2), (3,)])
    pos = mx.nd.Deconvolution(x, w, b, kernel=(2, 2), num_filter=3, no_bias=False)
    kw = mx.nd.Deconvolution(data=x, weight=w, bias=b, kernel=(2, 2), num_filter=3, no_bias=False)
    assert pos.shape == (1, 3, 4, 4) and np.array_equal(pos.asnumpy(), kw.asnumpy())
    nobias = mx.nd.Deconvolution(x, w, kernel=(2, 2), num_filter=3)
    assert np.allclose(pos.asnumpy(), nobias.asnumpy() + b.asnumpy()[None, :, None, None])
    d, gamma = mx.nd.array([[-1.0, 2.0], [-3.0, 4.0]]), mx.nd.array([0.5, 0.25])
    assert mx.nd.LeakyReLU(d, gamma, act_type="prelu").asnumpy().tolist() == [[-0.5, 2], [-1.5, 4]]
    T, N, C, H = 2, 1, 3, 2
    args = [mx.nd.array(rng.rand(*s)) for s in [(T, N, C), (4 * H * (C + H + 2),), (1, N, H), (1, N, H)]]
    opts = dict(mode="lstm", state_size=H, num_layers=1, state_outputs=True)
    by_pos = mx.nd.RNN(*args, **opts)
    by_name = mx.nd.RNN(**dict(zip(["data", "parameters", "state", "state_cell"], args)), **opts)
    assert len(by_pos) == 3
    for p, k in zip(by_pos, by_name):
        assert np.array_equal(p.asnumpy(), k.asnumpy())
    with pytest.raises(mx.MXNetError, match=r"got 3 positional inputs, but it takes 2"):
        mx.nd.LeakyReLU(d, gamma, gamma, act_type="prelu")
    with pytest.raises(mx.MXNetError, match="'gamma' is given twice"):
        mx.nd.LeakyReLU(d, gamma, gamma=gamma, act_type="prelu")
