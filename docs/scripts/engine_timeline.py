"""Draw an engine profile (Chrome-trace JSON) as an SVG timeline and an ASCII timeline.

Without ``--trace`` it first records one: two independent chains of matmuls plus a prioritized
"kvstore-like" op on the threaded engine, with ``mx.profiler`` on. Rows are threads, boxes are ops.

    .venv/bin/python docs/scripts/engine_timeline.py --svg docs/architecture/engine-timeline.svg
    .venv/bin/python docs/scripts/engine_timeline.py --trace profile.json --ascii
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLORS = {"chainA": "#4e79a7", "chainB": "#f28e2b", "allreduce": "#59a14f", "WaitForVar": "#bab0ac"}


def record(path: str) -> None:
    """Run a small two-chain program on the threaded engine and dump its trace to ``path``."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.path.insert(0, ROOT)
    import numpy as np

    import mxref as mx
    from mxref.engine.base import FnProperty
    from mxref.engine.threaded import ThreadedEnginePerDevice

    eng = ThreadedEnginePerDevice(cpu_worker_nthreads=2, cpu_priority_nthreads=1)
    n, steps = 512, 6
    w = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32) / n ** 0.5
    chains = {name: [np.ones((n, n), np.float32) for _ in range(steps + 1)] for name in ("chainA", "chainB")}
    cvars = {name: [eng.new_variable() for _ in range(steps + 1)] for name in chains}
    wvar = eng.new_variable()
    mx.profiler.set_config(profile_all=True, filename=path)
    mx.profiler.set_state("run")
    for k in range(steps):
        for name, bufs in chains.items():
            eng.push_sync(lambda r, a=bufs[k], o=bufs[k + 1]: np.matmul(a, w, out=o), mx.cpu(),
                          (cvars[name][k], wvar), (cvars[name][k + 1],), name=name)
        if k == 2:   # a "gradient" ready mid-way: reduced on the priority queue, overlapping compute
            eng.push_sync(lambda r, a=chains["chainA"][3]: a.sum(axis=0), mx.cpu(),
                          (cvars["chainA"][3],), (eng.new_variable(),), FnProperty.CPU_PRIORITIZED,
                          name="allreduce")
    eng.wait_for_var(cvars["chainA"][-1])
    eng.wait_for_all()
    mx.profiler.set_state("stop")
    mx.profiler.dump()
    eng.stop()


def load(path: str):
    """``(rows, spans)``: thread names in first-seen order and (row, name, start_us, dur_us) spans."""
    events = json.load(open(path))["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    spans = [e for e in events if e["ph"] == "X"]
    rows = list(dict.fromkeys(names.get((e["pid"], e["tid"]), str(e["tid"])) for e in spans))
    t0 = min(e["ts"] for e in spans)
    out = [(rows.index(names.get((e["pid"], e["tid"]), str(e["tid"]))), e["name"], e["ts"] - t0, e["dur"])
           for e in spans]
    return rows, out


def to_svg(rows, spans, width=900, row_h=34, label_w=150) -> str:
    end = max(s + d for _, _, s, d in spans)
    scale = (width - label_w - 10) / end
    h = row_h * len(rows) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" '
             'font-family="monospace" font-size="11">',
             f'<rect width="{width}" height="{h}" fill="white"/>']
    for i, name in enumerate(rows):
        y = 10 + i * row_h
        parts.append(f'<text x="4" y="{y + row_h / 2 + 4}">{name}</text>')
        parts.append(f'<line x1="{label_w}" y1="{y + row_h - 2}" x2="{width - 10}" y2="{y + row_h - 2}" '
                     'stroke="#ddd"/>')
    for row, name, start, dur in spans:
        x, y, wdt = label_w + start * scale, 12 + row * row_h, max(dur * scale, 1.0)
        color = COLORS.get(name, "#76b7b2")
        parts.append(f'<rect x="{x:.1f}" y="{y}" width="{wdt:.1f}" height="{row_h - 8}" fill="{color}" '
                     f'stroke="white"><title>{name} {dur / 1000:.2f} ms</title></rect>')
        if wdt > 40:
            parts.append(f'<text x="{x + 3:.1f}" y="{y + row_h / 2}" fill="white">{name}</text>')
    ms = end / 1000
    y = 10 + len(rows) * row_h + 18
    parts.append(f'<text x="{label_w}" y="{y}">0 ms</text>')
    parts.append(f'<text x="{width - 70}" y="{y}">{ms:.1f} ms</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def to_ascii(rows, spans, width=72) -> str:
    """One text line per thread; each op is drawn with the first letter of its name."""
    end = max(s + d for _, _, s, d in spans)
    lines = [[" "] * width for _ in rows]
    for row, name, start, dur in spans:
        a = int(start / end * (width - 1))
        b = max(a + 1, int((start + dur) / end * (width - 1)))
        for i in range(a, min(b, width)):
            lines[row][i] = name[-1] if name.startswith("chain") else name[0]
    label = max(map(len, rows))
    out = [f"{r:<{label}} |{''.join(line)}|" for r, line in zip(rows, lines)]
    out.append(f"{'':<{label}}  0 ms{'':>{width - 12}}{end / 1000:.0f} ms")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", help="an existing Chrome-trace JSON (default: record a new one)")
    ap.add_argument("--svg", help="write the SVG timeline here")
    ap.add_argument("--ascii", action="store_true", help="print the ASCII timeline")
    args = ap.parse_args()
    path = args.trace
    if path is None:
        path = os.path.join(tempfile.mkdtemp(), "profile.json")
        record(path)
    rows, spans = load(path)
    if args.svg:
        with open(args.svg, "w") as f:
            f.write(to_svg(rows, spans))
    if args.ascii or not args.svg:
        print(to_ascii(rows, spans))


if __name__ == "__main__":
    main()
