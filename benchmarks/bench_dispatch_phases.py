"""Where one imperative ``c = a + b`` and ``a += 1`` spend their microseconds, phase by phase.

Each phase of ``imperative.invoke`` is timed alone, on the objects a real call uses, in a loop of
``--n`` iterations (CPU time, best of ``--repeats``, minus the cost of an empty loop), then the
whole calls are timed on each engine mode in the same process:

    .venv/bin/python benchmarks/bench_dispatch_phases.py [--n 20000] [--repeats 5] [--before TREE]

``--before TREE`` runs TREE's own copy of this script and this one in turn (``--rounds`` times
each, alternating, in subprocesses) and prints one table with both columns, best of the rounds
per row: a before/after comparison in one run. A phase a tree does not have shows "—".

The phases do not add up exactly to a whole call (caches are warmer in isolation, and the whole
call pays the garbage collector and, handed off, the worker's wake-up); the last rows show the
whole calls: run on the calling thread, handed to the worker, and on the naive engine.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import numpy as np  # noqa: E402

import mxref as mx  # noqa: E402
from mxref import storage  # noqa: E402
from mxref.engine.base import FnProperty, RunContext  # noqa: E402
from mxref.ndarray import imperative as imp  # noqa: E402
from mxref.ndarray.chunk import Chunk  # noqa: E402
from mxref.ndarray.ndarray import NDArray  # noqa: E402
from mxref.ops.registry import OpContext  # noqa: E402


def best_us(body, n: int, repeats: int) -> float:
    """CPU microseconds per call of ``body(i)`` (best of ``repeats`` loops of ``n``; CPU time, so
    other processes on a shared machine do not count)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        for i in range(n):
            body(i)
        best = min(best, time.process_time() - t0)
    return best / n * 1e6


def phases(n: int, repeats: int) -> list:
    """``[(phase, µs)]`` for ``c = a + b`` (on the idle threaded engine, run on the calling thread)."""
    eng = mx.engine.set_engine("ThreadedEnginePerDevice")
    a, b = mx.nd.ones((10,)), mx.nd.ones((10,))
    mx.nd.waitall()
    op, params = imp._default_cache["elemwise_add"] if "elemwise_add" in imp._default_cache else (None, None)
    if op is None:
        (a + b).wait_to_read()
        op, params = imp._default_cache["elemwise_add"]
    ctx, inputs = a.context, [a, b]
    plan = imp._plan(op, "elemwise_add", params, inputs)
    shape, dtype = plan.single
    kernel = imp._kernel(op, plan, ctx)
    x, y, z = a._data(), b._data(), np.empty(10, np.float32)
    keep = []
    empty = best_us(lambda i: None, n, repeats)
    rows = []

    def row(name, body, prepare=None):
        if prepare is not None:
            prepare()
        rows.append((name, max(best_us(body, n, repeats) - empty, 0.0)))
        keep.clear()

    row("operator method + parameter cache (`__add__`, `_binary`, `_default_cache`)",
        lambda i: (isinstance(b, NDArray), b._shape == a._shape, imp._default_cache.get("elemwise_add")))
    if imp._compiled is not None:   # the compiled invoke looks the plan up itself
        cache, key = imp._infer_cache, ("elemwise_add", a._shape, a._dtype, b._shape, b._dtype)
        row("plan lookup: shapes/dtypes/kernel cached per (op, params, shapes, dtypes)",
            lambda i: (cache.get(key), plan.kernel_dev != ctx.device_typeid))
    else:
        row("plan lookup: shapes/dtypes/kernel cached per (op, params, shapes, dtypes)",
            lambda i: (imp._plan(op, "elemwise_add", params, inputs), plan.kernel_dev != ctx.device_typeid))
    row("engine variable (`new_variable`)", lambda i: keep.append(eng.new_variable()))
    var = eng.new_variable()
    row("output NDArray + Chunk (no memory yet)",
        lambda i: keep.append(NDArray(Chunk(plan.out_nbytes[0], ctx, var), shape, dtype, 0)))
    call = imp._compiled.KernelCall if imp._compiled is not None else imp._KernelCall
    row(f"pushed call object (`{call.__module__.rsplit('.', 1)[-1]}.{call.__name__}`)",
        lambda i: keep.append(call([a, b, a], 2, kernel, False, ctx, (), params, plan.req)))
    v1, v2, v3 = eng.new_variable(), eng.new_variable(), eng.new_variable()
    if not hasattr(eng, "_idle"):     # a tree without the idle run makes an op block first
        row("op block (`OprBlock`: variables deduplicated, wait counter)",
            lambda i: eng._Opr(_noop, ctx, (v1, v2), (v3,), 0, 0, "elemwise_add", True))

    def push_inline(i):
        eng.push_sync(_noop, ctx, (v1, v2), (v3,), FnProperty.NORMAL, 0, "elemwise_add")
    row("engine push, run on the calling thread (register, execute, complete; empty fn)", push_inline)
    row("pool allocation + free (40 bytes)", lambda i: storage.free(storage.alloc(40, ctx)))
    buf = storage.alloc(40, ctx).buffer
    row("numpy view of the output's memory (`_data()` on a fresh array)",
        lambda i: np.ndarray(shape, dtype, buf, 0))
    if hasattr(imp, "_op_context"):     # reused while the run context is the same
        rctx = RunContext(ctx)
        row("`OpContext` per call", lambda i: imp._op_context(False, ctx, (), rctx))
    else:
        row("`OpContext` per call", lambda i: OpContext(False, ctx, (), None))
    octx = OpContext(False, ctx, (), RunContext(ctx))
    row("kernel (`np.add(x, y, out=z)` through the registered kernel)",
        lambda i: kernel(octx, params, [x, y], [z], plan.req))

    def free_chunk(i):
        Chunk(40, ctx, eng.new_variable())      # made and dropped: retire the variable at once
    row("freeing the previous `c` (Chunk.__del__, retire, delete fn) + its variable", free_chunk)
    return rows


