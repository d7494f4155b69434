"""``mirror``: choose forward nodes to recompute during backward, trading compute for memory.

A *mirrored* node is copied into the backward graph by the gradient pass (``mirror_fun``), so the
backward ops read the recomputed copy and the forward output can be freed as soon as the forward
pass is done with it. The policies:

* ``"mxnet"`` — ``MXNET_BACKWARD_DO_MIRROR=1``: every op except the expensive ones (Convolution,
  FullyConnected, Concat, SoftmaxOutput) is recomputed; Dropout never is (nor any op drawing
  random numbers: a recomputation would draw different ones). A node attribute
  ``__force_mirroring__='True'`` forces mirroring, ``'False'`` forbids it.
* ``"cheap"`` — the same choice of nodes, but every backward node reads the recomputed copies
  (``mirror_everywhere``), so a Convolution's backward no longer keeps the forward ReLU output
  alive. On ResNet-50 this is what turns recomputation into a saving (see
  ``docs/architecture/memory-planning.md``).
* ``"budget"`` — ``cheap``'s node set, plus the Convolution and FullyConnected nodes whose
  recomputation frees the most memory per multiply-add, up to a budget (a fraction of the
  forward pass's multiply-adds); cut points read by several nodes (a residual unit's output) are
  kept, so no recomputation chain runs past one. The default of ``MXNET_BACKWARD_DO_MIRROR=1``.
* ``"sublinear"`` — memonger's plan (Chen et al. 2016, arXiv 1604.06174): *every* forward op is
  recomputed except checkpoints placed at cut points, one whenever the activations since the
  last checkpoint exceed a threshold, so about sqrt(n) segments are kept and each segment is
  recomputed once in backward. Cut points are found automatically: a node whose output is the
  only activation crossing it (memonger asks users to tag them with ``mirror_stage``).
"""
from __future__ import annotations

import math
from typing import Callable, List, Optional, Sequence, Set

import numpy as np

from ..base import MXNetError, env_int
from ..graph import Graph, Node, NodeEntry, register_pass, topo_sort

__all__ = ["need_mirror", "mxnet_mirror_fun", "cut_points", "default_threshold", "sublinear_plan",
           "search_plan", "product_macs", "budget_plan", "DEFAULT_BUDGET", "POLICIES", "mirror"]

POLICIES = ("mxnet", "cheap", "budget", "sublinear")

# expensive layers MXNET_BACKWARD_DO_MIRROR keeps (graph_executor.cc, need_mirror)
_KEPT = frozenset({"Convolution", "FullyConnected", "Concat", "SoftmaxOutput"})
# the kept layers whose cost is their multiply-adds, which the "budget" policy may recompute
_PRODUCTS = frozenset({"Convolution", "FullyConnected"})
# share of the forward multiply-adds the "budget" policy spends on recomputation by default
DEFAULT_BUDGET = 0.15


def _attr_flag(node: Node, key: str) -> Optional[bool]:
    value = node.attrs.get(key)
    if value is None:
        return None
    return value.strip().lower() in ("true", "1")


def _never(node: Node) -> bool:
    return node.is_variable or node.op.name == "Dropout" or "random" in node.op.resources


def need_mirror(node: Node, do_mirror: bool) -> bool:
    """MXNet's rule for one node (``__force_mirroring__`` wins over ``do_mirror``)."""
    if _never(node):
        return False
    forced = _attr_flag(node, "__force_mirroring__")
    if forced is not None:
        return forced
    return bool(do_mirror) and node.op.name not in _KEPT


def mxnet_mirror_fun(do_mirror: Optional[bool] = None) -> Callable[[Node], bool]:
    """The predicate MXNet's executor passes to the gradient pass; reads ``MXNET_BACKWARD_DO_MIRROR``."""
    if do_mirror is None:
        do_mirror = env_int("MXNET_BACKWARD_DO_MIRROR", 0) != 0
    return lambda node: need_mirror(node, do_mirror)


def _forward_ops(outputs: Sequence[NodeEntry]) -> List[Node]:
    return [n for n in topo_sort(outputs) if not n.is_variable]


