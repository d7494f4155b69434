"""MXNet's JSON graph format: the writer's layout, reading it back, and upgrading files written
by MXNet before 1.0 (``param``/``attr`` keys, plain hidden keys, missing auxiliary inputs)."""
import json

import numpy as np
import pytest

import mxref.name
import mxref.symbol as sym
from mxref.base import MXNetError
from mxref.ops.registry import OpDef, Param, exists, register


def _dense_shape(p, ins):
    if ins[0] is None:
        return list(ins), [None]
    return [ins[0], (p["num_hidden"], int(np.prod(ins[0][1:]))), (p["num_hidden"],)], \
        [(ins[0][0], p["num_hidden"])]


if not exists("TJsonDense"):
    register(OpDef("TJsonDense", arguments=("data", "weight", "bias"), infer_shape=_dense_shape,
                   params={"num_hidden": Param("int")}))
    norm = register(OpDef("TJsonNorm", arguments=("data", "gamma", "beta"),
                          aux_states=("moving_mean", "moving_var"), outputs=("output", "mean", "var"),
                          num_visible_outputs=1, params={"eps": Param("float", 1e-3)},
                          infer_shape=lambda p, ins: (list(ins), [ins[0]] * 3)))
    norm.input_var_attrs = {"moving_var": {"__init__": '["one", {}]'}}
    register(OpDef("TJsonCat", arguments=lambda p: [f"arg{i}" for i in range(p["num_args"])],
                   params={"num_args": Param("int")}, key_var_num_args="num_args"))


@pytest.fixture(autouse=True)
def fresh_names():
    with mxref.name.NameManager():
        yield


def test_layout_follows_dmlc_writer():
    """Objects span lines; string maps only with >1 key; arrays only with >10 items or objects."""
    d = sym.Variable("data")
    text = sym.TJsonDense(d, num_hidden=3, name="fc").tojson()
    assert text.startswith('{\n  "nodes": [\n    {\n      "op": "null", \n      "name": "data", \n'
                           '      "inputs": []\n    }, \n')
    assert '"attrs": {"num_hidden": "3"}, \n      "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]' in text
    assert text.endswith('  "arg_nodes": [0, 1, 2], \n  "node_row_ptr": [0, 1, 2, 3, 4], \n'
                         '  "heads": [[3, 0, 0]], \n  "attrs": {"mxnet_version": ["int", 10901]}\n}')
    big = sym.TJsonCat(*[sym.Variable(f"x{i}") for i in range(11)]).tojson()
    assert '"inputs": [\n        [0, 0, 0], \n' in big and '"arg_nodes": [\n    0, \n' in big
    v = sym.Variable("v", shape=(2,), attr={"b": "1", "a": "q\"uote"}).tojson()
    assert '"attrs": {\n        "__shape__": "(2,)", \n        "a": "q\\"uote", \n        "b": "1"\n' in v


def test_round_trip_keeps_graph_names_attrs_and_versions():
    """load_json(tojson()) rebuilds the same graph: JSON, lists and aux versions are equal."""
    d = sym.Variable("data", lr_mult=2)
    net = sym.Group([sym.TJsonNorm(sym.TJsonDense(d, num_hidden=4), name="bn"), d])
    again = sym.load_json(net.tojson())
    assert again.tojson() == net.tojson()
    assert again.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert again.attr_dict()["data"]["lr_mult"] == "2"
    internals = again.get_internals().list_outputs()
    assert internals[0] == "data" and internals[-1] == "bn_output"


def test_save_and_load_file(tmp_path):
    """save() writes tojson() to a file; load() reads it."""
    net = sym.TJsonDense(sym.Variable("data"), num_hidden=2)
    path = str(tmp_path / "net-symbol.json")
    net.save(path)
    assert sym.load(path).tojson() == net.tojson()
    with pytest.raises(TypeError):
        sym.load_json(b"{}")


def test_control_deps_survive_a_round_trip():
    """control_deps are written as node ids and read back."""
    a = sym.TJsonDense(sym.Variable("x"), num_hidden=2, name="a")
    b = sym.TJsonDense(sym.Variable("y"), num_hidden=2, name="b")
    b._outputs[0].node.control_deps.append(a._outputs[0].node)
    text = sym.Group([b]).tojson()
    names = [n["name"] for n in json.loads(text)["nodes"]]
    assert f'"control_deps": [{names.index("a")}]' in text
    assert sym.load_json(text).tojson() == text


