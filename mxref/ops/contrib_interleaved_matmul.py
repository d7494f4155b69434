"""The interleaved attention matmuls of ``mx.nd.contrib`` (MXNet's transformer.cc): self-attention and
encoder-decoder attention scores and weighted values, read straight out of interleaved projections.

Layouts (``L`` sequence, ``B`` batch, ``H`` heads, ``D`` head size; the last axis is interleaved
per head)::

    selfatt:  queries_keys_values (L, B, H*3*D) = (L, B, H, [q, k, v], D)
    encdec:   queries (Lq, B, H*D) = (Lq, B, H, D);  keys_values (Lk, B, H*2*D) = (Lk, B, H, [k, v], D)
    scores / attention: (B*H, Lq, Lk), row b*H + h

Math::

    *_qk      out[bh, i, j] = sum_d q[i, b, h, d] * k[j, b, h, d] / sqrt(D)
    *_valatt  out[i, b, h, :] = sum_j att[bh, i, j] * v[j, b, h, :]      (shape (Lq, B, H*D))

Gradients are the transposed products (``dq = g k / sqrt(D)``, ``dk = g' q / sqrt(D)``,
``dv = att' g``, ``datt = g v'``); the unused parts of an interleaved input get zeros. Each
``_backward_*`` op takes ``(ograd, *inputs)``. Kernels: numpy ``einsum`` (the reference).
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .nn._util import backward_node, out_entries, uniform_type
from .registry import OpDef, Param, assign, register

PARAMS = {"heads": Param("int", doc="The number of attention heads.")}


def _split(op: str, x: np.ndarray, heads: int, parts: int) -> np.ndarray:
    """``(L, B, H*parts*D)`` -> a ``(L, B, H, parts, D)`` view (``parts`` 1 for plain queries)."""
    if x.ndim != 3 or x.shape[2] % (heads * parts):
        raise MXNetError(f"{op}: input of shape {x.shape} must be (seq, batch, heads*{parts}*head_dim) "
                         f"with heads={heads}")
    return x.reshape(x.shape[0], x.shape[1], heads, parts, -1)


def _scores(q, k):                     # (Lq, B, H, D), (Lk, B, H, D) -> (B*H, Lq, Lk)
    s = np.einsum("ibhd,jbhd->bhij", q, k) / np.sqrt(q.shape[-1]).astype(q.dtype)
    return s.reshape(-1, q.shape[0], k.shape[0])


def _weighted(att, v):                 # (B*H, Lq, Lk), (Lk, B, H, D) -> (Lq, B, H*D)
    b, h = v.shape[1], v.shape[2]
    out = np.einsum("bhij,jbhd->ibhd", att.reshape(b, h, att.shape[1], att.shape[2]), v)
    return out.reshape(out.shape[0], b, -1)


def _score_grads(g, q, k):             # -> dq (Lq, B, H, D), dk (Lk, B, H, D)
    b, h = q.shape[1], q.shape[2]
    g = g.reshape(b, h, q.shape[0], k.shape[0]) / np.sqrt(q.shape[-1]).astype(q.dtype)
    return np.einsum("bhij,jbhd->ibhd", g, k), np.einsum("bhij,ibhd->jbhd", g, q)


def _value_grads(g, att, v):           # g (Lq, B, H*D) -> datt (B*H, Lq, Lk), dv (Lk, B, H, D)
    b, h = v.shape[1], v.shape[2]
    g = g.reshape(g.shape[0], b, h, -1)
    a = att.reshape(b, h, att.shape[1], att.shape[2])
    datt = np.einsum("ibhd,jbhd->bhij", g, v).reshape(att.shape)
    return datt, np.einsum("bhij,ibhd->jbhd", a, g)


# -- forward and backward kernels, by op -------------------------------------------------------

def _selfatt_qk(octx, p, i, o, r):
    x = _split("interleaved_matmul_selfatt_qk", i[0], p["heads"], 3)
    assign(o[0], r[0], _scores(x[:, :, :, 0], x[:, :, :, 1]))


def _selfatt_qk_bwd(octx, p, i, o, r):
    g, qkv = i
    x = _split("interleaved_matmul_selfatt_qk", qkv, p["heads"], 3)
    d = np.zeros(x.shape, qkv.dtype)
    d[:, :, :, 0], d[:, :, :, 1] = _score_grads(g, x[:, :, :, 0], x[:, :, :, 1])
    assign(o[0], r[0], d.reshape(qkv.shape))


def _selfatt_valatt(octx, p, i, o, r):
    x = _split("interleaved_matmul_selfatt_valatt", i[0], p["heads"], 3)
    assign(o[0], r[0], _weighted(i[1], x[:, :, :, 2]))


def _selfatt_valatt_bwd(octx, p, i, o, r):
    g, qkv, att = i
    x = _split("interleaved_matmul_selfatt_valatt", qkv, p["heads"], 3)
    datt, dv = _value_grads(g, att, x[:, :, :, 2])
    d = np.zeros(x.shape, qkv.dtype)
    d[:, :, :, 2] = dv
    assign(o[0], r[0], d.reshape(qkv.shape))
    assign(o[1], r[1], datt)


def _encdec_qk(octx, p, i, o, r):
    q = _split("interleaved_matmul_encdec_qk", i[0], p["heads"], 1)[:, :, :, 0]
    kv = _split("interleaved_matmul_encdec_qk", i[1], p["heads"], 2)
    assign(o[0], r[0], _scores(q, kv[:, :, :, 0]))


def _encdec_qk_bwd(octx, p, i, o, r):
    g, queries, keys_values = i
    q = _split("interleaved_matmul_encdec_qk", queries, p["heads"], 1)[:, :, :, 0]
    kv = _split("interleaved_matmul_encdec_qk", keys_values, p["heads"], 2)
    dq, dk = _score_grads(g, q, kv[:, :, :, 0])
    dkv = np.zeros(kv.shape, keys_values.dtype)
    dkv[:, :, :, 0] = dk
    assign(o[0], r[0], dq.reshape(queries.shape))
    assign(o[1], r[1], dkv.reshape(keys_values.shape))


def _encdec_valatt(octx, p, i, o, r):
    kv = _split("interleaved_matmul_encdec_valatt", i[0], p["heads"], 2)
    assign(o[0], r[0], _weighted(i[1], kv[:, :, :, 1]))


def _encdec_valatt_bwd(octx, p, i, o, r):
    g, keys_values, att = i
    kv = _split("interleaved_matmul_encdec_valatt", keys_values, p["heads"], 2)
    datt, dv = _value_grads(g, att, kv[:, :, :, 1])
    dkv = np.zeros(kv.shape, keys_values.dtype)
    dkv[:, :, :, 1] = dv
    assign(o[0], r[0], dkv.reshape(keys_values.shape))
    assign(o[1], r[1], datt)


# -- shapes ------------------------------------------------------------------------------------

def _qk_shape(parts_q, parts_k):
    def infer(p, s):
        q, kv = s[0], s[-1]
        if q is None or kv is None:
            return list(s), [None]
        if len(q) != 3 or len(kv) != 3 or q[2] % (p["heads"] * parts_q):
            raise MXNetError(f"interleaved_matmul: inputs {[tuple(x) for x in s]} do not fit "
                             f"heads={p['heads']}")
        return list(s), [(q[1] * p["heads"], q[0], kv[0])]
    return infer


def _valatt_shape(parts):
    def infer(p, s):
        kv, att = s
        if kv is None or att is None:
            return list(s), [None]
        if len(kv) != 3 or kv[2] % (p["heads"] * parts):
            raise MXNetError(f"interleaved_matmul: input {tuple(kv)} does not fit heads={p['heads']}")
        return list(s), [(att[1], kv[1], kv[2] // parts)]
    return infer


def _grad(name, n_in):
    def gradient(node, ograds):
        return out_entries(backward_node(node, name, [ograds[0], *node.inputs]), n_in)
    return gradient


for _name, (_fwd, _bwd, _args, _shape) in {
    "selfatt_qk": (_selfatt_qk, _selfatt_qk_bwd, ["queries_keys_values"], _qk_shape(3, 3)),
    "selfatt_valatt": (_selfatt_valatt, _selfatt_valatt_bwd, ["queries_keys_values", "attention"],
                       _valatt_shape(3)),
    "encdec_qk": (_encdec_qk, _encdec_qk_bwd, ["queries", "keys_values"], _qk_shape(1, 2)),
    "encdec_valatt": (_encdec_valatt, _encdec_valatt_bwd, ["keys_values", "attention"], _valatt_shape(2)),
}.items():
    _op, _bname = f"_contrib_interleaved_matmul_{_name}", f"_backward_interleaved_matmul_{_name}"
    register(OpDef(_op, _fwd, arguments=_args, params=PARAMS, infer_shape=_shape,
                   infer_type=uniform_type(), gradient=_grad(_bname, len(_args)), doc=__doc__))
    register(OpDef(_bname, _bwd, arguments=["ograd"] + _args, outputs=[a + "_grad" for a in _args],
                   params=PARAMS, infer_shape=lambda p, s: (list(s), list(s[1:])),
                   infer_type=lambda p, t: (list(t), list(t[1:]))))
