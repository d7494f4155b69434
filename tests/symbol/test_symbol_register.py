"""Generated mx.sym functions: signature, docstring, namespaces, late registration, var-args,
and operators on symbols named and recorded as MXNet 1.9.1 does (``a + 1`` -> ``_plusscalar0``)."""
import inspect
import json

import numpy as np
import pytest

import mxref.name
import mxref.symbol as sym
from mxref.base import MXNetError
from mxref.ops import registry
from mxref.ops.registry import OpDef, Param, register
from mxref.symbol.register import wrapper

if not registry.exists("TRegDense"):
    register(OpDef("TRegDense", arguments=("data", "weight"), doc="A test layer.",
                   params={"units": Param("int", doc="How many."), "act": Param("str", "relu")}))
    register(OpDef("TRegCat", arguments=lambda p: [f"arg{i}" for i in range(p["num_args"])],
                   params={"num_args": Param("int"), "dim": Param("int", 1)}, key_var_num_args="num_args"))
    register(OpDef("_contrib_TRegBox", arguments=("data",)))


def _needs(*ops):
    missing = [o for o in ops if not registry.exists(o)]
    return pytest.mark.skipif(bool(missing), reason=f"operators not registered: {missing}")


@pytest.fixture(autouse=True)
def fresh_names():
    with mxref.name.NameManager():
        yield


def _ops(s):
    nodes = json.loads(s.tojson())["nodes"]
    return [(n["op"], n["name"], n.get("attrs")) for n in nodes if n["op"] != "null"]


def test_function_has_name_doc_and_signature():
    """The function carries the op's name, its doc with parameters, and an inspect.Signature."""
    fn = sym.TRegDense
    assert fn.__name__ == "TRegDense" and fn.__module__ == "mxref.symbol"
    assert fn.__doc__.startswith("A test layer.") and "units : int, required" in fn.__doc__
    params = inspect.signature(fn).parameters
    assert list(params)[:4] == ["data", "weight", "units", "act"]
    assert params["data"].default is None and params["name"].kind is inspect.Parameter.KEYWORD_ONLY
    assert str(inspect.signature(sym.TRegCat)).startswith("(*data, dim=_Null")


def test_late_registered_ops_and_namespaces():
    """Ops registered after import are found; '_' names go to _internal, prefixes to their module."""
    assert sym.op.TRegDense is sym.TRegDense
    assert sym.contrib.TRegBox is wrapper("_contrib_TRegBox")
    assert sym.contrib.TRegBox(sym.Variable("d")).name == "tregbox0"
    with pytest.raises(AttributeError):
        sym.NoSuchOperatorAnywhere  # noqa: B018
    with pytest.raises(AttributeError):
        sym._internal.TRegDense  # noqa: B018


def test_var_args_set_num_args():
    """Ops with key_var_num_args take *args and record their count (MXNet overrides the user's)."""
    a, b, c = sym.Variable("a"), sym.Variable("b"), sym.Variable("c")
    cat = sym.TRegCat(a, b, c, dim=0, num_args=7)
    assert cat.list_arguments() == ["a", "b", "c"]
    assert _ops(cat) == [("TRegCat", "tregcat0", {"dim": "0", "num_args": "3"})]
    assert sym.TRegCat(a, a).list_arguments() == ["a"]
    with pytest.raises(TypeError):
        sym.TRegCat(a, arg1=b)


def test_name_manager_and_prefix_name_nodes():
    """Counters are per lowercased op name; Prefix prepends to given and generated names."""
    d = sym.Variable("data")
    assert [sym.TRegDense(d, units=1).name for _ in range(2)] == ["tregdense0", "tregdense1"]
    with mxref.name.Prefix("net_"):
        x = sym.TRegDense(d, units=1, name="fc")
        y = sym.TRegDense(d, units=1)
    assert x.list_arguments() == ["data", "net_fc_weight"] and y.name == "net_tregdense0"
    assert sym.TRegDense(d, units=1).name == "tregdense2"


@_needs("elemwise_add", "_plus_scalar", "_mul_scalar", "_rminus_scalar", "_rdiv_scalar",
        "_power", "_rpower_scalar", "_equal", "_greater_scalar", "_lesser_equal")
def test_arithmetic_names_and_ops_as_mxnet():
    """`a + b` -> elemwise_add named _plus0; scalars are written with str(); -a is *-1.0."""
    a, b = sym.Variable("a"), sym.Variable("b")
    assert _ops(a + b) == [("elemwise_add", "_plus0", None)]
    assert _ops(a + 1) == [("_plus_scalar", "_plusscalar0", {"scalar": "1"})]
    assert _ops(2.5 + a) == [("_plus_scalar", "_plusscalar1", {"scalar": "2.5"})]
    assert _ops(1 - a) == [("_rminus_scalar", "_rminusscalar0", {"scalar": "1"})]
    assert _ops(2 / a) == [("_rdiv_scalar", "_rdivscalar0", {"scalar": "2"})]
    assert _ops(a ** b) == [("_power", "_power0", None)]
    assert _ops(2 ** a) == [("_rpower_scalar", "_rpower_scalar0", {"scalar": "2"})]
    assert _ops(-a) == [("_mul_scalar", "_mulscalar0", {"scalar": "-1.0"})]
    assert _ops(a == b) == [("_equal", "_equal0", None)]
    assert _ops(a > 1) == [("_greater_scalar", "_greater_scalar0", {"scalar": "1"})]
    assert _ops(a <= b) == [("_lesser_equal", "_lesser_equal0", None)]
    assert (a + b).infer_shape(a=(2, 3))[1] == [(2, 3)]
    with pytest.raises(TypeError):
        a + "x"


