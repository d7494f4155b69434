"""Aggregated SGD updates (``MXNET_OPTIMIZER_AGGREGATION_SIZE``): the Updater hands SGD groups of up
to ``aggregate_num`` same-dtype weights, each group one fused engine operation, with the same bits
as one single-tensor operator per weight; ``Trainer.step`` and ``Module.update`` go through it."""
import contextlib
import os
from unittest import mock

import numpy as np
import pytest

import mxref as mx
from mxref import engine, gluon
from mxref import optimizer as opt


@contextlib.contextmanager
def count_ops():
    """Count the engine operations pushed inside the block, by name."""
    eng, counts = engine.get(), {}

    def wrap(push):
        def counted(fn, ctx, const_vars=(), mutable_vars=(), prop=None, priority=0, name=None):
            counts[name] = counts.get(name, 0) + 1
            args = (fn, ctx, const_vars, mutable_vars) + ((prop,) if prop is not None else ())
            return push(*args, priority=priority, name=name)
        return counted
    eng.push_sync, eng.push_async = wrap(eng.push_sync), wrap(eng.push_async)
    try:
        yield counts
    finally:
        del eng.push_sync, eng.push_async


def _size(n):
    return mock.patch.dict(os.environ, {"MXNET_OPTIMIZER_AGGREGATION_SIZE": str(n)})


def _weights(dtype, seed=0, n=7):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, (i + 1, 3)).astype(dtype) for i in range(n)]


@pytest.mark.parametrize("momentum,mp", [(0.0, False), (0.9, False), (0.0, True), (0.9, True)])
def test_aggregated_sgd_is_bitwise_the_single_tensor_updates(momentum, mp):
    """Seven weights, three steps, through the Updater in groups of 4 (two fused ops per step):
    weights and states equal, bit for bit, a loop of sgd_update / sgd_mom_update / mp_* per weight."""
    dtype = np.float16 if mp else np.float32
    names = {i: f"p{i}_{'bias' if i % 2 else 'weight'}" for i in range(7)}
    kw = dict(learning_rate=0.1, momentum=momentum, wd=0.01, rescale_grad=0.5, clip_gradient=0.8,
              multi_precision=mp, param_idx2name=names)
    with _size(4):
        o = opt.SGD(**kw)
    o.set_lr_mult({"p3_bias": 2.0})
    assert o.aggregate_num == 4
    updater = opt.get_updater(o)
    ws = [mx.nd.array(w, dtype=dtype) for w in _weights(dtype)]
    ref = [mx.nd.array(w, dtype=dtype) for w in _weights(dtype)]
    ref_states = [opt.SGD(**kw).create_state_multi_precision(i, w) for i, w in enumerate(ref)]
    rng = np.random.default_rng(1)
    for _ in range(3):
        grads = [rng.uniform(-2, 2, w.shape).astype(dtype) for w in ws]
        with count_ops() as counts:
            updater(list(range(7)), [mx.nd.array(g, dtype=dtype) for g in grads], ws)
        fused = ("multi_mp_sgd" if mp else "multi_sgd") + ("_mom" if momentum else "") + "_update"
        updates = {k: v for k, v in counts.items() if k.endswith("_update")}   # (step 1 also makes states)
        assert updates == {fused: 2}
        for i, (w, g, st) in enumerate(zip(ref, grads, ref_states)):
            one = dict(lr=o._get_lr(i), wd=o._get_wd(i), rescale_grad=0.5, clip_gradient=0.8)
            g = mx.nd.array(g, dtype=dtype)
            if mp and momentum:
                mx.nd.mp_sgd_mom_update(w, g, st[0], st[1], out=w, momentum=momentum, **one)
            elif mp:
                mx.nd.mp_sgd_update(w, g, st[1], out=w, **one)
            elif momentum:
                mx.nd.sgd_mom_update(w, g, st, out=w, momentum=momentum, **one)
            else:
                mx.nd.sgd_update(w, g, out=w, **one)
    for i, (a, b) in enumerate(zip(ws, ref)):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
        flat = lambda s: [x for x in (s if isinstance(s, tuple) else (s,)) if x is not None]  # noqa: E731
        for x, y in zip(flat(updater.states[i]), flat(ref_states[i])):
            np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())


def test_updater_groups_by_dtype_in_chunks():
    """Weights of two dtypes are grouped per dtype (order of first appearance) in chunks of
    aggregate_num; size 1 makes one operation per weight."""
    seen = []

    class Spy(opt.SGD):
        def update_multi_precision(self, index, weight, grad, state):
            seen.append((list(index), weight[0].dtype.__name__))
            super().update_multi_precision(index, weight, grad, state)

    dtypes = ["float32", "float64", "float32", "float32", "float64", "float32", "float32"]
    ws = [mx.nd.ones((2,), dtype=d) for d in dtypes]
    with _size(3):
        updater = opt.get_updater(Spy(learning_rate=0.1))
    updater(list(range(7)), [mx.nd.ones((2,), dtype=d) for d in dtypes], ws)
    assert seen == [([0, 2, 3], "float32"), ([5, 6], "float32"), ([1, 4], "float64")]
    assert all(np.allclose(w.asnumpy(), 0.9) for w in ws)


def _net(seed=0):
    mx.random.seed(seed)
    net = gluon.nn.Sequential()
    for _ in range(6):
        net.add(gluon.nn.Dense(8, in_units=8))
    net.initialize(mx.init.Uniform(0.5))
    return net


def _train(size, steps=2):
    with _size(size):
        net = _net()
        trainer = gluon.Trainer(net.collect_params(), "sgd",
                                {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01})
    x = mx.nd.array(np.random.default_rng(0).uniform(-1, 1, (4, 8)))
    for _ in range(steps):
        with mx.autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        with count_ops() as counts:
            trainer.step(4)
    return [p.data().asnumpy() for p in net.collect_params().values()], counts


def test_trainer_step_issues_one_fused_op_per_group():
    """12 parameters: 3 fused ops with the default size 4, 12 with size 1; the same bits."""
    fused, counts4 = _train(4)
    single, counts1 = _train(1)
    assert counts4.get("multi_sgd_mom_update") == 3 and "sgd_mom_update" not in counts4
    assert counts1.get("multi_sgd_mom_update") == 12
    for a, b in zip(fused, single):
        np.testing.assert_array_equal(a, b)


def test_module_update_issues_one_fused_op_per_group():
    """Module.update (one device: the updater path) makes ceil(n/4) fused ops for n parameters."""
    data = mx.sym.var("data")
    net = data
    for i in range(5):
        net = mx.sym.FullyConnected(net, num_hidden=4, name=f"fc{i}")
    mod = mx.mod.Module(mx.sym.MakeLoss(mx.sym.sum(net)), label_names=None)
    mod.bind(data_shapes=[("data", (2, 4))])
    mod.init_params(mx.init.Uniform(0.1))
    with _size(4):
        mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 4))], None), is_train=True)
    mod.backward()
    with count_ops() as counts:
        mod.update()
    assert counts.get("multi_sgd_update") == 3 and "sgd_update" not in counts   # 10 params
