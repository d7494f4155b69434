"""Symbol API: auto-created inputs, list_*, outputs, internals, indexing, attributes, composition,
copies and pickling — checked against the behaviour of MXNet 1.9.1 on small test operators."""
import copy
import pickle

import numpy as np
import pytest

import mxref.name
import mxref.symbol as sym
from mxref.attribute import AttrScope
from mxref.base import MXNetError, NotImplementedForSymbol
from mxref.ops.registry import OpDef, Param, exists, register


def _fc_args(p):
    return ["data", "weight"] + ([] if p["no_bias"] else ["bias"])


def _fc_shape(p, ins):
    data = ins[0]
    if data is None:
        return list(ins), [None]
    n, k = p["num_hidden"], int(np.prod(data[1:]))
    return [data, (n, k)] + ([] if p["no_bias"] else [(n,)]), [(data[0], n)]


def _bn_shape(p, ins):
    data = ins[0]
    if data is None:
        return list(ins), [None, None, None]
    c = (data[1],)
    return [data, c, c, c, c], [data, c, c]


def _split_shape(p, ins):
    d, n = ins[0], p["num_outputs"]
    if d is None:
        return [None], [None] * n
    return [d], [(d[0], d[1] // n)] * n


if not exists("TSymFC"):
    register(OpDef("TSymFC", arguments=_fc_args, infer_shape=_fc_shape, doc="A test dense layer.",
                   params={"num_hidden": Param("int", doc="Outputs."), "no_bias": Param("bool", False)}))
    bn = register(OpDef("TSymBN", arguments=("data", "gamma", "beta"),
                        aux_states=("moving_mean", "moving_var"), outputs=("output", "mean", "var"),
                        num_visible_outputs=lambda p: 3 if p["output_mean_var"] else 1,
                        params={"output_mean_var": Param("bool", False), "eps": Param("float", 1e-3)},
                        infer_shape=_bn_shape))
    bn.input_var_attrs = {"moving_mean": {"__init__": '["zero", {}]'},
                          "moving_var": {"__init__": '["one", {}]'}}
    register(OpDef("TSymSplit", outputs=lambda p: [f"output{i}" for i in range(p["num_outputs"])],
                   params={"num_outputs": Param("int")}, infer_shape=_split_shape))
    register(OpDef("TSymAdd", arguments=("lhs", "rhs")))


@pytest.fixture(autouse=True)
def fresh_names():
    with mxref.name.NameManager():
        yield


def test_missing_inputs_become_named_variables_with_the_op_attributes():
    """Inputs left out become `<name>_<arg>` variables carrying the op's attributes (as MXNet)."""
    fc = sym.TSymFC(sym.Variable("data"), num_hidden=4)
    assert fc.name == "tsymfc0"
    assert fc.list_arguments() == ["data", "tsymfc0_weight", "tsymfc0_bias"]
    assert fc.attr_dict()["tsymfc0_weight"] == {"num_hidden": "4"}
    assert sym.TSymFC(num_hidden=3, name="f").list_arguments() == ["f_data", "f_weight", "f_bias"]
    assert sym.TSymFC(sym.Variable("x"), num_hidden=3, no_bias=True).list_arguments() == \
        ["x", "tsymfc1_weight"]


def test_keyword_and_positional_inputs():
    """Inputs go positionally in argument order or by argument name; None means 'make one'."""
    d, w = sym.Variable("d"), sym.Variable("w")
    assert sym.TSymFC(d, w, num_hidden=2).list_arguments() == ["d", "w", "tsymfc0_bias"]
    assert sym.TSymFC(data=d, bias=w, weight=None, num_hidden=2).list_arguments() == \
        ["d", "tsymfc1_weight", "w"]
    with pytest.raises(MXNetError, match="unknown input 'nope'"):
        sym.TSymFC(d, nope=w, num_hidden=2)
    with pytest.raises(MXNetError, match="given twice"):
        sym.TSymFC(d, data=w, num_hidden=2)
    with pytest.raises(MXNetError, match="positional argument 1 must be a Symbol"):
        sym.TSymFC(d, 3, num_hidden=2)
    with pytest.raises(MXNetError, match="required argument 'num_hidden'"):
        sym.TSymFC(d)


def test_aux_states_hidden_outputs_and_versions():
    """Aux states are listed apart, hidden outputs are not outputs, mutated inputs bump versions."""
    bn = sym.TSymBN(sym.Variable("data"), name="bn")
    assert bn.list_arguments() == ["data", "bn_gamma", "bn_beta"]
    assert bn.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert bn.list_inputs() == ["data", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var"]
    assert bn.list_outputs() == ["bn_output"] and len(bn) == 1
    assert bn.attr_dict()["bn_moving_var"] == {"__init__": '["one", {}]'}
    assert sym.TSymBN(sym.Variable("x"), output_mean_var=True, name="b2").list_outputs() == \
        ["b2_output", "b2_mean", "b2_var"]
    assert '[[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 1], [4, 0, 1]]' in bn.tojson()
    assert bn.get_internals().list_outputs() == [
        "data", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var", "bn_output"]


def test_multi_output_indexing_and_names():
    """Outputs are indexed by position, name or slice; a single node's symbol keeps its name."""
    sc = sym.TSymSplit(sym.Variable("data"), num_outputs=3)
    assert sc.list_outputs() == ["tsymsplit0_output0", "tsymsplit0_output1", "tsymsplit0_output2"]
    assert sc.name == "tsymsplit0" and len(sc) == 3
    assert sc[1].list_outputs() == ["tsymsplit0_output1"]
    assert sc["tsymsplit0_output2"].list_outputs() == ["tsymsplit0_output2"]
    assert sc[0:2].list_outputs() == ["tsymsplit0_output0", "tsymsplit0_output1"]
    assert [s.list_outputs()[0] for s in sc][-1] == "tsymsplit0_output2"
    with pytest.raises(ValueError, match="Cannot find output"):
        sc["nope"]
    with pytest.raises(IndexError):
        sc[3]


def test_group_internals_and_children():
    """Group concatenates outputs; get_children lists the inputs of the output nodes."""
    data = sym.Variable("data")
    fc = sym.TSymFC(data, num_hidden=2, name="fc")
    g = sym.Group([fc, data])
    assert g.list_outputs() == ["fc_output", "data"] and g.name is None
    assert repr(g) == "<Symbol group [fc, data]>" and repr(fc) == "<Symbol fc>"
    assert fc.get_children().list_outputs() == ["data", "fc_weight", "fc_bias"]
    assert data.get_children() is None
    sliced = sym.SliceChannel(data, num_outputs=3, name="slice")
    assert sliced.get_children().list_outputs() == ["data"]       # one node, counted once
    assert [s.name for s in fc.get_internals()] == ["data", "fc_weight", "fc_bias", "fc"]
    with pytest.raises(TypeError):
        sym.Group([fc, 1])


def test_variable_attributes():
    """Variable stores shape/lr_mult/wd_mult/dtype/init/stype as MXNet's hidden attributes."""
    class Init:
        def dumps(self):
            return '["xavier", {}]'
    v = sym.Variable("v", shape=(2, 3), lr_mult=0.1, wd_mult=2, dtype="float16", init=Init(),
                     stype="default", attr={"foo": "bar"}, __extra__="x")
    attrs = v.list_attr()
    assert attrs["__shape__"] == "(2, 3)" and attrs["__dtype__"] == "2"
    assert attrs["__lr_mult__"] == attrs["lr_mult"] == "0.1" and attrs["__wd_mult__"] == "2"
    assert attrs["__init__"] == '["xavier", {}]' and attrs["__storage_type__"] == "0"
    assert v.attr("lr_mult") == "0.1" and v.attr("foo") == "bar" and v.attr("nope") is None
    with pytest.raises(ValueError, match="double underscores"):
        sym.Variable("w", extra="x")
    with pytest.raises(TypeError):
        sym.Variable(3)


def test_attr_scope_and_hidden_keys():
    """AttrScope attributes reach variables and ops; ctx_group/lr_mult are stored hidden."""
    with AttrScope(ctx_group="dev1", lr_mult="0.1"):
        d = sym.Variable("data", attr={"x": "1"})
        fc = sym.TSymFC(d, num_hidden=4, name="fc", attr={"__y__": "2"})
    assert d.list_attr() == {"x": "1", "__ctx_group__": "dev1", "ctx_group": "dev1",
                             "__lr_mult__": "0.1", "lr_mult": "0.1"}
    assert fc.attr("ctx_group") == "dev1" and fc.attr("__y__") == "2"
    assert '"__ctx_group__": "dev1"' in fc.tojson()
    with pytest.raises(MXNetError, match="unknown argument 'foo'"):
        sym.TSymFC(d, num_hidden=4, attr={"foo": "bar"})


def test_set_attr_validates_op_parameters():
    """_set_attr re-parses op parameters, rejects unknown ones (unchanged) and non-strings."""
    fc = sym.TSymFC(sym.Variable("data"), num_hidden=4, name="fc")
    fc._set_attr(num_hidden="5", __mood__="ok")
    assert fc.infer_shape(data=(2, 3))[0][1] == (5, 3)
    with pytest.raises(MXNetError, match="unknown argument 'zzz'"):
        fc._set_attr(zzz="3")
    assert fc.list_attr() == {"num_hidden": "5", "__mood__": "ok"}
    with pytest.raises(ValueError, match="string"):
        fc._set_attr(__x__=1)
    with pytest.raises(MXNetError, match="non-grouped"):
        sym.Group([fc, sym.Variable("data")])._set_attr(__x__="1")


def test_compose_replaces_variables_by_keyword_on_a_copy():
    """`net(x=other)` copies the graph and substitutes the variable; the original is unchanged."""
    data = sym.Variable("data")
    fc = sym.TSymFC(data, num_hidden=3, name="fc1")
    act = sym.TSymAdd(sym.Variable("x"), sym.Variable("y"), name="add")
    composed = act(x=fc, name="renamed")
    assert composed.list_arguments() == ["data", "fc1_weight", "fc1_bias", "y"]
    assert composed.name == "renamed" and act.name == "add"
    assert act.list_arguments() == ["x", "y"]
    with pytest.raises(MXNetError, match="keyword argument 'nope' is not an input"):
        act(nope=fc)
    with pytest.raises(MXNetError, match="keyword arguments"):
        act(fc)
    with pytest.raises(TypeError):
        act(fc, y=fc)


def test_copy_and_pickle_are_deep():
    """copy/deepcopy/pickle give independent graphs with identical JSON."""
    fc = sym.TSymFC(sym.Variable("data"), num_hidden=3, name="fc")
    for twin in (copy.copy(fc), copy.deepcopy(fc), pickle.loads(pickle.dumps(fc))):
        assert twin.tojson() == fc.tojson()
        twin._set_attr(__tag__="twin")
        assert fc.attr("__tag__") is None


def test_symbols_have_no_truth_value_and_no_hash():
    """`==` builds a node, so symbols are unhashable and bool() is MXNet's NotImplementedForSymbol."""
    a = sym.Variable("a")
    with pytest.raises(NotImplementedForSymbol, match="not implemented for Symbol"):
        bool(a)
    with pytest.raises(TypeError):
        hash(a)


def test_debug_str_lists_outputs_variables_and_ops():
    """debug_str follows nnvm's layout."""
    fc = sym.TSymFC(sym.Variable("data"), num_hidden=10, name="fc1")
    text = sym.Group([fc, sym.Variable("z")]).debug_str()
    assert text.startswith("Symbol Outputs:\n\toutput[0]=fc1(0)\n\toutput[1]=z(0)\nVariable:data\n")
    assert "Op:TSymFC, Name=fc1\nInputs:\n\targ[0]=data(0) version=0\n" in text
    assert "Attrs:\n\tnum_hidden=10\n" in text


def test_bind_methods_delegate_to_the_executor_module(monkeypatch):
    """bind/simple_bind/eval call mxref.executor.bind/simple_bind with the same arguments."""
    import sys
    import types
    calls = []
    fake = types.ModuleType("mxref.executor")
    fake.bind = lambda s, ctx, args, **kw: calls.append(("bind", ctx, args, kw)) or \
        types.SimpleNamespace(forward=lambda: ["out"])
    fake.simple_bind = lambda s, ctx, **kw: calls.append(("simple_bind", ctx, kw))
    monkeypatch.setitem(sys.modules, "mxref.executor", fake)
    import mxref
    monkeypatch.setattr(mxref, "executor", fake, raising=False)
    fc = sym.TSymFC(sym.Variable("data"), num_hidden=3)
    fc.simple_bind("ctx", grad_req="null", data=(2, 3))
    assert calls[-1] == ("simple_bind", "ctx", {
        "grad_req": "null", "type_dict": None, "stype_dict": None, "group2ctx": None,
        "shared_arg_names": None, "shared_exec": None, "shared_buffer": None, "data": (2, 3)})
    assert fc.eval("ctx", data=1) == ["out"]
    assert calls[-1][:3] == ("bind", "ctx", {"data": 1}) and calls[-1][3]["grad_req"] == "write"


def test_gen_atomic_symbol():
    """_gen_atomic_symbol: the head operator with fresh argument variables, composable again."""
    import mxref as mx
    s = mx.sym.RNN(mx.sym.var("data"), mx.sym.var("param"), mx.sym.var("h0"), mx.sym.var("h1"),
                   state_size=10, num_layers=2, bidirectional=True, state_outputs=True, mode="lstm")
    atomic = s._gen_atomic_symbol()
    assert atomic.list_arguments() == ["data", "parameters", "state", "state_cell"]
    assert atomic.list_outputs() == s.list_outputs()
    assert atomic(data=mx.sym.var("x")).list_arguments()[0] == "x"
    with pytest.raises(mx.MXNetError, match="variable"):
        mx.sym.var("v")._gen_atomic_symbol()
def test_variable_int_shape_is_one_dimensional():
    """``var('b', shape=(1))`` passes a bare int; MXNet takes it as the shape ``(1,)``."""
    for shape in (1, np.int64(3)):
        v = sym.Variable("b", shape=shape)
        assert v.attr("__shape__") == f"({int(shape)},)"
        assert v.infer_shape()[0] == [(int(shape),)]
