"""RNN: MXNet's fused multi-layer (bidirectional) recurrent operator — rnn_relu, rnn_tanh, lstm, gru.

Math per layer and direction (``a_t = W_x x_t + b_x + W_h h_{t-1} + b_h``, gates split in MXNet's
order; ``*`` is elementwise)::

    rnn_tanh / rnn_relu   h_t = act(a_t)
    lstm  [i, f, g, o] = [sig, sig, tanh, sig](a_t)     c_t = f*c_{t-1} + i*g     h_t = o*tanh(c_t)
          with projection_size P (LSTMP):  r_t = W_r h_t  is the output and the recurrent state
    gru   [r, z] = sig(a_t[:2H])     n = tanh(W_xn x_t + b_xn + r * (W_hn h_{t-1} + b_hn))
          h_t = (1 - z) * n + z * h_{t-1}

``data`` is ``(T, N, I)``; ``state``/``state_cell`` are ``(L * D, N, H)``. ``parameters`` is one
flat vector laid out as MXNet and cuDNN do: first every weight — for each layer, for each direction,
``W_x (G*H, in)`` then ``W_h (G*H, H)`` (LSTMP: ``W_h (4H, P)`` then ``W_r (P, H)``) — then every
bias in the same order, ``b_x`` then ``b_h``; with a projection ``state`` and the outputs have P
features instead of H.
Layer ``l > 0`` reads the concatenated directions of layer ``l - 1``, through dropout ``p`` in
training. Outputs: ``output (T, N, D*H)``, the final ``state_output`` and ``statecell_output``
(visible with ``state_outputs``) and the hidden dropout ``mask``. The gradient is
back-propagation through time.

Backward dependencies: ``_backward_RNN`` takes the head gradients, ``data``, ``parameters``,
``state``(, ``state_cell``) and ``mask``; it recomputes the forward pass (no reserve space is kept).
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, register
from ._util import backward_node, entry, merge_shape, out_entries, uniform_type

PARAMS = {
    "state_size": Param("int", doc="Size of the hidden state."),
    "num_layers": Param("int", doc="Number of stacked layers."),
    "bidirectional": Param("bool", False, doc="Whether to use bidirectional recurrent layers."),
    "mode": Param("str", choices=("gru", "lstm", "rnn_relu", "rnn_tanh"), doc="The cell type."),
    "p": Param("float", 0.0, doc="Dropout probability applied to the outputs of all but the last layer."),
    "state_outputs": Param("bool", False, doc="Whether to output the final states."),
    "projection_size": Param("int_or_none", None, doc="LSTM projection size (LSTMP)."),
    "lstm_state_clip_min": Param("float_or_none", None, doc="LSTM cell clipping (unsupported)."),
    "lstm_state_clip_max": Param("float_or_none", None, doc="LSTM cell clipping (unsupported)."),
    "lstm_state_clip_nan": Param("bool", False, doc="LSTM cell clipping (unsupported)."),
    "use_sequence_length": Param("bool", False, doc="Variable sequence lengths (unsupported)."),
}
GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def _validate(p):
    clip = p["lstm_state_clip_min"] is not None or p["lstm_state_clip_max"] is not None
    if p["use_sequence_length"] or clip:
        raise MXNetError("RNN: lstm_state_clip_* and use_sequence_length are not supported")
    if p["projection_size"] is not None and (p["mode"] != "lstm" or p["projection_size"] <= 0):
        raise MXNetError(f"RNN: projection_size={p['projection_size']} needs mode='lstm' and a positive size")
    if p["state_size"] <= 0 or p["num_layers"] <= 0 or not 0 <= p["p"] < 1:
        raise MXNetError("RNN: state_size and num_layers must be positive and 0 <= p < 1")


def _arguments(p):
    return ["data", "parameters", "state"] + (["state_cell"] if p["mode"] == "lstm" else [])


def _outputs(p):
    # MXNet's output names
    return ["output", "state_output", "statecell_output"][:2 + (p["mode"] == "lstm")] + ["mask"]


def _num_visible(p):
    return (3 if p["mode"] == "lstm" else 2) if p["state_outputs"] else 1


def _state_size(p) -> int:
    """Features of ``state`` and of each direction's output: P with a projection, else H."""
    return p["projection_size"] or p["state_size"]


