"""word2vec (skip-gram with negative sampling) with its embedding tables on the parameter server.

    python examples/sparse/word2vec.py                                     # local store
    mpiexec -launcher fork -iface lo -n 3 python examples/sparse/word2vec.py --kvstore dist_sync
    python examples/sparse/word2vec.py --text coriolanus                   # the bundled text

Mikolov et al.'s skip-gram: each word predicts the words within ``--window`` of it; a pair
``(center c, context o)`` and ``--negatives`` words ``n`` drawn from the unigram distribution to
the 3/4 power give the loss ``-log s(u_c . v_o) - sum_n log s(-u_c . v_n)``. The input table
``u`` and the output table ``v`` (``vocab x dim``) are row_sparse keys on the servers; a step
``row_sparse_pull``s only the rows of the batch's words, computes the gradient in numpy and
pushes it back as row_sparse values (AdaGrad on the servers). ``u`` rows start from a fixed
pseudo-random point (a hash of the word id, as the FM example), ``v`` rows from zero.

The default corpus is generated: sentences from a small grammar whose words fall in classes
(animals, foods, places, colours, verbs), so the right nearest neighbours are known and the
example reports how many words' nearest neighbour is of their own class. It prints the
neighbours of a few words and worker 0 plots the loss to ``--plot``.
"""
from __future__ import annotations

import argparse
import os
import re
import sys

import numpy as np
from tqdm import tqdm

import mxref as mx
from mxref.ndarray import sparse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from factorization_machine import start_rows  # noqa: E402 - the example's own helper

CLASSES = {
    "animal": "cat dog horse cow sheep goat pig duck".split(),
    "food": "bread meat grass hay apples corn seeds milk".split(),
    "place": "farm field barn river hill town road yard".split(),
    "colour": "red green blue white black brown grey yellow".split(),
    "verb": "eats likes wants finds sees takes needs smells".split(),
}
TEMPLATES = ["the {colour} {animal} {verb} the {food} in the {place}",
             "a {animal} {verb} {food} near the {colour} {place}",
             "in the {place} the {animal} {verb} some {food}",
             "every {colour} {animal} {verb} {food} by the {place}"]


