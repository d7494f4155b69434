"""Draw one GPipe step of ``mxref.parallel.Pipeline`` (two devices, four micro-batches) as an SVG.

It trains a two-stage MLP with the profiler on, then draws one row per device (its compute)
and one for the copy workers; ``F<j>`` / ``B<j>`` are the forward and backward of micro-batch
``j`` (numbered by their order on the device: forwards in order, backwards in reverse).

    .venv/bin/python docs/scripts/pipeline_timeline.py --svg docs/architecture/pipeline-timeline.svg
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
M = 4
COLORS = {"F": "#4e79a7", "B": "#f28e2b", "copy": "#59a14f", "update": "#bab0ac"}


def record(path: str) -> None:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("MXNET_OMP_MAX_THREADS", "1")
    sys.path.insert(0, ROOT)
    import numpy as np

    import mxref as mx
    from mxref.parallel import Pipeline

    def stage(a, b):
        h = mx.sym.Variable("data")
        for i in range(a, b):
            h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=1024, name=f"fc{i}"), act_type="relu")
        return h

    stages = [stage(0, 3), mx.sym.SoftmaxOutput(mx.sym.FullyConnected(stage(3, 6), num_hidden=10, name="cls"),
                                                name="softmax")]
    batch = 512
    pipe = Pipeline(stages, [mx.cpu(0), mx.cpu(1)], {"data": (batch, 1024)}, {"softmax_label": (batch,)},
                    num_microbatches=M)
    x = np.random.RandomState(0).randn(batch, 1024).astype(np.float32)
    y = np.zeros(batch, np.float32)
    for _ in range(2):
        pipe.step(data=x, softmax_label=y)
    mx.nd.waitall()
    mx.profiler.dumps(reset=True)
    mx.profiler.set_config(profile_all=True, filename=path)
    mx.profiler.set_state("run")
    pipe.step(data=x, softmax_label=y)
    mx.nd.waitall()
    mx.profiler.set_state("stop")
    mx.profiler.dump()


def load(path: str):
    """``[(row, label, kind, start_us, dur_us)]`` and the row names."""
    events = json.load(open(path))["traceEvents"]
    device = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    spans = sorted((e for e in events if e["ph"] == "X"), key=lambda e: e["ts"])
    rows, out, count = ["cpu(0)", "cpu(1)", "copies"], [], {}
    t0 = spans[0]["ts"]
    for e in spans:
        dev, name = device[e["pid"]], e["name"]
        if name in ("DeleteVariable", "WaitForVar"):
            continue
        if name in ("_CrossDeviceCopy", "_copyto"):
            out.append((2, "", "copy", e["ts"] - t0, e["dur"]))
            continue
        if dev not in rows[:2]:
            continue
        if name.startswith(("Forward", "Backward")):
            kind = name[0]
            k = count[(dev, kind)] = count.get((dev, kind), -1) + 1
            j = k if kind == "F" else M - 1 - k
            out.append((rows.index(dev), f"{kind}{j}", kind, e["ts"] - t0, e["dur"]))
        else:
            out.append((rows.index(dev), "", "update", e["ts"] - t0, e["dur"]))
    return rows, out


def to_svg(rows, spans, width=900, row_h=34, label_w=80) -> str:
    end = max(s + d for *_, s, d in spans)
    scale = (width - label_w - 10) / end
    h = row_h * len(rows) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" '
             'font-family="monospace" font-size="11">', f'<rect width="{width}" height="{h}" fill="white"/>']
    for i, name in enumerate(rows):
        y = 10 + i * row_h
        parts.append(f'<text x="4" y="{y + row_h / 2 + 4}">{name}</text>')
        parts.append(f'<line x1="{label_w}" y1="{y + row_h - 2}" x2="{width - 10}" y2="{y + row_h - 2}" '
                     'stroke="#ddd"/>')
    for row, label, kind, start, dur in spans:
        x, y, wdt = label_w + start * scale, 12 + row * row_h, max(dur * scale, 1.0)
        parts.append(f'<rect x="{x:.1f}" y="{y}" width="{wdt:.1f}" height="{row_h - 8}" '
                     f'fill="{COLORS[kind]}" stroke="white">'
                     f'<title>{label or kind} {dur / 1000:.2f} ms</title></rect>')
        if label and wdt > 18:
            parts.append(f'<text x="{x + 3:.1f}" y="{y + row_h / 2}" fill="white">{label}</text>')
    y = 10 + len(rows) * row_h + 18
    parts.append(f'<text x="{label_w}" y="{y}">0 ms</text>')
    parts.append(f'<text x="{width - 70}" y="{y}">{end / 1000:.1f} ms</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", help="an existing trace of one pipelined step (default: record one)")
    ap.add_argument("--svg", required=True)
    args = ap.parse_args()
    path = args.trace or os.path.join(tempfile.mkdtemp(), "pipeline.json")
    if args.trace is None:
        record(path)
    rows, spans = load(path)
    with open(args.svg, "w") as f:
        f.write(to_svg(rows, spans))
    print(f"wrote {args.svg}: {len(spans)} spans")


if __name__ == "__main__":
    main()
