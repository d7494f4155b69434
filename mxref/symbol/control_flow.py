"""``mx.sym.contrib.foreach / while_loop / cond``: trace a Python body into a subgraph, make one node.

The body runs once, on placeholder variables, inside ``AttrScope(__subgraph_name__=name)``, so
every node it makes is tagged as part of the subgraph. Then, as MXNet does:

1. outputs that are placeholders or come from outside the subgraph go through ``identity``, so
   every output is a node of the subgraph;
2. the subgraph is *cut* (``_cut``): an input of a subgraph node that comes from outside (a
   free variable, or any entry of the enclosing graph) becomes a new variable named after that
   entry, and the entry itself becomes an input of the control-flow node;
3. the node's inputs are ordered (data, states, the rest) and the ``*_locs`` parameters say which
   subgraph input (``list_inputs`` order) each one feeds.

The resulting graph has ONE node (``_foreach``, ``_while_loop`` or ``_cond``) holding the
subgraph(s) in ``node.subgraphs``; ``docs/architecture/control-flow.md`` explains the design.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Tuple

from .. import attribute
from ..attribute import AttrScope
from ..base import MXNetError
from ..graph import Graph, Node, NodeEntry, topo_sort
from ..ndarray.control_flow import flatten, regroup
from ..ops import registry
from . import register
from .symbol import Group, Symbol, var

__all__ = ["foreach", "while_loop", "cond"]

_SUBGRAPH = "__subgraph_name__"


class UnusedLoopInput(MXNetError, AssertionError):
    """A data array or state the loop body never reads (MXNet asserts on it, hence the base)."""


def _flat(args, what: str):
    """Flatten a nested list of Symbols; a grouped symbol is a leaf of ``n`` outputs."""
    flat, fmt = flatten(args, what, Symbol, lambda s: len(s._outputs) if len(s._outputs) > 1 else 0)
    return [Symbol([e]) for s in flat for e in s._outputs], fmt


def _uniq_name(sym: Symbol) -> str:
    """The placeholder's name for an outer symbol: ``<node>-<output index>`` (MXNet's spelling)."""
    return f"{sym.name}-{sym._outputs[0].index}"


def _unique_subgraph_name(name: str) -> str:
    outer = attribute.current()._attr.get(_SUBGRAPH, "")
    if outer:
        name = f"{outer}${name}"
    AttrScope._subgraph_names[name] += 1
    return name + str(AttrScope._subgraph_names[name] - 1)


def _in_subgraph(node: Node, name: str) -> bool:
    return node.attrs.get(_SUBGRAPH, "") == name


def _close(outputs: List[Symbol], name: str, num_out_data: int = None) -> List[NodeEntry]:
    """Step 1: every output becomes an entry of a subgraph node that is not an input. For
    ``foreach`` (``num_out_data`` given) a state named like a step output is copied too, so
    states and step outputs never share an entry (MXNet's rule, by name)."""
    from . import op
    inputs = set(Group(outputs).list_inputs()) if outputs else set()
    out_names = {o.name for o in outputs[:num_out_data]} if num_out_data is not None else set()
    closed = []
    for k, o in enumerate(outputs):
        e = o._outputs[0]
        is_state_like_output = num_out_data is not None and k >= num_out_data and o.name in out_names
        if o.name in inputs or not _in_subgraph(e.node, name) or is_state_like_output:
            e = op.identity(o)._outputs[0]
        closed.append(e)
    return closed


def _cut(outputs: List[NodeEntry], name: str) -> Dict[str, NodeEntry]:
    """Step 2: replace inputs from outside the subgraph by new variables; ``{var name: entry}``."""
    cut: Dict[Tuple[int, int], Node] = {}
    outer: Dict[str, NodeEntry] = {}
    for node in topo_sort(outputs):
        if not _in_subgraph(node, name):
            continue
        for k, e in enumerate(node.inputs):
            if _in_subgraph(e.node, name):
                continue
            key = (id(e.node), e.index)
            if key not in cut:
                var_name = Symbol([e]).list_outputs()[0]
                cut[key] = Node(None, var_name)
                outer[var_name] = NodeEntry(e.node, e.index, e.version)
            node.inputs[k] = NodeEntry(cut[key], 0, 0)
    return outer


class _Subgraph:
    """A traced, closed and cut subgraph: its graph, input names and the outer entries cut off."""

    def __init__(self, outputs: List[Symbol], name: str, num_out_data: int = None):
        entries = _close(outputs, name, num_out_data)
        self.outer = _cut(entries, name)
        self.graph = Graph(entries)
        idx = self.graph.indexed
        self.inputs = [idx.nodes[nid] for nid in idx.input_nodes]
        self.input_names = [n.name for n in self.inputs]
        if len(set(self.input_names)) != len(self.input_names):
            raise MXNetError(f"the inputs of subgraph {name} don't have unique names: {self.input_names}")

    def outer_input(self, k: int) -> Tuple[tuple, NodeEntry]:
        """``(dedup key, entry)`` of the enclosing graph feeding subgraph input ``k`` when it is not
        a placeholder: a cut entry, or a copy of a variable the body made itself."""
        name = self.input_names[k]
        if name in self.outer:
            e = self.outer[name]
            return ("entry", id(e.node), e.index), e
        copy = Node(None, name, dict(self.inputs[k].attrs))
        return ("copy", id(copy)), NodeEntry(copy, 0, 0)


def _locs(values) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


def _make(op_name: str, subgraphs: List[_Subgraph], inputs: List[NodeEntry], **params) -> Symbol:
    """The control-flow node: ``num_args`` counts the subgraphs too, as MXNet does."""
    attrs = {k: _locs(v) if isinstance(v, list) else str(v) for k, v in params.items()}
    attrs["num_args"] = str(len(inputs) + len(subgraphs))
    out = register.create(registry.get(op_name), op_name, [Symbol([e]) for e in inputs], params=attrs)
    node = out._outputs[0].node
    node.subgraphs = [s.graph for s in subgraphs]
    node._params = None
    return out


def _trace(name: str, placeholders_of: List[Symbol], build: Callable):
    """Run ``build(placeholders)`` in the subgraph's attribute scope; returns what it returns."""
    with AttrScope(**{_SUBGRAPH: name}):
        placeholders = [var(_uniq_name(s)) for s in placeholders_of]
        return build(placeholders)


def foreach(body: Callable, data, init_states, name: str = "foreach"):
    """Symbolic ``foreach``: ``body(data_slice, states) -> (outputs, new_states)`` traced once
    into a subgraph, run by one ``_foreach`` node over axis 0 of ``data``.

    Returns ``(outputs, states)`` in the nesting the body gives (see ``mx.nd.contrib.foreach``).
    """
    flat_data, data_fmt = _flat(data, "foreach input")
    flat_states, state_fmt = _flat(init_states, "foreach states")
    name = _unique_subgraph_name(name)

    def build(ph):
        eles, _ = regroup(ph[:len(flat_data)], data_fmt)
        states, _ = regroup(ph[len(flat_data):], state_fmt)
        outs, new_states = body(eles, states)
        outs, out_fmt = _flat(outs, "foreach output")
        new_states, new_fmt = _flat(new_states, "foreach loop_vars")
        if new_fmt != state_fmt:
            raise MXNetError(f"foreach: the body returns states of format {new_fmt}, but the "
                             f"initial states have format {state_fmt}")
        return _Subgraph(outs + new_states, name, len(outs)), len(outs), out_fmt
    sub, num_out_data, out_fmt = _trace(name, flat_data + flat_states, build)
    ins = [s._outputs[0] for s in flat_data + flat_states]
    data_locs, state_locs, remain_locs = [], [], []
    for what, syms, locs in (("data", flat_data, data_locs), ("state", flat_states, state_locs)):
        for k, s in enumerate(syms):
            if _uniq_name(s) not in sub.input_names:
                raise UnusedLoopInput(f"foreach: the {what} arrays have to be used in the loop "
                                      f"body ({what} {k}, '{s.name}', is not)")
            locs.append(sub.input_names.index(_uniq_name(s)))
    for k in range(len(sub.inputs)):
        if k not in data_locs and k not in state_locs:
            ins.append(sub.outer_input(k)[1])
            remain_locs.append(k)
    num_states = len(flat_states)
    ret = _make("_foreach", [sub], ins, num_outputs=num_out_data + num_states,
                num_out_data=num_out_data, in_data_locs=data_locs, in_state_locs=state_locs,
                remain_locs=remain_locs)
    outs, _ = regroup([ret[i] for i in range(num_out_data)], out_fmt)
    states, _ = regroup([ret[num_out_data + i] for i in range(num_states)], state_fmt)
    return outs, states


def _union_inputs(subs: List[_Subgraph], placeholder_entries: Dict[str, Tuple[tuple, NodeEntry]],
                  by_name: bool = False):
    """The node's inputs for several subgraphs, each outer entry once; per subgraph, the node
    input feeding each of its inputs. Placeholders (loop variables) map by name to their entry.
    ``by_name`` (``cond``, as MXNet) also shares one input among subgraph inputs of one name, so
    a variable each branch makes for itself (``mx.sym.var('q')``) is one input of the node."""
    inputs: List[NodeEntry] = []
    where: Dict[tuple, int] = {}
    all_locs = []
    for sub in subs:
        locs = []
        for k, in_name in enumerate(sub.input_names):
            key, entry = placeholder_entries.get(in_name) or sub.outer_input(k)
            key = ("name", in_name) if by_name else key
            if key not in where:
                where[key] = len(inputs)
                inputs.append(entry)
            locs.append(where[key])
        all_locs.append(locs)
    return inputs, all_locs


def _scalar_int(value, what: str) -> int:
    if hasattr(value, "asscalar"):
        value = value.asscalar()
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"Cannot convert {what} to python int") from None


