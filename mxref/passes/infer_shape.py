"""Graph pass ``infer_shape``, and the forward/backward sweep it shares with ``infer_type``.

The sweep (nnvm's ``InferAttr``) keeps one value per node entry. It starts from the values the
caller gives for input variables, then from the variables' own hints (``__shape__``), and calls
each operator's rule in topological order, then in reverse order, and so on while the number of
unknown entries keeps falling. A rule may fill in unknown *inputs* as well as outputs (and may
take the known output values as a third argument, so outputs can inform inputs): that is how
``fc1_weight``'s shape ``(10, 5)`` follows from the data shape ``(4, 5)`` and ``num_hidden=10``.

In shapes, ``None`` is an unknown shape and ``0`` an unknown dimension (MXNet 1.x's convention).

A node with ``extra["output_like"]`` (a list, per output, of the entry it mirrors or ``None``)
takes each output's shape and dtype from that entry instead of calling its operator's rule; the
gradient pass marks backward nodes this way (``fc1_weight``'s gradient is like ``fc1_weight``).
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from ..base import MXNetError
from ..graph import Graph, register_pass
from ..ops import registry
from ..ops.registry import _to_shape

__all__ = ["AttrRule", "infer_graph_attr", "infer_shape", "shape_is_known", "merge_shape", "SHAPE_RULE"]

Shape = Optional[Tuple[int, ...]]


class AttrRule(NamedTuple):
    """What the sweep needs to know about one attribute ("shape" or "dtype")."""

    name: str                                   # graph attribute written: graph.attrs[name]
    op_rule: Callable                           # opdef -> its rule (params, in_values) -> (ins, outs)
    hint_key: str                               # variable attribute holding a user hint
    parse_hint: Callable[[str], Any]
    is_known: Callable[[Any], bool]
    merge: Callable[[Any, Any], Any]            # raises ValueError when the two disagree
    fmt: Callable[[Any], str]
    pass_name: str                              # for messages: "infer_shape" / "infer_type"


def shape_is_known(shape: Shape) -> bool:
    return shape is not None and 0 not in shape


def merge_shape(old: Shape, new: Shape) -> Shape:
    """The shape that agrees with both (unknown dimensions filled in), or ``ValueError``."""
    if old is None:
        return None if new is None else tuple(new)
    if new is None:
        return old
    if len(old) != len(new) or any(a and b and a != b for a, b in zip(old, new)):
        raise ValueError
    return tuple(a or b for a, b in zip(old, new))


SHAPE_RULE = AttrRule("shape", lambda op: op.infer_shape, "__shape__", _to_shape, shape_is_known,
                      merge_shape, lambda s: "unknown" if s is None else str(tuple(s)), "infer_shape")


_TAKES_OUTPUTS: Dict[Any, bool] = {}


def _call_rule(fn: Callable, params: dict, ins: list, outs: list):
    """Call an op's rule, letting known outputs inform the inputs where the rule allows it.

    The registry's rules see input values only; the shared elementwise rules are symmetric, so
    the output joins the inputs, and a rule that takes a third argument gets the output values.
    That is what lets a backward sweep carry shapes from an output back to an input.
    """
    if fn in (registry.elemwise_shape, registry.elemwise_type) and len(outs) == 1:
        new_in, new_out = fn(params, list(ins) + list(outs))
        return new_in[:len(ins)], new_out
    takes = _TAKES_OUTPUTS.get(fn)
    if takes is None:
        try:
            positional = [p for p in inspect.signature(fn).parameters.values()
                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            takes = len(positional) >= 3
        except (TypeError, ValueError):
            takes = False
        _TAKES_OUTPUTS[fn] = takes
    return fn(params, ins, outs) if takes else fn(params, ins)


def _input_names(node) -> List[str]:
    names = node.op.list_inputs(node.params)
    return names + [f"input{i}" for i in range(len(names), len(node.inputs))]


def infer_graph_attr(graph: Graph, rule: AttrRule,
                     inputs: Union[Dict[str, Any], Sequence[Any], None] = None) -> Graph:
    """Run the sweep for ``rule``; writes ``graph.attrs[rule.name]`` (by entry id) and the count
    of unknown entries ``graph.attrs[rule.name + '_num_unknown_nodes']``.

    ``inputs`` gives values for input variables, by name or as a list in ``input_nodes`` order;
    values already in ``graph.attrs[rule.name]`` are kept as a starting point.
    """
    idx = graph.indexed
    values: List[Any] = list(graph.attrs.get(rule.name) or [])
    if len(values) != idx.num_node_entries:
        values = [None] * idx.num_node_entries

    def merge_into(eid: int, new, where: Callable[[], str]) -> None:
        try:
            values[eid] = rule.merge(values[eid], new)
        except ValueError:
            raise MXNetError(f"{rule.pass_name}: {where()} has {rule.name} {rule.fmt(values[eid])} "
                             f"but {rule.fmt(new)} is inferred") from None

    for pos, nid in enumerate(idx.input_nodes):
        node, eid = idx.nodes[nid], idx.entry_id(nid, 0)
        given = (inputs.get(node.name) if isinstance(inputs, dict)
                 else inputs[pos] if inputs is not None and pos < len(inputs) else None)
        if given is not None:
            merge_into(eid, given, lambda node=node: f"input '{node.name}'")
        hint = node.attrs.get(rule.hint_key)
        if hint is not None and not rule.is_known(values[eid]):
            try:
                parsed = rule.parse_hint(hint)
            except (ValueError, MXNetError):
                raise MXNetError(f"{rule.pass_name}: variable '{node.name}' has a bad "
                                 f"{rule.hint_key} attribute {hint!r}") from None
            merge_into(eid, parsed, lambda node=node, hint=hint:
                       f"variable '{node.name}' ({rule.hint_key}={hint})")

    # A node is finished once its rule has seen all its inputs and outputs known; the sweeps go on
    # (one more, as MXNet's InferAttr does) until every node is, so that a node whose entries were
    # all filled in by its neighbours still checks them (transpose(v) + v with v of shape (2, 3)).
    finished = set()

    def infer_node(nid: int) -> None:
        node = idx.nodes[nid]
        if node.is_variable or nid in finished:
            return
        in_eids = [idx.entry_id(e) for e in node.inputs]
        out_eids = [idx.entry_id(nid, i) for i in range(node.num_outputs())]
        like = node.extra.get("output_like")
        if like is not None:
            for i, (eid, src) in enumerate(zip(out_eids, like)):
                if src is not None:
                    src_eid = idx.entry_id(src)
                    merge_into(eid, values[src_eid],
                               lambda i=i: f"output {i} of {node.name} ({node.op.name})")
                    merge_into(src_eid, values[eid],
                               lambda src=src: f"entry {src.node.name}[{src.index}]")
            finished.add(nid)
            return
        ins = [values[e] for e in in_eids]
        try:
            new_in, new_out = _call_rule(rule.op_rule(node.op), node.params, ins,
                                         [values[e] for e in out_eids])
        except MXNetError as exc:
            raise MXNetError(f"{rule.pass_name}: error in operator {node.name} ({node.op.name}) "
                             f"with input {rule.name}s {[rule.fmt(v) for v in ins]}: {exc}") from None
        except Exception as exc:  # a rule not written for unknown inputs: wait for more information
            if all(rule.is_known(v) for v in ins):
                raise MXNetError(f"{rule.pass_name}: operator {node.name} ({node.op.name}) failed "
                                 f"on input {rule.name}s {[rule.fmt(v) for v in ins]}: {exc!r}") from exc
            return
        if len(new_in) != len(in_eids) or len(new_out) != len(out_eids):
            raise MXNetError(f"{rule.pass_name}: the rule of {node.op.name} returned "
                             f"{len(new_in)} inputs / {len(new_out)} outputs for node {node.name}, "
                             f"which has {len(in_eids)} / {len(out_eids)}")
        names = _input_names(node)
        outs = node.op.list_outputs(node.params)
        for k, (eid, v) in enumerate(zip(in_eids, new_in)):
            merge_into(eid, v, lambda k=k: f"operator {node.name} ({node.op.name}): input '{names[k]}'")
        for k, (eid, v) in enumerate(zip(out_eids, new_out)):
            merge_into(eid, v, lambda k=k: f"operator {node.name} ({node.op.name}): output '{outs[k]}'")
        if all(rule.is_known(v) for v in ins) and all(rule.is_known(values[e]) for e in out_eids):
            finished.add(nid)

    def count_unknown() -> int:
        return sum(not rule.is_known(v) for v in values)

    unknown, sweep, last_sweep = len(values) + 1, 0, False
    while True:
        order = range(idx.num_nodes) if sweep % 2 == 0 else reversed(range(idx.num_nodes))
        for nid in order:
            infer_node(nid)
        last, unknown, sweep = unknown, count_unknown(), sweep + 1
        more = 0 < unknown < last
        if not more and not last_sweep:
            last_sweep = True
            more = any(not n.is_variable and nid not in finished for nid, n in enumerate(idx.nodes))
        if not more:
            break
    graph.attrs[rule.name] = values
    graph.attrs[rule.name + "_num_unknown_nodes"] = unknown
    return graph


@register_pass("infer_shape", requires=(), provides=("shape", "shape_num_unknown_nodes"))
def infer_shape(graph: Graph, shape_inputs: Union[Dict[str, Shape], Sequence[Shape], None] = None,
                **_) -> Graph:
    """Shapes of every entry (``graph.attrs['shape']``) from the input shapes and ``__shape__`` hints.

    ``shape_inputs`` maps variable names to shapes (or lists them in ``indexed.input_nodes``
    order); ``graph.attrs['shape_inputs']`` is used when it is not given.
    """
    if shape_inputs is None:
        shape_inputs = graph.attrs.get("shape_inputs")
    return infer_graph_attr(graph, SHAPE_RULE, shape_inputs)
