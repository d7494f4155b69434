"""mx.rnn checkpoints (mxref/rnn/rnn.py): weights saved unpacked per gate, loaded packed."""
import numpy as np

import mxref as mx


def _fused_model():
    cell = mx.rnn.FusedRNNCell(3, num_layers=1, mode="lstm", prefix="f_")
    out, _ = cell.unroll(2, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    n = 4 * 3 * (2 + 3 + 2)
    return cell, out, {"f_parameters": mx.nd.arange(n)}


def test_save_unpacks_and_load_packs(tmp_path):
    cell, sym, args = _fused_model()
    prefix = str(tmp_path / "m")
    mx.rnn.save_rnn_checkpoint(cell, prefix, 3, sym, args, {})
    saved = mx.nd.load(prefix + "-0003.params")
    assert "arg:f_l0_i2h_f_weight" in saved and "arg:f_parameters" not in saved
    assert saved["arg:f_l0_h2h_o_bias"].shape == (3,)
    sym2, arg2, aux2 = mx.rnn.load_rnn_checkpoint([cell], prefix, 3)
    assert sym2.tojson() == sym.tojson() and aux2 == {}
    assert list(arg2) == ["f_parameters"]
    np.testing.assert_array_equal(arg2["f_parameters"].asnumpy(), args["f_parameters"].asnumpy())


def test_do_rnn_checkpoint_every_period(tmp_path):
    cell = mx.rnn.LSTMCell(2, prefix="l_")
    sym, _ = cell.unroll(1, [mx.sym.Variable("x")])
    args = {"l_i2h_weight": mx.nd.ones((8, 3)), "l_i2h_bias": mx.nd.arange(8),
            "l_h2h_weight": mx.nd.ones((8, 2)), "l_h2h_bias": mx.nd.zeros(8)}
    callback = mx.rnn.do_rnn_checkpoint(cell, str(tmp_path / "c"), period=2)
    for epoch in range(4):
        callback(epoch, sym[0], args, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c-0002.params", "c-0004.params", "c-symbol.json"]
    saved = mx.nd.load(str(tmp_path / "c-0002.params"))
    np.testing.assert_array_equal(saved["arg:l_i2h_f_bias"].asnumpy(), [2, 3])
    _, loaded, _ = mx.rnn.load_rnn_checkpoint(cell, str(tmp_path / "c"), 4)
    np.testing.assert_array_equal(loaded["l_i2h_bias"].asnumpy(), np.arange(8))