def while_loop(cond: Callable, func: Callable, loop_vars, max_iterations=None, name: str = "while_loop"):
    """Symbolic ``while_loop``: ``cond(*loop_vars)`` and ``func(*loop_vars) -> (step_output,
    new_loop_vars)`` traced into two subgraphs run by one ``_while_loop`` node.

    Returns ``(outputs, loop_vars)``; each output has ``max_iterations`` rows (see
    ``mx.nd.contrib.while_loop``).
    """
    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    max_iterations = _scalar_int(max_iterations, "max_iteration")
    flat_vars, var_fmt = _flat(loop_vars, "while loop_vars")
    if not flat_vars:
        raise ValueError("loop_vars should contain at least one element")

    def build_cond(ph):
        result = cond(*regroup(ph, var_fmt)[0]) if isinstance(var_fmt, list) else cond(ph[0])
        if not isinstance(result, Symbol):
            raise ValueError("Return of cond must be a Symbol")
        return _Subgraph([result], cond_name), 0, None

    def build_func(ph):
        args = regroup(ph, var_fmt)[0] if isinstance(var_fmt, list) else [ph[0]]
        step_output, new_vars = func(*args)
        step_output = [] if step_output is None else step_output
        new_vars = [] if new_vars is None else new_vars
        outs, out_fmt = _flat(list(step_output) if isinstance(step_output, tuple) else step_output,
                              "while output")
        new_vars, _ = _flat(list(new_vars) if isinstance(new_vars, tuple) else new_vars,
                            "while loop_vars")
        if len(new_vars) != len(flat_vars):
            raise ValueError("The number of loop_vars should be consistent during the loop")
        return _Subgraph(outs + new_vars, func_name), len(outs), out_fmt

    cond_name = _unique_subgraph_name(name + "_cond")
    cond_sub, _, _ = _trace(cond_name, flat_vars, build_cond)
    func_name = _unique_subgraph_name(name + "_func")
    func_sub, num_out_data, out_fmt = _trace(func_name, flat_vars, build_func)
    placeholders = {_uniq_name(s): (("var", k), s._outputs[0]) for k, s in enumerate(flat_vars)}
    inputs, (cond_locs, func_locs) = _union_inputs([cond_sub, func_sub], placeholders)
    var_locs = []
    for k, s in enumerate(flat_vars, 1):
        if _uniq_name(s) not in func_sub.input_names:
            raise ValueError(f"The {k}-th loop_var doesn't involve into the computation")
        var_locs.append(func_sub.input_names.index(_uniq_name(s)))
    num_outputs = num_out_data + len(flat_vars)
    ret = _make("_while_loop", [cond_sub, func_sub], inputs, cond_input_locs=cond_locs,
                func_input_locs=func_locs, func_var_locs=var_locs, max_iterations=max_iterations,
                num_out_data=num_out_data, num_outputs=num_outputs)
    outs, _ = regroup([ret[i] for i in range(num_out_data)], out_fmt) if out_fmt is not None else ([], [])
    final, _ = regroup([ret[i] for i in range(num_out_data, num_outputs)], var_fmt)
    return outs, final


