"""What a memory plan costs: MXNet's ``Total N MB allocated``, the no-sharing figure, lower bounds.

All figures use the planner's byte rule (4 bytes per element, as nnvm counts) so they compare
directly with MXNet's ``debug_str()``. ``live_spans`` gives each planned value's lifetime; the
lower bound and the ``size_first`` strategy of ``plan_memory`` are built on it.
"""
from __future__ import annotations

from typing import Dict, List, NamedTuple, Sequence

import numpy as np

from ..graph import Graph

__all__ = ["Span", "live_spans", "block_lower_bound", "memory_report", "total_mb_allocated",
           "debug_str_footer", "PLAN_ELEMENT_BYTES"]

# NOTE: nnvm sizes every request as 4 bytes per element whatever the dtype ("TODO(tqchen) add
# size of the dtype"). We keep that rule so "Total N MB allocated" matches MXNet's figure.
PLAN_ELEMENT_BYTES = 4


class Span(NamedTuple):
    """One planned value: entries joined in place, alive from node ``start`` to ``end`` inclusive."""

    start: int
    end: int
    nbytes: int
    entries: List[int]


def live_spans(graph: Graph, storage: List[int], inplace_index: List[int]) -> Dict[int, Span]:
    """Spans keyed by their first entry id, for every entry with a planned (>= 0) storage id.

    An output that took its input's storage in place continues the input's span. A value lives
    from its producer to its last reader (ignored inputs do not read; graph outputs live to the
    end of the node range); a value nobody reads lives only at its producer.
    """
    idx = graph.indexed
    shapes = graph.attrs["shape"]
    lo, hi = graph.attrs.get("node_range", (0, idx.num_nodes))
    root = list(range(idx.num_node_entries))
    spans: Dict[int, list] = {}
    for nid in range(lo, hi):
        node = idx.nodes[nid]
        if node.is_variable:
            continue
        ignored = set(node.op.ignore_inputs)
        for i, e in enumerate(node.inputs):
            r = root[idx.entry_id(e)]
            if i not in ignored and r in spans:
                spans[r][1] = nid
        for eid in range(idx.entry_id(nid, 0), idx.entry_id(nid + 1, 0)):
            if storage[eid] < 0:
                continue
            if inplace_index[eid] >= 0:
                root[eid] = root[idx.entry_id(node.inputs[inplace_index[eid]])]
            nbytes = int(np.prod(shapes[eid], dtype=np.int64)) * PLAN_ELEMENT_BYTES
            span = spans.setdefault(root[eid], [nid, nid, 0, []])
            span[2] = max(span[2], nbytes)
            span[3].append(eid)
    for e in idx.outputs:
        r = root[idx.entry_id(e)]
        if r in spans:
            spans[r][1] = hi
    return {r: Span(*s) for r, s in spans.items()}


def block_lower_bound(spans: Sequence[Span], num_nodes: int) -> int:
    """The least total size of blocks holding ``spans`` when each value fills one block for its life.

    Values alive at the same time need different blocks, so for every size ``w`` there are at
    least as many blocks of ``w`` bytes or more as there are values of ``w`` bytes or more alive at
    once; summing over ``w`` gives the bound. It is above the live-bytes bound when values of
    different sizes take turns in the same block (a small long-lived value pins a big block).
    """
    delta = [0] * (num_nodes + 2)
    total, by_size = 0, sorted(spans, key=lambda s: -s.nbytes)
    for k, span in enumerate(by_size):
        delta[span.start] += 1
        delta[span.end + 1] -= 1
        below = by_size[k + 1].nbytes if k + 1 < len(by_size) else 0
        if below == span.nbytes:
            continue
        live = most = 0
        for d in delta:
            live += d
            most = max(most, live)
        total += most * (span.nbytes - below)
    return total


def memory_report(graph: Graph) -> Dict[str, int]:
    """Planned bytes, the no-sharing figure and a lower bound of a planned graph.

    * ``planned``: ``storage_allocated_bytes`` (what ``Total N MB allocated`` prints, in bytes);
    * ``no_sharing``: every planned entry in its own block (no in-place, no reuse);
    * ``lower_bound``: the largest total size of values alive at one node. No plan that makes
      the same in-place choices can use less;
    * ``block_lower_bound``: ``block_lower_bound`` of the same values: no plan with one block per
      storage id (what the executor allocates) and these in-place choices can use less.
    """
    idx = graph.indexed
    shapes, storage = graph.attrs["shape"], graph.attrs["storage_id"]
    spans = live_spans(graph, storage, graph.attrs["storage_inplace_index"])
    no_sharing = sum(int(np.prod(shapes[eid], dtype=np.int64)) * PLAN_ELEMENT_BYTES
                     for s in spans.values() for eid in s.entries)
    delta = [0] * (idx.num_nodes + 2)
    for s in spans.values():
        delta[s.start] += s.nbytes
        delta[s.end + 1] -= s.nbytes
    live = lower_bound = 0
    for d in delta:
        live += d
        lower_bound = max(lower_bound, live)
    return {"planned": int(graph.attrs["storage_allocated_bytes"]), "no_sharing": no_sharing,
            "lower_bound": lower_bound,
            "block_lower_bound": block_lower_bound(list(spans.values()), idx.num_nodes)}


def total_mb_allocated(graph: Graph) -> int:
    """MXNet's ``Total N MB allocated`` figure: planned bytes shifted right by 20."""
    return int(graph.attrs["storage_allocated_bytes"]) >> 20


def debug_str_footer(graph: Graph) -> str:
    """The two lines ``GraphExecutor::Print`` ends with (memonger parses the first)."""
    # NOTE: MXNet prints a hard-coded 11 TempSpace resources "to be backward compatible with the
    # memonger"; tools that parse debug_str() expect exactly these two lines.
    return f"Total {total_mb_allocated(graph)} MB allocated\nTotal 11 TempSpace resource requested\n"