def param_size(p, input_size: int) -> int:
    """Length of the flat ``parameters`` vector."""
    h, d, g, r = p["state_size"], 2 if p["bidirectional"] else 1, GATES[p["mode"]], _state_size(p)
    proj = r * h if p["projection_size"] else 0
    return sum(d * (g * h * ((input_size if i == 0 else d * r) + r + 2) + proj)
               for i in range(p["num_layers"]))


def unpack(p, flat: np.ndarray, input_size: int):
    """Views ``[(W_x, W_h, b_x, b_h, W_r or None)]`` per (layer, direction) of the flat vector."""
    h, d, r = p["state_size"], 2 if p["bidirectional"] else 1, _state_size(p)
    gh = GATES[p["mode"]] * h
    nr = r * h if p["projection_size"] else 0
    weights, pos = [], 0
    for layer in range(p["num_layers"]):
        n_in = input_size if layer == 0 else d * r
        for _ in range(d):
            wx = flat[pos:pos + gh * n_in].reshape(gh, n_in)
            wh = flat[pos + gh * n_in:pos + gh * (n_in + r)].reshape(gh, r)
            pos += gh * (n_in + r)
            wr = flat[pos:pos + nr].reshape(r, h) if nr else None
            weights.append([wx, wh, wr])
            pos += nr
    for w in weights:
        w[2:2] = [flat[pos:pos + gh], flat[pos + gh:pos + 2 * gh]]
        pos += 2 * gh
    return weights


def infer_shape(p, in_shapes):
    d, ins = in_shapes[0], list(in_shapes)
    if d is None:
        return ins, [None] * len(_outputs(p))
    if len(d) != 3:
        raise MXNetError(f"RNN: data must be 3-D (T, N, C), got shape {tuple(d)}")
    nd, h, L, r = 2 if p["bidirectional"] else 1, p["state_size"], p["num_layers"], _state_size(p)
    ins[1] = merge_shape("RNN", "parameters", ins[1], (param_size(p, d[2]),))
    states = [(L * nd, d[1], r), (L * nd, d[1], h)][:len(ins) - 2]    # state, state_cell
    for k, shape in enumerate(states, 2):
        ins[k] = merge_shape("RNN", _arguments(p)[k], ins[k], shape)
    # NOTE: at least one mask row even for one layer: a 0 dimension reads as "unknown" to the
    # executor's shape check (MXNet 1.x convention); the spare row is never used.
    return ins, [(d[0], d[1], nd * r)] + states + [(max(L - 1, 1), d[0], d[1], nd * r)]


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _run(mode, xs, h, c, wx, wh, bx, bh, wr, reverse):
    """One direction of one layer; returns outputs (T, N, H or P), final h, c and the per-step cache."""
    xp = xs @ wx.T + bx
    hs, cache, H = np.empty(xs.shape[:2] + (h.shape[1],), xs.dtype), [], wx.shape[0] // GATES[mode]
    for t in (range(len(xs) - 1, -1, -1) if reverse else range(len(xs))):
        gh = h @ wh.T + bh
        if mode == "lstm":
            a = xp[t] + gh
            i, f, o, g = _sig(a[:, :H]), _sig(a[:, H:2 * H]), _sig(a[:, 3 * H:]), np.tanh(a[:, 2 * H:3 * H])
            c_new = f * c + i * g
            hidden = o * np.tanh(c_new)
            cache.append((t, h, c, i, f, g, o, c_new, hidden))
            c, h = c_new, (hidden if wr is None else hidden @ wr.T)
        elif mode == "gru":
            r, z = _sig(xp[t, :, :H] + gh[:, :H]), _sig(xp[t, :, H:2 * H] + gh[:, H:2 * H])
            n = np.tanh(xp[t, :, 2 * H:] + r * gh[:, 2 * H:])
            cache.append((t, h, r, z, n, gh[:, 2 * H:]))
            h = (1 - z) * n + z * h
        else:
            a = xp[t] + gh
            h_new = np.tanh(a) if mode == "rnn_tanh" else np.maximum(a, 0)
            cache.append((t, h, h_new))
            h = h_new
        hs[t] = h
    return hs, h, c, cache


