"""mx.rnn cells (mxref/rnn/base_cell.py, cells.py, fused.py, wrappers.py, conv_cells.py): behaviour
beyond the graph comparison of test_rnn_graphs.py — states, weight packing, the FusedRNN
initializer, fused == unfused, dropout/zoneout modes, gradients, and the errors MXNet raises."""
import warnings

import numpy as np
import pytest

import mxref as mx
from mxref.test_utils import check_numeric_gradient

N, T, C, H = 2, 3, 3, 4


def _values(sym, seed=0, **shapes):
    args, _, _ = sym.infer_shape(**shapes)
    rng = np.random.RandomState(seed)
    return {n: mx.nd.array(rng.uniform(-0.5, 0.5, size=s)) for n, s in zip(sym.list_arguments(), args)}


def test_state_info_and_begin_state():
    cell = mx.rnn.LSTMCell(H, prefix="l_")
    assert cell.state_shape == [(0, H), (0, H)]
    states = cell.begin_state(func=mx.sym.Variable)
    assert [s.name for s in states] == ["l_begin_state_0", "l_begin_state_1"]
    assert states[0].attr("__layout__") == "NC"
    fused = mx.rnn.FusedRNNCell(H, num_layers=2, bidirectional=True, mode="gru")
    assert fused.state_shape == [(4, 0, H)]
    assert fused.begin_state()[0].name == "gru_begin_state_0"
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.RNNCell(H, prefix="a_"))
    stack.add(mx.rnn.GRUCell(H, prefix="b_"))
    assert [s.name for s in stack.begin_state()] == ["a_begin_state_0", "b_begin_state_0"]
    assert mx.rnn.DropoutCell(0.5).state_info == []


def test_rnn_params_share_variables():
    params = mx.rnn.RNNParams("p_")
    assert params.get("w") is params.get("w")
    a, b = mx.rnn.RNNCell(H, prefix="a_", params=params), mx.rnn.RNNCell(H, prefix="b_", params=params)
    assert a._iW is b._iW and a._iW.name == "p_i2h_weight"
    with pytest.raises(AssertionError):
        mx.rnn.SequentialRNNCell(params=mx.rnn.RNNParams("s_")).add(a)   # a's params are not its own


@pytest.mark.parametrize("cls, gates", [(mx.rnn.LSTMCell, 4), (mx.rnn.GRUCell, 3), (mx.rnn.RNNCell, 1)])
def test_unpack_pack_weights_round_trip(cls, gates):
    cell = cls(H, prefix="c_")
    args = {"c_i2h_weight": mx.nd.arange(gates * H * C).reshape((gates * H, C)),
            "c_i2h_bias": mx.nd.arange(gates * H), "c_h2h_weight": mx.nd.ones((gates * H, H)),
            "c_h2h_bias": mx.nd.arange(gates * H) + 1, "other": mx.nd.zeros((1,))}
    unpacked = cell.unpack_weights(args)
    names = ["c_%s%s_%s" % (g, gate, k) for g in ("i2h", "h2h") for gate in cell._gate_names
             for k in ("weight", "bias")]
    assert sorted(unpacked) == sorted(names + ["other"])
    np.testing.assert_array_equal(unpacked["c_i2h%s_bias" % cell._gate_names[-1]].asnumpy(),
                                  np.arange((gates - 1) * H, gates * H))
    packed = cell.pack_weights(unpacked)
    assert sorted(packed) == sorted(args)
    for k in args:
        np.testing.assert_array_equal(packed[k].asnumpy(), args[k].asnumpy())


def test_fused_initializer_sets_forget_bias_and_uses_init():
    cell = mx.rnn.FusedRNNCell(H, num_layers=2, mode="lstm", bidirectional=True, forget_bias=3.0, prefix="")
    init = mx.init.FusedRNN(mx.init.Constant(0.25), H, 2, "lstm", True, forget_bias=3.0)
    n = 2 * 4 * H * ((C + H + 2) + (2 * H + H + 2))
    arr = mx.nd.zeros((n,))
    # as a Variable's __init__ attribute carries it: the global initializer hands over to it
    mx.init.Uniform()(mx.init.InitDesc("parameters", attrs={"__init__": init.dumps()}), arr)
    parts = cell.unpack_weights({"parameters": arr})
    for name, value in parts.items():
        want = 3.0 if name.endswith("_f_bias") else 0.0 if name.endswith("bias") else 0.25
        np.testing.assert_array_equal(value.asnumpy(), np.full(value.shape, want, np.float32), err_msg=name)
    again = mx.init.create(init.dumps())
    assert isinstance(again, mx.init.FusedRNN) and again == init


