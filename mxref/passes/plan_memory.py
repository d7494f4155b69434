"""``plan_memory``: give every intermediate entry a storage id, sharing memory as nnvm's PlanMemory.

The pass simulates reference-counted allocation over the node order of the ``IndexedGraph``
(forward nodes first, then backward) without allocating anything:

1. **in place** — an output takes its input's storage when the op allows the pair
   (``OpDef.inplace``), that storage has no other reader left (or the pair is an identity), the
   input is not a graph input and both have the same number of elements and dtype size;
2. **reuse** — every other output asks the ``GraphAllocator`` for a block: a released block whose
   size is within ``[size / match_range, size * match_range]`` (larger ones first, then smaller
   ones), else a new block; a reused block grows to the larger request;
3. **release** — an input's storage returns to the free list when its last reader has run; an
   output nobody reads is released at once.

Entries pre-set to ``EXTERNAL_STORAGE_ID`` (gradient arrays the user binds, fed arrays) or
``DYNAMIC_STORAGE_ID`` (sparse) are never planned. ``storage_allocated_bytes`` is the sum of the
blocks' sizes: the figure ``Executor.debug_str()`` prints as ``Total N MB allocated``.
"""
from __future__ import annotations

import bisect
import itertools
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..base import MXNetError, env_bool, env_int, env_str
from ..graph import Graph, IndexedGraph, register_pass
from .memory_report import PLAN_ELEMENT_BYTES, debug_str_footer, live_spans, memory_report, total_mb_allocated

__all__ = ["BAD_STORAGE_ID", "EXTERNAL_STORAGE_ID", "DYNAMIC_STORAGE_ID", "GraphAllocator",
           "plan_memory", "color_node_group", "entry_ref_counts", "total_mb_allocated",
           "memory_report", "debug_str_footer", "STRATEGIES"]

BAD_STORAGE_ID = -1        # not planned (yet): variables, unknown shapes
EXTERNAL_STORAGE_ID = -2   # memory the caller provides (bound gradient arrays, fed entries)
DYNAMIC_STORAGE_ID = -3    # allocated at run time (sparse storage)

STRATEGIES = ("nnvm", "size_first", "auto")


def _known(shape) -> bool:
    return shape is not None and all(d > 0 for d in shape)


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape is not None else 0


