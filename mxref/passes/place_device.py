"""Graph pass ``place_device``: give every node a device and put a copy on every edge between two.

As nnvm's ``PlaceDevice``, in four sweeps over a training graph (forward nodes, then backward):

1. a forward operator with ``__ctx_group__`` (``mx.AttrScope(ctx_group='dev1')``) runs on
   ``group2ctx[group]``; one without runs on the default context;
2. a variable lives where its array is (``input_ctx``, from ``bind``), else on its group's
   device, else with its first reader; an auxiliary state (an input the reader updates in place,
   BatchNorm's moving statistics) must live with that reader, since a copy would update the copy;
3. a backward node runs with the forward node it differentiates (``extra['fwd_node']``, set by
   the ``gradient`` pass; the sum of an entry's gradients runs with the entry's producer), a
   recomputed (mirrored) node with its original, anything else with its first placed input;
4. every input read on another device is replaced by a ``_CrossDeviceCopy`` node, **one per
   (entry, destination device)** however many nodes read it there; a gradient output is copied
   to the device of its gradient array when it is made elsewhere.

Provides ``device`` (a device id per node, as nnvm), ``device_ctx`` (the ``Context`` of each id;
id 0 is the default context), ``num_copies``. ``plan_memory`` reads ``device`` and never lets
two devices share a block.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np

from ..base import MXNetError
from ..context import Context, num_gpus
from ..graph import Graph, Node, NodeEntry, make_node, register_pass, topo_sort
from .memory_report import PLAN_ELEMENT_BYTES

__all__ = ["place_device", "check_group2ctx", "device_totals", "placed_debug_str"]


def check_group2ctx(group2ctx, caller: str = "bind") -> Dict[str, Context]:
    """``group2ctx`` as a dict of group name to ``Context``; a device that does not exist raises."""
    if not group2ctx:
        return {}
    if not isinstance(group2ctx, dict):
        raise MXNetError(f"{caller}: group2ctx must be a dict of group name to Context, got "
                         f"{type(group2ctx).__name__}")
    out = {}
    for group, ctx in group2ctx.items():
        if not isinstance(ctx, Context):
            raise MXNetError(f"{caller}: group2ctx['{group}'] must be a Context such as mx.cpu(1), "
                             f"got {ctx!r}")
        if ctx.device_type == "gpu" and ctx.device_id >= num_gpus():
            raise MXNetError(f"{caller}: group2ctx maps group '{group}' to {ctx}, which does not "
                             f"exist (num_gpus()={num_gpus()})")
        out[str(group)] = ctx
    return out


@register_pass("place_device", provides=("device", "device_ctx", "num_copies"))
def place_device(graph: Graph, group2ctx: Optional[Dict[str, Context]] = None,
                 default_ctx: Optional[Context] = None, input_ctx: Optional[Dict[str, Context]] = None,
                 output_ctx: Optional[Dict[int, Context]] = None, **_ignored) -> Graph:
    """Place ``graph`` (see the module docstring); returns a new graph with the copies inserted.

    Parameters
    ----------
    group2ctx : dict of str to Context
        Device of each ``ctx_group``. A group some node names but the dict does not is an error.
    default_ctx : Context
        Device of ungrouped nodes (the executor's context).
    input_ctx : dict of str to Context, optional
        Devices of variables whose arrays already exist (``bind``).
    output_ctx : dict of int to Context, optional
        Devices the outputs of those indices must end on (gradient arrays given to ``bind``);
        other gradient outputs end on the device of their variable (``graph.attrs['grad_of']``).
    """
    group2ctx = dict(group2ctx or {})
    default_ctx = default_ctx or Context("cpu", 0)
    input_ctx = dict(input_ctx or {})
    output_ctx = dict(output_ctx or {})
    outputs = list(graph.outputs)
    num_fwd = int(graph.attrs.get("num_forward_outputs", len(outputs)))
    nodes = topo_sort(outputs)
    forward = {id(n) for n in topo_sort(outputs[:num_fwd])}
    where: Dict[int, Context] = {}

    def group_ctx(node: Node) -> Optional[Context]:
        group = node.attrs.get("__ctx_group__")
        if group is None or not group2ctx:
            return None
        if group not in group2ctx:
            raise MXNetError(f"place_device: node '{node.name}' has ctx_group '{group}', which group2ctx "
                             f"does not map; mapped groups: {sorted(group2ctx)}")
        return group2ctx[group]

    # 1. forward operators
    for n in nodes:
        if not n.is_variable and id(n) in forward and "mirror_of" not in n.extra:
            where[id(n)] = group_ctx(n) or default_ctx
    # 2. variables read by forward operators; auxiliary states stay with the node updating them
    readers: Dict[int, List[Node]] = {}
    for n in nodes:
        for e in n.inputs:
            readers.setdefault(id(e.node), []).append(n)
    for n in nodes:
        if not n.is_variable or id(n) not in forward:
            continue
        updater = _updater_of(n, readers.get(id(n), ()))
        if updater is not None:
            ctx = where[id(updater)]
            given = input_ctx.get(n.name)
            if given is not None and given != ctx:
                raise MXNetError(f"place_device: auxiliary state '{n.name}' is on {given}, but operator "
                                 f"'{updater.name}' ({updater.op.name}), which updates it, runs on {ctx}; "
                                 f"bind the state on {ctx}")
            where[id(n)] = ctx
            continue
        first = next((r for r in readers.get(id(n), ()) if id(r) in where), None)
        where[id(n)] = (input_ctx.get(n.name) or group_ctx(n)
                        or (where[id(first)] if first is not None else default_ctx))
    # 3. backward and recomputed nodes; 4'. the remaining variables (head gradients)
    for n in nodes:
        if n.is_variable or id(n) in where:
            continue
        src = n.extra.get("mirror_of") or n.extra.get("fwd_node")
        if src is not None and id(src) in where:
            where[id(n)] = where[id(src)]
            continue
        placed = next((e.node for e in n.inputs if id(e.node) in where), None)
        where[id(n)] = where[id(placed)] if placed is not None else default_ctx
    for n in nodes:
        if id(n) not in where:
            first = next((r for r in readers.get(id(n), ()) if id(r) in where), None)
            where[id(n)] = input_ctx.get(n.name) or (where[id(first)] if first is not None else default_ctx)
    # 4. copies, one per (entry, destination)
    copies: Dict[tuple, NodeEntry] = {}

    def copy_of(e: NodeEntry, dst: Context) -> NodeEntry:
        key = (id(e.node), e.index, dst)
        if key not in copies:
            src = where[id(e.node)]
            suffix = f"_{e.index}" if e.node.num_outputs() > 1 else ""
            node = make_node("_CrossDeviceCopy", [e], f"{e.node.name}{suffix}_to_{dst.device_type}"
                             f"{dst.device_id}", params={"src": str(src), "dst": str(dst)})
            where[id(node)] = dst
            copies[key] = NodeEntry(node, 0, 0)
        return copies[key]

    for n in nodes:
        if n.is_variable:
            continue
        dst, ignored = where[id(n)], set(n.op.ignore_inputs)
        mutated = set(n.op.mutate_inputs(n.params))
        for i, e in enumerate(n.inputs):
            if where[id(e.node)] == dst or i in ignored:
                continue
            if i in mutated:
                raise MXNetError(f"place_device: operator '{n.name}' ({n.op.name}) on {dst} updates its "
                                 f"input {i} ('{e.node.name}') on {where[id(e.node)]} in place")
            n.inputs[i] = copy_of(e, dst)
    grad_of = graph.attrs.get("grad_of", ())
    for i in range(num_fwd, len(outputs)):
        e = outputs[i]
        dst = output_ctx.get(i)
        if dst is None and i - num_fwd < len(grad_of):
            dst = where[id(grad_of[i - num_fwd].node)]
        if dst is not None and where[id(e.node)] != dst:
            outputs[i] = copy_of(e, dst)
    out = Graph(outputs, dict(graph.attrs))
    idx = out.indexed
    device_ctx = [default_ctx] + sorted({c for c in where.values() if c != default_ctx}, key=str)
    dev_id = {c: k for k, c in enumerate(device_ctx)}
    out.attrs.update(device=[dev_id[where[id(n)]] for n in idx.nodes], device_ctx=device_ctx,
                     num_copies=len(copies))
    return out


def _updater_of(var: Node, readers: Sequence[Node]) -> Optional[Node]:
    """The operator that updates ``var`` in place (an auxiliary state's layer), if any."""
    for r in readers:
        if r.is_variable:
            continue
        mutated = r.op.mutate_inputs(r.params)
        if any(k < len(r.inputs) and r.inputs[k].node is var for k in mutated):
            return r
    return None


def device_totals(graph: Graph) -> Dict[Context, int]:
    """Planned bytes per device of a placed, planned graph, counted as ``Total N MB allocated``
    counts them (each block at its largest entry, 4 bytes per element)."""
    idx, sids = graph.indexed, graph.attrs["storage_id"]
    shapes, ctxs, device = graph.attrs["shape"], graph.attrs["device_ctx"], graph.attrs["device"]
    block: Dict[int, list] = {}
    for nid, node in enumerate(idx.nodes):
        for i in range(node.num_outputs()):
            eid = idx.entry_id(nid, i)
            if sids[eid] >= 0:
                nbytes = int(np.prod(shapes[eid], dtype=np.int64)) * PLAN_ELEMENT_BYTES
                b = block.setdefault(sids[eid], [device[nid], 0])
                b[1] = max(b[1], nbytes)
    totals = dict.fromkeys(ctxs, 0)
    for dev, nbytes in block.values():
        totals[ctxs[dev]] += nbytes
    return totals


def placed_debug_str(graph: Graph, text: str) -> str:
    """``Symbol.debug_str`` text of a placed graph with ``, Device=cpu(1)`` on each ``Op:`` line
    and one ``cpu(1): N MB allocated`` line per device at the end."""
    idx = graph.indexed
    ctxs, device = graph.attrs["device_ctx"], graph.attrs["device"]
    ops = iter(n for n in topo_sort(graph.outputs) if not n.is_variable)
    lines = []
    for line in text.splitlines():
        if line.startswith("Op:"):
            line += f", Device={ctxs[device[idx.node_id[id(next(ops))]]]}"
        lines.append(line)
    totals = device_totals(graph)
    lines += [f"{ctx}: {nbytes >> 20} MB allocated ({nbytes} bytes)" for ctx, nbytes in totals.items()]
    return "\n".join(lines) + "\n"
