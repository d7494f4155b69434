"""Factorization machines (FM) and field-aware FMs (FFM, libffm's model) on parameter servers.

    python examples/sparse/ctr_data.py --out /tmp/ctr
    python examples/sparse/factorization_machine.py --data /tmp/ctr --model fm --kvstore local
    mpiexec -launcher fork -iface lo -n 3 python examples/sparse/factorization_machine.py \\
        --data /tmp/ctr --model ffm --kvstore dist_sync                     # 2 workers + 1 server

FM (Rendle, 2010)::

    logit(x) = w0 + sum_j w_j x_j + 1/2 sum_f [ (sum_j V_jf x_j)^2 - sum_j V_jf^2 x_j^2 ]

FFM (Juan et al., 2016; libffm): feature ``j`` of field ``a`` has one latent vector per field,
and a pair meets through the vectors aimed at each other's field::

    logit(x) = w0 + sum_j w_j x_j + sum_{a < b} < V[j_a, field b], V[j_b, field a] > x_a x_b

The tables live on the parameter servers as row_sparse keys (``w``: ``features x 1``, ``V``:
``features x k`` or ``features x fields*k``), updated there by AdaGrad, as libffm trains. A
worker step is the ps-lite application loop: ``row_sparse_pull`` the rows of the batch's
features, compute the logistic loss's gradient in numpy, ``push`` it as row_sparse values (only
those rows travel). A latent row starts from a fixed pseudo-random point, a hash of its id
(``start_rows``), and the server holds the row's offset from it, so the table still costs
memory only for the rows trained. Test log-loss and AUC are printed beside the true model's;
worker 0 plots the training loss to ``--plot``.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from tqdm import tqdm

import mxref as mx
from mxref.ndarray import sparse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ctr_data import auc, field_of, log_loss  # noqa: E402 - the example's own helpers


def start_rows(ids: np.ndarray, width: int, sigma: float) -> np.ndarray:
    """A fixed pseudo-random start for latent rows ``ids`` (uniform, standard deviation sigma)."""
    h = ids.astype(np.uint64)[:, None] * np.uint64(width) + np.arange(width, dtype=np.uint64)
    h = (h + np.uint64(0x9E3779B97F4A7C15)) * np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(31)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(29)
    u = (h >> np.uint64(40)).astype(np.float64) / float(1 << 24)
    return ((u - 0.5) * sigma * np.sqrt(12)).astype(np.float32)


class Batch:
    """A csr batch as numpy: entry ``e`` is row ``rows[e]``, local feature ``loc[e]`` of ``ids``."""

    def __init__(self, x, keep: int):
        self.indptr, self.ind, self.val = x.indptr.asnumpy(), x.indices.asnumpy(), x.data.asnumpy()
        self.n = keep
        self.rows = np.repeat(np.arange(len(self.indptr) - 1), np.diff(self.indptr))
        self.ids, self.loc = np.unique(self.ind, return_inverse=True)

    def row_sum(self, values: np.ndarray) -> np.ndarray:
        out = np.zeros((len(self.indptr) - 1,) + values.shape[1:], values.dtype)
        np.add.at(out, self.rows, values)
        return out

    def col_sum(self, values: np.ndarray) -> np.ndarray:
        out = np.zeros((len(self.ids),) + values.shape[1:], values.dtype)
        np.add.at(out, self.loc, values)
        return out


def fm_logit(b: Batch, w, v):
    """FM's pairwise logit per row and what the gradient needs."""
    xv = v[b.loc] * b.val[:, None]                      # (nnz, k)
    s = b.row_sum(xv)                                   # (rows, k)
    s2 = b.row_sum(xv * xv)
    lin = b.row_sum(w[b.loc, 0] * b.val)
    return lin + 0.5 * (s * s - s2).sum(axis=1), (xv, s)


def fm_grads(b: Batch, g, v, cache):
    xv, s = cache
    ge = g[b.rows]                                      # (nnz,)
    dw = b.col_sum((ge * b.val)[:, None])
    dv = b.col_sum(ge[:, None] * (b.val[:, None] * s[b.rows] - xv * b.val[:, None]))
    return dw, dv


def ffm_logit(b: Batch, w, v, fields: int, features: int, k: int):
    """FFM's logit per row; each row must hold at most one feature per field (CTR one-hot)."""
    nrows = len(b.indptr) - 1
    f = field_of(b.ind, features, fields)
    slot = np.full((nrows, fields), -1)
    slot[b.rows, f] = np.arange(len(b.ind))
    if np.bincount(b.rows * fields + f, minlength=nrows * fields).max(initial=0) > 1:
        raise SystemExit("ffm: a row has two features of one field; FFM here needs one-hot fields")
    present = slot >= 0
    e = np.where(present, slot, 0)
    vv = v[b.loc[e]].reshape(nrows, fields, fields, k)  # vv[r, a, b] = V[j_a, field b]
    x = np.where(present, b.val[e], 0.0).astype(np.float32)
    t = vv * x[:, :, None, None]
    m = np.einsum("rabk,rbak->rab", t, t)
    m[:, np.arange(fields), np.arange(fields)] = 0
    lin = b.row_sum(w[b.loc, 0] * b.val)
    return lin + 0.5 * m.sum(axis=(1, 2)), (vv, x, e, present)


