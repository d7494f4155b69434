"""gluon.rnn: fused layers equal their cells unrolled with the same weights; hybridized == imperative
(outputs, states and gradients); layouts, states and cell stacking."""
import numpy as np
import pytest

import mxref as mx
from mxref import autograd
from mxref.gluon import rnn


def copy_layer_to_cell(layer, cell):
    for name in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"):
        getattr(cell, name).set_data(getattr(layer, "l0_" + name).data())


@pytest.mark.parametrize("layer_cls,cell_cls,kwargs", [
    (rnn.LSTM, rnn.LSTMCell, {}), (rnn.GRU, rnn.GRUCell, {}),
    (rnn.RNN, rnn.RNNCell, {"activation": "tanh"})])
def test_fused_layer_equals_unrolled_cell(layer_cls, cell_cls, kwargs):
    """One fused layer gives the outputs and final states of its cell unrolled step by step."""
    mx.random.seed(3)
    x = mx.nd.random.uniform(-1, 1, shape=(5, 2, 3))            # TNC
    layer = layer_cls(4, input_size=3, **kwargs)
    layer.initialize(mx.init.Uniform(0.5))
    cell = cell_cls(4, input_size=3, **kwargs) if cell_cls is rnn.RNNCell else cell_cls(4, input_size=3)
    cell.initialize()
    copy_layer_to_cell(layer, cell)
    states = layer.begin_state(2)
    out, last = layer(x, states)
    cell_out, cell_last = cell.unroll(5, x, begin_state=[s[0] for s in states], layout="TNC",
                                      merge_outputs=True)
    np.testing.assert_allclose(out.asnumpy(), cell_out.asnumpy(), rtol=1e-5, atol=1e-6)
    for a, b in zip(last, cell_last):
        np.testing.assert_allclose(a.asnumpy()[0], b.asnumpy(), rtol=1e-5, atol=1e-6)


def grads_of(block, x, states=None):
    xx = x.copy()
    xx.attach_grad()
    with autograd.record():
        out = block(xx) if states is None else block(xx, states)[0]
        loss = (out * out).sum()
    loss.backward()
    return [out.asnumpy(), xx.grad.asnumpy()] + [p.grad().asnumpy().copy()
                                                 for p in block.collect_params().values()]


@pytest.mark.parametrize("layer", [lambda: rnn.LSTM(3, num_layers=2, bidirectional=True),
                                   lambda: rnn.GRU(3, layout="NTC"), lambda: rnn.RNN(3, num_layers=2)])
def test_hybridized_layer_equals_imperative(layer):
    """Forward values, input gradients and weight gradients agree with and without hybridize."""
    blk = layer()
    blk.initialize(mx.init.Uniform(0.3))
    x = mx.nd.random.uniform(-1, 1, shape=(4, 2, 5))
    imperative = grads_of(blk, x)
    blk.hybridize()
    for a, b in zip(grads_of(blk, x), imperative):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_layouts_and_states():
    """NTC is TNC with the first two axes swapped; states in give states out; bad states raise."""
    tnc = rnn.LSTM(3, input_size=2)
    tnc.initialize()
    ntc = rnn.LSTM(3, input_size=2, layout="NTC", params=tnc.collect_params())
    x = mx.nd.random.uniform(shape=(4, 2, 2))
    y_tnc = tnc(x)
    y_ntc = ntc(x.swapaxes(0, 1))
    np.testing.assert_allclose(y_ntc.swapaxes(0, 1).asnumpy(), y_tnc.asnumpy(), rtol=1e-6)
    out, states = tnc(x, tnc.begin_state(2))
    assert out.shape == (4, 2, 3) and [s.shape for s in states] == [(1, 2, 3), (1, 2, 3)]
    with pytest.raises(ValueError, match="Invalid recurrent state shape"):
        tnc(x, tnc.begin_state(5))
    with pytest.raises(ValueError, match="Invalid layout"):
        rnn.GRU(3, layout="CTN")


