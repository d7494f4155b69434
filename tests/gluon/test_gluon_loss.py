"""Gluon losses against numpy formulas and MXNet 1.9.1 values, imperative and hybridized, with weights."""
import os

import numpy as np
import pytest

import mxref as mx
from mxref import autograd, gluon

L = gluon.loss
FIX = np.load(os.path.join(os.path.dirname(__file__), "..", "fixtures", "gluon", "losses_mxnet191.npz"))


def log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def both(loss, *args):
    """The loss imperatively and hybridized (must agree); returns numpy."""
    nd_args = [mx.nd.array(a) for a in args]
    out = loss(*nd_args).asnumpy()
    loss.hybridize()
    np.testing.assert_allclose(loss(*nd_args).asnumpy(), out, rtol=1e-5, atol=1e-6)
    return out


P, D, S, B, W = FIX["pred"], FIX["dense"], FIX["sparse"], FIX["binary"], FIX["sw"]


@pytest.mark.parametrize("name,loss,args,formula", [
    ("l1", lambda: L.L1Loss(), (P, D), lambda: np.abs(D - P).mean(1)),
    ("l2", lambda: L.L2Loss(), (P, D), lambda: (0.5 * (D - P) ** 2).mean(1)),
    ("l2_weighted", lambda: L.L2Loss(weight=3.0), (P, D, W), lambda: (1.5 * (D - P) ** 2 * W).mean(1)),
    ("softmax_ce_sparse", lambda: L.SoftmaxCrossEntropyLoss(), (P, S),
     lambda: -log_softmax(P)[np.arange(4), S.astype(int)]),
    ("softmax_ce_dense", lambda: L.SoftmaxCrossEntropyLoss(sparse_label=False), (P, D),
     lambda: -(log_softmax(P) * D).sum(1)),
    ("sigmoid_bce", lambda: L.SigmoidBinaryCrossEntropyLoss(), (P, B),
     lambda: -(B * np.log(sigmoid(P)) + (1 - B) * np.log(1 - sigmoid(P))).mean(1)),
    ("sigmoid_bce_from_sigmoid", lambda: L.SigmoidBCELoss(from_sigmoid=True), (sigmoid(P), B),
     lambda: -(B * np.log(sigmoid(P)) + (1 - B) * np.log(1 - sigmoid(P))).mean(1)),
    ("huber", lambda: L.HuberLoss(rho=0.7), (P, D),
     lambda: np.where(np.abs(D - P) > 0.7, np.abs(D - P) - 0.35, 0.5 / 0.7 * (D - P) ** 2).mean(1)),
    ("kldiv", lambda: L.KLDivLoss(from_logits=False), (P, D),
     lambda: (D * (np.log(D + 1e-12) - log_softmax(P))).sum(1)),
    ("hinge", lambda: L.HingeLoss(), (P, 2 * B - 1), lambda: np.maximum(0, 1 - P * (2 * B - 1)).mean(1)),
    ("logistic", lambda: L.LogisticLoss(label_format="binary"), (P, B),
     lambda: np.log1p(np.exp(-P * (2 * B - 1))).mean(1)),
])
def test_loss_values(name, loss, args, formula):
    """Each loss equals its numpy formula and MXNet 1.9.1's value on the same inputs."""
    out = both(loss(), *args)
    np.testing.assert_allclose(out, formula(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, FIX[name], rtol=1e-5, atol=1e-6)


def test_label_reshaped_like_prediction_and_batch_axis():
    """A (N,) label meets a (N, 1) prediction; batch_axis picks the axis that is kept."""
    pred, label = np.arange(4, dtype=np.float32).reshape(4, 1), np.ones(4, np.float32)
    np.testing.assert_allclose(both(L.L1Loss(), pred, label), np.abs(pred[:, 0] - 1))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(both(L.L2Loss(batch_axis=1), x, np.zeros_like(x)), (0.5 * x ** 2).mean(0))


def test_sigmoid_bce_pos_weight_and_stability():
    """pos_weight scales the positive term; huge logits give finite losses."""
    pred = np.array([[30.0, -30.0, 0.5]], np.float32)
    label = np.array([[1.0, 0.0, 1.0]], np.float32)
    out = L.SigmoidBCELoss()(mx.nd.array(pred), mx.nd.array(label)).asnumpy()
    assert np.isfinite(out).all()
    pred = np.array([[3.0, -2.0, 0.5]], np.float32)
    pw = np.array([[2.0, 2.0, 2.0]], np.float32)
    out_pw = L.SigmoidBCELoss()(mx.nd.array(pred), mx.nd.array(label), None, mx.nd.array(pw)).asnumpy()
    expected = -(2 * label * np.log(sigmoid(pred)) + (1 - label) * np.log(1 - sigmoid(pred))).mean(1)
    np.testing.assert_allclose(out_pw, expected, rtol=1e-4, atol=1e-6)


def test_loss_gradient():
    """The softmax cross-entropy gradient w.r.t. the logits is softmax - onehot (per sample)."""
    pred = mx.nd.array(P)
    pred.attach_grad()
    with autograd.record():
        loss = L.SoftmaxCrossEntropyLoss()(pred, mx.nd.array(S))
    loss.backward()
    onehot = np.eye(5)[S.astype(int)]
    np.testing.assert_allclose(pred.grad.asnumpy(), np.exp(log_softmax(P)) - onehot, rtol=1e-5, atol=1e-6)


def test_bad_weight_and_label_format():
    """A non-number weight and an unknown label_format are refused."""
    with pytest.raises(mx.MXNetError, match="weight must be a number"):
        L.L1Loss(weight="2")(mx.nd.ones((2, 2)), mx.nd.ones((2, 2)))
    with pytest.raises(ValueError, match="label_format"):
        L.LogisticLoss(label_format="other")
