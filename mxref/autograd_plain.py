"""The plain backward: walk the recorded tape from the heads back to the variables, node by node.

This is the specification of ``autograd.backward`` and ``autograd.grad``, as micrograd's
``backward`` is of its engine: read it first. Recording (``autograd.py``) left every operator as a
``Node`` whose inputs are the entries of its input arrays and whose ``extra['ag']`` keeps the
forward values its backward reads. To differentiate:

1. sort the nodes the heads depend on, inputs first (the *tape*), and seed each head's entry with
   its head gradient (ones by default);
2. visit the tape in reverse: sum the gradients that reached each output of the node, build the
   node's backward with its operator's ``gradient`` (graph nodes: ``_backward_sin``, sums, ...),
   run those nodes through ``imperative.invoke`` on the kept forward values, and hand each input's
   gradient to the node that produced that input;
3. write (``grad_req='write'``) or add (``'add'``) what reached each variable into its ``.grad``.

``autograd.py`` holds the tuned form, which runs unless ``MXREF_PLAIN_PATHS=1``, pure mode or
``imperative.use_plain`` selects this one. It gives the same gradients bit for bit
(``tests/test_plain_paths.py``): it builds the same backward nodes with the ``gradient`` pass
in one go, keeps that as a plan per graph structure, and frees each value after its last reader.
The same rules hold here: a sum of several gradients is one ``add_n`` in arrival order; a
zero gradient (from ``zeros_like``, or none at all) is left out of sums; an operator without a
gradient may only receive zero gradients. With ``create_graph`` the backward operators are
recorded too, linked to the forward values they read, so the result can be differentiated again.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Union

from . import autograd as ag
from .base import MXNetError
from .graph import Node, NodeEntry, topo_sort
from .ndarray import imperative
from .ndarray.ndarray import NDArray, _memoryless
from .passes.gradient import is_zero_entry

__all__ = ["backward", "grad", "store"]


def backward(heads: Union[NDArray, Sequence[NDArray]], head_grads=None, retain_graph: bool = False,
             train_mode: bool = True) -> None:
    """``autograd.backward``: the gradients of ``heads`` into the ``.grad`` of every variable."""
    ys, ograds = ag._heads(heads, head_grads)     # the heads' entries; ones where no gradient given
    tape = topo_sort(ys)
    xs = ag._targets(tape, None)                 # the variables with grad_req 'write' or 'add'
    prev, ag._state.storing_grads = ag._state.storing_grads, True
    try:
        grads = _walk(tape, ys, ograds, retain_graph, False, train_mode)
    finally:
        ag._state.storing_grads = prev
    with ag.pause():
        for x in xs:
            store(x.node.extra["ag"], _gradient_of(grads, x))


def store(saved, v: NDArray) -> None:
    """Step 3 for one variable (``saved``: its ``extra['ag']``): write its gradient ``v`` into its
    ``.grad`` (``grad_req='write'``) or add it (``'add'``). The tuned backward stores the same way."""
    if saved.grad._shape != v._shape:
        raise MXNetError(f"backward: the gradient has shape {v._shape}, but the variable's grad "
                         f"buffer has shape {saved.grad._shape}")
    if saved.grad_req == "add":
        imperative.invoke_name("elemwise_add", [saved.grad, v], {}, out=saved.grad)
    elif not ag._same_buffer(v, saved.grad):      # a hybridized block may have written it already
        imperative.invoke_name("_copy", [v], {}, out=saved.grad)
    saved.fresh = True


def grad(heads: Union[NDArray, Sequence[NDArray]], variables: Union[NDArray, Sequence[NDArray]],
         head_grads=None, retain_graph: Optional[bool] = None, create_graph: bool = False,
         train_mode: bool = True) -> List[NDArray]:
    """``autograd.grad``: the gradients of ``heads`` with respect to ``variables``, as new arrays
    (each a copy, so that none is an alias of a head gradient, a forward value or another one)."""
    variables = [variables] if isinstance(variables, NDArray) else list(variables)
    if not variables:
        raise MXNetError("grad: variables cannot be an empty list")
    ys, ograds = ag._heads(heads, head_grads)
    tape = topo_sort(ys)
    xs = ag._targets(tape, variables)
    on_tape = {id(n) for n in tape}
    for i, x in enumerate(xs):
        if id(x.node) not in on_tape:
            raise MXNetError(f"Cannot differentiate with respect to the {i + 1}-th variable "
                             f"'{x.node.name}' because it is unreachable from the outputs.")
    prev, ag._state.storing_grads = ag._state.storing_grads, False
    try:
        grads = _walk(tape, ys, ograds, create_graph if retain_graph is None else retain_graph,
                      create_graph, train_mode)
    finally:
        ag._state.storing_grads = prev
    with ag._Scope(create_graph, None):
        return [imperative.invoke_name("_copy", [_gradient_of(grads, x)], {})[0] for x in xs]


def _walk(tape: List[Node], ys, ograds, retain_graph: bool, create_graph: bool, train_mode: bool) -> Dict:
    """Step 2: ``{(id(node), index): [gradients]}`` left for the variables (``None``: zero)."""
    if any("ag" not in n.extra for n in tape):
        raise MXNetError(ag._NOT_IN_GRAPH)      # part of the graph was freed by an earlier backward
    grads = {(id(y.node), y.index): [g] for y, g in zip(ys, ograds)}
    # With create_graph the backward ops are recorded, linked to the forward values they read;
    # not when those are freed (no retain_graph): then they are constants of the new graph.
    link = create_graph and retain_graph
    with ag._Scope(create_graph, train_mode):
        for node in reversed(tape):
            if node.is_variable:
                continue
            outs = range(len(node.extra["ag"].outs))
            out_grads = [_sum(grads.pop((id(node), i), [])) for i in outs]
            for e, g in zip(node.inputs, _node_backward(node, out_grads, link)):
                grads.setdefault((id(e.node), e.index), []).append(g)
            if not retain_graph:
                node.extra.clear()       # its forward values are no longer needed
    return grads


def _node_backward(node: Node, out_grads: List[Optional[NDArray]], link: bool) -> List[Optional[NDArray]]:
    """The gradient of each input of ``node`` (``None``: zero) from those of its outputs."""
    if node.op.gradient is None:
        if any(g is not None for g in out_grads):
            raise MXNetError(f"Operator {node.op.name} is non-differentiable because it didn't "
                             f"register a gradient (node {node.name}).")
        return [None] * len(node.inputs)
    heads = [NodeEntry(Node(None, f"ograd{i}"), 0, 0) for i in range(len(out_grads))]
    head_of = {id(h.node): i for i, h in enumerate(heads)}
    values = {(id(e.node), e.index): _forward(v, e, link)       # the inputs the node kept
              for e, v in zip(node.inputs, node.extra["ag"].ins) if v is not None}

    def value(e: NodeEntry) -> NDArray:
        """The value of an entry of the node's backward graph, running the backward ops it needs."""
        key = (id(e.node), e.index)
        if key not in values:
            n = e.node
            if "ag" in n.extra:      # a forward output: kept, or a stand-in read for its shape
                values[key] = _forward(n.extra["ag"].outs[e.index], e, link)
            elif id(n) in head_of:   # the gradient of one of the node's outputs (zeros if none)
                g = out_grads[head_of[id(n)]]
                values[key] = g if g is not None else imperative.invoke_name(
                    "zeros_like", [value(NodeEntry(node, head_of[id(n)], 0))], {})[0]
            else:
                ins = [value(i) for i in n.inputs]
                if "function" in n.extra:    # an autograd.Function: its Python backward
                    outs = ag._function.run_backward(n.extra["function"], n.extra["input_shapes"], ins)
                else:
                    outs = imperative.invoke(n.op, None, n.params, ins)
                values.update(((id(n), k), o) for k, o in enumerate(outs))
        return values[key]

    def is_zero(g: Optional[NodeEntry]) -> bool:     # a zeros op, or a zero output gradient passed on
        return is_zero_entry(g) or (id(g.node) in head_of and out_grads[head_of[id(g.node)]] is None)

    return [None if is_zero(g) else value(g) for g in node.op.gradient(node, heads)]


def _forward(v, entry: NodeEntry, link: bool) -> NDArray:
    """A kept forward value (linked to its entry if ``link``), or for one not kept, its
    ``(shape, dtype, ctx)``: a stand-in without memory, for a backward op that reads only the shape."""
    if type(v) is tuple:
        return _memoryless(v[0], v[2], v[1], *v[3:])
    return ag._with_entry(v, entry) if link else v


def _sum(gs: List[Optional[NDArray]]) -> Optional[NDArray]:
    """The sum of the gradients that reached one entry, in arrival order, zeros left out."""
    gs = [g for g in gs if g is not None]
    if len(gs) <= 1:
        return gs[0] if gs else None
    return imperative.invoke_name("add_n", gs, {"num_args": len(gs)})[0]


def _gradient_of(grads: Dict, x: NodeEntry) -> NDArray:
    """Step 3's input: what reached variable ``x``, zeros if nothing did."""
    g = _sum(grads.get((id(x.node), x.index), []))
    if g is None:
        shape, dtype, ctx = x.node.extra["ag"].outs[0][:3]
        g = imperative.invoke_name("zeros_like", [_memoryless(shape, ctx, dtype)], {})[0]
    return g
