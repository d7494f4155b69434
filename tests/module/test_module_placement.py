"""Module and BucketingModule with ``group2ctxs``: the layers really run on the mapped devices
(MXNet 1.x ignores the mapping in some paths), training equals the one-device run, and
``get_params`` / checkpoints gather parameters from whichever device holds them."""
import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError
from mxref.io import DataBatch, DataDesc
from mxref.module import BucketingModule, Module


def net():
    data = mx.sym.Variable("data")
    with mx.AttrScope(ctx_group="lower"):
        h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=8, name="fc1"), act_type="tanh")
        h = mx.sym.BatchNorm(h, name="bn")
    with mx.AttrScope(ctx_group="upper"):
        h = mx.sym.FullyConnected(h, num_hidden=3, name="fc2")
        return mx.sym.SoftmaxOutput(h, name="softmax")


def batches(n, seed=0, batch=8):
    rng = np.random.RandomState(seed)
    for _ in range(n):
        x = rng.normal(size=(batch, 5)).astype(np.float32)
        y = rng.randint(0, 3, batch).astype(np.float32)
        yield DataBatch([mx.nd.array(x)], [mx.nd.array(y)])


def trained(context=None, group2ctxs=None, steps=4):
    mod = Module(net(), context=context or mx.cpu(0), group2ctxs=group2ctxs)
    mod.bind(data_shapes=[("data", (8, 5))], label_shapes=[("softmax_label", (8,))])
    mx.random.seed(3)
    mod.init_params(initializer=mx.init.Xavier())
    mod.init_optimizer(optimizer_params={"learning_rate": 0.3, "momentum": 0.9})
    for b in batches(steps):
        mod.forward(b, is_train=True)
        mod.backward()
        mod.update()
    return mod


def test_module_group2ctxs_places_layers_and_trains_as_one_device(tmp_path):
    g2c = {"lower": mx.cpu(1), "upper": mx.cpu(2)}
    one, placed = trained(), trained(group2ctxs=g2c)
    exe = placed._exec_group.execs[0]
    assert exe.arg_dict["fc1_weight"].context == mx.cpu(1)
    assert exe.aux_dict["bn_moving_mean"].context == mx.cpu(1)
    assert exe.arg_dict["fc2_weight"].context == mx.cpu(2)
    assert exe.outputs[0].context == mx.cpu(2)
    (args1, aux1), (args2, aux2) = one.get_params(), placed.get_params()
    for name in args1:
        assert args2[name].context == mx.cpu(0)     # gathered to the host, as MXNet's get_params
        np.testing.assert_allclose(args1[name].asnumpy(), args2[name].asnumpy(), rtol=1e-6, atol=1e-7)
    for name in aux1:
        np.testing.assert_allclose(aux1[name].asnumpy(), aux2[name].asnumpy(), rtol=1e-6, atol=1e-7)
    prefix = str(tmp_path / "mp")
    placed.save_checkpoint(prefix, 1)
    _, arg_loaded, aux_loaded = mx.model.load_checkpoint(prefix, 1)
    for name in args2:
        np.testing.assert_array_equal(arg_loaded[name].asnumpy(), args2[name].asnumpy())
    for name in aux2:
        np.testing.assert_array_equal(aux_loaded[name].asnumpy(), aux2[name].asnumpy())


def test_data_parallel_times_model_parallel():
    """Two data-parallel copies, each split over two devices (a list of dicts, one per context)."""
    g2cs = [{"lower": mx.cpu(0), "upper": mx.cpu(1)}, {"lower": mx.cpu(2), "upper": mx.cpu(3)}]
    plain = trained(context=[mx.cpu(0), mx.cpu(2)])
    placed = trained(context=[mx.cpu(0), mx.cpu(2)], group2ctxs=g2cs)
    execs = placed._exec_group.execs
    assert [e.arg_dict["fc2_weight"].context for e in execs] == [mx.cpu(1), mx.cpu(3)]
    for name, value in plain.get_params()[0].items():
        np.testing.assert_allclose(value.asnumpy(), placed.get_params()[0][name].asnumpy(),
                                   rtol=1e-6, atol=1e-7)
    with pytest.raises(MXNetError, match="3 dicts for 2 contexts"):
        Module(net(), context=[mx.cpu(0), mx.cpu(2)], group2ctxs=g2cs + g2cs[:1]).bind(
            data_shapes=[("data", (8, 5))], label_shapes=[("softmax_label", (8,))])


