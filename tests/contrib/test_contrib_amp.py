"""mx.contrib.amp: graph conversion (checked against MXNet 1.9.1's ReducePrecision on the same
graph), casting wrappers from amp.init, and dynamic loss scaling with a Gluon Trainer."""
import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError
from mxref.contrib import amp
from mxref.contrib.amp import amp as amp_impl


def _graph():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    act = mx.sym.Activation(fc, act_type="relu", name="relu")
    e = mx.sym.exp(act, name="e")
    s = mx.sym.elemwise_add(fc, e, name="add")
    bn = mx.sym.BatchNorm(s, name="bn")
    c = mx.sym.concat(bn, data, dim=1, name="cat")
    return mx.sym.Group([mx.sym.softmax(c, name="sm"), fc])


def _params():
    rng = np.random.RandomState(0)
    args = {"fc_weight": mx.nd.array(rng.normal(size=(4, 3))), "fc_bias": mx.nd.array(rng.normal(size=4)),
            "bn_gamma": mx.nd.ones(4), "bn_beta": mx.nd.zeros(4)}
    return args, {"bn_moving_mean": mx.nd.zeros(4), "bn_moving_var": mx.nd.ones(4)}


# What MXNet 1.9.1 gives for _graph() (convert_symbol with the default lists).
MXNET_INTERNALS = [
    "add_output", "bn_beta", "bn_gamma", "bn_moving_mean", "bn_moving_var", "bn_output", "cat_output",
    "data", "data_amp_cast_float16_output", "data_amp_cast_float32_output", "e_output", "fc_bias",
    "fc_bias_amp_cast_float16_output", "fc_output", "fc_output_amp_cast_float32_output", "fc_weight",
    "fc_weight_amp_cast_float16_output", "relu_output", "relu_output_amp_cast_float32_output",
    "sm_output"]


def test_lists_are_mxnets_for_the_registered_operators():
    """tests/fixtures/amp/lists_mxnet191.json: MXNet 1.9.1's float16 lists. The float16, float32,
    widest-type, conditional and loss lists are MXNet's minus the operators mxref lacks; the
    "any type" list is every other registered operator."""
    import json
    import pathlib

    from mxref.ops import registry
    ref = json.loads((pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "amp" /
                      "lists_mxnet191.json").read_text())
    for name in ("list_lp16_ops", "list_fp32_ops", "list_widest_type_cast", "list_loss_output_functions"):
        want = sorted(n for n in ref[name] if registry.exists(n))
        assert sorted(getattr(amp, name)("float16")) == want, name
    assert [[c[0], c[1], list(c[2])]
            for c in amp.list_conditional_fp32_ops("float16")] == ref["list_conditional_fp32_ops"]
    mxnet_any = {n for n in ref["list_lp16_fp32_ops"] if registry.exists(n)} - {"amp_cast", "amp_multicast"}
    assert mxnet_any <= set(amp.list_lp16_fp32_ops("float16"))
    assert "BatchNorm" in amp.list_lp16_fp32_ops("float16")


def test_cast_names_follow_mxnets_output_names():
    """A cast of an operator's output is ``<node>_<output name>_amp_cast_<dtype>`` for operators
    MXNet registers output names for, ``<node>_<index>_amp_cast_<dtype>`` for the others."""
    data = mx.sym.var("data")
    for make, cast in ((lambda: mx.sym.Activation(data, act_type="relu", name="x"), "x_output"),
                       (lambda: mx.sym.SliceChannel(data, num_outputs=2, name="x")[1], "x_output1"),
                       (lambda: mx.sym.Embedding(data, input_dim=3, output_dim=2, name="x"), "x_0"),
                       (lambda: mx.sym.Reshape(data, shape=(-1,), name="x"), "x_0"),
                       (lambda: mx.sym.elemwise_add(data, data, name="x"), "x_output"),
                       (lambda: mx.sym.elemwise_mul(data, data, name="x"), "x_0")):
        names = amp.convert_symbol(mx.sym.FullyConnected(make(), num_hidden=2, name="fc"))
        assert f"{cast}_amp_cast_float16_output" in names.get_internals().list_outputs(), cast


@pytest.fixture
def amp_on():
    amp.init()
    yield
    amp_impl._uninit()


def test_convert_symbol_inserts_the_casts_mxnet_does():
    conv = amp.convert_symbol(_graph())
    assert conv.list_outputs() == ["sm_output", "fc_output_amp_cast_float32_output"]
    assert sorted(conv.get_internals().list_outputs()) == MXNET_INTERNALS
    # the original graph is untouched
    assert "fc_weight_amp_cast_float16_output" not in _graph().get_internals().list_outputs()
    _, out_types, _ = conv.infer_type(data=np.float32, fc_weight=np.float32, fc_bias=np.float32)
    assert out_types == [np.float32, np.float32]
    internals = conv.get_internals()
    types = dict(zip(internals.list_outputs(),
                     internals.infer_type(data=np.float32, fc_weight=np.float32, fc_bias=np.float32)[1]))
    assert types["fc_output"] == np.float16 and types["e_output"] == np.float32
    assert types["add_output"] == np.float32 and types["bn_output"] == np.float32


