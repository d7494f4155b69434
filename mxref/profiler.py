"""The profiler: records engine operations and writes a Chrome-trace JSON and an aggregate table.

    mx.profiler.set_config(profile_all=True, filename="profile.json")
    mx.profiler.set_state("run")
    ...                                   # every engine op becomes one span on its worker thread
    mx.profiler.set_state("stop")
    mx.profiler.dump()                    # open in chrome://tracing or https://ui.perfetto.dev
    print(mx.profiler.dumps())            # count / total / min / max / avg per operator

The engine pays for this only while recording: its hook is one attribute test (``_state.recording``).
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import threading
import time
from typing import Dict, List, Optional

from .base import MXNetError, env_bool

__all__ = ["set_config", "set_state", "state", "pause", "resume", "dump", "dumps", "Domain", "Task",
           "Frame", "Event", "Counter", "Marker", "record_op", "record_memory", "custom_op_scope",
           "dump_profile"]

_CONFIG_DEFAULTS = {
    "profile_all": False, "profile_symbolic": True, "profile_imperative": True,
    "profile_memory": True, "profile_api": True, "filename": "profile.json",
    "continuous_dump": False, "dump_period": 1.0, "aggregate_stats": False,
    "profile_process": "worker",
}
_SORT_KEYS = {"total": 1, "min": 2, "max": 3, "avg": 4, "count": 0}


class _State:
    """Everything the profiler knows; ``recording`` is the flag the engine tests per operation."""

    def __init__(self):
        self.config = dict(_CONFIG_DEFAULTS)
        self.running = False          # set_state('run') / ('stop')
        self.paused = False
        self.recording = False        # running and not paused, and engine ops are wanted
        self.events: List[tuple] = []   # (kind, name, category, t0_ns, t1_ns, thread id, device)
        self.threads: Dict[int, str] = {}
        self.origin_ns = time.perf_counter_ns()
        self.dumper: Optional[threading.Thread] = None

    def update(self) -> None:
        c = self.config
        wants_ops = c["profile_all"] or c["profile_symbolic"] or c["profile_imperative"]
        self.recording = bool(self.running and not self.paused and wants_ops)


_state = _State()


def set_config(**kwargs) -> None:
    """Configure the profiler (MXNet's names): ``profile_all``, ``profile_symbolic``,
    ``profile_imperative``, ``profile_memory``, ``profile_api``, ``filename``, ``continuous_dump``,
    ``dump_period``, ``aggregate_stats``, ``profile_process``."""
    for key, value in kwargs.items():
        if key not in _CONFIG_DEFAULTS:
            raise MXNetError(f"profiler.set_config: cannot find argument {key!r}; possible arguments: "
                             f"{', '.join(_CONFIG_DEFAULTS)}")
        if key == "profile_process" and value not in ("worker", "server"):
            raise MXNetError("profiler.set_config: profile_process must be 'worker' or 'server', "
                             f"got {value!r}")
        _state.config[key] = value
    _state.update()


def set_state(state: str = "stop", profile_process: str = "worker") -> None:
    """Start (``'run'``) or stop (``'stop'``) recording."""
    if state not in ("run", "stop"):
        raise MXNetError(f"profiler.set_state: state must be 'run' or 'stop', got {state!r}")
    _state.running = state == "run"
    _state.paused = not _state.running     # MXNet's SetState: 'run' also ends a pause()
    _state.update()
    if _state.running and _state.config["continuous_dump"] and _state.dumper is None:
        _state.dumper = threading.Thread(target=_dump_periodically, name="profiler dump", daemon=True)
        _state.dumper.start()


def state() -> str:
    """``'run'`` or ``'stop'``."""
    return "run" if _state.running else "stop"


def pause(profile_process: str = "worker") -> None:
    """Stop recording without leaving the ``'run'`` state."""
    _state.paused = True
    _state.update()


def resume(profile_process: str = "worker") -> None:
    _state.paused = False
    _state.update()


def record_op(name: str, ctx, t0_ns: int, t1_ns: int, category: str = "operator") -> None:
    """The engine's hook: one finished operation ran from ``t0_ns`` to ``t1_ns`` on this thread.

    Inside ``custom_op_scope(op)`` (a custom operator's Python, run inline on this thread) it is
    recorded as ``'<op>::<name>'`` in the category ``'Custom Operator'``, as MXNet does.
    """
    prefix = getattr(_custom, "prefix", None)
    if prefix is not None:
        name, category = f"{prefix}::{name}", "Custom Operator"
    tid = threading.get_ident()
    # NOTE: compared each time, not set once: a finished thread's ident is reused by the next new
    # thread (engines stop and restart their workers), which would inherit a stale row name.
    thread = threading.current_thread().name
    if _state.threads.get(tid) != thread:
        _state.threads[tid] = thread
    _state.events.append(("X", name, category, t0_ns, t1_ns, tid, str(ctx) if ctx is not None else "cpu(0)"))


_custom = threading.local()   # .prefix: the custom operator whose Python this thread runs


@contextlib.contextmanager
def custom_op_scope(op_name: str):
    """Attribute what this thread runs to the custom operator ``op_name`` (``'MySigmoid'``, or
    ``'_backward_MySigmoid'``): operations inside become ``'MySigmoid::<op>'`` and the whole scope
    ``'MySigmoid::pure_python'``, all in the ``'Custom Operator'`` category."""
    outer = getattr(_custom, "prefix", None)
    _custom.prefix = None
    t0 = time.perf_counter_ns() if _state.recording else 0
    _custom.prefix = op_name
    try:
        yield
    finally:
        _custom.prefix = outer
        if t0 and _state.recording:
            _state.events.append(("X", f"{op_name}::pure_python", "Custom Operator", t0,
                                  time.perf_counter_ns(), threading.get_ident(), "cpu(0)"))


def record_memory(ctx, bytes_in_use: int) -> None:
    """The storage pools' hook: ``ctx`` now has ``bytes_in_use`` bytes in use (a counter sample
    ``'Memory: cpu/0'`` in the category ``'Device Storage'``), while ``profile_memory`` is on."""
    if not _state.config["profile_memory"]:
        return
    name = f"Memory: {ctx.device_type}/{ctx.device_id}"
    _state.events.append(("C", name, "Device Storage", time.perf_counter_ns(), int(bytes_in_use),
                          threading.get_ident(), str(ctx)))


class _Rendered:
    """The trace's events already turned into JSON text, so that each dump (every ``dump_period``
    with ``continuous_dump``) only renders what was recorded since the last one. Devices and
    threads get their row ids in order of first appearance, so rendered text never changes."""

    def __init__(self):
        self.first = None                # the events[0] the cache belongs to (cleared list: reset)
        self.texts: List[str] = []
        self.pids: Dict[str, int] = {}
        self.tids: Dict[int, int] = {}
        self.rows: Dict[tuple, int] = {}  # (pid, tid) -> thread ident, for the thread_name rows

    def update(self, events: List[tuple]) -> None:
        if not events or events[0] is not self.first:
            self.__init__()
            self.first = events[0] if events else None
        origin = _state.origin_ns
        q = _quoted
        for kind, name, cat, t0, t1, tid, dev in events[len(self.texts):]:
            pid = self.pids.setdefault(dev, len(self.pids))
            row = self.tids.setdefault(tid, len(self.tids))
            self.rows.setdefault((pid, row), tid)
            # Formatted directly (json.dumps per event is most of a big dump's time); the strings
            # go through json.dumps once each (_quoted), so the text is the same JSON.
            head = (f'{{"name": {q(name)}, "cat": {q(cat)}, "ph": "{kind}", '
                    f'"ts": {float((t0 - origin) / 1000.0)!r}, "pid": {pid}, "tid": {row}')
            if kind == "X":
                tail = f', "dur": {float((t1 - t0) / 1000.0)!r}}}'
            elif kind == "C":
                tail = f', "args": {{{q(name)}: {json.dumps(t1)}}}}}'
            else:
                tail = ', "s": "p"}'
            self.texts.append(head + tail)


_quoted = functools.lru_cache(maxsize=4096)(json.dumps)   # a name or category as a JSON string
_rendered = _Rendered()


def _trace_text() -> str:
    """The recorded events as a Chrome trace: one process row per device, one thread row per thread."""
    events = _state.events[:]
    _rendered.update(events)
    meta = [{"ph": "M", "name": "process_name", "pid": p, "args": {"name": d}}
            for d, p in _rendered.pids.items()]
    meta += [{"ph": "M", "name": "thread_name", "pid": p, "tid": t,
              "args": {"name": _state.threads.get(ident, f"thread {ident}")}}
             for (p, t), ident in _rendered.rows.items()]
    body = ",\n".join([json.dumps(m) for m in meta] + _rendered.texts[:len(events)])
    return '{"traceEvents": [\n' + body + '\n], "displayTimeUnit": "ms"}'


def _trace() -> dict:
    """The trace as a dict (what ``dump`` writes)."""
    return json.loads(_trace_text())


def dump(finished: bool = True, profile_process: str = "worker") -> None:
    """Write the Chrome-trace JSON to the configured ``filename``.

    ``finished=True`` also stops recording (MXNet closes the trace file at that point).
    """
    path = _state.config["filename"]
    text = _trace_text()
    # NOTE: written aside and renamed over the file, so that a reader (or the size check of a
    # continuous dump) never sees it truncated while the periodic dumper rewrites it.
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    if finished:
        _state.running = False
        _state.update()


def dump_profile() -> None:
    """Deprecated MXNet alias of ``dump()``."""
    dump(True)


def _dump_periodically() -> None:
    while _state.running and _state.config["continuous_dump"]:
        time.sleep(float(_state.config["dump_period"]))
        dump(finished=False)
    _state.dumper = None


_MEMORY_CATEGORIES = ("Device Storage", "Pool Memory")


def _aggregate() -> Dict[str, Dict[str, list]]:
    """``{category: {name: [count, total, min, max]}}``: over the recorded spans (in ms) and over the
    memory samples (in kB, ``total`` their sum, so ``total / count`` is the mean use)."""
    stats: Dict[str, Dict[str, list]] = {}
    for kind, name, cat, t0, t1, _tid, _dev in list(_state.events):
        if kind == "C" and cat in _MEMORY_CATEGORIES:
            ms = t1 / 1024.0      # bytes in use -> kB (the same running stats)
        elif kind != "X":
            continue
        else:
            ms = (t1 - t0) / 1e6
        row = stats.setdefault(cat, {}).get(name)
        if row is None:
            stats[cat][name] = [1, ms, ms, ms]
        else:
            row[0] += 1
            row[1] += ms
            row[2] = min(row[2], ms)
            row[3] = max(row[3], ms)
    return stats


def dumps(reset: bool = False, format: str = "table", sort_by: str = "total",
          ascending: bool = False) -> str:
    """Aggregate statistics per operator: count, total, min, max and average time (ms).

    ``format`` is ``'table'`` (MXNet's text layout) or ``'json'``; ``sort_by`` one of ``'total'``,
    ``'avg'``, ``'min'``, ``'max'``, ``'count'``; ``reset=True`` clears what was recorded.
    """
    if sort_by not in _SORT_KEYS:
        raise MXNetError(f"profiler.dumps: invalid value for sort_by: {sort_by!r}; supported: "
                         f"{', '.join(map(repr, _SORT_KEYS))}")
    if format not in ("table", "json"):
        raise MXNetError(f"profiler.dumps: format must be 'table' or 'json', got {format!r}")
    stats = _aggregate()
    col = _SORT_KEYS[sort_by]

    def rows(table):
        items = [(name, [r[0], r[1], r[2], r[3], r[1] / r[0]]) for name, r in table.items()]
        return sorted(items, key=lambda kv: kv[1][col], reverse=not ascending)

    if format == "json":
        # Memory rows have no "Total" (MXNet's layout); their Avg is the mean use over the samples.
        def entry(cat, r):
            keys = ("Count", "Min", "Max", "Avg") if cat in _MEMORY_CATEGORIES else ("Count", "Total", "Min",
                                                                                   "Max", "Avg")
            vals = dict(zip(("Count", "Total", "Min", "Max", "Avg"), r))
            return {k: vals[k] if k == "Count" else round(vals[k], 4) for k in keys}

        body: Dict[str, dict] = {"Time": {}, "Memory": {}}
        for cat, t in stats.items():
            part = body["Memory" if cat in _MEMORY_CATEGORIES else "Time"]
            part[cat] = {name: entry(cat, r) for name, r in rows(t)}
        body["Unit"] = {"Time": "ms", "Memory": "kB"}
        text = json.dumps(body, indent=4)
    else:
        lines = ["", "Profile Statistics:", "\tNote the difference in units for different entries."]
        for cat, table in sorted(stats.items(), key=lambda kv: kv[0] not in _MEMORY_CATEGORIES):
            memory = cat in _MEMORY_CATEGORIES
            cols = (("Min Use  (kB)", "Max Use  (kB)", "Avg Use  (kB)") if memory else
                    ("Time (ms)", "Min Time (ms)", "Max Time (ms)", "Avg Time (ms)"))
            lines += [cat, "=================",
                      f"{'Name':<30}{'Total Count':>11}" + "".join(f"{c:>17}" for c in cols),
                      f"{'----':<30}{'-----------':>11}" + "".join(f"{'-' * len(c):>17}" for c in cols)]
            for name, r in rows(table):
                nums = r[2:] if memory else r[1:]
                lines.append(f"{name:<30}{r[0]:>11}" + "".join(f"{v:>17.4f}" for v in nums))
            lines.append("")
        text = "\n".join(lines) + "\n"
    if reset:
        _state.events.clear()
    return text


# ---------------------------------------------------------------------------------------------
# User annotations (MXNet's Domain / Task / Frame / Event / Counter / Marker)
# ---------------------------------------------------------------------------------------------

class Domain:
    """A named group of user annotations; its name becomes the category of their events."""

    def __init__(self, name: str):
        self.name = name

    def new_task(self, name):
        return Task(self, name)

    def new_frame(self, name):
        return Frame(self, name)

    def new_counter(self, name, value=None):
        return Counter(self, name, value)

    def new_marker(self, name):
        return Marker(self, name)

    def __str__(self):
        return self.name


class Event:
    """A span between ``start()`` and ``stop()`` on the calling thread."""

    def __init__(self, name: str, domain: Optional[Domain] = None):
        self.name = name
        self.domain = domain
        self._t0 = None

    def start(self) -> None:
        self._t0 = time.perf_counter_ns()

    def stop(self) -> None:
        if self._t0 is None:
            raise MXNetError(f"profiler: {type(self).__name__} {self.name!r} stopped before it was started")
        if _state.running and not _state.paused:
            record_op(self.name, None, self._t0, time.perf_counter_ns(),
                      str(self.domain) if self.domain is not None else "event")
        self._t0 = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()


class Task(Event):
    """A span belonging to a domain (MXNet's ``profiler.Task``)."""

    def __init__(self, domain: Domain, name: str):
        super().__init__(name, domain)


class Frame(Task):
    """A span marking one iteration, e.g. a training step (MXNet's ``profiler.Frame``)."""


class Counter:
    """A named value plotted over time (``set_value``, ``increment``, ``decrement``)."""

    def __init__(self, domain: Domain, name: str, value: Optional[int] = None):
        self.domain, self.name, self.value = domain, name, 0
        if value is not None:
            self.set_value(value)

    def set_value(self, value: int) -> None:
        self.value = int(value)
        if _state.running and not _state.paused:
            _record_point("C", self.name, str(self.domain), self.value)

    def increment(self, delta: int = 1) -> None:
        self.set_value(self.value + delta)

    def decrement(self, delta: int = 1) -> None:
        self.set_value(self.value - delta)

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self


class Marker:
    """An instant event (``mark(scope)``)."""

    def __init__(self, domain: Domain, name: str):
        self.domain, self.name = domain, name

    def mark(self, scope: str = "process") -> None:
        if _state.running and not _state.paused:
            _record_point("i", self.name, str(self.domain), 0)


def _record_point(kind: str, name: str, category: str, value: int) -> None:
    tid = threading.get_ident()
    _state.threads.setdefault(tid, threading.current_thread().name)
    _state.events.append((kind, name, category, time.perf_counter_ns(), value, tid, "cpu(0)"))


_dump_at_exit = False


def _autostart() -> None:
    """``MXNET_PROFILER_AUTOSTART=1``: profile the whole run and dump the trace at exit."""
    global _dump_at_exit
    set_config(profile_all=True)
    set_state("run")
    _dump_at_exit = True


def _at_engine_exit() -> None:
    """Called by the engine's exit hook once it has drained (``mxref/engine/__init__.py``), so the
    auto-started trace holds every operation the program pushed; the profiler never imports the
    engine it observes."""
    if _dump_at_exit and _state.running:
        dump(True)


if env_bool("MXNET_PROFILER_AUTOSTART", False):
    _autostart()
