"""Malformed graph JSON: every structural fault is an ``MXNetError`` naming the node (and the file)."""
import json

import pytest

import mxref as mx
from mxref import sym
from mxref.base import MXNetError

N3 = r"node 3 \('fc'\)"


def _good():
    net = sym.FullyConnected(sym.Variable("data"), num_hidden=2, name="fc")
    return json.loads(net.tojson())


def _load(doc):
    return sym.load_json(doc if isinstance(doc, str) else json.dumps(doc))


def test_the_base_graph_loads():
    assert _load(_good()).list_outputs() == ["fc_output"]


@pytest.mark.parametrize("edit, pattern", [
    (lambda d: d.update(nodes={"a": 1}), "'nodes' and 'heads' must be lists"),
    (lambda d: d.update(heads=3), "'nodes' and 'heads' must be lists"),
    (lambda d: d["nodes"].__setitem__(1, 7), r"node 1 must be an object"),
    (lambda d: d["nodes"][0].pop("name"), r"node 0 has no 'name'"),
    (lambda d: d["nodes"][0].__setitem__("name", 5), r"node 0: 'name' must be a string"),
    (lambda d: d["nodes"][0].__setitem__("op", ["null"]), r"node 0 \('data'\): 'op' must be a string"),
    (lambda d: d["nodes"][3]["inputs"][0].__setitem__(0, "0"), N3 + r": bad entry"),
    (lambda d: d["nodes"][3]["inputs"][0].__setitem__(0, 1.5), N3 + r": bad entry"),
    (lambda d: d["nodes"][3]["inputs"][0].__setitem__(1, 4), N3 + r".*output index 4 is out of range"),
    (lambda d: d["nodes"][3]["inputs"][0].__setitem__(1, -1), N3 + r".*out of range"),
    (lambda d: d["nodes"][3].__setitem__("inputs", {"x": 1}), N3 + r": 'inputs' must be a list"),
    (lambda d: d["nodes"][3].__setitem__("control_deps", [9]), N3 + r": control dependency 9"),
    (lambda d: d["nodes"][3].__setitem__("control_deps", [-1]), N3 + r": control dependency -1"),
    (lambda d: d["nodes"][3].__setitem__("control_deps", ["0"]), N3 + r": control dependency '0'"),
    (lambda d: d["nodes"][3].__setitem__("attrs", ["num_hidden"]), N3 + r": 'attrs' must be an object"),
    (lambda d: d["nodes"][3]["attrs"].__setitem__("num_hidden", {"a": 1}), N3 + r": attribute 'num_hidden'"),
    (lambda d: d["nodes"][3]["attrs"].__setitem__("num_hidden", "9" * 5000),
     r"node 'fc': operator FullyConnected: invalid value"),
    (lambda d: d["nodes"][0].__setitem__("attrs", {"__init__": "x" * (2 << 20)}),
     r"node 0 \('data'\).*characters long"),
    (lambda d: d["heads"].__setitem__(0, [3, 1, 0]), r"head 0: .*out of range"),
    (lambda d: d["heads"].__setitem__(0, None), r"head 0: bad entry"),
    (lambda d: d["attrs"].__setitem__("mxnet_version", ["int", "abc"]), "bad mxnet_version"),
    (lambda d: d["attrs"].__setitem__("mxnet_version", 10901), "bad mxnet_version"),
    (lambda d: d["attrs"].__setitem__("mxnet_version", ["int"]), "bad mxnet_version"),
    (lambda d: d["attrs"].__setitem__("mxnet_version", ["int", -5]), "mxnet_version -5 is out of range"),
    (lambda d: d.__setitem__("attrs", [1]), "'attrs' must be an object"),
])
def test_malformed_structure_is_an_mxneterror_naming_the_node(edit, pattern):
    doc = _good()
    edit(doc)
    with pytest.raises(MXNetError, match=pattern):
        _load(doc)


def test_deeply_nested_json_is_an_mxneterror():
    with pytest.raises(MXNetError, match="not valid JSON"):
        _load("[" * 100000 + "]" * 100000)


def test_load_names_the_file_on_bad_utf8_bad_json_and_bad_structure(tmp_path):
    path = tmp_path / "net-symbol.json"
    path.write_bytes(b'{"nodes": [], "heads": []}\xff')
    with pytest.raises(MXNetError, match=r"net-symbol\.json is not UTF-8"):
        sym.load(str(path))
    path.write_text('{"nodes": [')
    with pytest.raises(MXNetError, match=r"not valid JSON.*net-symbol\.json"):
        sym.load(str(path))
    doc = _good()
    doc["nodes"][0].pop("name")
    path.write_text(json.dumps(doc))
    with pytest.raises(MXNetError, match=r"node 0 has no 'name'.*net-symbol\.json"):
        sym.load(str(path))
    with pytest.raises(MXNetError, match=r"cannot read .*missing-symbol\.json"):
        sym.load(str(tmp_path / "missing-symbol.json"))
    assert (mx.nd.ones((2,)) * 2).asnumpy().tolist() == [2, 2]