def test_cells_hybridize_and_stack():
    """A hybridized cell step equals the imperative one; SequentialRNNCell chains cells and states."""
    cell = rnn.GRUCell(4)
    cell.initialize()
    x, h = mx.nd.random.uniform(shape=(2, 3)), [mx.nd.random.uniform(shape=(2, 4))]
    out, new = cell(x, h)
    cell.hybridize()
    out_h, new_h = cell(x, h)
    np.testing.assert_allclose(out_h.asnumpy(), out.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(new_h[0].asnumpy(), new[0].asnumpy(), rtol=1e-5)
    stack = rnn.SequentialRNNCell()
    with stack.name_scope():
        stack.add(rnn.LSTMCell(4))
        stack.add(rnn.RNNCell(2))
    stack.initialize()
    outs, states = stack.unroll(3, mx.nd.ones((2, 3, 5)), layout="NTC")
    assert len(outs) == 3 and outs[0].shape == (2, 2)
    assert [s.shape for s in states] == [(2, 4), (2, 4), (2, 2)]
    assert len(stack.state_info()) == 3 and len(stack) == 2


def test_cell_unroll_gradient_reaches_weights():
    """Backward through an unrolled LSTMCell fills every weight gradient."""
    cell = rnn.LSTMCell(3)
    cell.initialize()
    x = mx.nd.random.uniform(shape=(2, 4, 5))
    with autograd.record():
        outs, _ = cell.unroll(4, x, merge_outputs=True)
        loss = outs.sum()
    loss.backward()
    for p in cell.collect_params().values():
        assert np.abs(p.grad().asnumpy()).sum() > 0, p.name


@pytest.mark.parametrize("name,make", [
    ("lstm", lambda: rnn.LSTM(4, num_layers=2, bidirectional=True, input_size=3)),
    ("gru", lambda: rnn.GRU(3, layout="NTC", input_size=3)),
    ("rnn", lambda: rnn.RNN(2, activation="tanh", input_size=3))])
def test_layers_match_mxnet(name, make):
    """Parameters saved by MXNet 1.9.1 give MXNet's outputs: the flattening order is MXNet's."""
    import os
    fixtures = os.path.join(os.path.dirname(__file__), "..", "fixtures", "gluon")
    io = np.load(os.path.join(fixtures, "rnn_mxnet191_io.npz"))
    layer = make()
    layer.load_parameters(os.path.join(fixtures, f"{name}_mxnet191.params"))
    x = mx.nd.array(io[f"{name}_x"])
    np.testing.assert_allclose(layer(x).asnumpy(), io[f"{name}_y"], rtol=1e-5, atol=1e-6)
    layer.hybridize()
    np.testing.assert_allclose(layer(x).asnumpy(), io[f"{name}_y"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_lstm_projection_equals_stacked_lstmp_cells(bidirectional):
    """LSTM(projection_size=P) gives the outputs and states of LSTMPCells stacked with the same
    weights (``h2r_weight``); the first state has P features, the cell state H."""
    from mxref.gluon import contrib
    mx.random.seed(1)
    x = mx.nd.random.uniform(shape=(3, 2, 5))
    fused = rnn.LSTM(6, projection_size=3, num_layers=2, bidirectional=bidirectional, prefix="lstm0_")
    stack = rnn.HybridSequentialRNNCell(prefix="lstm0_")
    with stack.name_scope():
        for i in range(2):
            cells = [contrib.rnn.LSTMPCell(6, projection_size=3, prefix=f"{d}{i}_") for d in "lr"]
            stack.add(rnn.BidirectionalCell(*cells) if bidirectional else cells[0])
    fused.initialize()
    stack.initialize()
    begin = fused.begin_state(2)
    assert [s.shape for s in begin] == [(2 * (1 + bidirectional), 2, 3), (2 * (1 + bidirectional), 2, 6)]
    fused.infer_shape(x, begin)
    stack_params = stack.collect_params()
    for name, value in fused.collect_params().items():
        w = mx.nd.random.uniform(-0.5, 0.5, shape=value.shape)
        value.set_data(w)
        stack_params[name].set_data(w)
    out, states = fused(x, begin)
    want, want_states = stack.unroll(3, x, begin_state=stack.begin_state(batch_size=2), layout="TNC",
                                     merge_outputs=True)
    assert out.shape == (3, 2, 3 * (1 + bidirectional))
    np.testing.assert_allclose(out.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    if not bidirectional:      # stacked states: [r, c] per layer
        np.testing.assert_allclose(states[0].asnumpy()[1], want_states[2].asnumpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(states[1].asnumpy()[1], want_states[3].asnumpy(), rtol=1e-5, atol=1e-6)


def test_unfuse_shares_the_parameters():
    """_unfuse gives cells over the layer's own Parameters: same outputs, no copy."""
    x = mx.nd.ones((2, 2, 2))
    layer = rnn.LSTM(2, num_layers=3, bidirectional=True)
    cells = layer._unfuse()
    layer.initialize(mx.init.Xavier())
    assert set(cells.collect_params().keys()) == set(layer.collect_params().keys())
    out = layer(x).asnumpy()
    want = cells.unroll(2, x, layout="TNC", merge_outputs=True)[0].asnumpy()
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def test_fused_layer_inside_a_deferred_hybrid_block():
    """A hybridized container whose graph cannot tell a fused RNN child's weight shapes runs its
    first call op by op; every later call goes through the executor."""
    net = mx.gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(rnn.LSTM(4, bidirectional=True), mx.gluon.nn.Dense(3))
    net.initialize()
    net.hybridize()
    x = mx.nd.ones((2, 3, 5))
    first = net(x).asnumpy()
    assert net[0].l0_i2h_weight.shape == (16, 5)
    np.testing.assert_allclose(net(x).asnumpy(), first, rtol=1e-6)
    assert net._cached_execs       # bound on the second call


def test_variational_dropout_cell():
    """No dropout: the base cell's results. With dropout the input mask is the same at every step."""
    from mxref.gluon import contrib
    x = mx.nd.ones((2, 4, 3))
    make = lambda: rnn.GRUCell(5, input_size=3, i2h_weight_initializer="ones",  # noqa: E731
                               h2h_weight_initializer="ones")
    cell, plain = contrib.rnn.VariationalDropoutCell(make()), make()
    cell.initialize()
    plain.initialize()
    out, _ = cell.unroll(4, x, merge_outputs=True)
    want, _ = plain.unroll(4, x, merge_outputs=True)
    np.testing.assert_allclose(out.asnumpy(), want.asnumpy(), rtol=1e-6)
    mx.random.seed(0)
    drop = contrib.rnn.VariationalDropoutCell(rnn.RNNCell(5, input_size=3, i2h_weight_initializer="ones",
                                                          h2h_weight_initializer="zeros"),
                                              drop_inputs=0.5, drop_states=0.5)
    drop.initialize()
    with autograd.train_mode():
        outs, _ = drop.unroll(4, x, merge_outputs=True)
    steps = outs.asnumpy()
    np.testing.assert_allclose(steps[:, 0], steps[:, 3], rtol=1e-6)   # one mask for the sequence
    assert repr(drop).startswith("VariationalDropoutCell(p_out = 0.0, p_state = 0.5)")
    with pytest.raises(AssertionError, match="BidirectionalCell"):
        contrib.rnn.VariationalDropoutCell(rnn.BidirectionalCell(rnn.GRUCell(2), rnn.GRUCell(2)),
                                           drop_states=0.1)
