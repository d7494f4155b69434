"""Trace reading: merged busy intervals per device row, their overlap and the busy fractions."""
from mxref.parallel.trace import busy_intervals, busy_report, overlap, span, total


def trace_of(rows):
    events = [{"ph": "M", "name": "process_name", "pid": i, "args": {"name": d}} for i, d in enumerate(rows)]
    for pid, spans in enumerate(rows.values()):
        events += [{"ph": "X", "name": name, "pid": pid, "tid": 0, "ts": a, "dur": b - a}
                   for name, a, b in spans]
    return {"traceEvents": events}


def test_intervals_overlap_and_fractions():
    trace = trace_of({"cpu(0)": [("fc", 0, 10), ("fc", 5, 20), ("_CrossDeviceCopy", 20, 40), ("fc", 30, 40)],
                      "cpu(1)": [("fc", 15, 35), ("DeleteVariable", 36, 39)]})
    a, b = busy_intervals(trace, "cpu(0)"), busy_intervals(trace, "cpu(1)")
    assert a == [[0, 20], [30, 40]] and b == [[15, 35]]       # copies and deletes are not compute
    assert total(a) == 30 and overlap(a, b) == 10 and overlap(b, a) == 10
    assert span(trace) == 40
    assert busy_report(trace, ["cpu(0)", "cpu(1)"]) == {"cpu(0)": 0.75, "cpu(1)": 0.5, "both": 0.25}
    assert busy_intervals(trace, "cpu(7)") == []
