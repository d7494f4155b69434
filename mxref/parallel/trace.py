"""Reading a profiler trace per device: busy intervals, busy fractions, and time both were busy.

``mx.profiler.dump()`` writes a Chrome trace with one process row per device (``cpu(0)``,
``cpu(1)``, ...) and one span per engine operation. A pipeline's claim — both devices compute at
once — is then a fact about recorded intervals, not about wall-clock speed::

    trace = json.load(open("profile.json"))
    a, b = busy_intervals(trace, "cpu(0)"), busy_intervals(trace, "cpu(1)")
    overlap(a, b) / span(trace)          # the fraction of the run with both devices computing
"""
from __future__ import annotations

from typing import Dict, List, Sequence

__all__ = ["busy_intervals", "total", "overlap", "span", "busy_report"]

# Engine bookkeeping and copies: not the device's computation.
NOT_COMPUTE = ("_CrossDeviceCopy", "_copyto", "DeleteVariable", "WaitForVar")


def busy_intervals(trace: dict, device: str, exclude: Sequence[str] = NOT_COMPUTE) -> List[List[float]]:
    """The spans (µs) of ``device``'s operations, overlapping ones merged, in time order."""
    pids = [e["pid"] for e in trace["traceEvents"] if e.get("ph") == "M" and e.get("name") == "process_name"
            and e["args"]["name"] == device]
    if not pids:
        return []
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in trace["traceEvents"]
                   if e.get("ph") == "X" and e["pid"] == pids[0] and e["name"] not in exclude)
    merged: List[List[float]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return merged


def total(intervals: Sequence[Sequence[float]]) -> float:
    return float(sum(b - a for a, b in intervals))


def overlap(xs: Sequence[Sequence[float]], ys: Sequence[Sequence[float]]) -> float:
    """Time (µs) during which both merged interval lists are busy."""
    out, i, j = 0.0, 0, 0
    while i < len(xs) and j < len(ys):
        out += max(0.0, min(xs[i][1], ys[j][1]) - max(xs[i][0], ys[j][0]))
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return out


def span(trace: dict) -> float:
    """From the first operation's start to the last one's end (µs)."""
    ops = [(e["ts"], e["ts"] + e["dur"]) for e in trace["traceEvents"] if e.get("ph") == "X"]
    return max(b for _, b in ops) - min(a for a, _ in ops) if ops else 0.0


def busy_report(trace: dict, devices: Sequence[str]) -> Dict[str, float]:
    """``{device: busy fraction}`` plus ``'both'`` (first two devices busy at once), of ``span``."""
    whole = span(trace) or 1.0
    intervals = {d: busy_intervals(trace, d) for d in devices}
    out = {d: total(iv) / whole for d, iv in intervals.items()}
    if len(devices) >= 2:
        out["both"] = overlap(intervals[devices[0]], intervals[devices[1]]) / whole
    return out
