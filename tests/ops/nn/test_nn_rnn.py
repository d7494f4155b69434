"""RNN: MXNet's flat parameter layout and every mode vs MXNet 1.9.1; BPTT vs central differences."""
import numpy as np
import pytest
from nn_check import check_fixture, check_gradient, fixture_cases, forward

from mxref.base import MXNetError
from mxref.ops import registry
from mxref.ops.nn.rnn import param_size

CASES = fixture_cases("RNN")
OP = registry.get("RNN")


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mxnet(name):
    """Outputs, final states and all gradients equal MXNet's (layers, directions, every mode)."""
    check_fixture("RNN", CASES[name], rtol=1e-4, atol=1e-5)


def _inputs(rng, mode, layers, bidir, dtype=np.float64, t=3, n=2, i=3, h=2):
    p = OP.parse_params({"state_size": h, "num_layers": layers, "mode": mode, "bidirectional": bidir})
    d = 2 if bidir else 1
    ins = [rng.standard_normal((t, n, i)), rng.standard_normal(param_size(p, i)) * 0.5,
           rng.standard_normal((layers * d, n, h))]
    if mode == "lstm":
        ins.append(rng.standard_normal((layers * d, n, h)))
    return [x.astype(dtype) for x in ins]


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
def test_gradient(rng, mode):
    """BPTT gradients of data, parameters and initial states agree with central differences."""
    ins = _inputs(rng, mode, 2, True)
    check_gradient("RNN", ins, state_size=2, num_layers=2, mode=mode, bidirectional=True,
                   state_outputs=True, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_single_tanh_step(rng, dtype):
    """One tanh step is h = tanh(W_x x + b_x + W_h h0 + b_h) with weights before biases."""
    x, flat, h0 = _inputs(rng, "rnn_tanh", 1, False, dtype, t=1)
    out, hy, _ = forward("RNN", [x, flat, h0], state_size=2, num_layers=1, mode="rnn_tanh",
                         state_outputs=True)
    wx, wh, bx, bh = flat[:6].reshape(2, 3), flat[6:10].reshape(2, 2), flat[10:12], flat[12:14]
    want = np.tanh(x[0] @ wx.T + bx + h0[0] @ wh.T + bh)
    assert out.dtype == dtype
    np.testing.assert_allclose(out[0], want, rtol=1e-5)
    np.testing.assert_allclose(hy[0], want, rtol=1e-5)


def test_dropout_between_layers():
    """With p > 0 in training the hidden mask drops units between layers; inference ignores it."""
    rng = np.random.default_rng(0)
    ins = _inputs(rng, "gru", 2, False, t=4, n=8, h=16)
    kw = {"state_size": 16, "num_layers": 2, "mode": "gru", "p": 0.5}
    out_train, _, mask = forward("RNN", ins, is_train=True, **kw)
    out_infer, _, mask_infer = forward("RNN", ins, is_train=False, **kw)
    assert mask.shape == (1, 4, 8, 16) and set(np.unique(mask)) == {0.0, 2.0}
    assert (mask_infer == 1).all() and not np.allclose(out_train, out_infer)


def test_shapes():
    """parameters and state shapes are inferred from data (T, N, C)."""
    p = OP.parse_params({"state_size": 4, "num_layers": 2, "mode": "lstm", "state_outputs": True})
    ins, outs = OP.infer_shape(p, [(5, 3, 6), None, None, None])
    assert ins[1] == (4 * 4 * (6 + 4 + 2) + 4 * 4 * (4 + 4 + 2),) and ins[2] == ins[3] == (2, 3, 4)
    assert outs[:3] == [(5, 3, 4), (2, 3, 4), (2, 3, 4)]
    assert OP.num_visible_outputs(p) == 3


def _lstmp_inputs(rng, layers, bidir, t=3, n=2, i=3, h=4, proj=2):
    p = OP.parse_params({"state_size": h, "num_layers": layers, "mode": "lstm", "bidirectional": bidir,
                         "projection_size": proj})
    d = 2 if bidir else 1
    return [rng.standard_normal((t, n, i)), rng.standard_normal(param_size(p, i)) * 0.5,
            rng.standard_normal((layers * d, n, proj)), rng.standard_normal((layers * d, n, h))]


def test_lstmp_one_step_is_the_projected_lstm():
    """With projection_size P: weights W_x (4H, I), W_h (4H, P), W_r (P, H), then the biases;
    r = W_r (o * tanh(c)) is both the output and the new state; c keeps H features."""
    rng = np.random.default_rng(3)
    x, flat, h0, c0 = _lstmp_inputs(rng, 1, False, t=1)
    out, hy, cy, _ = forward("RNN", [x, flat, h0, c0], state_size=4, num_layers=1, mode="lstm",
                          projection_size=2, state_outputs=True)
    wx, wh = flat[:48].reshape(16, 3), flat[48:80].reshape(16, 2)
    wr, bx, bh = flat[80:88].reshape(2, 4), flat[88:104], flat[104:120]
    a = x[0] @ wx.T + bx + h0[0] @ wh.T + bh
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    c = sig(a[:, 4:8]) * c0[0] + sig(a[:, :4]) * np.tanh(a[:, 8:12])
    r = (sig(a[:, 12:]) * np.tanh(c)) @ wr.T
    assert out.shape == (1, 2, 2) and hy.shape == (1, 2, 2) and cy.shape == (1, 2, 4)
    np.testing.assert_allclose(out[0], r, rtol=1e-6)
    np.testing.assert_allclose(hy[0], r, rtol=1e-6)
    np.testing.assert_allclose(cy[0], c, rtol=1e-6)


def test_lstmp_gradient(rng):
    """BPTT through the projection (two bidirectional layers) agrees with central differences."""
    ins = _lstmp_inputs(rng, 2, True)
    check_gradient("RNN", ins, state_size=4, num_layers=2, mode="lstm", bidirectional=True,
                   projection_size=2, state_outputs=True, rtol=1e-5, atol=1e-6)


def test_lstmp_shapes_and_errors():
    """Shapes with a projection; projection_size needs mode='lstm'."""
    p = OP.parse_params({"state_size": 4, "num_layers": 2, "mode": "lstm", "projection_size": 3,
                         "bidirectional": True})
    ins, outs = OP.infer_shape(p, [(5, 2, 6), None, None, None])
    # per layer and direction 4H x (input + P) + P x H + 2 x 4H; layer 1 reads D * P = 6 features
    assert ins[1] == (4 * (16 * (6 + 3) + 3 * 4 + 8 * 4),)
    assert ins[2] == (4, 2, 3) and ins[3] == (4, 2, 4)
    assert outs[0] == (5, 2, 6) and outs[-1] == (1, 5, 2, 6)
    with pytest.raises(MXNetError, match="projection_size"):
        OP.parse_params({"state_size": 4, "num_layers": 1, "mode": "gru", "projection_size": 2})
