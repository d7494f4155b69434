"""Draw the buffer lifetimes of a planned training graph as an SVG (no plotting library needed).

Each row is one storage block of the plan; each bar is one value living in it, from the node that
produces it to its last reader (x axis: node ids, forward then backward). Values joined in place
share a bar. Run from the repository root::

    .venv/bin/python docs/scripts/plot_lifetimes.py docs/architecture/memory-lifetimes.svg
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from mxref.graph import (  # noqa: E402
    Graph,  # noqa: E402
    Node,
    NodeEntry,
    make_node,
)
from mxref.passes.gradient import full_graph  # noqa: E402
from mxref.passes.memory_report import live_spans, memory_report  # noqa: E402
from mxref.passes.plan_memory import EXTERNAL_STORAGE_ID, plan_memory  # noqa: E402


def small_net(batch=32):
    """data -> FC(64) -> relu -> FC(64) -> relu -> FC(10) -> SoftmaxOutput, and its variables' shapes."""
    def var(name):
        return NodeEntry(Node(None, name), 0, 0)

    h, shapes, in_dim = var("data"), {"data": (batch, 100), "softmax_label": (batch,)}, 100
    for i, n in enumerate((64, 64, 10)):
        w, b = var(f"fc{i}_weight"), var(f"fc{i}_bias")
        shapes.update({w.node.name: (n, in_dim), b.node.name: (n,)})
        h = NodeEntry(make_node("FullyConnected", [h, w, b], f"fc{i}", attrs={"num_hidden": str(n)}), 0, 0)
        if i < 2:
            h = NodeEntry(make_node("Activation", [h], f"relu{i}", attrs={"act_type": "relu"}), 0, 0)
        in_dim = n
    out = NodeEntry(make_node("SoftmaxOutput", [h, var("softmax_label")], "softmax"), 0, 0)
    return out, shapes


def planned_graph():
    out, shapes = small_net()
    fwd = Graph([out]).indexed
    xs = [NodeEntry(fwd.nodes[n], 0, 0) for n in fwd.arg_nodes if fwd.nodes[n].name.startswith("fc")]
    g = full_graph([out], xs)
    idx = g.indexed
    shape = [None] * idx.num_node_entries
    for nid, node in enumerate(idx.nodes):      # one forward sweep: every variable shape is known
        if node.is_variable:
            shape[idx.entry_id(nid, 0)] = shapes.get(node.name)
            continue
        _, outs = node.op.infer_shape(node.params, [shape[idx.entry_id(e)] for e in node.inputs])
        for i, s in enumerate(outs):
            shape[idx.entry_id(nid, i)] = tuple(s)
    g.attrs.update(shape=shape, dtype=[np.dtype(np.float32)] * idx.num_node_entries)
    storage = [-1] * idx.num_node_entries
    for e in g.outputs[1:]:
        storage[idx.entry_id(e)] = EXTERNAL_STORAGE_ID
    g.attrs["storage"] = storage
    return plan_memory(g)


def to_svg(g) -> str:
    idx = g.indexed
    spans = live_spans(g, g.attrs["storage_id"], g.attrs["storage_inplace_index"])
    n_blocks = max(g.attrs["storage_id"]) + 1
    n_fwd = max(nid for nid, n in enumerate(idx.nodes) if n.name == "softmax") + 1
    left, top, col, row = 150, 40, 22, 34
    width, height = left + col * (idx.num_nodes + 1) + 20, top + row * n_blocks + 70
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="11">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="{left}" y="20" font-size="13">Buffer lifetimes of a planned training graph '
             f'(MLP 100-64-64-10, batch 32): {n_blocks} blocks, {g.attrs["storage_allocated_bytes"]} '
             f'bytes</text>',
             f'<rect x="{left + col * n_fwd}" y="{top - 6}" width="{col * (idx.num_nodes - n_fwd)}" '
             f'height="{row * n_blocks + 6}" fill="#f3f3f3"/>',
             f'<text x="{left + col * n_fwd + 4}" y="{top + row * n_blocks + 16}">backward</text>',
             f'<text x="{left + 4}" y="{top + row * n_blocks + 16}">forward</text>']
    block_bytes = {}
    for s in spans.values():
        sid = g.attrs["storage_id"][s.entries[0]]
        block_bytes[sid] = max(block_bytes.get(sid, 0), s.nbytes)
    for sid in range(n_blocks):
        parts.append(f'<text x="8" y="{top + row * sid + 20}">block {sid} ({block_bytes[sid]} B)</text>')
    palette = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f"]
    for k, s in enumerate(sorted(spans.values(), key=lambda s: s.start)):
        sid = g.attrs["storage_id"][s.entries[0]]
        x0, x1 = left + col * s.start, left + col * (min(s.end, idx.num_nodes - 1) + 1)
        names = "+".join(idx.nodes[_producer(idx, e)].name for e in s.entries)
        parts.append(f'<rect x="{x0}" y="{top + row * sid}" width="{x1 - x0 - 2}" height="{row - 8}" '
                     f'fill="{palette[k % len(palette)]}" opacity="0.85"><title>{names}: nodes '
                     f'{s.start}-{s.end}, {s.nbytes} B</title></rect>')
        parts.append(f'<text x="{x0 + 3}" y="{top + row * sid + 17}" fill="white" font-size="9">'
                     f'{names[:max(3, (x1 - x0) // 6)]}</text>')
    for nid in range(0, idx.num_nodes, 5):
        parts.append(f'<text x="{left + col * nid}" y="{top + row * n_blocks + 32}">{nid}</text>')
    report = memory_report(g)
    parts.append(f'<text x="{left}" y="{top + row * n_blocks + 52}">node id → ; planned '
                 f'{report["planned"]} B, no sharing {report["no_sharing"]} B, lower bound '
                 f'{report["lower_bound"]} B</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _producer(idx, eid):
    return next(nid for nid in range(idx.num_nodes) if idx.entry_id(nid, 0) <= eid < idx.entry_id(nid + 1, 0))


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else "docs/architecture/memory-lifetimes.svg"
    graph = planned_graph()
    with open(target, "w") as f:
        f.write(to_svg(graph))
    print(f"wrote {target}: {memory_report(graph)}")
