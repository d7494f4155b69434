"""The CTC forward-backward algorithm in log space, batched over sequences (used by ``ctc_loss.py``).

``ctc(data, tlen, llen, label, blank)`` returns the per-sequence loss ``-log P(label | data)`` and
its gradient with respect to the unnormalised activations; ``ctc_loss.py`` holds the math.
"""
from __future__ import annotations

import numpy as np

NEG_INF = -np.inf


def _lse(*xs):
    out = xs[0]
    with np.errstate(invalid="ignore"):
        for x in xs[1:]:
            out = np.logaddexp(out, x)
    return out


def ctc(data, tlen, llen, label, blank):
    """``(loss (N,), grad (T, N, A))`` by the log-space forward-backward algorithm, batched."""
    T, N, A = data.shape
    x = data.astype(np.float64)
    logp = x - x.max(axis=2, keepdims=True)
    logp -= np.log(np.exp(logp).sum(axis=2, keepdims=True))
    S = 2 * label.shape[1] + 1
    ext = np.full((N, S), blank, np.int64)
    ext[:, 1::2] = np.where(np.arange(label.shape[1])[None, :] < llen[:, None], label, blank)
    skip = np.zeros((N, S), bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    live = np.arange(T)[:, None] < tlen[None, :]                        # (T, N): inside the sequence
    lp = np.take_along_axis(logp, np.broadcast_to(ext[None], (T, N, S)), axis=2)      # (T, N, S)
    lp = np.where(live[:, :, None], lp, NEG_INF)      # what lies past a sequence's end is never read
    s_len = 2 * llen + 1
    inside = np.arange(S)[None, :] < s_len[:, None]
    alpha = np.full((T, N, S), NEG_INF)
    alpha[0, :, 0] = lp[0, :, 0]
    alpha[0, :, 1] = np.where(llen > 0, lp[0, :, 1], NEG_INF)
    for t in range(1, T):
        a = alpha[t - 1]
        a1 = np.concatenate([np.full((N, 1), NEG_INF), a[:, :-1]], axis=1)
        a2 = np.where(skip, np.concatenate([np.full((N, 2), NEG_INF), a[:, :-2]], axis=1), NEG_INF)
        alpha[t] = np.where(inside, _lse(a, a1, a2) + lp[t], NEG_INF)
    beta = np.full((T, N, S), NEG_INF)
    last = np.arange(S)[None, :] >= (s_len - 2)[:, None]
    end = np.where(inside & last, 0.0, NEG_INF)                       # log 1 at the two final states
    nxt = np.full((N, S), NEG_INF)
    for t in range(T - 1, -1, -1):
        b1 = np.concatenate([nxt[:, 1:], np.full((N, 1), NEG_INF)], axis=1)
        b2 = np.concatenate([np.where(skip, nxt, NEG_INF)[:, 2:], np.full((N, 2), NEG_INF)], axis=1)
        rec = _lse(nxt, b1, b2)
        here = (t == tlen - 1)[:, None]
        beta[t] = np.where(t < tlen[:, None], np.where(here, end, rec) + lp[t], NEG_INF)
        nxt = beta[t]
    tl = np.maximum(tlen, 1) - 1
    fin = alpha[tl, np.arange(N)]
    before_end = np.take_along_axis(fin, np.maximum(s_len - 2, 0)[:, None], 1)[:, 0]
    ll = _lse(np.take_along_axis(fin, (s_len - 1)[:, None], 1)[:, 0], np.where(llen > 0, before_end, NEG_INF))
    counted = np.arange(1, label.shape[1])[None, :] < llen[:, None]
    repeats = ((label[:, 1:] == label[:, :-1]) & counted).sum(axis=1)
    ok = (llen + repeats <= tlen) & np.isfinite(ll)
    reached = np.isfinite(alpha) & np.isfinite(beta)
    with np.errstate(invalid="ignore"):           # -inf - -inf where a state is never reached
        post = np.exp(np.where(reached, alpha + beta - lp - np.where(ok, ll, 0.0)[None, :, None], NEG_INF))
    occ = np.zeros((T, N, A))
    np.add.at(occ, (slice(None), np.arange(N)[:, None], ext), post)
    grad = np.where((ok[None, :] & live)[:, :, None], np.exp(logp) - occ, 0.0)
    return np.where(ok, -ll, 0.0), grad