def test_fused_parameters_initialized_by_module():
    cell = mx.rnn.FusedRNNCell(H, mode="lstm", forget_bias=2.0, prefix="f_")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, _ = cell.unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    mod = mx.mod.Module(out, label_names=None, context=mx.cpu())
    mod.bind(data_shapes=[("data", (N, T, C))])
    mod.init_params(mx.init.Xavier())
    parts = cell.unpack_weights(mod.get_params()[0])
    np.testing.assert_array_equal(parts["f_l0_i2h_f_bias"].asnumpy(), np.full(H, 2.0))
    np.testing.assert_array_equal(parts["f_l0_h2h_i_bias"].asnumpy(), np.zeros(H))
    assert np.abs(parts["f_l0_i2h_c_weight"].asnumpy()).sum() > 0


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
def test_fused_equals_unfused(mode):
    """The RNN operator over packed weights computes what the unfused stack computes unpacked."""
    fused = mx.rnn.FusedRNNCell(H, num_layers=2, mode=mode, bidirectional=True, get_next_state=True,
                                prefix="f_")
    out_f, st_f = fused.unroll(T, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    sym_f = mx.sym.Group([out_f] + st_f)
    values = _values(sym_f, data=(T, N, C))
    res_f = sym_f.eval(**values)
    stack = fused.unfuse()
    out_u, st_u = stack.unroll(T, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    unpacked = stack.pack_weights(fused.unpack_weights({k: v for k, v in values.items() if k != "data"}))
    res_u = out_u.eval(data=values["data"], **unpacked)
    np.testing.assert_allclose(res_u[0].asnumpy(), res_f[0].asnumpy(), rtol=1e-5, atol=1e-6)
    # final hidden state of layer 1, forward direction: the fused state row 2
    last_h = mx.sym.Group([st_u[2][0]]).eval(data=values["data"], **unpacked)[0]
    np.testing.assert_allclose(last_h.asnumpy(), res_f[1].asnumpy()[2], rtol=1e-5, atol=1e-6)


def test_cells_cannot_step_where_mxnet_cannot():
    with pytest.raises(NotImplementedError):
        mx.rnn.FusedRNNCell(H)(mx.sym.Variable("x"), [])
    bi = mx.rnn.BidirectionalCell(mx.rnn.RNNCell(H, prefix="l_"), mx.rnn.RNNCell(H, prefix="r_"))
    with pytest.raises(NotImplementedError):
        bi(mx.sym.Variable("x"), [])
    with pytest.raises(AssertionError):
        mx.rnn.ZoneoutCell(mx.rnn.FusedRNNCell(H))
    with pytest.raises(AssertionError):
        mx.rnn.ZoneoutCell(bi)
    base = mx.rnn.LSTMCell(H)
    mx.rnn.ResidualCell(base)
    with pytest.raises(AssertionError):          # a modified cell's states come from its modifier
        base.begin_state()
    with pytest.raises(AssertionError):
        mx.rnn.DropoutCell("0.5")
    with pytest.raises(AssertionError):
        mx.rnn.RNNCell(H).unroll(T, None)


def test_zoneout_and_dropout_are_identity_in_inference():
    base = mx.rnn.RNNCell(H, prefix="z_")
    out_base, _ = base.unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    zone = mx.rnn.ZoneoutCell(mx.rnn.RNNCell(H, prefix="z_"), zoneout_outputs=0.5, zoneout_states=0.5)
    out_zone, _ = zone.unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.DropoutCell(0.5))
    stack.add(mx.rnn.RNNCell(H, prefix="z_"))
    out_drop, _ = stack.unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    values = _values(out_base, data=(N, T, C))
    want = out_base.eval(**values)[0].asnumpy()
    for sym in (out_zone, out_drop):
        np.testing.assert_allclose(sym.eval(**values)[0].asnumpy(), want, rtol=1e-6)


def test_zoneout_keeps_previous_values_in_training():
    mx.random.seed(1)
    zone = mx.rnn.ZoneoutCell(mx.rnn.RNNCell(H, prefix="z_"), zoneout_outputs=0.5)
    zone_data = mx.sym.Variable("data")
    outs, _ = zone.unroll(2, zone_data, merge_outputs=False)
    same = mx.rnn.RNNCell(H, prefix="z_", params=zone.params)          # the same weight Variables
    base_outs, _ = same.unroll(2, zone_data, merge_outputs=False)
    sym = mx.sym.Group(outs + base_outs)
    values = _values(sym, data=(8, 2, C))
    exe = sym.bind(mx.cpu(), values)
    z0, z1, b0, b1 = [o.asnumpy() for o in exe.forward(is_train=True)]
    # step 0: each unit is the new output or the zero start; step 1: the new output or step 0's
    assert np.all((z0 == b0) | (z0 == 0)) and 0 < (z0 == 0).mean() < 1
    assert np.all(np.isclose(z1, z0) | (np.abs(z1) > 0))


def test_unrolled_lstm_gradient():
    cell = mx.rnn.LSTMCell(H, prefix="g_")
    out, _ = cell.unroll(2, mx.sym.Variable("data"), merge_outputs=True)
    values = {k: v.asnumpy().astype(np.float64) for k, v in _values(out, data=(N, 2, C)).items()}
    check_numeric_gradient(out, values, numeric_eps=1e-3, rtol=1e-2, atol=1e-3)


def test_residual_and_bidirectional_values():
    cell = mx.rnn.ResidualCell(mx.rnn.GRUCell(C, prefix="r_"))
    out, _ = cell.unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    plain, _ = mx.rnn.GRUCell(C, prefix="r_").unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    values = _values(out, data=(N, T, C))
    np.testing.assert_allclose(out.eval(**values)[0].asnumpy(),
                               plain.eval(**values)[0].asnumpy() + values["data"].asnumpy(), rtol=1e-6)
    bi = mx.rnn.BidirectionalCell(mx.rnn.RNNCell(H, prefix="l_"), mx.rnn.RNNCell(H, prefix="r_"))
    out, _ = bi.unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    values = _values(out, data=(N, T, C))
    got = out.eval(**values)[0].asnumpy()
    fwd, _ = mx.rnn.RNNCell(H, prefix="l_").unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    np.testing.assert_allclose(got[:, :, :H], fwd.eval(**{k: v for k, v in values.items()
                                                          if not k.startswith("r_")})[0].asnumpy(), rtol=1e-6)
    # the backward half at step 0 has read the whole sequence reversed: it equals the r_ cell run on
    # the reversed input, last step
    rev = mx.nd.array(values["data"].asnumpy()[:, ::-1])
    bwd, _ = mx.rnn.RNNCell(H, prefix="r_").unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    r_vals = {k: v for k, v in values.items() if k.startswith("r_")}
    np.testing.assert_allclose(got[:, 0, H:], bwd.eval(data=rev, **r_vals)[0].asnumpy()[:, -1], rtol=1e-6)


def test_conv_lstm_runs():
    cell = mx.rnn.ConvLSTMCell(input_shape=(N, C, 5, 4), num_hidden=2, prefix="c_")
    assert cell.state_shape == [(0, 2, 5, 4), (0, 2, 5, 4)]
    out, _ = cell.unroll(2, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    res = out.eval(**_values(out, data=(2, N, C, 5, 4)))[0]
    assert res.shape == (2, N, 2, 5, 4) and np.isfinite(res.asnumpy()).all()
    with pytest.raises(AssertionError):
        mx.rnn.ConvRNNCell(input_shape=(N, C, 5, 4), num_hidden=2, h2h_kernel=(2, 2))


def test_namespaces():
    assert mx.rnn.rnn_cell.LSTMCell is mx.rnn.LSTMCell
    assert mx.rnn.io.encode_sentences is mx.rnn.encode_sentences
    assert set(mx.rnn.__all__) >= {"BaseRNNCell", "FusedRNNCell", "ZoneoutCell", "BucketSentenceIter",
                                   "save_rnn_checkpoint", "load_rnn_checkpoint", "do_rnn_checkpoint"}
    cell = mx.rnn.RNNCell(H, prefix="d_")
    with pytest.warns(UserWarning, match="deprecated"):
        outs, _ = mx.rnn.rnn_unroll(cell, 2, [mx.sym.Variable("a"), mx.sym.Variable("b")])
    assert mx.sym.Group(outs).list_outputs() == ["d_t0_out_output", "d_t1_out_output"]
