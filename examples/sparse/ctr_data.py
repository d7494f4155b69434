"""CTR-like LibSVM data with a hidden logistic model, so the best reachable log-loss and AUC are known.

    python examples/sparse/ctr_data.py --out /tmp/ctr --rows 100000 --features 1000000

Each example has ``--fields`` categorical fields (an ad id, a site, a user segment, ...); field
``f`` takes one value, a feature id in the field's own block of ``features / fields`` ids, drawn
with Zipf frequencies (exponent ``--zipf``: a few ids are in most rows, most ids are rare, as in
real click logs), so a row has ``fields`` ones. The label is a coin flip with probability
``sigmoid(bias + sum of the row's hidden weights)``; the hidden weights are normal, scaled so the
logit has standard deviation ``--signal``. The generator writes ``train.libsvm``, ``test.libsvm``
and ``truth.npz`` (weights, bias, field layout) and prints what the true model scores on the test
set: the log-loss and AUC no learner can beat on average.
"""
from __future__ import annotations

import argparse
import os

import numpy as np
from tqdm import tqdm


def auc(y: np.ndarray, score: np.ndarray) -> float:
    """Area under the ROC curve (the Mann-Whitney statistic, ties counted half)."""
    order = np.argsort(score, kind="stable")
    s = score[order]
    ranks = np.empty(len(s))
    ranks[order] = np.arange(1, len(s) + 1)
    # average ranks over ties
    uniq, inv, counts = np.unique(s, return_inverse=True, return_counts=True)
    sums = np.bincount(inv, weights=ranks[order])
    ranks[order] = (sums / counts)[inv]
    pos = y > 0.5
    n_pos, n_neg = pos.sum(), (~pos).sum()
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def log_loss(y: np.ndarray, p: np.ndarray) -> float:
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def field_of(feature: np.ndarray, features: int, fields: int) -> np.ndarray:
    """The field a feature id belongs to (fields own equal consecutive blocks of ids)."""
    return np.minimum(feature // (features // fields), fields - 1)


def generate(rows: int, features: int, fields: int, zipf: float, signal: float, seed: int):
    """``(feature ids (rows, fields), labels, true probabilities, weights, bias)``."""
    rng = np.random.default_rng(seed)
    block = features // fields
    ranks = np.arange(1, block + 1, dtype=np.float64)
    freq = ranks ** -zipf
    freq /= freq.sum()
    # Each field's block in a random order, so frequent ids are not simply the small ones.
    perms = [rng.permutation(block) + f * block for f in range(fields)]
    ids = np.empty((rows, fields), np.int64)
    for f in range(fields):
        ids[:, f] = perms[f][rng.choice(block, size=rows, p=freq)]
    weights = rng.standard_normal(features).astype(np.float32) * (signal / np.sqrt(fields))
    bias = np.float32(-1.0)                     # about one click in four
    logit = bias + weights[ids].sum(axis=1)
    prob = 1 / (1 + np.exp(-logit))
    labels = (rng.random(rows) < prob).astype(np.int64)
    return ids, labels, prob, weights, bias


def write_libsvm(path: str, ids: np.ndarray, labels: np.ndarray, desc: str) -> None:
    with open(path, "w") as f:
        for start in tqdm(range(0, len(ids), 10000), desc=desc, unit="10k rows"):
            chunk = ids[start:start + 10000]
            lab = labels[start:start + 10000]
            f.write("".join(f"{y} " + " ".join(f"{j}:1" for j in np.sort(row)) + "\n"
                            for y, row in zip(lab, chunk)))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="ctr_data")
    ap.add_argument("--rows", type=int, default=100000)
    ap.add_argument("--test-rows", type=int, default=20000)
    ap.add_argument("--features", type=int, default=1000000)
    ap.add_argument("--fields", type=int, default=20)
    ap.add_argument("--zipf", type=float, default=1.1)
    ap.add_argument("--signal", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    ids, labels, prob, weights, bias = generate(args.rows + args.test_rows, args.features, args.fields,
                                                args.zipf, args.signal, args.seed)
    n = args.rows
    write_libsvm(os.path.join(args.out, "train.libsvm"), ids[:n], labels[:n], "train")
    write_libsvm(os.path.join(args.out, "test.libsvm"), ids[n:], labels[n:], "test")
    np.savez(os.path.join(args.out, "truth.npz"), weights=weights, bias=bias, fields=args.fields,
             features=args.features)
    truth = {"logloss": log_loss(labels[n:], prob[n:]), "auc": auc(labels[n:], prob[n:]),
             "ctr": float(labels[:n].mean()),
             "distinct_train_features": int(np.unique(ids[:n]).size)}
    print(f"wrote {n} train and {args.test_rows} test rows of {args.features} features "
          f"({args.fields} fields, Zipf {args.zipf}) to {args.out}; "
          f"{truth['distinct_train_features']} distinct features in train; click rate {truth['ctr']:.3f}")
    print(f"true model on test: logloss {truth['logloss']:.4f} auc {truth['auc']:.4f} "
          f"(the best a learner can expect)")
    return truth


if __name__ == "__main__":
    main()