def test_bucketing_module_group2ctxs():
    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        with mx.AttrScope(ctx_group="emb"):
            h = mx.sym.sum(data, axis=1)
            h = mx.sym.FullyConnected(h, num_hidden=4, name="fc")
        with mx.AttrScope(ctx_group="out"):
            h = mx.sym.FullyConnected(h, num_hidden=3, name="cls")
            return mx.sym.SoftmaxOutput(h, name="softmax"), ("data",), ("softmax_label",)

    def run(group2ctxs):
        mod = BucketingModule(sym_gen, default_bucket_key=5, group2ctxs=group2ctxs)
        mod.bind(data_shapes=[("data", (6, 5, 4))], label_shapes=[("softmax_label", (6,))])
        mx.random.seed(1)
        mod.init_params(initializer=mx.init.Uniform(0.3))
        mod.init_optimizer(optimizer_params={"learning_rate": 0.5})
        rng = np.random.RandomState(0)
        for key in (5, 3, 5, 2):
            x = rng.normal(size=(6, key, 4)).astype(np.float32)
            y = rng.randint(0, 3, 6).astype(np.float32)
            mod.forward(DataBatch([mx.nd.array(x)], [mx.nd.array(y)], bucket_key=key,
                                  provide_data=[DataDesc("data", x.shape)],
                                  provide_label=[DataDesc("softmax_label", y.shape)]), is_train=True)
            mod.backward()
            mod.update()
        return mod

    plain, placed = run(None), run({"emb": mx.cpu(1), "out": mx.cpu(2)})
    for key in (2, 3, 5):
        exe = placed._buckets[key]._exec_group.execs[0]
        assert exe.arg_dict["fc_weight"].context == mx.cpu(1)
        assert exe.arg_dict["cls_weight"].context == mx.cpu(2)
        assert exe.arg_dict["cls_weight"] is placed._buckets[5]._exec_group.execs[0].arg_dict["cls_weight"]
    for name, value in plain.get_params()[0].items():
        np.testing.assert_allclose(value.asnumpy(), placed.get_params()[0][name].asnumpy(),
                                   rtol=1e-6, atol=1e-7)


def test_group2ctxs_dict_of_context_lists():
    """A dict whose values are lists: one context per data-parallel copy, or one repeated."""
    g2cs = {"lower": [mx.cpu(0), mx.cpu(2)], "upper": [mx.cpu(3)]}
    placed = trained(context=[mx.cpu(0), mx.cpu(2)], group2ctxs=g2cs)
    execs = placed._exec_group.execs
    assert [e.arg_dict["fc1_weight"].context for e in execs] == [mx.cpu(0), mx.cpu(2)]
    assert [e.arg_dict["fc2_weight"].context for e in execs] == [mx.cpu(3), mx.cpu(3)]
    plain = trained(context=[mx.cpu(0), mx.cpu(2)])
    for name, value in plain.get_params()[0].items():
        np.testing.assert_allclose(value.asnumpy(), placed.get_params()[0][name].asnumpy(),
                                   rtol=1e-6, atol=1e-7)
    with pytest.raises(MXNetError, match=r"group2ctxs\['upper'\]: 3 contexts for 2"):
        Module(net(), context=[mx.cpu(0), mx.cpu(2)],
               group2ctxs={"upper": [mx.cpu(1)] * 3}).bind(
            data_shapes=[("data", (8, 5))], label_shapes=[("softmax_label", (8,))])
