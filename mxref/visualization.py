"""Looking at a Symbol: ``print_summary`` (a layer table) and ``plot_network`` (a graphviz Digraph).

Both read the graph the way MXNet 1.9.1's ``mx.viz`` does, from the symbol's JSON, and print or
draw the same rows, labels and colours. One difference on purpose: parameter counts are the sizes
of each layer's ``*_weight``/``*_bias``/``*_gamma``/``*_beta`` inputs as shape inference finds them,
so they are right for every layer type (MXNet guesses from attributes, and counts 0 for layers it
does not know and for a FullyConnected fed straight from a convolution).
"""
from __future__ import annotations

import json
import re
import warnings
from typing import Dict, List, Optional, Sequence

import numpy as np

from .base import MXNetError
from .symbol import Symbol

__all__ = ["print_summary", "plot_network"]

_PARAM_SUFFIXES = ("_weight", "_bias", "_gamma", "_beta")
_WEIGHT_LIKE = _PARAM_SUFFIXES + ("_moving_var", "_moving_mean", "_running_var", "_running_mean")
_COLORS = ("#8dd3c7", "#fb8072", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#b3de69", "#fccde5")


def _dims(text: str) -> List[str]:
    """``'(5, 5)'`` -> ``['5', '5']``."""
    return re.findall(r"\d+", text)


def _internal_values(symbol: Symbol, kind: str, given: Optional[Dict]) -> Dict[str, object]:
    """``{internal output name: shape or type}`` inferred from ``given``; ``{}`` when not given."""
    if given is None:
        return {}
    internals = symbol.get_internals()
    infer = internals.infer_shape if kind == "shape" else internals.infer_type
    _, values, _ = infer(**given)
    if values is None:
        raise ValueError(f"Input {'shape' if kind == 'shape' else 'type'} is incomplete")
    return dict(zip(internals.list_outputs(), values))


def print_summary(symbol: Symbol, shape: Dict[str, Sequence[int]] = None, line_length: int = 120,
                  positions: Sequence[float] = (.44, .64, .74, 1.)) -> None:
    """Print one row per layer: name (type), output shape without the batch axis, parameter count
    and the layers feeding it, then the total number of parameters.

    Parameters
    ----------
    symbol : Symbol
        The network.
    shape : dict of str to tuple, optional
        Input shapes (``{'data': (32, 784)}``); without them shapes and counts stay blank/zero.
    line_length : int
        Width of the table.
    positions : sequence of float
        Where the columns end, as fractions of ``line_length`` (or absolute, if above 1).
    """
    if not isinstance(symbol, Symbol):
        raise TypeError("symbol must be Symbol")
    shape_dict = _internal_values(symbol, "shape", shape)
    arg_shapes = {}
    if shape is not None:
        arg_shapes = dict(zip(symbol.list_arguments(), symbol.infer_shape(**shape)[0]))
    nodes = json.loads(symbol.tojson())["nodes"]
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]

    def print_row(fields):
        line = ""
        for field, end in zip(fields, positions):
            line = (line + str(field))[:end]
            line += " " * (end - len(line))
        print(line)

    print("_" * line_length)
    print_row(["Layer (type)", "Output Shape", "Param #", "Previous Layer"])
    print("=" * line_length)
    total = 0
    for i, node in enumerate(nodes):
        if node["op"] == "null" and i > 0:
            continue  # as MXNet: the first input is a row, other variables are not layers
        key = node["name"] if node["op"] == "null" else node["name"] + "_output"
        out_shape = shape_dict.get(key, (None,))[1:]
        previous, params = [], 0
        for nid, _, _ in node["inputs"]:
            source = nodes[nid]
            if source["op"] != "null" or nid == 0:
                previous.append(source["name"])
            elif source["name"].endswith(_PARAM_SUFFIXES) and source["name"] in arg_shapes:
                params += int(np.prod(arg_shapes[source["name"]]))
        total += params
        print_row([f"{node['name']}({node['op']})", "x".join(str(d) for d in out_shape), params,
                   previous[0] if previous else ""])
        for name in previous[1:]:
            print_row(["", "", "", name])
        print(("=" if i == len(nodes) - 1 else "_") * line_length)
    print(f"Total params: {total}")
    print("_" * line_length)


