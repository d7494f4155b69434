"""mx.sym.contrib.foreach / while_loop / cond: the traced graph, MXNet's JSON, and runs of it.

The graphs in tests/fixtures/control_flow were saved by MXNet 1.9.1 from the same builders
(``make_fixtures.py``); mxref traces them to the same JSON, loads MXNet's and runs it to MXNet's
numbers.
"""
import importlib.util
import json
import os
from collections import defaultdict

import numpy as np
import pytest

import mxref as mx
from mxref.attribute import AttrScope

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "control_flow")
_spec = importlib.util.spec_from_file_location("control_flow_fixtures",
                                               os.path.join(HERE, "make_fixtures.py"))
_builders = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_builders)
CASES = _builders.CASES


def _fresh(build):
    """Trace ``build`` with fresh name counters, as in a new MXNet process."""
    saved = AttrScope._subgraph_names
    AttrScope._subgraph_names = defaultdict(int)
    try:
        with mx.name.NameManager():
            return build(mx.sym)
    finally:
        AttrScope._subgraph_names = saved


def _fixture(name):
    with open(os.path.join(HERE, name + ".json")) as f:
        text = f.read()
    return text, dict(np.load(os.path.join(HERE, name + ".npz")))


@pytest.mark.parametrize("name", sorted(CASES))
def test_traced_graph_is_mxnets_json(name):
    """Tracing the body gives MXNet's node, attributes, locs and subgraphs, byte for byte."""
    text, _ = _fixture(name)
    assert _fresh(CASES[name][0]).tojson() == text


@pytest.mark.parametrize("name", sorted(CASES))
def test_mxnet_json_round_trips(name):
    """An MXNet file loads (subgraphs included) and saves back unchanged."""
    text, _ = _fixture(name)
    net = mx.sym.load_json(text)
    assert net.tojson() == text
    nodes = [n for n in json.loads(text)["nodes"] if "subgraphs" in n]
    assert len(nodes) == 1 and nodes[0]["op"] == "_" + name.replace("_nested", "")


@pytest.mark.parametrize("name", sorted(CASES))
def test_mxnet_graph_runs_to_mxnets_numbers(name):
    """The loaded graph's forward and gradients match MXNet's (see the while_loop note)."""
    text, data = _fixture(name)
    net = mx.sym.load_json(text)
    args = {k[3:]: mx.nd.array(v) for k, v in data.items() if k.startswith("in_")}
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    ex = net.bind(mx.cpu(), args, args_grad=grads)
    outs = ex.forward(is_train=True)
    n_out = len([k for k in data if k.startswith("out")])
    for i in range(n_out):
        got, want = outs[i].asnumpy(), data[f"out{i}"]
        if name == "while_loop" and i == 0:     # 3 steps of 5: MXNet leaves the padding undefined
            assert not got[3:].any()
            got, want = got[:3], want[:3]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    ex.backward([mx.nd.array(data[f"ograd{i}"]) for i in range(n_out)])
    for k, g in grads.items():
        if name == "while_loop" and k == "b":
            continue    # MXNet 1.9.1's symbolic while_loop under-counts a free input's gradient
        np.testing.assert_allclose(g.asnumpy(), data[f"grad_{k}"], rtol=1e-5, atol=1e-5)


def test_while_loop_free_input_gradient_is_the_sum_over_steps():
    """d/db of (sum of outputs . ograd + final s . ograd) where s_{t+1} = s_t + b, y_t = 2 s_t:
    MXNet 1.9.1's imperative while_loop agrees with this sum, its symbolic one does not."""
    text, data = _fixture("while_loop")
    net = mx.sym.load_json(text)
    args = {k[3:]: mx.nd.array(v) for k, v in data.items() if k.startswith("in_")}
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    ex = net.bind(mx.cpu(), args, args_grad=grads)
    ex.forward(is_train=True)
    ex.backward([mx.nd.array(data[f"ograd{i}"]) for i in range(3)])
    g_out, g_s = data["ograd0"], data["ograd2"]
    steps = 3                               # i = 0, 1, 2 < 3
    expected = sum(2 * t * g_out[t] for t in range(steps)) + steps * g_s
    np.testing.assert_allclose(grads["b"].asnumpy(), expected, rtol=1e-5)