def generated_corpus(sentences: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    words = []
    for _ in range(sentences):
        t = TEMPLATES[rng.integers(len(TEMPLATES))]
        words += t.format(**{c: ws[rng.integers(len(ws))] for c, ws in CLASSES.items()}).split()
    return words


def bundled_corpus() -> list:
    path = os.path.join(os.path.dirname(mx.__file__), "data", "coriolanus.txt")
    with open(path, encoding="utf-8") as f:
        return re.findall(r"[a-z']+", f.read().lower())


def pairs_of(ids: np.ndarray, window: int) -> np.ndarray:
    """Every (center, context) pair within ``window`` positions."""
    out = [np.stack([ids[:-d], ids[d:]], 1) for d in range(1, window + 1)]
    out += [p[:, ::-1] for p in out]
    return np.concatenate(out)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kvstore", default="local")
    ap.add_argument("--text", default="generated", choices=["generated", "coriolanus"])
    ap.add_argument("--sentences", type=int, default=3000)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--window", type=int, default=2)
    ap.add_argument("--negatives", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.2)
    ap.add_argument("--plot", default="word2vec.png")
    args = ap.parse_args(argv)
    words = generated_corpus(args.sentences, 0) if args.text == "generated" else bundled_corpus()
    vocab, ids, counts = np.unique(words, return_inverse=True, return_counts=True)
    nv, dim = len(vocab), args.dim
    noise = counts ** 0.75 / (counts ** 0.75).sum()
    kv = mx.kv.create(args.kvstore)
    rank, nw = kv.rank, kv.num_workers
    kv.set_optimizer(mx.optimizer.AdaGrad(learning_rate=args.lr, rescale_grad=1.0 / args.batch_size / nw))
    kv.init(["u", "v"], [sparse.zeros("row_sparse", (nv, dim)), sparse.zeros("row_sparse", (nv, dim))])
    pairs = pairs_of(ids, args.window)
    pairs = pairs[np.random.default_rng(1).permutation(len(pairs))]
    lo, hi = len(pairs) * rank // nw, len(pairs) * (rank + 1) // nw
    mine = pairs[lo:hi]                                 # this worker's shard of the pairs
    steps = len(mine) // args.batch_size
    steps = min(steps, len(pairs) // nw // args.batch_size)   # every worker the same count (sync)
    rng = np.random.default_rng(100 + rank)
    u_out, v_out = sparse.zeros("row_sparse", (nv, dim)), sparse.zeros("row_sparse", (nv, dim))
    losses = []

    def pull(key, out, rows):
        kv.row_sparse_pull(key, out=out, row_ids=mx.nd.array(rows, dtype="int64"))
        return out.data.asnumpy()

    for epoch in range(args.epochs):
        bar = tqdm(range(steps), desc=f"epoch {epoch}", unit="batch", disable=rank != 0, leave=False)
        for s in bar:
            batch = mine[s * args.batch_size:(s + 1) * args.batch_size]
            c, o = batch[:, 0], batch[:, 1]
            neg = rng.choice(nv, size=(len(batch), args.negatives), p=noise)
            targets = np.concatenate([o[:, None], neg], 1)                     # (B, 1 + n)
            labels = np.zeros(targets.shape, np.float32)
            labels[:, 0] = 1
            cu, c_loc = np.unique(c, return_inverse=True)
            tv, t_loc = np.unique(targets, return_inverse=True)
            u = pull("u", u_out, cu) + start_rows(cu, dim, 0.5 / dim)
            v = pull("v", v_out, tv)
            uc, vt = u[c_loc], v[t_loc.reshape(targets.shape)]                # (B, d), (B, 1+n, d)
            score = np.einsum("bd,bkd->bk", uc, vt)
            p = 1 / (1 + np.exp(-score))
            losses.append(float(-np.mean(np.log(np.where(labels > 0, p, 1 - p) + 1e-7).sum(1))))
            g = (p - labels).astype(np.float32)                                # d loss / d score
            du = np.zeros_like(u)
            np.add.at(du, c_loc, np.einsum("bk,bkd->bd", g, vt))
            dv = np.zeros_like(v)
            np.add.at(dv, t_loc.reshape(-1), (g[..., None] * uc[:, None, :]).reshape(-1, dim))
            kv.push("u", sparse.row_sparse_array((du, cu), shape=(nv, dim)))
            kv.push("v", sparse.row_sparse_array((dv, tv), shape=(nv, dim)))
            bar.set_postfix(loss=f"{np.mean(losses[-50:]):.3f}")
    kv.barrier()
    emb = pull("u", u_out, np.arange(nv)) + start_rows(np.arange(nv), dim, 0.5 / dim)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True) + 1e-12
    sim = emb @ emb.T
    np.fill_diagonal(sim, -np.inf)
    nearest = np.argsort(-sim, axis=1)[:, :3]
    result = {"loss_first": float(np.mean(losses[:20])), "loss_last": float(np.mean(losses[-20:]))}
    if args.text == "generated":
        cls = {w: c for c, ws in CLASSES.items() for w in ws}
        scored = [i for i, w in enumerate(vocab) if w in cls]
        same = [cls.get(vocab[nearest[i, 0]]) == cls[vocab[i]] for i in scored]
        result["same_class"] = float(np.mean(same))
        shown = ["cat", "bread", "river", "red", "eats"]
    else:
        shown = [vocab[i] for i in np.argsort(-counts)[10:15]]
    if rank == 0:
        for w in shown:
            i = int(np.searchsorted(vocab, w))
            print(f"  {w:>8s}: " + ", ".join(f"{vocab[j]} ({sim[i, j]:.2f})" for j in nearest[i]))
    print(f"worker {rank} of {nw} ({args.kvstore}): loss {result['loss_first']:.3f} -> "
          f"{result['loss_last']:.3f}" + (f"; nearest neighbour of the same class for "
                                          f"{result['same_class']:.0%} of the words"
                                          if "same_class" in result else ""), flush=True)
    if rank == 0 and args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(np.convolve(losses, np.ones(10) / 10, mode="valid"), label=f"worker 0, {args.kvstore}")
        ax.set_xlabel("batch")
        ax.set_ylabel("skip-gram loss (10-batch mean)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot)
        print(f"plot: {args.plot}")
    return result


if __name__ == "__main__":
    main()
