"""Sparse logistic regression training, local: samples/s of mxref vs MXNet 1.9.1 on the same symbol.

The symbol is MXNet's sparse linear-classification example: ``sparse.dot`` of a csr batch
(``--batch`` x ``--features``, ``--nnz`` nonzeros per row) with a row_sparse weight
(``features`` x 1), plus a bias, into ``LogisticRegressionOutput``. Each step copies the next
batch into the bound executor (``simple_bind`` with ``stype_dict``), runs forward and backward,
and applies ``sgd_update`` to the weight (lazily: its row_sparse gradient holds only the batch's
features) and to the bias. Each system runs in its own subprocess on the same batches (written
once to an .npz) and reports samples/s of ``--repeats`` blocks of ``--iters`` steps; the final
log-loss on the batches is printed too, so both are seen to train the same model.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_sparse_logreg.py --iters 20 --repeats 3 --rounds 5
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np
from bench_common import import_system, interleaved_runs

MXNET_PY = "/work/venvs/mxnet191/bin/python"


def make_data(path: str, batches: int, batch: int, features: int, nnz: int) -> None:
    """Batches of a hidden linear model: labels are 1 where ``x . w_true > 0``."""
    rng = np.random.default_rng(0)
    w_true = rng.standard_normal(features).astype(np.float32)
    out = {}
    for b in range(batches):
        idx = np.sort(rng.integers(0, features, (batch, nnz)), axis=1)
        val = rng.random((batch, nnz), dtype=np.float32)
        out[f"indices{b}"] = idx.reshape(-1)
        out[f"data{b}"] = val.reshape(-1)
        out[f"label{b}"] = ((val * w_true[idx]).sum(axis=1) > 0).astype(np.float32).reshape(-1, 1)
    out["indptr"] = np.arange(0, batch * nnz + 1, nnz)
    out["dims"] = np.array([batches, batch, features])
    np.savez(path, **out)


def worker(system: str, path: str, iters: int, repeats: int, lr: float) -> None:
    mx = import_system(system)
    z = np.load(path)
    nb, batch, features = (int(d) for d in z["dims"])
    data = [mx.nd.sparse.csr_matrix((z[f"data{b}"], z[f"indices{b}"], z["indptr"]), shape=(batch, features))
            for b in range(nb)]
    labels = [mx.nd.array(z[f"label{b}"]) for b in range(nb)]
    x = mx.sym.Variable("data", stype="csr")
    w = mx.sym.Variable("weight", stype="row_sparse")
    b = mx.sym.Variable("bias")
    out = mx.sym.broadcast_add(mx.sym.sparse.dot(x, w), b)
    net = mx.sym.LogisticRegressionOutput(out, mx.sym.Variable("softmax_label"), name="out")
    ex = net.simple_bind(mx.cpu(), data=(batch, features), weight=(features, 1), bias=(1,),
                         softmax_label=(batch, 1),
                         stype_dict={"data": "csr", "weight": "row_sparse", "bias": "default",
                                     "softmax_label": "default"},
                         grad_req={"data": "null", "weight": "write", "bias": "write",
                                   "softmax_label": "null"})
    init = np.random.default_rng(1).normal(0, 0.01, (features, 1)).astype(np.float32)
    mx.nd.array(init).tostype("row_sparse").copyto(ex.arg_dict["weight"])
    weight, bias = ex.arg_dict["weight"], ex.arg_dict["bias"]
    gw, gb = ex.grad_dict["weight"], ex.grad_dict["bias"]
    step_no = [0]

    def step():
        i = step_no[0] % nb
        step_no[0] += 1
        data[i].copyto(ex.arg_dict["data"])
        labels[i].copyto(ex.arg_dict["softmax_label"])
        ex.forward(is_train=True)
        ex.backward()
        mx.nd.sparse.sgd_update(weight, gw, out=weight, lr=lr, rescale_grad=1.0 / batch)
        mx.nd.sgd_update(bias, gb, out=bias, lr=lr, rescale_grad=1.0 / batch)

    for _ in range(3):
        step()
    mx.nd.waitall()
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iters):
            step()
        mx.nd.waitall()
        rates.append(batch * iters / (time.perf_counter() - t0))
    losses = []
    for i in range(nb):
        data[i].copyto(ex.arg_dict["data"])
        p = np.clip(ex.forward(is_train=False)[0].asnumpy().ravel(), 1e-7, 1 - 1e-7)
        y = z[f"label{i}"].ravel()
        losses.append(float(-(y * np.log(p) + (1 - y) * np.log(1 - p)).mean()))
    print(json.dumps({"rates": rates, "logloss": float(np.mean(losses)), "grad_stype": gw.stype,
                      "steps": step_no[0]}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--features", type=int, default=10 ** 6)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--nnz", type=int, default=30)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--lr", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=3,
                    help="runs of every system, interleaved (the machine's load drifts)")
    ap.add_argument("--worker", default=None)
    ap.add_argument("--data", default=None)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.data, args.iters, args.repeats, args.lr)
        return
    systems = [("mxref", sys.executable)] + ([("mxnet", MXNET_PY)] if os.path.exists(MXNET_PY) else [])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "logreg.npz")
        make_data(path, args.batches, args.batch, args.features, args.nnz)
        env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"),
                   MXNET_ENGINE_TYPE="ThreadedEnginePerDevice")
        worker_args = ["--data", path, "--iters", str(args.iters), "--repeats", str(args.repeats),
                       "--lr", str(args.lr)]
        runs = interleaved_runs(__file__, systems, worker_args, args.rounds, env, timeout=1800, tail=2000)
    # The last run of each system, with the rates of all its runs.
    results = {name: dict(rs[-1], rates=[v for r in rs for v in r["rates"]]) for name, rs in runs.items()}
    print(f"sparse logistic regression: {args.features} features, batch {args.batch}, {args.nnz} nnz/row; "
          f"samples/s of {args.repeats} blocks of {args.iters} steps, {args.rounds} interleaved rounds")
    for name, r in results.items():
        rates = ", ".join(f"{v:.0f}" for v in r["rates"])
        print(f"{name:<8} median {np.median(r['rates']):>9.0f}  ({rates})  log-loss after "
              f"{r['steps']} steps {r['logloss']:.4f}  weight grad {r['grad_stype']}")
    if len(results) == 2:
        ratio = np.median(results["mxref"]["rates"]) / np.median(results["mxnet"]["rates"])
        print(f"mxref / MXNet: {ratio:.2f}x")


if __name__ == "__main__":
    main()