@_needs("reshape", "abs", "cast")
def test_fluent_methods_call_the_op_function():
    """`s.reshape(...)` is `mx.sym.reshape(s, ...)`; astype is cast."""
    d = sym.Variable("d")
    r = d.reshape(shape=(2, 3))
    assert r.name == "reshape0" and r.attr("shape") == "(2, 3)"
    assert abs(d).name == "abs0"
    assert _ops(d.astype("float16"))[0][2] == {"dtype": "float16"}


@_needs("_random_uniform")
def test_random_namespace_with_number_parameters():
    """random.uniform(0, 1, shape) is _random_uniform, named after the full op name."""
    r = sym.random.uniform(0, 1, shape=(2,))
    assert _ops(r)[0][:2] == ("_random_uniform", "_random_uniform0")
    assert r.infer_shape()[1] == [(2,)]


@_needs("_random_uniform", "_sample_uniform")
def test_random_namespace_with_symbol_parameters():
    """random.uniform(low=Symbol, high=Symbol) is _sample_uniform with the symbols as inputs."""
    lo, hi = sym.Variable("lo"), sym.Variable("hi")
    s = sym.random.uniform(low=lo, high=hi)
    assert s.list_outputs() == ["_sample_uniform0_output"] and s.list_arguments() == ["lo", "hi"]
    with pytest.raises(MXNetError, match="all Symbols or all numbers"):
        sym.random.uniform(lo, 1)


@_needs("Deconvolution", "LeakyReLU", "RNN")
def test_positional_inputs_follow_the_parameters_input_list():
    """Positional symbols bind to the input list of the given parameters (bias only when
    no_bias=False, gamma only for prelu, state_cell only for lstm); missing ones become variables."""
    x, w, b = sym.var("x"), sym.var("w"), sym.var("b")
    assert sym.Deconvolution(x, w, b, kernel=(2, 2), num_filter=3,
                             no_bias=False).list_arguments() == ["x", "w", "b"]
    assert sym.Deconvolution(x, w, kernel=(2, 2), num_filter=3).list_arguments() == ["x", "w"]
    assert sym.LeakyReLU(x, w, act_type="prelu").list_arguments() == ["x", "w"]
    assert sym.LeakyReLU(x, act_type="prelu", name="p").list_arguments() == ["x", "p_gamma"]
    rnn = sym.RNN(x, w, b, sym.var("c"), mode="lstm", state_size=2, num_layers=1)
    assert rnn.list_arguments() == ["x", "w", "b", "c"]
    with pytest.raises(MXNetError, match="takes 2"):
        sym.LeakyReLU(x, w, b, act_type="prelu")


def test_hidden_keys_given_as_operator_keywords_become_attributes():
    """lr_mult=..., wd_mult=... and __x__=... on an operator call are attributes, not parameters
    (MXNet's MXSymbolCreateAtomicSymbol); weight_lr_mult=... is refused with MXNet's advice."""
    data = sym.Variable("data")
    conv = sym.Convolution(data=data, name="conv", kernel=(1, 1), num_filter=1,
                              attr={"__mood__": "so so"}, lr_mult=1)
    attrs = conv.attr_dict()["conv"]
    assert attrs["__lr_mult__"] == "1" and attrs["lr_mult"] == "1" and attrs["__mood__"] == "so so"
    assert conv.attr("lr_mult") == "1"
    fc = sym.FullyConnected(data=data, num_hidden=3, wd_mult=0.5, __layout__="NC")
    assert fc.list_attr() == {"num_hidden": "3", "__wd_mult__": "0.5", "wd_mult": "0.5",
                              "__layout__": "NC"}
    assert fc.infer_shape(data=(2, 4))[1] == [(2, 3)]          # the op's own parameters are intact
    with pytest.raises(MXNetError, match=r"(?s)weight_lr_mult is deprecated.*Variable\(lr_mult=0.5\)"):
        sym.FullyConnected(data=data, num_hidden=3, weight_lr_mult=0.5)


def test_parameters_may_follow_the_inputs_positionally():
    """As MXNet's generated signatures: sym.reshape(x, (2, 3)); None skips an input slot."""
    x = sym.Variable("x")
    assert sym.reshape(x, (2, 3)).infer_shape(x=(6,))[1] == [(2, 3)]
    assert sym.FullyConnected(x, None, None, 5).infer_shape(x=(2, 4))[1] == [(2, 5)]
    with pytest.raises(MXNetError, match="takes at most"):
        sym.reshape(x, 1, 2, 3, 4, 5, 6, 7, 8)
    with pytest.raises(TypeError, match="multiple values for argument 'shape'"):
        sym.reshape(x, (2, 3), shape=(6,))


def test_numpy_values_are_written_as_mxnet_writes_python_ones():
    """numpy scalars inside tuples, and 1-d numpy arrays, become "(0,)"-style attribute text."""
    x = sym.Variable("x")
    assert sym.transpose(x, axes=(np.int64(0),)).list_attr() == {"axes": "(0,)"}
    assert sym.broadcast_to(x, shape=np.array([6, 5, 6])).list_attr() == {"shape": "(6, 5, 6)"}
    assert sym.FullyConnected(x, num_hidden=np.int64(3)).list_attr() == {"num_hidden": "3"}