def _run_back(mode, xs, wx, wh, wr, cache, dhs, dh, dc):
    """BPTT through one direction; returns dxs, dW_x, dW_h, db_x, db_h, dh0, dc0, dW_r."""
    dxp, dwh = np.zeros(xs.shape[:2] + (wx.shape[0],), xs.dtype), np.zeros_like(wh)
    dbh = np.zeros(wx.shape[0], xs.dtype)
    dwr = None if wr is None else np.zeros_like(wr)
    for step in reversed(cache):
        t = step[0]
        dh = dh + dhs[t]
        if mode == "lstm":
            _, h_prev, c_prev, i, f, g, o, c_t, hidden = step
            if wr is not None:      # r_t = W_r h_t: through the projection first
                dwr += dh.T @ hidden
                dh = dh @ wr
            tc = np.tanh(c_t)
            dc = dc + dh * o * (1 - tc * tc)
            da = np.concatenate([dc * g * i * (1 - i), dc * c_prev * f * (1 - f),
                                 dc * i * (1 - g * g), dh * tc * o * (1 - o)], axis=1)
            dgh, dc, dh = da, dc * f, 0
        elif mode == "gru":
            _, h_prev, r, z, n, ghn = step
            dan = dh * (1 - z) * (1 - n * n)
            dar, daz = dan * ghn * r * (1 - r), dh * (h_prev - n) * z * (1 - z)
            da = np.concatenate([dar, daz, dan], axis=1)
            dgh = np.concatenate([dar, daz, dan * r], axis=1)
            dh = dh * z
        else:
            _, h_prev, h_t = step
            da = dh * ((1 - h_t * h_t) if mode == "rnn_tanh" else (h_t > 0))
            dgh, dh = da, 0
        dxp[t] = da
        dwh += dgh.T @ h_prev
        dh = dh + dgh @ wh
        dbh += dgh.sum(axis=0)
    flat = dxp.reshape(-1, dxp.shape[2])
    return dxp @ wx, flat.T @ xs.reshape(-1, xs.shape[2]), dwh, flat.sum(axis=0), dbh, dh, dc, dwr


def _forward_all(octx, p, x, flat, h0, c0, mask=None, keep_cache=False):
    """The whole stack; draws the dropout mask (training, p > 0) unless one is given."""
    nd, L, mode = 2 if p["bidirectional"] else 1, p["num_layers"], p["mode"]
    weights = unpack(p, flat, x.shape[2])
    hy, cy = np.empty_like(h0), (np.empty_like(c0) if c0 is not None else None)
    masks = mask if mask is not None else np.ones((max(L - 1, 1),) + x.shape[:2] + (nd * _state_size(p),),
                                                  x.dtype)
    caches, inputs, xs = [], [], x
    for layer in range(L):
        outs = []
        for dr in range(nd):
            k = layer * nd + dr
            c = c0[k] if c0 is not None else None
            hs, hy[k], cl, cache = _run(mode, xs, h0[k], c, *weights[k], reverse=dr == 1)
            if cl is not None:
                cy[k] = cl
            outs.append(hs)
            caches.append(cache if keep_cache else None)
        inputs.append(xs)
        xs = np.concatenate(outs, axis=2) if nd == 2 else outs[0]
        if layer < L - 1:
            if mask is None and octx.is_train and p["p"] > 0:
                masks[layer] = (octx.rng.random(xs.shape) >= p["p"]) / (1 - p["p"])
            xs = xs * masks[layer]
    return xs, hy, cy, masks, weights, caches, inputs


