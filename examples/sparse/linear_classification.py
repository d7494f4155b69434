"""Sparse logistic regression on CTR-like LibSVM data with Module, locally or on parameter servers.

    python examples/sparse/ctr_data.py --out /tmp/ctr                       # the data, once
    python examples/sparse/linear_classification.py --data /tmp/ctr --kvstore local
    mpiexec -launcher fork -iface lo -n 3 python examples/sparse/linear_classification.py \\
        --data /tmp/ctr --kvstore dist_sync                                 # 2 workers + 1 server
    mpiexec -launcher fork -iface lo -n 3 python examples/sparse/linear_classification.py \\
        --data /tmp/ctr --kvstore dist_async

MXNet's ``example/sparse/linear_classification``: a csr ``data`` Variable, a row_sparse
``weight`` of ``(features, 1)``, ``mx.sym.sparse.dot(data, weight) + bias`` into a logistic
loss, and ``update_on_kvstore``: the store holds the weight and runs the optimizer, and before
each batch ``Module.prepare`` pulls just the rows that batch's features need
(``sparse_row_id_fn``). With a ``dist`` store each worker reads its own shard of the file
(``num_parts``/``part_index``). At the end every weight row is pulled, the test set scored, and
the log-loss and AUC printed beside those of the hidden true model (``truth.npz``); worker 0
plots the training loss to ``--plot``.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from tqdm import tqdm

import mxref as mx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ctr_data import auc, log_loss  # noqa: E402 - the example's own helpers


def symbol(features: int):
    x = mx.sym.Variable("data", stype="csr")
    w = mx.sym.Variable("weight", shape=(features, 1), stype="row_sparse",
                        init=mx.init.Normal(sigma=0.01))
    b = mx.sym.Variable("bias", shape=(1,))
    y = mx.sym.Variable("softmax_label")
    logit = mx.sym.broadcast_add(mx.sym.sparse.dot(x, w), b)
    return mx.sym.LogisticRegressionOutput(logit, mx.sym.reshape(y, shape=(-1, 1)), name="out")


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="ctr_data")
    ap.add_argument("--kvstore", default="local")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--optimizer", default="adagrad", choices=["sgd", "adagrad", "adam", "ftrl"])
    ap.add_argument("--plot", default="linear_classification.png")
    args = ap.parse_args(argv)
    truth = np.load(os.path.join(args.data, "truth.npz"))
    features = int(truth["features"])
    kv = mx.kv.create(args.kvstore)
    rank, nworkers = kv.rank, kv.num_workers
    train = mx.io.LibSVMIter(data_libsvm=os.path.join(args.data, "train.libsvm"), data_shape=(features,),
                             batch_size=args.batch_size, num_parts=nworkers, part_index=rank)
    mod = mx.mod.Module(symbol(features), data_names=["data"], label_names=["softmax_label"])
    mod.bind(data_shapes=train.provide_data, label_shapes=train.provide_label)
    mod.init_params()
    opt = mx.optimizer.create(args.optimizer, learning_rate=args.lr,
                              rescale_grad=1.0 / args.batch_size / nworkers)
    mod.init_optimizer(optimizer=opt, kvstore=kv)

    def batch_row_ids(batch):
        return {"weight": batch.data[0].indices}      # the features this batch has

    def all_row_ids(batch):
        return {"weight": mx.nd.arange(0, features, dtype="int64")}

    losses = []
    for epoch in range(args.epochs):
        train.reset()
        bar = tqdm(train, desc=f"epoch {epoch} (worker {rank})", unit="batch", disable=rank != 0,
                   leave=False)
        for batch in bar:
            mod.prepare(batch, sparse_row_id_fn=batch_row_ids)
            mod.forward_backward(batch)
            mod.update()
            p = mod.get_outputs()[0].asnumpy().ravel()
            y = batch.label[0].asnumpy().ravel()
            keep = len(y) - batch.pad
            losses.append(log_loss(y[:keep], p[:keep]))
            bar.set_postfix(logloss=f"{np.mean(losses[-50:]):.4f}")
    mod.prepare(None, sparse_row_id_fn=all_row_ids)
    kv.barrier()
    mod.prepare(None, sparse_row_id_fn=all_row_ids)   # after every worker's last update
    arg, _ = mod.get_params()
    w = arg["weight"].asnumpy().ravel()
    b = float(arg["bias"].asnumpy()[0])
    test = mx.io.LibSVMIter(data_libsvm=os.path.join(args.data, "test.libsvm"), data_shape=(features,),
                            batch_size=4096, round_batch=False)
    tw, tb = truth["weights"], float(truth["bias"])
    ys, ps, pt = [], [], []
    for batch in test:
        x = batch.data[0]
        keep = x.shape[0] - batch.pad
        ind, val, ptr = x.indices.asnumpy(), x.data.asnumpy(), x.indptr.asnumpy()
        rows = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
        for weights, bias, out in ((w, b, ps), (tw, tb, pt)):
            logit = bias + np.bincount(rows, weights=weights[ind] * val, minlength=len(ptr) - 1)
            out.append(1 / (1 + np.exp(-logit[:keep])))
        ys.append(batch.label[0].asnumpy()[:keep])
    y, p, p_true = np.concatenate(ys), np.concatenate(ps), np.concatenate(pt)
    result = {"logloss": log_loss(y, p), "auc": auc(y, p),
              "true_logloss": log_loss(y, p_true), "true_auc": auc(y, p_true)}
    print(f"worker {rank} of {nworkers} ({args.kvstore}, {args.optimizer}): test logloss "
          f"{result['logloss']:.4f} auc {result['auc']:.4f} (true model: logloss "
          f"{result['true_logloss']:.4f} auc {result['true_auc']:.4f})", flush=True)
    if rank == 0 and args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 4))
        smooth = np.convolve(losses, np.ones(20) / 20, mode="valid") if len(losses) > 20 else losses
        ax.plot(smooth, label=f"worker 0, {args.kvstore}")
        ax.set_xlabel("batch")
        ax.set_ylabel("training log-loss (20-batch mean)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot)
        print(f"plot: {args.plot}")
    return result


if __name__ == "__main__":
    main()