def test_one_node_holds_the_subgraph():
    """The outer graph has one _foreach node; its body's free variable became an input."""
    out, states = mx.sym.contrib.foreach(
        lambda x, s: (x * mx.sym.var("w") + s[0], [s[0] * 2]), mx.sym.var("d"), [mx.sym.var("h")])
    net = mx.sym.Group([out] + states)
    doc = json.loads(net.tojson())
    ops = [n["op"] for n in doc["nodes"] if n["op"] != "null"]
    assert ops == ["_foreach"]
    assert net.list_inputs() == ["d", "h", "w"]
    (node,) = [n for n in doc["nodes"] if n["op"] == "_foreach"]
    sub = node["subgraphs"][0]
    assert [n["name"] for n in sub["nodes"] if n["op"] == "null"] == ["d-0", "w", "h-0"]
    assert node["attrs"]["in_data_locs"] == "[0]" and node["attrs"]["remain_locs"] == "[1]"


def test_outer_entries_are_cut_into_inputs():
    """An op output of the enclosing graph read by the body enters as one node input, named
    after the entry inside the subgraph (MXNet's CutGraphInputs)."""
    outer = mx.sym.relu(mx.sym.var("z"), name="r")
    out, _ = mx.sym.contrib.foreach(lambda x, s: (x + outer + outer, s + 0), mx.sym.var("d"),
                                    mx.sym.var("h"))
    doc = json.loads(out.tojson())
    (node,) = [n for n in doc["nodes"] if n["op"] == "_foreach"]
    sub_vars = [n["name"] for n in node["subgraphs"][0]["nodes"] if n["op"] == "null"]
    assert "r_output" in sub_vars and len(node["inputs"]) == 3
    ex = out.bind(mx.cpu(), {"d": mx.nd.ones((2, 3)), "h": mx.nd.zeros((3,)),
                             "z": mx.nd.array([-1, 0, 2])})
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), [[1, 1, 5]] * 2)


def test_infer_shape_and_type_through_the_body():
    net = _fresh(CASES["foreach"][0])
    arg, out, aux = net.infer_shape(data=(4, 2, 3), h0=(2, 3))
    assert arg == [(4, 2, 3), (2, 3), (2, 3)] and out == [(4, 2, 3), (2, 3)] and aux == []
    arg_t, out_t, _ = net.infer_type(data="float64")
    assert all(t == np.float64 for t in arg_t + out_t)


def test_infer_shape_with_an_unknown_dimension():
    """A 0 dimension stays unknown through the loop (MXNet's test_foreach_with_unkown_dim)."""
    data = mx.sym.var("data", shape=(0, 3, 4))
    outs, _ = mx.sym.contrib.foreach(lambda d, s: (d + s[0], [s[0] * 2]), data, [mx.sym.var("s")])
    _, out_shapes, _ = outs.infer_shape_partial()
    assert out_shapes[0] == (0, 3, 4)


def test_mismatched_state_shape_is_named():
    """A body that changes a state's shape is an error naming the loop state."""
    out, states = mx.sym.contrib.foreach(
        lambda x, s: (x, [mx.sym.concat(s[0], s[0], dim=0)]), mx.sym.var("d"), [mx.sym.var("h")])
    net = mx.sym.Group([out] + states)
    with pytest.raises(mx.MXNetError, match=r"foreach: loop state 0 .*\(3,\).*\(6,\)"):
        net.infer_shape(d=(2, 3), h=(3,))


def test_while_loop_mismatched_variable_is_named():
    _, final = mx.sym.contrib.while_loop(lambda v: mx.sym.sum(v) < 10,
                                         lambda v: (None, [mx.sym.concat(v, v, dim=0)]),
                                         [mx.sym.var("v")], max_iterations=3)
    with pytest.raises(mx.MXNetError, match=r"while_loop: loop variable 0 .*\(2,\).*\(4,\)"):
        mx.sym.Group(final).infer_shape(v=(2,))


def test_cond_branches_with_different_shapes_are_named():
    x = mx.sym.var("x")
    out = mx.sym.contrib.cond(mx.sym.sum(x) > 0, lambda: x, lambda: mx.sym.concat(x, x, dim=0))
    with pytest.raises(mx.MXNetError, match=r"cond: output 0 of the then and else branches"):
        out.infer_shape(x=(2,))


def test_unused_state_is_an_error():
    """MXNet asserts that every state is read; mxref's error is both an MXNetError and an
    AssertionError (MXNet's own tests catch the latter)."""
    with pytest.raises(AssertionError, match="state arrays have to be used"):
        mx.sym.contrib.foreach(lambda x, s: (x + 1, [mx.sym.var("q") * 2]), mx.sym.var("d"),
                               [mx.sym.var("h")])


