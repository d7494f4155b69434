"""Executor with MXNET_BACKWARD_DO_MIRROR: same gradients and BatchNorm statistics, less memory."""
import re

import numpy as np
import pytest

import mxref as mx


def _net(depth=4):
    x = mx.sym.Variable("data")
    for i in range(depth):
        x = mx.sym.Convolution(x, num_filter=8, kernel=(3, 3), pad=(1, 1), name=f"c{i}")
        x = mx.sym.BatchNorm(x, fix_gamma=False, name=f"bn{i}")
        x = mx.sym.Activation(x, act_type="relu", name=f"r{i}")
    x = mx.sym.FullyConnected(x, num_hidden=10, name="fc")
    return mx.sym.SoftmaxOutput(x, name="softmax")


def _resnet_like(units=3, c=32):
    """Bottleneck units as in ResNet-50 (conv-BN-ReLU, 1x1 / 3x3 / 1x1, identity shortcut)."""
    def conv_bn(x, nf, k, name):
        x = mx.sym.Convolution(x, num_filter=nf, kernel=(k, k), pad=(k // 2, k // 2), no_bias=True,
                               name=name + "_conv")
        return mx.sym.BatchNorm(x, fix_gamma=False, name=name + "_bn")

    h = mx.sym.Activation(conv_bn(mx.sym.Variable("data"), c, 3, "stem"), act_type="relu")
    for u in range(units):
        b = mx.sym.Activation(conv_bn(h, c // 4, 1, f"u{u}_a"), act_type="relu")
        b = mx.sym.Activation(conv_bn(b, c // 4, 3, f"u{u}_b"), act_type="relu")
        h = mx.sym.Activation(conv_bn(b, c, 1, f"u{u}_c") + h, act_type="relu")
    h = mx.sym.FullyConnected(mx.sym.Flatten(h), num_hidden=10, name="fc")
    return mx.sym.SoftmaxOutput(h, name="softmax")


def _train_step(batch=16, net=_net, image=16):
    ex = net().simple_bind(mx.cpu(), data=(batch, 3, image, image), softmax_label=(batch,))
    for i, (_name, arr) in enumerate(sorted(ex.arg_dict.items())):
        arr[:] = np.random.RandomState(i).uniform(-0.3, 0.3, arr.shape)
    for name, arr in ex.aux_dict.items():
        arr[:] = 1.0 if name.endswith("var") else 0.0
    ex.arg_dict["softmax_label"][:] = np.arange(batch) % 10
    ex.forward(is_train=True)
    ex.backward()
    mb = int(re.search(r"Total (\d+) MB allocated", ex.debug_str()).group(1))
    grads = {k: v.asnumpy() for k, v in ex.grad_dict.items() if v is not None}
    aux = {k: v.asnumpy() for k, v in ex.aux_dict.items()}
    return grads, aux, mb


@pytest.mark.parametrize("policy", ["budget", "sublinear", "cheap", "mxnet"])
def test_mirror_keeps_gradients_and_updates_moving_stats_once(monkeypatch, policy):
    """Recomputed BatchNorm nodes must not update moving_mean/moving_var a second time."""
    base_grads, base_aux, base_mb = _train_step()
    monkeypatch.setenv("MXNET_BACKWARD_DO_MIRROR", "1")
    monkeypatch.setenv("MXREF_MIRROR_POLICY", policy)
    grads, aux, mb = _train_step()
    for k in base_grads:
        np.testing.assert_allclose(grads[k], base_grads[k], rtol=1e-5, atol=1e-6, err_msg=k)
    for k in base_aux:
        np.testing.assert_allclose(aux[k], base_aux[k], rtol=1e-6, err_msg=k)
    if policy == "sublinear":
        assert mb < base_mb, (mb, base_mb)


def test_default_policy_saves_memory_on_a_residual_net(monkeypatch):
    """MXNET_BACKWARD_DO_MIRROR=1 alone (policy ``budget``) allocates well under the unmirrored
    plan on bottleneck units, with bit-identical gradients and moving statistics."""
    monkeypatch.delenv("MXREF_MIRROR_POLICY", raising=False)
    base_grads, base_aux, base_mb = _train_step(net=_resnet_like, image=32)
    monkeypatch.setenv("MXNET_BACKWARD_DO_MIRROR", "1")
    grads, aux, mb = _train_step(net=_resnet_like, image=32)
    assert mb <= 0.75 * base_mb, (mb, base_mb)
    for k in base_grads:
        np.testing.assert_array_equal(grads[k], base_grads[k], err_msg=k)
    for k in base_aux:
        np.testing.assert_array_equal(aux[k], base_aux[k], err_msg=k)


def test_mirrored_graphs_get_the_smaller_of_the_two_plans(monkeypatch):
    """With mxref's mirror policies the executor plans with ``auto`` (never above nnvm's plan),
    unless MXREF_MEM_PLAN_STRATEGY names a strategy."""
    from mxref.passes.plan_memory import plan_memory  # noqa: PLC0415

    monkeypatch.setenv("MXNET_BACKWARD_DO_MIRROR", "1")
    monkeypatch.delenv("MXREF_MEM_PLAN_STRATEGY", raising=False)
    bind = lambda: _resnet_like().simple_bind(mx.cpu(), data=(16, 3, 32, 32), softmax_label=(16,))
    auto = bind()._plan.graph.attrs["storage_allocated_bytes"]
    monkeypatch.setenv("MXREF_MEM_PLAN_STRATEGY", "nnvm")
    graph = bind()._plan.graph
    assert auto == plan_memory(graph, strategy="auto").attrs["storage_allocated_bytes"]
    assert auto < graph.attrs["storage_allocated_bytes"]


def test_unknown_mirror_policy_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("MXNET_BACKWARD_DO_MIRROR", "1")
    monkeypatch.setenv("MXREF_MIRROR_POLICY", "everything")
    with pytest.raises(mx.MXNetError, match="mirror_policy"):
        _net().simple_bind(mx.cpu(), data=(2, 3, 16, 16), softmax_label=(2,))
