"""mx.viz: print_summary and plot_network give what MXNet 1.9.1 gives on the fixture networks
(its printed table, and the Digraph node/edge calls recorded by a stand-in graphviz module)."""
import contextlib
import importlib.util
import io
import json
import os
import sys
import types

import pytest

import mxref.name
import mxref.symbol
from mxref import visualization as viz
from mxref.base import MXNetError
from mxref.ops import registry

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "symbol")
_spec = importlib.util.spec_from_file_location("viz_networks", os.path.join(FIXTURES, "networks.py"))
networks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(networks)
mx = types.SimpleNamespace(sym=mxref.symbol, name=mxref.name)
NEEDED = ["FullyConnected", "Activation", "SoftmaxOutput", "Convolution", "Pooling", "Flatten",
          "BatchNorm", "elemwise_add", "SliceChannel", "Concat", "_plus_scalar", "_mul_scalar"]
pytestmark = pytest.mark.skipif(not all(registry.exists(o) for o in NEEDED),
                                reason="the fixture networks' operators are not all registered")


def _build(name):
    with mxref.name.NameManager():
        sym, shapes = networks.NETWORKS[name](mx)
    with open(os.path.join(FIXTURES, f"{name}-expected.json")) as f:
        return sym, shapes, json.load(f)


@pytest.fixture
def recording_graphviz(monkeypatch):
    fake = types.ModuleType("graphviz")
    fake.Digraph = networks.RecordingDigraph
    monkeypatch.setitem(sys.modules, "graphviz", fake)


@pytest.mark.parametrize("name", sorted(networks.NETWORKS))
def test_print_summary_matches_mxnet(name):
    """Same rows, shapes (batch axis dropped), parameter counts, previous layers and total."""
    sym, shapes, expected = _build(name)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        viz.print_summary(sym, shape=shapes)
    assert out.getvalue() == expected["print_summary"]


def test_print_summary_counts_dense_after_convolution_exactly():
    """A FullyConnected fed by a convolution counts its real weight (MXNet counts channels only)."""
    data = mxref.symbol.Variable("data")
    conv = mxref.symbol.Convolution(data, kernel=(3, 3), num_filter=4, name="c")
    fc = mxref.symbol.FullyConnected(conv, num_hidden=2, name="fc")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        viz.print_summary(fc, shape={"data": (1, 1, 5, 5)})
    assert f"Total params: {4 * 9 + 4 + 2 * 4 * 3 * 3 + 2}" in out.getvalue()
    with pytest.raises(TypeError):
        viz.print_summary("not a symbol")


@pytest.mark.parametrize("name", sorted(networks.NETWORKS))
def test_plot_network_matches_mxnet(name, recording_graphviz):
    """Same nodes (labels, colours, hidden weights) and edges (shape/type labels) as MXNet."""
    sym, shapes, expected = _build(name)
    dot = viz.plot_network(sym, shape=shapes, dtype={"data": "float32"})
    assert json.loads(json.dumps(dot.calls)) == expected["plot_network"]


def test_plot_network_options(recording_graphviz):
    """hide_weights=False drops weights from the hidden set; node_attrs override the look."""
    sym, _, _ = _build("mlp")
    dot = viz.plot_network(sym, title="t", save_format="png", hide_weights=False,
                           node_attrs={"shape": "oval"})
    assert dot.calls[0] == ["Digraph", {"name": "t", "format": "png"}]
    edges = [c[1]["head_name"] for c in dot.calls if c[0] == "edge"]
    assert "fc1_weight" in edges and all(c[1]["shape"] == "oval" for c in dot.calls if c[0] == "node")


def test_plot_network_without_graphviz_says_how_to_install(monkeypatch):
    """Without the graphviz package the error tells how to install it."""
    monkeypatch.setitem(sys.modules, "graphviz", None)
    with pytest.raises(MXNetError, match="pip install graphviz"):
        viz.plot_network(mxref.symbol.Variable("x"))


def test_plot_network_with_real_graphviz():
    """With the real graphviz package, a Digraph whose source names every layer."""
    pytest.importorskip("graphviz")
    sym, shapes, _ = _build("lenet")
    source = viz.plot_network(sym, shape=shapes).source
    assert "convolution0" in source and "softmax" in source