def test_convert_model_casts_optional_params_and_runs():
    """With cast_optional_params the FullyConnected parameters are stored in float16 (no cast
    node); BatchNorm's stay float32. The float16 graph agrees with float32 to float16 accuracy."""
    args, aux = _params()
    sym, a16, x16 = amp.convert_model(_graph(), dict(args), dict(aux), cast_optional_params=True)
    assert {k: v.dtype for k, v in a16.items()} == {"fc_weight": np.float16, "fc_bias": np.float16,
                                                    "bn_gamma": np.float32, "bn_beta": np.float32}
    assert all(v.dtype == np.float32 for v in x16.values())
    assert "fc_weight_amp_cast_float16_output" not in sym.get_internals().list_outputs()
    assert sym.attr_dict()["fc_weight"]["__dtype__"] == "2"
    x = mx.nd.array(np.arange(6).reshape(2, 3) / 6)
    ref = _graph().bind(mx.cpu(), dict(args, data=x), aux_states=dict(aux)).forward()
    got = sym.bind(mx.cpu(), dict(a16, data=x), aux_states=x16).forward()
    for r, g in zip(ref, got):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g.asnumpy(), r.asnumpy(), rtol=2e-3, atol=2e-3)


def test_convert_symbol_lists_excluded_names_and_errors():
    conv = amp.convert_symbol(_graph(), excluded_sym_names=["fc"])
    assert "fc_weight_amp_cast_float16_output" not in conv.get_internals().list_outputs()
    conv = amp.convert_symbol(_graph(), target_dtype_ops=["FullyConnected"], fp32_ops=[],
                              conditional_fp32_ops=[])
    assert "relu_output_amp_cast_float32_output" not in conv.get_internals().list_outputs()
    with pytest.raises(MXNetError, match="two lists"):
        amp.convert_symbol(_graph(), target_dtype_ops=["exp"], fp32_ops=["exp"])
    with pytest.raises(MXNetError, match="none of amp's lists"):
        amp.convert_symbol(_graph(), target_dtype_ops=["no_such_op"])
    with pytest.raises(MXNetError, match="bfloat16"):
        amp.convert_symbol(_graph(), target_dtype="bfloat16")
    with pytest.raises(TypeError):
        amp.convert_symbol(mx.nd.ones(1))


def test_widest_type_cast_uses_amp_multicast_when_types_are_unknown():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    conv = amp.convert_symbol(mx.sym.elemwise_add(a, b, name="add"))
    names = conv.get_internals().list_outputs()
    assert "a_amp_multicast_output0" in names and "a_amp_multicast_output1" in names


def test_lists_name_registered_operators_only():
    from mxref.ops import registry
    for names in (amp.list_lp16_ops("float16"), amp.list_fp32_ops("float16"),
                  amp.list_widest_type_cast("float16"), amp.list_lp16_fp32_ops("float16")):
        assert names and all(registry.exists(n) for n in names)
    assert "FullyConnected" in amp.list_lp16_ops("float16") and "exp" in amp.list_fp32_ops("float16")
    assert ("Activation", "act_type", ["softrelu"]) in amp.list_conditional_fp32_ops("float16")
    assert amp.list_lp16_use_fp32_params("float16") is None
    assert "SoftmaxOutput" in amp.list_loss_output_functions("float16")


def test_init_wraps_ndarray_and_symbol_functions(amp_on):
    x = mx.nd.ones((2, 4))
    o = mx.nd.FullyConnected(x, mx.nd.ones((3, 4)), mx.nd.ones(3), num_hidden=3)
    assert o.dtype == np.float16
    np.testing.assert_array_equal(o.asnumpy(), 5)
    assert mx.nd.exp(o).dtype == np.float32                       # fp32 list
    assert mx.nd.elemwise_add(o, mx.nd.ones((2, 3))).dtype == np.float32   # widest input
    assert mx.nd.elemwise_add(o, o).dtype == np.float16
    assert mx.nd.Activation(o, act_type="softrelu").dtype == np.float32     # conditional
    assert mx.nd.Activation(o, act_type="relu").dtype == np.float16
    with mx.name.NameManager():       # the cast nodes' names count from 0 whatever ran before
        y = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=3, name="fc")
        w = mx.sym.elemwise_add(mx.sym.exp(y, name="e"), y, name="add")
    assert w.get_internals().list_outputs()[:8] == [
        "x", "amp_cast0_output", "fc_weight", "amp_cast1_output", "fc_bias", "amp_cast2_output",
        "fc_output", "amp_cast3_output"]
    assert w.list_arguments() == ["x", "fc_weight", "fc_bias"]
    amp.init()                                                    # a second call does nothing
    assert mx.nd.exp(mx.nd.ones(1, dtype="float16")).dtype == np.float32