def cut_points(outputs: Sequence[NodeEntry]) -> List[Node]:
    """Op nodes whose outputs are the only activations alive across them (candidate checkpoints).

    Walk the forward ops in order; node ``t`` is a cut point when every activation produced before
    it has its last reader at or before ``t``. Keeping only such a node's outputs is then enough
    to recompute everything after it.
    """
    ops = _forward_ops(outputs)
    pos = {id(n): t for t, n in enumerate(ops)}
    last_use = [t for t in range(len(ops))]
    for t, n in enumerate(ops):
        for e in n.inputs:
            if id(e.node) in pos:
                last_use[pos[id(e.node)]] = max(last_use[pos[id(e.node)]], t)
    cuts, reach = [], -1   # reach: the latest last-use of any activation produced before t
    for t, n in enumerate(ops):
        if reach <= t:
            cuts.append(n)
        reach = max(reach, last_use[t])
    return cuts


def _activation_bytes(n: Node, shapes: Callable[[NodeEntry], Sequence[int]]) -> int:
    return sum(int(np.prod(shapes(NodeEntry(n, i, 0)))) * 4 for i in range(n.num_outputs()))


def default_threshold(outputs: Sequence[NodeEntry], shapes: Callable[[NodeEntry], Sequence[int]]) -> float:
    """``total / sqrt(number of cut points)``: about sqrt(n) segments of equal size."""
    total = sum(_activation_bytes(n, shapes) for n in _forward_ops(outputs))
    return total / math.sqrt(max(len(cut_points(outputs)), 1))


def sublinear_plan(outputs: Sequence[NodeEntry], shapes: Callable[[NodeEntry], Sequence[int]],
                   threshold_bytes: float) -> Set[int]:
    """Ids of the nodes to mirror under memonger's plan with a given segment threshold.

    Activation bytes (4 per element, as MXNet counts) accumulate along the forward order; at a
    cut point where the running segment exceeds ``threshold_bytes`` the node becomes a checkpoint
    (kept) and a new segment starts. Every other forward op is mirrored, except those that must
    never be (Dropout, random ops) or carry ``__force_mirroring__='False'``.
    """
    cuts = {id(n) for n in cut_points(outputs)}
    mirrored: Set[int] = set()
    local = 0
    for n in _forward_ops(outputs):
        local += _activation_bytes(n, shapes)
        if id(n) in cuts and local > threshold_bytes:
            local = 0
            continue
        if not _never(n) and _attr_flag(n, "__force_mirroring__") is not False:
            mirrored.add(id(n))
    return mirrored


