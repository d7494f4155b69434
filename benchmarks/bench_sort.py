"""``topk``, ``sort`` and ``argsort``: mxref vs MXNet 1.9.1, side by side.

Two float32 workloads: the rows of a 1000 x 1000 matrix (``axis=-1``) and one 10^6 vector.
``topk`` takes k=10 (``ret_typ='indices'``, the default, and ``'value'``); ``sort`` and
``argsort`` order the whole axis. Each system runs in its own subprocess on the same data (written
once to an .npz), prints the median milliseconds of ``--repeats`` calls (each waited for) after a
warm-up, and the rounds alternate the systems (the machine's load drifts). The table gives the
median over rounds and the ratio MXNet time / mxref time (above 1: mxref is faster).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_sort.py --repeats 7 --rounds 3
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import numpy as np
from bench_common import import_system, interleaved_runs, median_ms

MXNET_PYTHONS = ("/work/venvs/mxnet191/bin/python", "/work/ref/mxvenv/bin/python")
CASES = (("topk k=10", "topk", {"k": 10}), ("topk k=10 value", "topk", {"k": 10, "ret_typ": "value"}),
         ("sort", "sort", {}), ("argsort", "argsort", {}))


def worker(system: str, path: str, repeats: int) -> None:
    mx = import_system(system)
    z = np.load(path)
    res = {}
    for shape_name in ("matrix", "vector"):
        x = mx.nd.array(z[shape_name])
        for label, op, kw in CASES:
            def call(fn=getattr(mx.nd, op), x=x, kw=kw):
                fn(x, **kw).wait_to_read()
            res[f"{shape_name} {label}"] = median_ms(call, repeats)
    print(json.dumps(res))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--worker", default=None)
    ap.add_argument("--data", default=None)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.data, args.repeats)
        return
    systems = [("mxref", sys.executable)]
    mxnet_py = next((p for p in MXNET_PYTHONS if os.path.exists(p)), None)
    if mxnet_py:
        systems.append(("mxnet", mxnet_py))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "sort.npz")
        rng = np.random.default_rng(0)
        np.savez(path, matrix=rng.standard_normal((1000, 1000)).astype(np.float32),
                 vector=rng.standard_normal(10 ** 6).astype(np.float32))
        env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
        runs = interleaved_runs(__file__, systems, ["--data", path, "--repeats", str(args.repeats)],
                                args.rounds, env)
    med = {name: {k: float(np.median([r[k] for r in rs])) for k in rs[0]} for name, rs in runs.items()}
    print(f"float32, median ms of {args.repeats} calls, median of {args.rounds} interleaved rounds "
          f"(matrix: 1000 x 1000 along the last axis; vector: 10^6)")
    print(f"{'case':<28}{'mxref':>10}{'MXNet':>10}{'MXNet/mxref':>13}")
    for key, t in med.get("mxref", {}).items():
        other = med.get("mxnet", {}).get(key)
        ratio = f"{other / t:>12.2f}x" if other else ""
        print(f"{key:<28}{t:>10.2f}{other if other else float('nan'):>10.2f}{ratio}")


if __name__ == "__main__":
    main()
