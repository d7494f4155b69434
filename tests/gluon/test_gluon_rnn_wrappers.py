"""BidirectionalCell, DropoutCell, ModifierCell, ZoneoutCell, ResidualCell and the stacked cells'
unroll (layout, merge_outputs, valid_length) against MXNet 1.9.1, plus their rules and symbol forms."""
import json
import os

import numpy as np
import pytest

import mxref as mx
from mxref import autograd
from mxref.gluon import rnn
from mxref.ops import registry

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "gluon",
                       "layers_losses_cells_mxnet191.npz")
HAVE_SEQUENCE_OPS = registry.exists("SequenceMask") and registry.exists("SequenceReverse")


def _seq(seq, *cells):
    with seq.name_scope():
        for c in cells:
            seq.add(c)
    return seq


CELLS = {
    "bi": lambda: rnn.BidirectionalCell(rnn.LSTMCell(6, input_size=5, prefix="l_"),
                                        rnn.GRUCell(6, input_size=5, prefix="r_")),
    "res": lambda: rnn.ResidualCell(rnn.GRUCell(5, input_size=5)),
    "zone": lambda: rnn.ZoneoutCell(rnn.RNNCell(6, input_size=5), zoneout_outputs=0.5, zoneout_states=0.3),
    "seq": lambda: _seq(rnn.SequentialRNNCell(), rnn.LSTMCell(6, input_size=5), rnn.DropoutCell(0.5),
                        rnn.ResidualCell(rnn.RNNCell(6, input_size=6))),
    "hseq": lambda: _seq(rnn.HybridSequentialRNNCell(), rnn.GRUCell(6, input_size=5),
                         rnn.ZoneoutCell(rnn.LSTMCell(6, input_size=6), 0.2, 0.2)),
    "biseq": lambda: _seq(rnn.SequentialRNNCell(), rnn.BidirectionalCell(rnn.RNNCell(6, input_size=5),
                                                                         rnn.RNNCell(6, input_size=5)),
                          rnn.LSTMCell(6, input_size=12)),
}


def _cases():
    with np.load(FIXTURE) as f:
        names = sorted({k.split("/", 1)[0] for k in f.files if k.startswith("cell")})
    return names


def _load(name):
    with np.load(FIXTURE) as f:
        return {k.split("/", 1)[1]: f[k] for k in f.files if k.startswith(name + "/")}


def _built(kind):
    with mx.name.NameManager():
        cell = CELLS[kind]()
    cell.initialize()
    rng = np.random.RandomState(1)
    names = sorted(cell.collect_params().keys())
    for n in names:
        p = cell.collect_params()[n]
        p.set_data(mx.nd.array(rng.uniform(-0.5, 0.5, p.shape)))
    return cell, names


@pytest.mark.parametrize("name", _cases())
def test_unroll_matches_mxnet(name):
    """Outputs (list or merged), final states, input gradients and parameter names equal MXNet's."""
    c = _load(name)
    kw = json.loads(str(c["kwargs"]))
    if kw["valid_length"] is not None and not HAVE_SEQUENCE_OPS:
        pytest.skip("valid_length needs the SequenceMask/Last/Reverse operators")
    cell, names = _built(name.split("_")[1])
    assert names == list(c["names"])
    x = mx.nd.array(c["in0"])
    x.attach_grad()
    vl = None if kw["valid_length"] is None else mx.nd.array(kw["valid_length"])
    with autograd.record(train_mode=False):
        outs, states = cell.unroll(4, x, layout=kw["layout"], merge_outputs=kw["merge_outputs"],
                                   valid_length=vl)
        assert isinstance(outs, list) == bool(c["is_list"])
        o = mx.nd.stack(*outs, axis=kw["layout"].find("T")) if isinstance(outs, list) else outs
        loss = (o * o).sum() + sum((s * s).sum() for s in states)
    loss.backward()
    np.testing.assert_allclose(o.asnumpy(), c["out"], rtol=1e-5, atol=1e-6)
    assert len(states) == len([k for k in c if k.startswith("s") and k[1:].isdigit()])
    for i, s in enumerate(states):
        np.testing.assert_allclose(s.asnumpy(), c[f"s{i}"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), c["grad"], rtol=1e-4, atol=1e-6)


def test_hybridized_modifier_cells_step_like_imperative():
    """ResidualCell and ZoneoutCell (inference) hybridized give the same steps as imperative."""
    x = mx.nd.random.uniform(-1, 1, shape=(2, 3, 4))
    for build in (lambda: rnn.ResidualCell(rnn.GRUCell(4, input_size=4)),
                  lambda: rnn.ZoneoutCell(rnn.LSTMCell(4, input_size=4), 0.5, 0.5)):
        cell = build()
        cell.initialize()
        want, _ = cell.unroll(3, x, merge_outputs=True)
        cell.hybridize()
        got, _ = cell.unroll(3, x, merge_outputs=True)
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)