class GraphAllocator:
    """nnvm's ``GraphAllocator``: a free list of blocks keyed by size, searched within a range.

    The free list is kept sorted by ``(max_bytes, insertion number)`` so that walking it upward or
    downward visits equal-sized blocks in the same order as the ``std::multimap`` nnvm uses.
    """

    def __init__(self, match_range: int, node_color: Sequence[int] = ()):
        self.match_range = match_range
        self.node_color = list(node_color)
        self.max_bytes: List[int] = []     # per storage id
        self.device: List[int] = []
        self.released_by: List[int] = []
        self._free: List[Tuple[int, int, int]] = []   # (max_bytes, seq, sid), sorted
        self._seq = itertools.count()

    def _alloc(self, dev_id: int, nbytes: int) -> int:
        self.max_bytes.append(nbytes)
        self.device.append(dev_id)
        self.released_by.append(0)
        return len(self.max_bytes) - 1

    def _fits(self, sid: int, dev_id: int, nid: int) -> bool:
        if self.device[sid] != dev_id:
            return False
        # colouring: a block freed by a node of one colour is only reused by that colour
        return not self.node_color or self.node_color[self.released_by[sid]] == self.node_color[nid]

    def request(self, dev_id: int, shape, nid: int) -> int:
        """A storage id for an output of ``shape`` produced by node ``nid``."""
        if not _known(shape):
            return BAD_STORAGE_ID
        size = _size(shape) * PLAN_ELEMENT_BYTES
        if self.match_range == 0:
            return self._alloc(dev_id, size)
        free = self._free
        begin = bisect.bisect_left(free, (size // self.match_range, -1))
        mid = bisect.bisect_left(free, (size, -1))
        end = bisect.bisect_left(free, (size * self.match_range + 1, -1))
        # blocks at least as large as asked for, smallest first; then smaller ones, largest first
        for i in itertools.chain(range(mid, end), range(mid - 1, begin - 1, -1)):
            sid = free[i][2]
            if self._fits(sid, dev_id, nid):
                del free[i]
                self.max_bytes[sid] = max(size, self.max_bytes[sid])
                return sid
        return self._alloc(dev_id, size)

    def release(self, sid: int, nid: int) -> None:
        if sid == BAD_STORAGE_ID:
            raise MXNetError("plan_memory: released an entry that has no storage")
        if sid < 0:
            return
        self.released_by[sid] = nid
        bisect.insort(self._free, (self.max_bytes[sid], next(self._seq), sid))

    def total_bytes(self) -> int:
        return sum(self.max_bytes)


def _input_nids(idx: IndexedGraph, nid: int) -> List[int]:
    return [idx.node_id[id(e.node)] for e in idx.nodes[nid].inputs]


def _find_best_path(idx: IndexedGraph, reward: List[int]) -> Tuple[int, List[int]]:
    """The path through the DAG with the largest total reward (dynamic programming, nnvm's)."""
    n = idx.num_nodes
    best = [0] * n
    nxt = [n] * n
    best_total, best_start = 0, 0
    for nid in range(n - 1, -1, -1):
        best[nid] += reward[nid]
        if best[nid] > best_total:
            best_total, best_start = best[nid], nid
        for prev in _input_nids(idx, nid):
            if best[nid] > best[prev]:
                best[prev] = best[nid]
                nxt[prev] = nid
    path = []
    nid = best_start
    while nid < n:
        path.append(nid)
        nid = nxt[nid]
    return best_total, path


def color_node_group(idx: IndexedGraph, importance: List[int], max_ncolor: int) -> Tuple[int, List[int]]:
    """Colour nodes so that nodes of one colour lie on one dependency path (nnvm's ColorNodeGroup).

    The heaviest remaining path gets a new colour, ``max_ncolor - 1`` times; every node left over
    gets the last colour. Nodes on one path run one after another anyway, so letting only them
    share memory costs no parallelism. Returns ``(number of colours, colour per node)``.
    """
    if max_ncolor < 1:
        raise MXNetError(f"plan_memory: the number of colours must be >= 1, got {max_ncolor}")
    importance = list(importance)
    color = [max_ncolor] * idx.num_nodes
    cindex = 0
    while cindex < max_ncolor - 1:
        reward, path = _find_best_path(idx, importance)
        if reward == 0:
            break
        for nid in path:
            if importance[nid] != 0:
                color[nid] = cindex
                importance[nid] = 0
        cindex += 1
    color = [cindex if c == max_ncolor else c for c in color]
    return cindex + 1, color


def entry_ref_counts(idx: IndexedGraph) -> List[int]:
    """Readers of each entry: node inputs (less the ones an op ignores) plus graph outputs."""
    ref = [0] * idx.num_node_entries
    for node in idx.nodes:
        if node.is_variable:
            continue
        for e in node.inputs:
            ref[idx.entry_id(e)] += 1
        for i in node.op.ignore_inputs:
            ref[idx.entry_id(node.inputs[i])] -= 1
    for e in idx.outputs:
        ref[idx.entry_id(e)] += 1
    return ref


def _dtype_size(dt) -> int:
    return np.dtype(dt).itemsize if dt is not None else -1


def _alloc_memory(graph: Graph, node_range, storage: List[int], inplace_index: List[int],
                  ref: List[int], allocator: GraphAllocator) -> int:
    """One planning sweep (nnvm's ``AllocMemory``); fills ``storage`` and ``inplace_index``."""
    idx = graph.indexed
    shapes, dtypes = graph.attrs["shape"], graph.attrs["dtype"]
    devices = graph.attrs.get("device")
    storage_ref = [0] * idx.num_node_entries
    num_not_allocated = 0
    for nid in range(*node_range):
        node = idx.nodes[nid]
        if node.is_variable:
            continue
        op = node.op
        ignored = set(op.ignore_inputs)
        ignore_all = len(ignored) == len(node.inputs)
        taken = [False] * len(node.inputs)
        for (i_in, i_out), identity in zip(op.inplace, op.inplace_identity):
            eid_out, eid_in = idx.entry_id(nid, i_out), idx.entry_id(node.inputs[i_in])
            sid_in = storage[eid_in]
            same_size = _size(shapes[eid_out]) == _size(shapes[eid_in])
            real_identity = (identity and shapes[eid_out] is not None and shapes[eid_in] is not None
                             and same_size and dtypes[eid_out] == dtypes[eid_in])
            if (not taken[i_in] and storage[eid_out] == BAD_STORAGE_ID and sid_in >= 0
                    and ((storage_ref[sid_in] == 1 and not ignore_all) or real_identity)
                    and ref[eid_out] > 0 and same_size
                    and _dtype_size(dtypes[eid_out]) == _dtype_size(dtypes[eid_in])):
                taken[i_in] = True
                storage[eid_out] = sid_in
                # the output's readers now keep the shared block alive too
                storage_ref[sid_in] += ref[eid_out]
                inplace_index[eid_out] = i_in
        dev_id = devices[nid] if devices is not None else 0
        # largest outputs first; ties in reverse entry order (a multimap walked backwards)
        todo = [(_size(shapes[eid]), eid) for eid in range(idx.entry_id(nid, 0), idx.entry_id(nid + 1, 0))
                if storage[eid] == BAD_STORAGE_ID]
        for _, eid in sorted(todo, reverse=True):
            sid = allocator.request(dev_id, shapes[eid], nid)
            if sid >= 0:
                storage_ref[sid] = ref[eid]
            storage[eid] = sid
        for i, e in enumerate(node.inputs):
            if i in ignored:
                continue
            sid = storage[idx.entry_id(e)]
            if sid < 0:
                continue
            storage_ref[sid] -= 1
            if storage_ref[sid] == 0:
                allocator.release(sid, nid)
        for eid in range(idx.entry_id(nid, 0), idx.entry_id(nid + 1, 0)):
            sid = storage[eid]
            if sid >= 0 and storage_ref[sid] == 0:
                allocator.release(sid, nid)
                inplace_index[eid] = -2   # written but never read
            if sid == BAD_STORAGE_ID:
                num_not_allocated += 1
    return num_not_allocated


def _size_first(graph: Graph, storage: List[int], inplace_index: List[int],
                colors: List[int]) -> int:
    """Re-place whole values into blocks offline, largest first; returns the total bytes.

    ``storage`` comes from a sweep without reuse, so each storage id is one value (entries joined
    in place). Knowing every lifetime up front, each value (largest first) goes into the smallest
    existing block of the same device and colour that is free for its whole lifetime, else into
    a new block. This is the interval-packing view of the problem that nnvm's online allocator
    approximates; it keeps nnvm's in-place decisions and its byte rule.
    """
    devices = graph.attrs.get("device")
    spans = sorted(live_spans(graph, storage, inplace_index).values(), key=lambda s: (-s.nbytes, s.start))
    blocks: List[list] = []   # [nbytes, device, colour, [(start, end), ...]]
    new_id: Dict[int, int] = {}
    for span in spans:
        dev = devices[span.start] if devices is not None else 0
        color = colors[span.start] if colors else 0
        best = None
        for b, (nbytes, bdev, bcolor, busy) in enumerate(blocks):
            if bdev != dev or bcolor != color or (best is not None and nbytes >= blocks[best][0]):
                continue
            if all(span.end < s0 or e0 < span.start for s0, e0 in busy):
                best = b
        if best is None:
            blocks.append([span.nbytes, dev, color, []])
            best = len(blocks) - 1
        blocks[best][3].append((span.start, span.end))
        new_id[storage[span.entries[0]]] = best
    for eid, sid in enumerate(storage):
        if sid >= 0:
            storage[eid] = new_id[sid]
    return sum(b[0] for b in blocks)


@register_pass("plan_memory", requires=("shape", "dtype"),
               provides=("storage_id", "storage_inplace_index", "storage_allocated_bytes",
                         "storage_num_not_allocated", "storage_bytes"))
def plan_memory(graph: Graph, match_range: Optional[int] = None, num_colors: Optional[int] = None,
                auto_search: Optional[bool] = None, strategy: Optional[str] = None,
                **_ignored) -> Graph:
    """Plan storage for every entry (nnvm's ``MXPlanMemory``).

    Optional graph attributes read: ``storage`` (pre-set ids, e.g. ``EXTERNAL_STORAGE_ID`` for
    gradient outputs), ``ref_count``, ``node_range`` (plan only nodes ``[a, b)``), ``device``
    (device id per node).

    Parameters
    ----------
    match_range : int, optional
        Reuse a freed block only when the sizes are within this factor; 0 disables reuse.
        Default ``NNVM_EXEC_MATCH_RANGE`` (16).
    num_colors : int, optional
        Colour-constrained sharing: with ``k > 1`` colours only nodes on one heavy path share
        blocks. Default ``NNVM_EXEC_NUM_TEMP`` (1: everything may share).
    auto_search : bool, optional
        Try match ranges 1, 2, 4, ... up to ``match_range`` and keep the smallest plan. Default
        ``NNVM_AUTO_SEARCH_MATCH_RANGE`` or ``MXNET_MEMORY_OPT``.
    strategy : {"nnvm", "size_first", "auto"}, optional
        ``"nnvm"`` reproduces MXNet's plan exactly; ``"size_first"`` keeps its in-place choices but
        packs values into blocks offline, largest first (the match range does not apply);
        ``"auto"`` runs both and keeps the smaller plan, so it is never worse than MXNet's.
        Default ``MXREF_MEM_PLAN_STRATEGY`` or ``"nnvm"``.

    Provides ``storage_id`` and ``storage_inplace_index`` (per entry; the index of the input whose
    storage an output took, -1 if none, -2 if the output is never read), ``storage_allocated_bytes``
    (MXNet's figure), ``storage_num_not_allocated`` and ``storage_bytes`` (real bytes per block).
    """
    idx = graph.indexed
    for key in ("shape", "dtype"):
        if len(graph.attrs[key]) != idx.num_node_entries:
            raise MXNetError(f"plan_memory: graph attribute {key!r} has {len(graph.attrs[key])} "
                             f"entries, the graph has {idx.num_node_entries}")
    node_range = graph.attrs.get("node_range", (0, idx.num_nodes))
    ref = graph.attrs.get("ref_count") or entry_ref_counts(idx)
    preset = graph.attrs.get("storage") or [BAD_STORAGE_ID] * idx.num_node_entries
    if match_range is None:
        match_range = env_int("NNVM_EXEC_MATCH_RANGE", 16)
    if num_colors is None:
        num_colors = env_int("NNVM_EXEC_NUM_TEMP", 1)
    if auto_search is None:
        auto_search = env_bool("NNVM_AUTO_SEARCH_MATCH_RANGE", False) or env_bool("MXNET_MEMORY_OPT", False)
    if strategy is None:
        strategy = env_str("MXREF_MEM_PLAN_STRATEGY", "nnvm")
    if strategy not in STRATEGIES:
        raise MXNetError(f"plan_memory: unknown strategy {strategy!r}; choose one of {STRATEGIES}")
    colors: List[int] = []
    if num_colors > 1:
        importance = [0 if n.is_variable else 1 for n in idx.nodes]
        _, colors = color_node_group(idx, importance, num_colors)
    ranges = [match_range]
    if auto_search and match_range > 0:
        ranges = [1 << k for k in range(match_range.bit_length()) if (1 << k) <= match_range]
    # (strategy, match range) sweeps to try; the smallest plan wins, the first on a tie
    sweeps = [("nnvm", mr) for mr in ranges] if strategy != "size_first" else []
    sweeps += [("size_first", 0)] if strategy != "nnvm" else []
    best = None
    for kind, mr in sweeps:
        storage, inplace_index = list(preset), [-1] * idx.num_node_entries
        allocator = GraphAllocator(mr, colors)
        not_allocated = _alloc_memory(graph, node_range, storage, inplace_index, ref, allocator)
        total = allocator.total_bytes()
        if kind == "size_first":
            total = _size_first(graph, storage, inplace_index, colors)
        if best is None or total < best[0]:
            best = (total, storage, inplace_index, not_allocated)
    out = Graph(graph.outputs, graph.attrs)
    out._indexed = idx
    total, storage, inplace_index, not_allocated = best
    out.attrs.update(storage_id=storage, storage_inplace_index=inplace_index,
                     storage_allocated_bytes=total, storage_num_not_allocated=not_allocated,
                     storage_bytes=_storage_bytes(graph, storage))
    return out


def _storage_bytes(graph: Graph, storage: List[int]) -> List[int]:
    """Real bytes per block: the largest entry placed in it (the executor's pool sizes)."""
    nbytes: Dict[int, int] = {}
    for eid, sid in enumerate(storage):
        if sid >= 0:
            size = _size(graph.attrs["shape"][eid]) * _dtype_size(graph.attrs["dtype"][eid])
            nbytes[sid] = max(nbytes.get(sid, 0), size)
    return [nbytes.get(sid, 0) for sid in range(max(nbytes, default=-1) + 1)]