def test_uninit_restores_the_functions(amp_on):
    amp_impl._uninit()
    assert mx.nd.exp(mx.nd.ones(1, dtype="float16")).dtype == np.float16
    amp.init()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")      # float16 overflow is the point here
def test_trainer_loss_scaling_skips_overflowing_steps(amp_on):
    net = mx.gluon.nn.Dense(2, in_units=4)
    net.initialize(mx.init.Constant(0.01))
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    with pytest.raises(MXNetError, match="init_trainer"):
        with amp.scale_loss(mx.nd.ones(1), trainer):
            pass
    amp.init_trainer(trainer)
    scaler = trainer._amp_loss_scaler
    assert scaler.loss_scale == 2.0 ** 16
    x = mx.nd.ones((3, 4))
    with mx.autograd.record():
        loss = net(x).sum()
        with amp.scale_loss(loss, trainer) as scaled:
            assert scaled.asscalar() == pytest.approx(loss.asscalar() * 2 ** 16, rel=1e-3)
            scaled.backward()
    assert trainer._scale == 2.0 ** -16
    w0 = net.weight.data().asnumpy().copy()
    trainer.step(3)        # 3 * 65536 overflows float16: the step is skipped, the scale halves
    np.testing.assert_array_equal(net.weight.data().asnumpy(), w0)
    assert scaler._next_loss_scale == 2.0 ** 15
    # A new scale takes effect at the next check, so backward runs at 2**16, 2**15, 2**14: two
    # more skipped steps, then 3 * 2**14 fits in float16 and the update happens.
    for step in range(3):
        with mx.autograd.record():
            with amp.scale_loss(net(x).sum(), trainer) as scaled:
                scaled.backward()
        trainer.step(3)
        if step < 2:
            np.testing.assert_array_equal(net.weight.data().asnumpy(), w0)
    assert scaler.loss_scale == 2.0 ** 13 and trainer._scale == 2.0 ** -14
    # d(sum)/dW = 3 per element; SGD with lr 0.1 and batch 3: w -= 0.1
    np.testing.assert_allclose(net.weight.data().asnumpy(), w0 - 0.1, rtol=1e-3)


def test_unscale_and_scale_growth(amp_on):
    net = mx.gluon.nn.Dense(1, in_units=2)
    net.initialize(mx.init.One())
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.0})
    amp.init_trainer(trainer)
    other = mx.gluon.Trainer(net.collect_params(), "sgd")
    amp.init_trainer(other)
    assert other._amp_loss_scaler is not trainer._amp_loss_scaler
    scaler = trainer._amp_loss_scaler
    scaler._loss_scale = scaler._next_loss_scale = 4.0
    scaler._scale_seq_len = 2
    with mx.autograd.record():
        with amp.scale_loss([net(mx.nd.ones((1, 2))).sum()], trainer) as scaled:
            scaled[0].backward()
    np.testing.assert_array_equal(net.weight.grad().asnumpy(), 4)
    amp.unscale(trainer)
    np.testing.assert_array_equal(net.weight.grad().asnumpy(), 1)
    assert trainer._scale == 1.0
    trainer.step(1)
    trainer.step(1)
    assert scaler._next_loss_scale == 8.0
    with pytest.raises(TypeError):
        amp.init_trainer(mx.optimizer.SGD())


def test_init_trainer_needs_init():
    net = mx.gluon.nn.Dense(1, in_units=1)
    net.initialize()
    with pytest.raises(MXNetError, match="amp.init"):
        amp.init_trainer(mx.gluon.Trainer(net.collect_params(), "sgd"))


def test_convert_hybrid_block():
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(4, activation="relu"), mx.gluon.nn.BatchNorm(), mx.gluon.nn.Dense(2))
    net.initialize()
    with pytest.raises(MXNetError, match="hybridize"):
        amp.convert_hybrid_block(net)
    net.hybridize()
    x = mx.nd.array(np.random.RandomState(0).normal(size=(3, 5)))
    y = net(x)
    block = amp.convert_hybrid_block(net, cast_optional_params=True)
    params = block.collect_params()
    assert params[net[0].weight.name].dtype == np.float16
    assert params[net[1].gamma.name].dtype == np.float32
    out = block(x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.asnumpy(), y.asnumpy(), rtol=1e-2, atol=1e-2)