def ffm_grads(b: Batch, g, cache, fields: int, k: int):
    vv, x, e, present = cache
    xx = x[:, :, None] * x[:, None, :]                  # (r, a, b) = x_a x_b
    np.einsum("rbb->rb", xx)[...] = 0
    grad = (g[:, None, None] * xx)[..., None] * vv.transpose(0, 2, 1, 3)   # d/dV[j_a, b]
    dv = np.zeros((len(b.ids), fields, k), np.float32)
    np.add.at(dv, b.loc[e[present]], grad[present])
    dw = b.col_sum((g[b.rows] * b.val)[:, None])
    return dw, dv.reshape(len(b.ids), fields * k)


def rsp(rows, ids, shape):
    return sparse.row_sparse_array((np.ascontiguousarray(rows, np.float32), ids), shape=shape)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="ctr_data")
    ap.add_argument("--model", default="fm", choices=["fm", "ffm"])
    ap.add_argument("--kvstore", default="local")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--sigma", type=float, default=0.01)
    ap.add_argument("--plot", default="factorization_machine.png")
    args = ap.parse_args(argv)
    truth = np.load(os.path.join(args.data, "truth.npz"))
    features, fields, k = int(truth["features"]), int(truth["fields"]), args.k
    width = k if args.model == "fm" else fields * k
    kv = mx.kv.create(args.kvstore)
    rank, nw = kv.rank, kv.num_workers
    kv.set_optimizer(mx.optimizer.AdaGrad(learning_rate=args.lr, rescale_grad=1.0 / args.batch_size / nw))
    kv.init(["w0", "w", "v"], [mx.nd.zeros((1,)), sparse.zeros("row_sparse", (features, 1)),
                               sparse.zeros("row_sparse", (features, width))])
    w0 = mx.nd.zeros((1,))
    w_out = sparse.zeros("row_sparse", (features, 1))
    v_out = sparse.zeros("row_sparse", (features, width))

    def pull(ids):
        nd_ids = mx.nd.array(ids, dtype="int64")
        kv.pull("w0", out=w0)
        kv.row_sparse_pull("w", out=w_out, row_ids=nd_ids)
        kv.row_sparse_pull("v", out=v_out, row_ids=nd_ids)
        return (float(w0.asnumpy()[0]), w_out.data.asnumpy(),
                v_out.data.asnumpy() + start_rows(ids, width, args.sigma))

    def logits(b, w, v):
        if args.model == "fm":
            return fm_logit(b, w, v)
        return ffm_logit(b, w, v, fields, features, k)

    train = mx.io.LibSVMIter(data_libsvm=os.path.join(args.data, "train.libsvm"), data_shape=(features,),
                             batch_size=args.batch_size, num_parts=nw, part_index=rank)
    losses = []
    for epoch in range(args.epochs):
        train.reset()
        bar = tqdm(train, desc=f"{args.model} epoch {epoch}", unit="batch", disable=rank != 0, leave=False)
        for batch in bar:
            b = Batch(batch.data[0], len(batch.label[0]) - batch.pad)
            y = batch.label[0].asnumpy()
            bias, w, v = pull(b.ids)
            z, cache = logits(b, w, v)
            p = 1 / (1 + np.exp(-(bias + z)))
            g = (p - y).astype(np.float32)
            g[b.n:] = 0                                      # the wrapped-around filler rows
            if args.model == "fm":
                dw, dv = fm_grads(b, g, v, cache)
            else:
                dw, dv = ffm_grads(b, g, cache, fields, k)
            kv.push("w0", mx.nd.array([g.sum()]))
            kv.push("w", rsp(dw, b.ids, (features, 1)))
            kv.push("v", rsp(dv, b.ids, (features, width)))
            losses.append(log_loss(y[:b.n], p[:b.n]))
            bar.set_postfix(logloss=f"{np.mean(losses[-50:]):.4f}")
    kv.barrier()
    test = mx.io.LibSVMIter(data_libsvm=os.path.join(args.data, "test.libsvm"), data_shape=(features,),
                            batch_size=2048, round_batch=False)
    ys, ps, pt = [], [], []
    tw, tb = truth["weights"], float(truth["bias"])
    for batch in test:
        b = Batch(batch.data[0], len(batch.label[0]) - batch.pad)
        bias, w, v = pull(b.ids)
        z, _ = logits(b, w, v)
        ps.append(1 / (1 + np.exp(-(bias + z[:b.n]))))
        pt.append(1 / (1 + np.exp(-(tb + b.row_sum(tw[b.ind] * b.val)[:b.n]))))
        ys.append(batch.label[0].asnumpy()[:b.n])
    y, p, p_true = np.concatenate(ys), np.concatenate(ps), np.concatenate(pt)
    result = {"logloss": log_loss(y, p), "auc": auc(y, p), "true_logloss": log_loss(y, p_true),
              "true_auc": auc(y, p_true)}
    print(f"worker {rank} of {nw} ({args.model}, {args.kvstore}): test logloss {result['logloss']:.4f} "
          f"auc {result['auc']:.4f} (true model: logloss {result['true_logloss']:.4f} "
          f"auc {result['true_auc']:.4f})", flush=True)
    if rank == 0 and args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 4))
        smooth = np.convolve(losses, np.ones(20) / 20, mode="valid") if len(losses) > 20 else losses
        ax.plot(smooth, label=f"{args.model}, {args.kvstore}, worker 0")
        ax.axhline(result["true_logloss"], ls="--", c="k", label="true model (test)")
        ax.set_xlabel("batch")
        ax.set_ylabel("training log-loss (20-batch mean)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot)
        print(f"plot: {args.plot}")
    return result


if __name__ == "__main__":
    main()