def _node_style(node: dict):
    """``(label, colour index)`` of an operator node, as MXNet draws it."""
    op, attrs = node["op"], node.get("attrs", {})
    if op == "Convolution":
        stride = "x".join(_dims(attrs["stride"])) if "stride" in attrs else "1"
        return f"Convolution\n{'x'.join(_dims(attrs['kernel']))}/{stride}, {attrs['num_filter']}", 1
    if op == "FullyConnected":
        return f"FullyConnected\n{attrs['num_hidden']}", 1
    if op == "BatchNorm":
        return node["name"], 3
    if op in ("Activation", "LeakyReLU"):
        return f"{op}\n{attrs.get('act_type', 'Leaky')}", 2
    if op == "Pooling":
        kernel = "x".join(_dims(attrs["kernel"])) if "kernel" in attrs else "[]"
        stride = "x".join(_dims(attrs["stride"])) if "stride" in attrs else "1"
        return f"Pooling\n{attrs['pool_type']}, {kernel}/{stride}", 4
    if op in ("Concat", "Flatten", "Reshape"):
        return node["name"], 5
    if op == "Softmax":
        return node["name"], 6
    return (attrs["op_type"] if op == "Custom" else node["name"]), 7


def plot_network(symbol: Symbol, title: str = "plot", save_format: str = "pdf",
                 shape: Dict[str, Sequence[int]] = None, dtype: Dict[str, object] = None,
                 node_attrs: Dict[str, str] = None, hide_weights: bool = True):
    """A ``graphviz.Digraph`` of the network: one node per layer, edges labelled with shapes/types.

    Needs the ``graphviz`` Python package (``pip install graphviz``); rendering the result
    (``dot.render()``, ``dot.view()``) also needs the Graphviz programs.

    Parameters
    ----------
    symbol : Symbol
        The network.
    title : str
        Name of the digraph.
    save_format : str
        Format used when rendering (``'pdf'``, ``'png'``, ...).
    shape, dtype : dict, optional
        Input shapes / types; when given, edges are labelled with them (batch axis dropped).
    node_attrs : dict of str to str, optional
        Graphviz attributes overriding the default node look.
    hide_weights : bool
        Leave out ``*_weight``, ``*_bias``, ``*_gamma``... inputs (default) for a cleaner picture.
    """
    try:
        from graphviz import Digraph
    except ImportError:
        raise MXNetError("plot_network needs the graphviz Python package: pip install graphviz "
                         "(and the Graphviz programs, e.g. apt-get install graphviz, to render)") from None
    if not isinstance(symbol, Symbol):
        raise TypeError("symbol must be a Symbol")
    shape_dict = _internal_values(symbol, "shape", shape)
    type_dict = _internal_values(symbol, "dtype", dtype)
    nodes = json.loads(symbol.tojson())["nodes"]
    names = [n["name"] for n in nodes]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        warnings.warn("There are multiple variables with the same name in your graph, this may "
                      "result in cyclic graph. Repeated names: " + ",".join(repeated), RuntimeWarning,
                      stacklevel=2)
    base_attr = {"shape": "box", "fixedsize": "true", "width": "1.3", "height": "0.8034",
                 "style": "filled"}
    base_attr.update(node_attrs or {})
    dot = Digraph(name=title, format=save_format)
    hidden = set()
    for node in nodes:
        attr = dict(base_attr)
        if node["op"] == "null":
            if node["name"].endswith(_WEIGHT_LIKE):
                if hide_weights:
                    hidden.add(node["name"])
                continue
            attr["shape"] = "oval"
            label, color = node["name"], 0
        else:
            label, color = _node_style(node)
        attr["fillcolor"] = _COLORS[color]
        dot.node(name=node["name"], label=label, **attr)

    for node in nodes:
        if node["op"] == "null":
            continue
        for nid, index, _ in node["inputs"]:
            source = nodes[nid]
            if source["name"] in hidden:
                continue
            key = source["name"]
            if source["op"] != "null":
                multi = "num_outputs" in source.get("attrs", {})
                key += f"_output{index}" if multi else "_output"
            attr = {"dir": "back", "arrowtail": "open", "label": ""}
            if shape_dict:
                attr["label"] = "x".join(str(d) for d in shape_dict[key][1:])
            if type_dict:
                attr["label"] += f"({type_dict[key].__name__})"
            dot.edge(tail_name=node["name"], head_name=source["name"], **attr)
    return dot
