"""Sparse ``dot``: csr·dense and csrᵀ·dense, mxref (fast loops and numpy reference) vs MXNet 1.9.1
vs scipy.

The workload of the sparse issue: a 1024 x 10^6 csr batch with 30 nonzeros per row (sorted column
ids drawn uniformly) times a 10^6 x 64 float32 dense matrix, and the transposed product with a
1024 x 64 dense matrix (the gradient of a sparse linear layer). Each system runs in its own
subprocess on the same data (written once to an .npz); each prints the median milliseconds of
``--repeats`` calls after a warm-up, and this script prints them side by side with the ratio
MXNet time / mxref time (above 1: mxref is faster).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_sparse_dot.py --repeats 15 --rounds 5
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from bench_common import median_ms

MXNET_PY = "/work/venvs/mxnet191/bin/python"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_data(path: str, rows: int, cols: int, nnz: int, width: int) -> None:
    rng = np.random.default_rng(0)
    indices = np.sort(rng.integers(0, cols, (rows, nnz)), axis=1).reshape(-1)
    np.savez(path, data=rng.random(rows * nnz, dtype=np.float32), indices=indices,
             indptr=np.arange(0, rows * nnz + 1, nnz), rhs=rng.random((cols, width), dtype=np.float32),
             rhs_t=rng.random((rows, width), dtype=np.float32), shape=np.array([rows, cols]))


def worker(system: str, path: str, repeats: int) -> None:
    z = np.load(path)
    shape = tuple(int(d) for d in z["shape"])
    if system == "scipy":
        import scipy.sparse as spsp
        a = spsp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=shape)
        rhs, rhs_t = z["rhs"], z["rhs_t"]
        res = {"dot": median_ms(lambda: a @ rhs, repeats),
               "dot_t": median_ms(lambda: a.T @ rhs_t, repeats)}
    else:
        if system == "mxnet":
            import mxnet as mx
        else:
            sys.path.insert(0, ROOT)
            if system == "mxref-numpy":
                os.environ["MXREF_ENABLE_EXT"] = "0"
            import mxref as mx
        a = mx.nd.sparse.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=shape)
        rhs, rhs_t = mx.nd.array(z["rhs"]), mx.nd.array(z["rhs_t"])
        res = {"dot": median_ms(lambda: mx.nd.sparse.dot(a, rhs).wait_to_read(), repeats),
               "dot_t": median_ms(lambda: mx.nd.sparse.dot(a, rhs_t, transpose_a=True).wait_to_read(),
                                   repeats)}
        res["stype_t"] = mx.nd.sparse.dot(a, rhs_t, transpose_a=True).stype
    print(json.dumps(res))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1024)
    ap.add_argument("--cols", type=int, default=10 ** 6)
    ap.add_argument("--nnz", type=int, default=30)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=3,
                    help="runs of every system, interleaved (the machine's load drifts)")
    ap.add_argument("--worker", default=None)
    ap.add_argument("--data", default=None)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.data, args.repeats)
        return
    systems = [("mxref", sys.executable), ("mxref-numpy", sys.executable)]
    if os.path.exists(MXNET_PY):
        systems.append(("mxnet", MXNET_PY))
    for python in (sys.executable, MXNET_PY):
        if os.path.exists(python) and subprocess.run([python, "-c", "import scipy.sparse"],
                                                     capture_output=True).returncode == 0:
            systems.append(("scipy", python))
            break
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "dot.npz")
        make_data(path, args.rows, args.cols, args.nnz, args.width)
        runs = {}
        env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
        for _ in range(args.rounds):
            for name, python in systems:
                cmd = [python, os.path.abspath(__file__), "--worker", name, "--data", path,
                       "--repeats", str(args.repeats)]
                out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
                if out.returncode != 0:
                    print(f"{name}: failed\n{out.stderr[-1500:]}")
                    continue
                runs.setdefault(name, []).append(json.loads(out.stdout.strip().splitlines()[-1]))
        # The median over rounds of each system's median time.
        results = {name: {"dot": float(np.median([r["dot"] for r in rs])),
                          "dot_t": float(np.median([r["dot_t"] for r in rs])),
                          "stype_t": rs[0].get("stype_t", "")} for name, rs in runs.items()}
    print(f"dot of a {args.rows} x {args.cols} csr ({args.nnz} nnz/row) with {args.width} dense columns, "
          f"median ms of {args.repeats} calls, median of {args.rounds} interleaved rounds")
    print(f"{'system':<14}{'csr.dense':>12}{'csr.T.dense':>14}")
    for name, r in results.items():
        print(f"{name:<14}{r['dot']:>12.2f}{r['dot_t']:>14.2f}   {r.get('stype_t', '')}")
    if "mxnet" in results:
        for name in ("mxref", "mxref-numpy"):
            if name in results:
                print(f"MXNet / {name}: csr.dense {results['mxnet']['dot'] / results[name]['dot']:.2f}x, "
                      f"csr.T.dense {results['mxnet']['dot_t'] / results[name]['dot_t']:.2f}x")
    if "scipy" in results and "mxref" in results:
        print(f"scipy / mxref: csr.dense {results['scipy']['dot'] / results['mxref']['dot']:.2f}x, "
              f"csr.T.dense {results['scipy']['dot_t'] / results['mxref']['dot_t']:.2f}x")


if __name__ == "__main__":
    main()