def forward(octx, p, inputs, outputs, req):
    x, flat, h0 = inputs[0], inputs[1], inputs[2]
    c0 = inputs[3] if p["mode"] == "lstm" else None
    out, hy, cy, masks, *_ = _forward_all(octx, p, x, flat, h0, c0)
    outputs[0][...] = out
    outputs[1][...] = hy
    if c0 is not None:
        outputs[2][...] = cy
    outputs[-1][...] = masks


def backward(octx, p, inputs, outputs, req):
    lstm, nvis, H = p["mode"] == "lstm", _num_visible(p), _state_size(p)
    heads, rest = inputs[:nvis], inputs[nvis:]
    x, flat, h0 = rest[0], rest[1], rest[2]
    c0, mask = (rest[3], rest[4]) if lstm else (None, rest[3])
    _, _, _, _, weights, caches, layer_in = _forward_all(octx, p, x, flat, h0, c0, mask, keep_cache=True)
    nd, L = 2 if p["bidirectional"] else 1, p["num_layers"]
    dhy = heads[1] if nvis > 1 else np.zeros_like(h0)
    dcy = heads[2] if nvis > 2 else (np.zeros_like(c0) if lstm else None)
    dflat_w, dflat_b = [None] * len(weights), [None] * len(weights)
    dh0, dc0, dout = np.zeros_like(h0), (np.zeros_like(c0) if lstm else None), heads[0]
    for layer in reversed(range(L)):
        if layer < L - 1:
            dout = dout * mask[layer]
        xs, dxs = layer_in[layer], 0
        for dr in range(nd):
            k = layer * nd + dr
            dx, dwx, dwh, dbx, dbh, dh0[k], dck, dwr = _run_back(
                p["mode"], xs, weights[k][0], weights[k][1], weights[k][4], caches[k],
                dout[..., dr * H:(dr + 1) * H], dhy[k], dcy[k] if lstm else 0)
            if lstm:
                dc0[k] = dck
            dxs = dxs + dx
            dflat_w[k] = [dwx.ravel(), dwh.ravel()] + ([dwr.ravel()] if dwr is not None else [])
            dflat_b[k] = [dbx, dbh]
        dout = dxs
    grads = [dout, np.concatenate(sum(dflat_w, []) + sum(dflat_b, [])), dh0] + ([dc0] if lstm else [])
    for out, r, g in zip(outputs, req, grads):
        if r == "add":
            out += g
        elif r != "null":
            out[...] = g


def gradient(node, ograds):
    p = node.params
    nvis, nargs = _num_visible(p), len(_arguments(p))
    ins = list(ograds[:nvis]) + list(node.inputs[:nargs]) + [entry(node, len(_outputs(p)) - 1)]
    return out_entries(backward_node(node, "_backward_RNN", ins), nargs)


def _backward_shape(p, in_shapes):
    n = _num_visible(p)
    return list(in_shapes), list(in_shapes[n:n + len(_arguments(p))])


register(OpDef("RNN", forward, arguments=_arguments, outputs=_outputs, num_visible_outputs=_num_visible,
               params=PARAMS, infer_shape=infer_shape, infer_type=uniform_type(lambda p: len(_outputs(p))),
               gradient=gradient, resources=["random"], validate=_validate, doc=__doc__))
register(OpDef("_backward_RNN", backward, params=PARAMS, outputs=_arguments,
               arguments=lambda p: [f"ograd{i}" for i in range(_num_visible(p))] + _arguments(p) + ["mask"],
               infer_shape=_backward_shape, infer_type=uniform_type(lambda p: len(_arguments(p)))))