def cond(pred, then_func: Callable, else_func: Callable, name: str = "cond"):
    """Symbolic ``cond``: ``pred``, ``then_func()`` and ``else_func()`` traced into three subgraphs
    run by one ``_cond`` node; returns the outputs in the nesting ``then_func`` gives."""
    def branch(fn, sub_name):
        def build(_):
            outs, fmt = _flat(fn(), "cond outputs")
            return _Subgraph(outs, sub_name), len(outs), fmt
        return build

    subs = []
    for fn, suffix in ((lambda: pred, "_pred"), (then_func, "_then"), (else_func, "_else")):
        sub_name = _unique_subgraph_name(name + suffix)
        subs.append(_trace(sub_name, [], branch(fn, sub_name)))
    (cond_sub, n_pred, _), (then_sub, n_then, then_fmt), (else_sub, n_else, _) = subs
    if n_pred != 1:
        raise ValueError("pred should always be a single output")
    if n_then != n_else:
        raise ValueError("Number of outputs differs between then-branch and else-branch")
    inputs, (cond_locs, then_locs, else_locs) = _union_inputs([cond_sub, then_sub, else_sub], {},
                                                              by_name=True)
    ret = _make("_cond", [cond_sub, then_sub, else_sub], inputs, cond_input_locs=cond_locs,
                then_input_locs=then_locs, else_input_locs=else_locs, num_outputs=n_then)
    outs, _ = regroup([ret[i] for i in range(n_then)], then_fmt)
    return outs