def _noop(run_ctx):
    pass


_noop.may_run_inline = True


def whole_calls(n: int, repeats: int) -> list:
    """``[(mode, add µs, iadd µs)]``: whole calls on each engine mode, ending with a full wait."""
    out = []
    for mode, engine, inline in (("threaded, run on the calling thread", "ThreadedEnginePerDevice", True),
                                 ("threaded, handed to the worker", "ThreadedEnginePerDevice", False),
                                 ("naive engine", "NaiveEngine", None)):
        eng = mx.engine.set_engine(engine)
        if inline is not None:
            eng.run_inline = inline
        a, b = mx.nd.ones((10,)), mx.nd.ones((10,))
        mx.nd.waitall()
        res = []
        for loop in (_add, _iadd):
            wall = cpu = float("inf")
            for _ in range(repeats):
                t0, c0 = time.perf_counter(), time.process_time()
                loop(a, b, n)
                mx.nd.waitall()
                wall = min(wall, time.perf_counter() - t0)
                cpu = min(cpu, time.process_time() - c0)
            res += [wall / n * 1e6, cpu / n * 1e6]
        out.append((mode, *res))
    return out


def _add(a, b, n):
    for _ in range(n):
        c = a + b  # noqa: F841 - freeing the previous c is part of the cost


def _iadd(a, b, n):
    for _ in range(n):
        a += 1


def _table_rows(text: str) -> dict:
    """``{first cell: rest of the row}`` of every markdown table row in ``text`` but headers."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 2 and not cells[1].startswith("-") \
                and cells[0] not in ("phase of `c = a + b`",) and not cells[0].startswith("whole call"):
            rows[cells[0]] = cells[1:]
    return rows


def _best(cells_a: list, cells_b: list) -> list:
    """Per cell, the one whose first number is smaller (best of rounds)."""
    def first(c):
        try:
            return float(c.split()[0])
        except (ValueError, IndexError):
            return float("inf")
    return [a if first(a) <= first(b) else b for a, b in zip(cells_a, cells_b)]


def side_by_side(before: str, n: int, repeats: int, rounds: int) -> None:
    """Run ``before``'s copy of this script and this one alternately; print both columns."""
    import subprocess  # noqa: PLC0415
    scripts = {"before": os.path.join(before, "benchmarks", "bench_dispatch_phases.py"),
               "after": os.path.abspath(__file__)}
    best = {"before": {}, "after": {}}
    order = []
    for _ in range(rounds):
        for side, script in scripts.items():
            out = subprocess.run([sys.executable, script, "--n", str(n), "--repeats", str(repeats)],
                                 capture_output=True, text=True, check=True,
                                 cwd=os.path.dirname(os.path.dirname(script))).stdout
            for name, cells in _table_rows(out).items():
                if name not in order:
                    order.append(name)
                old = best[side].get(name)
                best[side][name] = cells if old is None else _best(old, cells)
    print(f"side by side: before = {before}, after = this tree; best of {rounds} alternating rounds\n")
    print("| phase of `c = a + b` (CPU µs), then whole calls: wall (CPU) `c = a + b` / `a += 1` "
          "| before | after |\n|---|---:|---:|")
    for name in order:
        b = " / ".join(best["before"].get(name, ["—"]))
        a = " / ".join(best["after"].get(name, ["—"]))
        print(f"| {name} | {b} | {a} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--before", help="another checkout of mxref: print both, side by side")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds with --before")
    args = ap.parse_args()
    if args.before:
        side_by_side(args.before, args.n, args.repeats, args.rounds)
        return
    print(f"dispatch: {imp.selected_paths()}; best of {args.repeats} loops of {args.n}, µs per call\n")
    print("| phase of `c = a + b` | CPU µs |\n|---|---:|")
    total = 0.0
    for name, us in phases(args.n, args.repeats):
        total += us
        print(f"| {name} | {us:.2f} |")
    print(f"| sum of the phases | {total:.2f} |\n")
    print("| whole call, µs per op: wall (CPU of all threads) | `c = a + b` | `a += 1` |\n|---|---:|---:|")
    for mode, add, add_cpu, iadd, iadd_cpu in whole_calls(args.n, args.repeats):
        print(f"| {mode} | {add:.2f} ({add_cpu:.2f}) | {iadd:.2f} ({iadd_cpu:.2f}) |")


if __name__ == "__main__":
    main()