def test_unique_subgraph_names():
    """Subgraphs are named ``<name><count>``, nested ones ``outer$inner<count>``."""
    saved = AttrScope._subgraph_names
    AttrScope._subgraph_names = defaultdict(int)
    try:
        def outer(x, s):
            inner, _ = mx.sym.contrib.foreach(lambda y, t: (y * 2, t + 0), x, s[0], name="inner")
            return inner, s
        mx.sym.contrib.foreach(outer, mx.sym.var("d"), [mx.sym.var("h")], name="outer")
        assert dict(AttrScope._subgraph_names) == {"outer": 1, "outer0$inner": 1}
    finally:
        AttrScope._subgraph_names = saved


def test_shared_entries_are_closed_as_mxnet_does():
    """A state named like a step output gets an identity (foreach); an entry returned both as a
    step output and as a loop variable stays one entry (while_loop): MXNet's JSON, and the
    gradient through the shared entry is the sum of both uses."""
    def split_body(x, s):
        q = mx.sym.split(x + s[0], num_outputs=2, axis=0)
        return [q[0], q[0]], [q[1]]
    out, states = mx.sym.contrib.foreach(split_body, mx.sym.var("d"), [mx.sym.var("h")])
    doc = json.loads(mx.sym.Group(out + states).tojson())
    sub = [n for n in doc["nodes"] if n["op"] == "_foreach"][0]["subgraphs"][0]
    assert [n["op"] for n in sub["nodes"]].count("_copy") == 1
    o, v = mx.sym.contrib.while_loop(lambda a: mx.sym.sum(a) < 5, lambda a: (lambda b: (b, [b]))(a * 2),
                                     [mx.sym.var("a")], max_iterations=3)
    net = mx.sym.Group([o] + v)
    heads = [n["heads"] for n in json.loads(net.tojson())["nodes"][1]["subgraphs"][1:]][0]
    assert heads[0] == heads[1]
    a, g = mx.nd.array([0.5, 0.25]), mx.nd.zeros((2,))
    ex = net.bind(mx.cpu(), {"a": a}, args_grad={"a": g})
    ex.forward(is_train=True)
    ex.backward([mx.nd.ones((3, 2)), mx.nd.ones((2,))])
    np.testing.assert_allclose(g.asnumpy(), [2 + 4 + 8 + 8] * 2)


@pytest.mark.parametrize("bad,message", [
    ("7", "'subgraphs' must be a list"),
    ("[3]", "subgraph 0 needs 'nodes' and 'heads' lists"),
    ('[{"nodes": [], "heads": [[5, 0, 0]]}]', "in subgraph 0 of node"),
])
def test_malformed_subgraphs_are_named(bad, message):
    """A broken ``subgraphs`` value is an MXNetError naming the node, not a crash."""
    text, _ = _fixture("foreach")
    doc = json.loads(text)
    node = next(n for n in doc["nodes"] if n["op"] == "_foreach")
    node["subgraphs"] = json.loads(bad)
    with pytest.raises(mx.MXNetError, match=message):
        mx.sym.load_json(json.dumps(doc))


def test_deeply_nested_subgraphs_are_refused():
    inner = {"nodes": [{"op": "null", "name": "x", "inputs": []}], "heads": [[0, 0, 0]]}
    for _ in range(40):
        inner = {"nodes": [{"op": "null", "name": "x", "inputs": []},
                           {"op": "_foreach", "name": "f", "inputs": [[0, 0, 0]],
                            "attrs": {"num_args": "2", "num_outputs": "1", "num_out_data": "0",
                                      "in_data_locs": "[]", "in_state_locs": "[0]",
                                      "remain_locs": "[]"},
                            "subgraphs": [inner]}],
                 "heads": [[1, 0, 0]]}
    with pytest.raises(mx.MXNetError, match="nested deeper than"):
        mx.sym.load_json(json.dumps(dict(inner, attrs={"mxnet_version": ["int", 10901]})))


def test_cond_branches_share_a_variable_of_one_name():
    """A variable both branches make for themselves is one input of the _cond node (MXNet)."""
    x = mx.sym.var("x")
    out = mx.sym.contrib.cond(mx.sym.sum(x) > 0, lambda: x * mx.sym.var("q"), lambda: x + mx.sym.var("q"))
    assert out.list_inputs() == ["x", "q"]
    for xv, expect in (([1.0, 2.0], [3.0, 6.0]), ([-1.0, -2.0], [2.0, 1.0])):
        res = out.eval(x=mx.nd.array(xv), q=mx.nd.array([3.0, 3.0]))
        np.testing.assert_allclose(res[0].asnumpy(), expect)