def test_bad_files_raise_clear_errors():
    """Unknown ops, dangling entries and broken JSON name what is wrong."""
    base = {"nodes": [{"op": "null", "name": "x", "inputs": []}], "heads": [[0, 0, 0]]}
    bad_op = dict(base, nodes=base["nodes"] + [{"op": "NoSuchOp", "name": "n", "inputs": [[0, 0, 0]]}])
    with pytest.raises(MXNetError, match="'NoSuchOp', which is not registered"):
        sym.load_json(json.dumps(bad_op))
    dangling = dict(base, nodes=base["nodes"] + [{"op": "TJsonCat", "name": "c",
                                                  "attrs": {"num_args": "1"}, "inputs": [[5, 0, 0]]}])
    with pytest.raises(MXNetError, match="refers to node 5"):
        sym.load_json(json.dumps(dangling))
    with pytest.raises(MXNetError, match="not valid JSON"):
        sym.load_json("{nodes")
    with pytest.raises(MXNetError, match="head .* out of range"):
        sym.load_json(json.dumps(dict(base, heads=[[0, 1, 0]])))


def test_unknown_attributes_warn_and_are_kept_for_saving():
    """Attributes an mxref op does not know (e.g. cudnn settings) warn but survive re-saving."""
    doc = {"nodes": [{"op": "null", "name": "x", "inputs": []},
                     {"op": "TJsonCat", "name": "c", "attrs": {"num_args": "1", "workspace": "512"},
                      "inputs": [[0, 0, 0]]}],
           "arg_nodes": [0], "heads": [[1, 0, 0]], "attrs": {"mxnet_version": ["int", 10901]}}
    with pytest.warns(UserWarning, match=r"ignores attributes it does not know: \['workspace'\]"):
        s = sym.load_json(json.dumps(doc))
    assert '"workspace": "512"' in s.tojson()


def test_legacy_0_8_file_is_upgraded():
    """Pre-0.9 files: `param`/`attr` keys, [nid, index] entries, hidden keys written plainly,
    auxiliary inputs omitted (recreated with the op's attributes and their __init__)."""
    legacy = {"nodes": [
        {"op": "null", "name": "data", "param": {}, "attr": {"ctx_group": "stage1"}, "inputs": []},
        {"op": "null", "name": "fc_weight", "param": {}, "inputs": []},
        {"op": "null", "name": "fc_bias", "param": {}, "inputs": []},
        {"op": "TJsonDense", "name": "fc", "param": {"num_hidden": "4"},
         "attr": {"weight_lr_mult": "0.5", "mirror_stage": "1"}, "inputs": [[0, 0], [1, 0], [2, 0]]},
        {"op": "null", "name": "bn_gamma", "inputs": []},
        {"op": "null", "name": "bn_beta", "inputs": []},
        {"op": "TJsonNorm", "name": "bn", "param": {"eps": "0.001"}, "inputs": [[3, 0], [4, 0], [5, 0]]}],
        "arg_nodes": [0, 1, 2, 4, 5], "heads": [[6, 0]]}
    s = sym.load_json(json.dumps(legacy))
    assert s.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    attrs = s.attr_dict()
    assert attrs["data"]["__ctx_group__"] == "stage1" and "ctx_group" in attrs["data"]
    assert attrs["fc_weight"]["__lr_mult__"] == "0.5" and attrs["fc"]["__mirror_stage__"] == "1"
    assert "weight_lr_mult" not in attrs["fc"]
    assert attrs["bn_moving_var"] == {"eps": "0.001", "__init__": '["one", {}]'}
    assert s.infer_shape_partial(data=(2, 5))[0][1] == (4, 5)
    assert '"mxnet_version": ["int", 10901]' in s.tojson()


def test_tojson_marks_np_shape_graphs():
    """tojson under np_shape adds attrs.is_np_shape = ["int", 1], as MXNet; a legacy graph (0 =
    unknown dim in __shape__) still infers under np_shape."""
    import json as _json

    import mxref as mx
    w = mx.sym.var("weight", shape=(8, 0))
    net = mx.sym.FullyConnected(mx.sym.var("data"), w, num_hidden=8)
    assert "is_np_shape" not in _json.loads(net.tojson())["attrs"]
    with mx.np_shape(True):
        assert _json.loads(net.tojson())["attrs"]["is_np_shape"] == ["int", 1]
        loaded = mx.sym.load_json(net.tojson())
        args, outs, _ = loaded.infer_shape(data=(2, 5))
        assert args[1] == (8, 5) and outs == [(2, 8)]
