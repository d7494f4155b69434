"""Engine core cost: Cython vs pure-Python dependency queue, per push/complete, and engine round trips.

* ``core``: one op reading 2 variables and writing 1: ``OprBlock`` + ``register`` + ``complete``
  (the per-variable state machine and wait counter), single thread, no workers.
* ``queue``: one ``push`` + ``pop`` on the blocking FIFO queue.
* ``push``: ``push_sync`` on the threaded engine while every op waits behind a gate op, so only
  the pushing thread's work is timed (dedup, OprBlock, register on 3 variables, back-pressure check).
* ``engine``: ``push_sync`` of an empty function through ``ThreadedEnginePerDevice`` (2 workers),
  ``n`` ops on fresh outputs then ``wait_for_all``: push + dispatch + run + complete, end to end.

    .venv/bin/python benchmarks/bench_engine_queue.py [--n 50000] [--repeats 5] [--clock cpu|wall]

``--clock cpu`` (the default) times with ``time.process_time``: the CPU this process used, summed
over its threads, which other programs on a shared machine barely disturb; ``wall`` is elapsed time.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
clock = time.process_time


def bench_core(core, n: int) -> float:
    a, b, c = core.ThreadedVar(), core.ThreadedVar(), core.ThreadedVar()
    opr, register, complete = core.OprBlock, core.register, core.complete
    fn, reads, writes = (lambda r: None), (a, b), (c,)
    t0 = clock()
    for _ in range(n):
        op = opr(fn, None, reads, writes, 0, 0, "op", True)
        register(op)
        complete(op)
    return (clock() - t0) / n * 1e6


def bench_queue(core, n: int) -> float:
    q = core.FIFOQueue()
    push, pop = q.push, q.pop
    t0 = clock()
    for i in range(n):
        push(i)
        pop()
    return (clock() - t0) / n * 1e6


def bench_push(use_ext, n: int) -> float:
    import threading

    import mxref as mx
    from mxref.engine.threaded import ThreadedEnginePerDevice
    eng = ThreadedEnginePerDevice(use_ext=use_ext)
    gate, g, a = threading.Event(), eng.new_variable(), eng.new_variable()
    eng.push_sync(lambda r: gate.wait(), mx.cpu(), (), (g,))
    outs = [eng.new_variable() for _ in range(n)]
    fn, ctx = (lambda r: None), mx.cpu()
    t0 = clock()
    for o in outs:
        eng.push_sync(fn, ctx, (g, a), (o,))
    dt = (clock() - t0) / n * 1e6
    gate.set()
    eng.stop()
    return dt


def bench_engine(use_ext, n: int) -> float:
    import mxref as mx
    from mxref.engine.naive import NaiveEngine
    from mxref.engine.threaded import ThreadedEnginePerDevice
    eng = NaiveEngine() if use_ext is None else ThreadedEnginePerDevice(use_ext=use_ext)
    a, b = eng.new_variable(), eng.new_variable()
    outs = [eng.new_variable() for _ in range(n)]
    fn, ctx = (lambda r: None), mx.cpu()
    t0 = clock()
    for o in outs:
        eng.push_sync(fn, ctx, (a, b), (o,))
    eng.wait_for_all()
    dt = (clock() - t0) / n * 1e6
    eng.stop()
    return dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = ap.parse_args()
    global clock
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    from mxref._ext import engine_core as cy
    from mxref.engine import var_queue as py

    def med(f, *a):
        return statistics.median(f(*a) for _ in range(args.repeats))

    print(f"median of {args.repeats} runs, n={args.n}, {args.clock} microseconds per op")
    rows = [("core push+complete (2 reads, 1 write)", med(bench_core, py, args.n),
             med(bench_core, cy, args.n)),
            ("blocking FIFO push+pop", med(bench_queue, py, args.n), med(bench_queue, cy, args.n)),
            ("engine push_sync only (ops held by a gate)", med(bench_push, False, args.n // 2),
             med(bench_push, True, args.n // 2)),
            ("engine push_sync..wait_for_all (2 workers)", med(bench_engine, False, args.n // 2),
             med(bench_engine, True, args.n // 2))]
    print(f"  {'':<44}{'python':>10}{'cython':>10}{'ratio':>8}")
    for name, p, c in rows:
        print(f"  {name:<44}{p:>10.2f}{c:>10.2f}{p / c:>7.1f}x")
    print(f"  {'naive engine push_sync (reference)':<44}{med(bench_engine, None, args.n // 2):>10.2f}")


if __name__ == "__main__":
    main()
