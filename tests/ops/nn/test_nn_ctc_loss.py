"""CTCLoss: brute-force path sums as the reference, MXNet's numbers, gradients, lengths, aliases, speed."""
import itertools
import time

import numpy as np
import pytest
from nn_check import check_gradient, forward

import mxref as mx
from mxref.base import MXNetError


def collapse(path, blank):
    out, prev = [], None
    for s in path:
        if s != prev and s != blank:
            out.append(s)
        prev = s
    return out


def brute_loss(acts, label, blank):
    """-log of the summed probability of every path of length T that collapses to ``label``."""
    p = np.exp(acts - acts.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    T, A = p.shape
    total = sum(np.prod(p[np.arange(T), list(path)]) for path in itertools.product(range(A), repeat=T)
                if collapse(path, blank) == list(label))
    return -np.log(total)


@pytest.mark.parametrize("blank", ["first", "last"])
def test_loss_equals_brute_force(rng, blank):
    """The forward-backward loss equals the sum over all alignments (T=5, A=4)."""
    acts = rng.standard_normal((5, 3, 4))
    labels = [[1, 2], [2, 2, 3], [1]] if blank == "first" else [[0, 1], [1, 1, 2], [0]]
    pad = 0 if blank == "first" else -1
    lab = np.array([row + [pad] * (3 - len(row)) for row in labels], np.float64)
    loss, _ = forward("CTCLoss", [acts, lab], blank_label=blank)
    b = 0 if blank == "first" else 3
    want = [brute_loss(acts[:, n], labels[n], b) for n in range(3)]
    np.testing.assert_allclose(loss, want, rtol=1e-10)


def test_matches_mxnet():
    """Loss and gradient MXNet 1.9.1 computed for log-probabilities of a fixed 4x3 table."""
    p = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6], [0.7, 0.1, 0.2]], np.float32)
    data = mx.nd.array(np.log(p)[:, None, :])
    data.attach_grad()
    with mx.autograd.record():
        loss = mx.nd.CTCLoss(data, mx.nd.array([[1, 2]]))
    loss.backward()
    np.testing.assert_allclose(loss.asnumpy(), [0.972332], rtol=1e-5)
    np.testing.assert_allclose(data.grad.asnumpy()[:, 0], [
        [0.00290844, -0.20290855, 0.2], [0.0487044, -0.18688518, 0.13818084],
        [0.11274458, 0.14394499, -0.25668967], [0.0003702, 0.1, -0.10037017]], atol=2e-6)


@pytest.mark.parametrize("blank", ["first", "last"])
def test_gradient(rng, blank):
    """The forward-backward gradient agrees with central differences of the loss."""
    acts = rng.standard_normal((6, 3, 5))
    lab = np.array([[1, 2, 2], [3, 1, 0], [4, 0, 0]], np.float64)
    if blank == "last":
        lab = np.where(lab > 0, lab - 1, -1)
    check_gradient("CTCLoss", [acts, lab], wrt=[0], rtol=1e-5, atol=1e-8, blank_label=blank)


def test_lengths(rng):
    """data_lengths cut the time axis and label_lengths the labels; past a sequence, no gradient."""
    acts = rng.standard_normal((6, 2, 4))
    lab = np.array([[1, 2, 3], [2, 1, 3]], np.float64)
    tl, ll = np.array([4, 6.0]), np.array([2, 3.0])
    loss, grad = forward("CTCLoss", [acts, lab, tl, ll], use_data_lengths=True, use_label_lengths=True)
    np.testing.assert_allclose(loss[0], forward("CTCLoss", [acts[:4, :1], lab[:1, :2]])[0][0])
    np.testing.assert_allclose(loss[1], forward("CTCLoss", [acts[:, 1:], lab[1:]])[0][0])
    assert not grad[4:, 0].any()
    check_gradient("CTCLoss", [acts, lab, tl, ll], wrt=[0], use_data_lengths=True, use_label_lengths=True)


def test_impossible_label_gives_zero():
    """A label longer than its sequence allows (with repeats) has loss 0 and gradient 0, as in MXNet."""
    loss, grad = forward("CTCLoss", [np.zeros((3, 1, 3)), np.array([[1, 1, 2]])])
    assert loss[0] == 0 and not grad.any()


def test_names_aliases_and_shapes():
    """CTCLoss, ctc_loss, contrib.CTCLoss, contrib.ctc_loss are one operator; out is (batch,)."""
    s = mx.sym.CTCLoss(mx.sym.var("d"), mx.sym.var("l"), name="ctc")
    assert s.list_outputs() == ["ctc_output0"]
    assert s.infer_shape(d=(7, 3, 5), l=(3, 4))[1] == [(3,)]
    s2 = mx.sym.contrib.ctc_loss(mx.sym.var("d"), mx.sym.var("l"), mx.sym.var("dl"), mx.sym.var("ll"),
                                 use_data_lengths=True, use_label_lengths=True)
    assert s2.list_arguments() == ["d", "l", "dl", "ll"]
    d, lab = mx.nd.array(np.zeros((4, 2, 3))), mx.nd.array([[1, 2], [2, 0]])
    ref = mx.nd.CTCLoss(d, lab).asnumpy()
    for fn in (mx.nd.ctc_loss, mx.nd.contrib.CTCLoss, mx.nd.contrib.ctc_loss):
        np.testing.assert_array_equal(fn(d, lab).asnumpy(), ref)
    with pytest.raises(MXNetError, match="CTCLoss: label shape"):
        s.infer_shape(d=(3, 3, 5), l=(3, 4))


def test_speed(rng):
    """T=50, batch 16, alphabet 20: forward and backward well under a second."""
    d = mx.nd.array(rng.standard_normal((50, 16, 20)))
    lab = mx.nd.array(rng.integers(1, 20, (16, 12)))
    d.attach_grad()
    start = time.perf_counter()
    with mx.autograd.record():
        loss = mx.nd.CTCLoss(d, lab)
    loss.backward()
    d.grad.wait_to_read()
    assert time.perf_counter() - start < 0.5