def _elements(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def product_macs(n: Node, shapes: Callable[[NodeEntry], Sequence[int]]) -> int:
    """Multiply-adds of a Convolution or FullyConnected node (0 for other ops).

    Output elements times the weight elements per output channel (``prod(weight.shape[1:])``),
    which covers groups, kernels and strides alike: half the ``count_flops`` pass's figure.
    """
    if n.is_variable or n.op.name not in _PRODUCTS or len(n.inputs) < 2:
        return 0
    return _elements(shapes(NodeEntry(n, 0, 0))) * _elements(shapes(n.inputs[1])[1:])


def _fanout_cut_points(outputs: Sequence[NodeEntry]) -> Set[int]:
    """Ids of the cut points whose output is read by two or more forward nodes."""
    readers: dict = {}
    for n in _forward_ops(outputs):
        for producer in {id(e.node) for e in n.inputs}:
            readers[producer] = readers.get(producer, 0) + 1
    return {id(n) for n in cut_points(outputs) if readers.get(id(n), 0) >= 2}


def budget_plan(outputs: Sequence[NodeEntry], shapes: Callable[[NodeEntry], Sequence[int]],
                budget: float = DEFAULT_BUDGET) -> Set[int]:
    """Ids of the nodes to mirror under the ``budget`` policy.

    * every op ``need_mirror`` picks (the cheap ones: BatchNorm, activations, adds, pooling);
    * the Convolution / FullyConnected nodes with the fewest multiply-adds per output element
      (the most memory freed per unit of recomputation: a ResNet unit's closing 1x1 expansion,
      whose output has 4x the channels of its input), in that order, while their multiply-adds
      stay within ``budget`` times those of the whole forward pass;
    * except cut points read by two or more nodes, which are kept.

    NOTE: the last rule matters. Recomputing a residual unit's output needs the previous unit's
    output, so with all of them mirrored, backward recomputes (and holds) every unit output of a
    stage at once. Kept unit outputs bound each recomputation to one unit.
    """
    ops = _forward_ops(outputs)
    macs = {id(n): product_macs(n, shapes) for n in ops}
    limit = budget * sum(macs.values())
    products = sorted((n for n in ops if macs[id(n)] > 0),
                      key=lambda n: macs[id(n)] / max(_elements(shapes(NodeEntry(n, 0, 0))), 1))
    chosen, spent = set(), 0
    for n in products:
        if spent + macs[id(n)] > limit:
            break
        chosen.add(id(n))
        spent += macs[id(n)]
    kept = _fanout_cut_points(outputs)
    mirrored: Set[int] = set()
    for n in ops:
        forced = _attr_flag(n, "__force_mirroring__")
        if _never(n) or forced is False:
            continue
        if forced or (id(n) not in kept and (id(n) in chosen or n.op.name not in _KEPT)):
            mirrored.add(id(n))
    return mirrored


def search_plan(outputs: Sequence[NodeEntry], shapes: Callable[[NodeEntry], Sequence[int]],
                cost: Callable[[Set[int]], float], ntrial: int = 6) -> Set[int]:
    """memonger's ``search_plan``: try thresholds around the default one and keep the cheapest.

    ``cost(mirrored_ids)`` returns the planned memory of the training graph with those nodes
    mirrored (e.g. ``memory_report(...)["planned"]``). Thresholds tried: 0 and the default
    threshold times ``2 ** (k / 2)`` for ``k`` in ``-ntrial/2 .. ntrial/2``.
    """
    base = default_threshold(outputs, shapes)
    candidates = [0.0] + [base * 2 ** (k / 2) for k in range(-(ntrial // 2), ntrial // 2 + 1)]
    best = None
    for threshold in candidates:
        plan = sublinear_plan(outputs, shapes, threshold)
        c = cost(plan)
        if best is None or c < best[0]:
            best = (c, plan)
    return best[1]


@register_pass("mirror", provides=("grad_mirror_fun", "grad_mirror_everywhere"))
def mirror(graph: Graph, mirror_policy: str = "mxnet", threshold_bytes: Optional[float] = None,
           budget: Optional[float] = None, **_ignored) -> Graph:
    """Attach what the gradient pass reads: ``grad_mirror_fun`` and ``grad_mirror_everywhere``.

    ``mirror_policy`` is ``"mxnet"`` (``MXNET_BACKWARD_DO_MIRROR``'s rule, forced on), ``"cheap"``
    (the same nodes, read everywhere in backward), ``"budget"`` (``budget_plan``; ``budget``
    defaults to ``DEFAULT_BUDGET``) or ``"sublinear"`` (memonger's plan; ``threshold_bytes``
    defaults to ``default_threshold``). The last two are read everywhere and need the ``shape``
    attribute.
    """
    if mirror_policy not in POLICIES:
        raise MXNetError(f"mirror: unknown mirror_policy {mirror_policy!r}; use one of {POLICIES}")
    out = Graph(graph.outputs, graph.attrs)
    out.attrs["grad_mirror_everywhere"] = mirror_policy != "mxnet"
    if mirror_policy in ("mxnet", "cheap"):
        out.attrs["grad_mirror_fun"] = mxnet_mirror_fun(True)
        return out
    if "shape" not in graph.attrs:
        raise MXNetError(f"mirror: the {mirror_policy!r} policy needs the 'shape' attribute "
                         "(run infer_shape)")
    idx = graph.indexed
    shape_vec = graph.attrs["shape"]
    shapes = lambda e: shape_vec[idx.entry_id(e)]
    if mirror_policy == "budget":
        chosen = budget_plan(graph.outputs, shapes, DEFAULT_BUDGET if budget is None else budget)
    else:
        if threshold_bytes is None:
            threshold_bytes = default_threshold(graph.outputs, shapes)
        chosen = sublinear_plan(graph.outputs, shapes, threshold_bytes)
    out.attrs["grad_mirror_fun"] = lambda node: id(node) in chosen
    return out
