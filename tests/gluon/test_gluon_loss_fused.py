"""SoftmaxCrossEntropyLoss called imperatively records one fused operator, with the traced graph's numbers."""
import json

import numpy as np
import pytest

import mxref as mx
from mxref import autograd
from mxref.gluon import loss as L


def loss_and_grad(block, pred, label, *extra):
    x = mx.nd.array(pred)
    x.attach_grad()
    with autograd.record():
        out = block(x, mx.nd.array(label), *extra)
    out.backward(retain_graph=True)      # keeps the graph for get_symbol
    return out, x.grad.asnumpy()


def recorded_ops(out):
    return [n["op"] for n in json.loads(autograd.get_symbol(out).tojson())["nodes"] if n["op"] != "null"]


@pytest.mark.parametrize("label_shape", [(6,), (6, 1)])
def test_imperative_matches_hybridized(label_shape):
    """Values and prediction gradients agree with the traced log_softmax/pick/mean graph."""
    rng = np.random.default_rng(0)
    pred = rng.standard_normal((6, 4)).astype(np.float32) * 2
    label = rng.integers(0, 4, 6).astype(np.float32).reshape(label_shape)
    fused = L.SoftmaxCrossEntropyLoss(weight=0.5)
    traced = L.SoftmaxCrossEntropyLoss(weight=0.5)
    traced.hybridize()
    (a, ga), (b, gb) = loss_and_grad(fused, pred, label), loss_and_grad(traced, pred, label)
    assert a.shape == b.shape == (6,)
    np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(ga, gb, rtol=1e-5, atol=1e-7)


def test_fused_only_where_it_means_the_same():
    """2-D sparse logits record one operator; sample weights and 3-D predictions keep the general graph."""
    pred, label = np.zeros((3, 5), np.float32), np.array([0, 1, 2], np.float32)
    out, _ = loss_and_grad(L.SoftmaxCrossEntropyLoss(), pred, label)
    assert recorded_ops(out) == ["_softmax_cross_entropy_pick"]
    out, _ = loss_and_grad(L.SoftmaxCrossEntropyLoss(), pred, label, mx.nd.ones((3, 1)))
    assert "log_softmax" in recorded_ops(out)
    out, _ = loss_and_grad(L.SoftmaxCrossEntropyLoss(), np.zeros((3, 2, 5), np.float32), np.zeros((3, 2)))
    assert "log_softmax" in recorded_ops(out) and out.shape == (3,)