def test_zoneout_and_dropout_in_training():
    """Training: each zoneout unit is the new or the previous value; DropoutCell drops whole entries
    of a merged sequence in one call and scales the rest by 1 / (1 - rate)."""
    mx.random.seed(3)
    base = rnn.RNNCell(5, input_size=3)
    zone = rnn.ZoneoutCell(base, zoneout_outputs=0.5)
    zone.initialize()
    x = mx.nd.random.uniform(-1, 1, shape=(2, 4, 3))
    with autograd.train_mode():
        outs, _ = zone.unroll(4, x)
    prev, state = np.zeros((2, 5)), mx.nd.zeros((2, 5))     # zoned output; the base cell's own state
    params = {k[len(base.prefix):]: v.data() for k, v in base.collect_params().items()}
    for t, o in enumerate(outs):
        new, (state,) = base.hybrid_forward(mx.nd, x[:, t], [state], **params)
        o = o.asnumpy()
        assert np.all(np.isclose(o, new.asnumpy(), atol=1e-6) | np.isclose(o, prev, atol=1e-6))
        prev = o
    drop = rnn.DropoutCell(0.5)
    ones = mx.nd.ones((2, 6, 3))
    with autograd.train_mode():
        out, st = drop.unroll(6, ones, merge_outputs=True)
    assert st == [] and set(np.unique(out.asnumpy())) <= {0.0, 2.0}
    np.testing.assert_array_equal(drop.unroll(6, ones, merge_outputs=True)[0].asnumpy(), ones.asnumpy())


def test_wrapper_rules():
    """The errors MXNet asserts: stepping a BidirectionalCell, zoneout over it, modifying twice,
    using a modified base cell directly, a non-numeric dropout rate."""
    bi = rnn.BidirectionalCell(rnn.RNNCell(3), rnn.RNNCell(3))
    with pytest.raises(NotImplementedError):
        bi(mx.nd.ones((2, 3)), bi.begin_state(2))
    with pytest.raises(AssertionError):
        rnn.ZoneoutCell(bi)
    base = rnn.GRUCell(3)
    res = rnn.ResidualCell(base)
    with pytest.raises(AssertionError, match="already modified"):
        rnn.ZoneoutCell(base)
    with pytest.raises(AssertionError, match="modifier"):
        base.begin_state(2)
    assert [s.shape for s in res.begin_state(2, func=mx.nd.zeros)] == [(2, 3)]
    assert res.prefix == base.prefix + "residualcell" and res.params is base.params   # as MXNet names it
    with pytest.raises(AssertionError):
        rnn.DropoutCell("0.5")


def test_symbol_unroll_matches_ndarray():
    """Unrolling on a Symbol infers shapes and binds to the same numbers as the NDArray unroll."""
    cell = rnn.BidirectionalCell(rnn.GRUCell(4, input_size=3, prefix="l_"),
                                 rnn.GRUCell(4, input_size=3, prefix="r_"))
    cell.initialize()
    x = mx.nd.random.uniform(-1, 1, shape=(2, 5, 3))
    want, _ = cell.unroll(5, x, merge_outputs=True)
    outs, _ = cell.unroll(5, mx.sym.var("data"), merge_outputs=True)
    assert outs.infer_shape(data=(2, 5, 3))[1] == [(2, 5, 8)]
    args = {"data": x, **{k: v.data() for k, v in cell.collect_params().items()}}
    got = outs.bind(mx.cpu(), {k: v for k, v in args.items() if k in outs.list_arguments()}).forward()[0]
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)


def test_hybridized_cell_input_gradient_when_output_is_state():
    """A hybridized cell returns one entry as output and as state: both head gradients reach x."""
    x = mx.nd.random.uniform(-1, 1, shape=(2, 3))
    grads = []
    for hybridize in (False, True):
        with mx.name.NameManager():
            cell = rnn.GRUCell(4, input_size=3)
        cell.initialize(mx.init.Constant(0.1))
        if hybridize:
            cell.hybridize()
        xg = x.copy()
        xg.attach_grad()
        with autograd.record():
            out, (h,) = cell(xg, [mx.nd.ones((2, 4))])
            loss = out.sum() + 2 * h.sum()
        loss.backward()
        grads.append(xg.grad.asnumpy())
    assert np.abs(grads[0]).sum() > 0
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-7)
