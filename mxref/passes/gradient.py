"""``gradient``: the backward graph of ``ys`` with respect to ``xs`` (nnvm's Gradient pass).

Walk the forward nodes in reverse topological order. Each node's output gradients (one list per
output, one item per consumer) are first summed by the aggregation function, then handed to the
op's ``gradient(node, ograds)``, which builds backward nodes and returns one gradient entry per
input; those are appended to the inputs' lists. The gradient of each ``x`` is the sum of its list.

Mirroring (``mirror_fun``): nodes the predicate selects are copied (``<name>_mirror``) and the
copies, not the originals, feed the backward nodes. The copies run during backward, so the
forward outputs they replace can be freed early: memory traded for recomputation (``mirror.py``).
In MXNet 1.x only the backward of a mirrored node reads the copies; a Convolution's backward
still reads the original ReLU output, which keeps it alive. ``mirror_everywhere=True`` makes every
backward node read the recomputed copies, which is what lets recomputation save memory.

``full_graph`` builds what MXNet's executor binds for training: forward outputs followed by one
gradient per ``x``, with head gradients read from variables ``_head_grad_<i>``.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence

from ..base import MXNetError, env_int
from ..graph import Graph, Node, NodeEntry, make_node, register_pass, topo_sort
from ..ops import registry

__all__ = ["gradient", "aggregate_gradient", "full_graph", "is_zero_entry", "ZERO_OPS"]

ZERO_OPS = ("zeros_like", "_zeros")


def is_zero_entry(entry: Optional[NodeEntry], zero_ops: Sequence[str] = ZERO_OPS) -> bool:
    """True for a missing gradient or one produced by a zeros operator."""
    return entry is None or (entry.node.op is not None and entry.node.op.name in zero_ops)


def _entry(node: Node) -> NodeEntry:
    return NodeEntry(node, 0, 0)


def aggregate_gradient(grads: List[NodeEntry]) -> NodeEntry:
    """Sum one entry's gradients as MXNet's executor does (``AggregateGradient``).

    Zero gradients are dropped (keeping at least one). Fewer than ``MXNET_EXEC_INPLACE_GRAD_SUM_CAP``
    (8) terms become one ``ElementWiseSum``; more become a chain of ``_grad_add`` nodes, each made
    to wait (control dependency) for the previous partial sum, so the sum runs in a fixed order and
    each partial sum can overwrite the previous one; a final ``identity`` hides the chain.
    """
    if not grads:
        raise MXNetError("aggregate_gradient: nothing to sum")
    kept = [g for g in grads if not is_zero_entry(g)] or grads[:1]
    if len(kept) == 1:
        return kept[0]
    if len(kept) < env_int("MXNET_EXEC_INPLACE_GRAD_SUM_CAP", 8):
        return _entry(make_node("ElementWiseSum", kept, "sum_grad", params={"num_args": len(kept)}))
    total = kept[0]
    for i in range(1, len(kept)):
        # the invariant that makes this safe: kept[i-1] never depends on kept[i]
        if kept[i - 1].node is not kept[i].node:
            kept[i].node.control_deps.append(total.node)
        total = _entry(make_node("_grad_add", [total, kept[i]], f"sum_grad_{i}"))
    return _entry(make_node("identity", [total], "sum_grad_final"))


# Operators whose gradient is not zero when every output gradient is: loss layers start the
# backward on their own; user code (Custom, autograd.Function) and control flow (a loss layer in
# the body) may do the same.
_OWN_GRADIENT_OPS = ("Custom", "_CustomFunction", "_foreach", "_while_loop", "_cond")


def _propagates_zeros(op) -> bool:
    """Whether zero output gradients give zero input gradients without building the op's backward
    (MXNet's MakeNonlossGradNode: the zero propagation that prunes a stop_gradient'ed branch)."""
    return not op.loss_layer and op.name not in _OWN_GRADIENT_OPS


def _zeros_like(entry: NodeEntry, name: str) -> Optional[NodeEntry]:
    if not registry.exists("zeros_like"):
        return None
    return _entry(make_node("zeros_like", [entry], name))


def _mirror_map(topo: List[Node], mirror_fun: Callable[[Node], bool]) -> Dict[int, Node]:
    """Copies of the nodes ``mirror_fun`` selects, wired to the copies of their inputs."""
    mirror: Dict[int, Node] = {}
    for node in topo:
        if node.is_variable or not mirror_fun(node):
            mirror[id(node)] = node
            continue
        inputs = [NodeEntry(mirror[id(e.node)], e.index, e.version) for e in node.inputs]
        deps = [mirror[id(d)] for d in node.control_deps]
        copy = Node(node.op, node.name + "_mirror", node.attrs, inputs, deps)
        copy._params = node._params
        copy.subgraphs = node.subgraphs
        copy.extra = dict(node.extra, mirror_of=node)
        mirror[id(node)] = copy
    return mirror


class _GradEntry:
    __slots__ = ("grads", "sum", "need_attr_hint")

    def __init__(self):
        self.grads: List[NodeEntry] = []
        self.sum: Optional[NodeEntry] = None
        self.need_attr_hint = True


@register_pass("gradient", provides=("grad_of",))
def gradient(graph: Graph, xs: Sequence[NodeEntry] = None, ys: Sequence[NodeEntry] = None,
             ys_out_grad: Sequence[NodeEntry] = None, aggregate_fun: Callable = aggregate_gradient,
             mirror_fun: Optional[Callable[[Node], bool]] = None,
             attr_hint_fun: Optional[Callable] = None, zero_ops: Sequence[str] = ZERO_OPS,
             copy_op: Optional[str] = "_copy", mirror_everywhere: bool = False,
             **_ignored) -> Graph:
    """The gradient graph: output ``i`` is the gradient of ``xs[i]`` (attribute ``grad_of``).

    ``ys`` default to the graph's outputs; ``xs`` and ``ys_out_grad`` (head gradients, one per
    ``y``) may also come from the graph attributes ``grad_xs`` / ``grad_ys_out_grad``, as in nnvm.
    When two ``xs`` would share one gradient entry, ``copy_op`` gives the second its own copy.
    ``mirror_everywhere`` points every backward node at the mirror copies (see the module doc).

    Raises ``MXNetError`` if an ``x`` is unreachable from ``ys`` or an op without a gradient
    receives a non-zero gradient.
    """
    ys = list(ys if ys is not None else graph.attrs.get("grad_ys", graph.outputs))
    xs = list(xs if xs is not None else graph.attrs.get("grad_xs", ()))
    ys_out_grad = list(ys_out_grad if ys_out_grad is not None else graph.attrs.get("grad_ys_out_grad", ()))
    mirror_fun = mirror_fun or graph.attrs.get("grad_mirror_fun")
    mirror_everywhere = mirror_everywhere or graph.attrs.get("grad_mirror_everywhere", False)
    if len(ys) != len(ys_out_grad):
        raise MXNetError(f"gradient: {len(ys)} outputs but {len(ys_out_grad)} head gradients")
    topo = topo_sort(ys)
    out_grads: Dict[int, List[_GradEntry]] = {id(n): [_GradEntry() for _ in range(n.num_outputs())]
                                              for n in topo}
    for y, g in zip(ys, ys_out_grad):
        # NOTE: one entry may be several outputs (a recurrent cell returns h as output and state);
        # its head gradients add up (nnvm assigns, as MXNet's CachedOp copies duplicates first).
        out_grads[id(y.node)][y.index].grads.append(g)
    for i, x in enumerate(xs):
        if id(x.node) not in out_grads:
            raise MXNetError(f"Cannot differentiate with respect to the {i + 1}-th variable "
                             f"'{x.node.name}' because it is unreachable from the outputs.")
    mirror = _mirror_map(topo, mirror_fun) if mirror_fun is not None else {}
    forward = {id(n) for n in topo}

    def summed(gentry: _GradEntry, like: NodeEntry) -> Optional[NodeEntry]:
        grads = gentry.grads or [_zeros_like(like, f"{like.node.name}_zero_grad{like.index}")]
        if grads[0] is None:   # no zeros operator registered: a missing gradient stays missing
            return None
        total = aggregate_fun(grads)
        if gentry.need_attr_hint and attr_hint_fun is not None:
            total = attr_hint_fun(total, like)
        _tag_backward([total], like.node, forward)
        return total

    for node in reversed(topo):
        if node.is_variable:
            continue
        agg = []
        for i, gentry in enumerate(out_grads[id(node)]):
            gentry.sum = summed(gentry, NodeEntry(node, i, 0))
            agg.append(gentry.sum)
        if not node.inputs:
            continue
        fwd = mirror.get(id(node), node)
        zero_in = all(is_zero_entry(g, zero_ops) for g in agg)
        if node.op.gradient is not None and not (zero_in and _propagates_zeros(node.op)):
            in_grads = list(node.op.gradient(fwd, agg))
            if len(in_grads) != len(node.inputs):
                raise MXNetError(f"gradient of operator {node.op.name} (node {node.name}) returned "
                                 f"{len(in_grads)} gradients for {len(node.inputs)} inputs")
        elif zero_in:
            in_grads = []
            for i, e in enumerate(fwd.inputs):
                suffix = "_backward" if len(fwd.inputs) == 1 else f"_in{i}_backward"
                z = _zeros_like(e, fwd.name + suffix)
                if z is not None:
                    z.node.control_deps.append(fwd)
                in_grads.append(z)
        else:
            raise MXNetError(f"Operator {node.op.name} is non-differentiable because it didn't "
                             f"register a gradient (node {node.name}).")
        _tag_backward(in_grads, node, forward)
        for e, g in zip(node.inputs, in_grads):
            if g is None:
                continue
            target = out_grads[id(e.node)][e.index]
            if g.node.op is not None and g.node.op.infer_shape is not None:
                target.need_attr_hint = False
            target.grads.append(g)

    if mirror and mirror_everywhere:
        _read_mirrors(xs, out_grads, mirror)
    outputs: List[NodeEntry] = []
    seen: Dict[tuple, int] = {}
    for x in xs:
        gentry = out_grads[id(x.node)][x.index]
        if gentry.sum is None:
            gentry.sum = summed(gentry, x)
        g = gentry.sum
        if g is None:
            raise MXNetError(f"gradient: no gradient reaches '{x.node.name}' and no zeros_like "
                             "operator is registered to make one")
        key = (id(g.node), g.index)
        if copy_op is not None and key in seen:
            seen[key] += 1
            g = _entry(make_node(copy_op, [g], f"{g.node.name}_{seen[key] - 1}_copy"))
        else:
            seen[key] = 1
        outputs.append(g)
    return Graph(outputs, {"grad_of": xs})


def _tag_backward(entries, fwd_node: Node, forward: set) -> None:
    """Mark the nodes just built for ``fwd_node``'s backward (or for summing the gradient of one
    of its outputs) with ``extra['fwd_node']``: the placement pass puts them on its device."""
    stack = [e.node for e in entries if e is not None]
    while stack:
        n = stack.pop()
        if n.is_variable or id(n) in forward or "fwd_node" in n.extra or "mirror_of" in n.extra:
            continue
        n.extra["fwd_node"] = fwd_node
        stack.extend(e.node for e in n.inputs)


def _read_mirrors(xs, out_grads, mirror: Dict[int, Node]) -> None:
    """Point the inputs of every backward node at the mirror copies of mirrored forward nodes."""
    sums = [g.sum for entries in out_grads.values() for g in entries if g.sum is not None]
    sums += [g for x in xs for g in out_grads[id(x.node)][x.index].grads]
    for node in topo_sort(sums):
        if id(node) in out_grads or node.is_variable:
            continue    # a forward node: it runs before any copy exists
        for i, e in enumerate(node.inputs):
            copy = mirror.get(id(e.node))
            if copy is not None and copy is not e.node and i not in node.op.ignore_inputs:
                node.inputs[i] = NodeEntry(copy, e.index, e.version)


def full_graph(outputs: Sequence[NodeEntry], xs: Sequence[NodeEntry],
               mirror_fun: Optional[Callable[[Node], bool]] = None,
               mirror_everywhere: bool = False) -> Graph:
    """The training graph MXNet's executor builds (``GraphExecutor::InitFullGraph``).

    Outputs are the forward ``outputs`` followed by the gradient of each ``x``. Head gradient ``i``
    is the variable ``_head_grad_<i>`` passed through ``_identity_with_attr_like_rhs`` so its
    shape follows output ``i``. Attributes: ``num_forward_outputs``, ``head_grad_nodes``,
    ``grad_of``.
    """
    outputs = list(outputs)
    head_nodes = [Node(None, f"_head_grad_{i}") for i in range(len(outputs))]
    head_grads = [_entry(make_node("_identity_with_attr_like_rhs", [_entry(h), out], h.name + "_id"))
                  for h, out in zip(head_nodes, outputs)]
    grads = gradient(Graph(outputs), xs=xs, ys=outputs, ys_out_grad=head_grads,
                     aggregate_fun=aggregate_gradient, mirror_fun=mirror_fun,
                     mirror_everywhere=mirror_everywhere)
    return Graph(outputs + grads.outputs,
                 {"num_forward_outputs": len(outputs), "head_grad_nodes": head_nodes,
                  "grad_of": list(xs)})
