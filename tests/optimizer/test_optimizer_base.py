"""Optimizer base class: registry, learning rate and weight decay per parameter, update counts, pickling."""
import pickle
import warnings

import pytest

import mxref as mx
from mxref import lr_scheduler
from mxref import optimizer as opt


def test_create_by_name_and_register():
    """create() is case-insensitive over the registry; an unknown name raises ValueError;
    register() adds a subclass under its lower-cased name."""
    assert isinstance(opt.create("SGD", learning_rate=0.3), opt.SGD)
    assert opt.create("adam").lr == 0.001
    for name in ["sgd", "nag", "signum", "adam", "lamb", "adagrad", "rmsprop", "adadelta", "ftrl"]:
        assert name in opt.Optimizer.opt_registry
    with pytest.raises(ValueError, match="Cannot find optimizer"):
        opt.create("no_such_optimizer")

    @opt.register
    class HalfStep(opt.Optimizer):
        def update(self, index, weight, grad, state):
            weight[:] = weight - 0.5 * grad

    try:
        w = mx.nd.array([1.0])
        opt.get_updater(opt.create("halfstep"))(0, mx.nd.array([1.0]), w)
        assert w.asnumpy()[0] == 0.5
    finally:
        del opt.Optimizer.opt_registry["halfstep"]


def test_default_learning_rate_and_scheduler_override():
    """lr defaults to 0.01; learning_rate overrides a scheduler's base_lr (with a warning);
    set_learning_rate is refused when a scheduler owns the rate."""
    assert opt.Optimizer().learning_rate == 0.01
    sched = lr_scheduler.FactorScheduler(step=10, base_lr=0.5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        o = opt.SGD(learning_rate=0.2, lr_scheduler=sched)
    assert sched.base_lr == 0.2 and caught
    with pytest.raises(UserWarning):
        o.set_learning_rate(0.1)
    plain = opt.SGD()
    plain.set_learning_rate(0.3)
    assert plain.learning_rate == 0.3


def test_wd_mult_defaults_by_name():
    """With param_idx2name, only *_weight and *_gamma keep weight decay (item 10)."""
    names = {0: "fc_weight", 1: "fc_bias", 2: "bn_gamma", 3: "bn_beta", 4: "bn_moving_mean"}
    o = opt.SGD(wd=0.1, param_idx2name=names)
    assert [o._get_wd(i) for i in range(5)] == [0.1, 0.0, 0.1, 0.0, 0.0]
    assert o._get_wd(99) == 0.1          # unknown index: plain wd
    o.set_wd_mult({"fc_bias": 0.5, 0: 2.0})
    assert o._get_wd(1) == pytest.approx(0.05) and o._get_wd(0) == pytest.approx(0.2)


def test_lr_mult_by_name_index_and_gluon_param():
    """lr_mult keyed by index wins over name; Gluon-style param_dict entries win over both."""
    class FakeParam:
        lr_mult, wd_mult = 4.0, 0.25

    o = opt.SGD(learning_rate=0.1, wd=1.0, param_idx2name={0: "a_weight", 1: "b_weight"},
                param_dict={2: FakeParam()})
    o.set_lr_mult({"a_weight": 2.0, 1: 3.0, "b_weight": 10.0})
    assert o._get_lrs([0, 1, 2, 3]) == pytest.approx([0.2, 0.3, 0.4, 0.1])
    assert o._get_wd(2) == 0.25


def test_symbol_attributes_set_multipliers():
    """Variables made with lr_mult/wd_mult carry __lr_mult__/__wd_mult__, which become the
    multipliers (MXNet 1.9.1 gives lr 0.05, wd 0.2 for the weight and wd 0 for the bias here)."""
    from mxref import symbol as sym
    weight = sym.Variable("fc_weight", lr_mult=0.5, wd_mult=2.0)
    net = sym.FullyConnected(data=sym.Variable("data"), weight=weight, num_hidden=3, name="fc")
    o = opt.SGD(sym=net, param_idx2name={0: "fc_weight", 1: "fc_bias"}, learning_rate=0.1, wd=0.1)
    assert o.lr_mult == {"fc_weight": 0.5} and o.wd_mult == {"fc_bias": 0.0, "fc_weight": 2.0}
    assert o._get_lr(0) == pytest.approx(0.05) and o._get_wd(0) == pytest.approx(0.2)
    assert o._get_wd(1) == 0.0


def test_num_update_counts_per_index_from_one():
    """Each index counts its own updates (first update is 1); num_update is the maximum;
    begin_num_update offsets the counts; each device keeps its own table."""
    o = opt.SGD(begin_num_update=10)
    o._update_count(0)
    o._update_count(0)
    o._update_count([1, 2])
    assert o._index_update_count == {0: 12, 1: 11, 2: 11} and o.num_update == 12
    o._set_current_context(1)
    o._update_count(0)
    assert o._index_update_count == {0: 11}
    assert o._all_index_update_counts[0][0] == 12 and o.num_update == 12


def test_adam_bias_correction_uses_per_index_count():
    """Adam's t is the index's own count: a parameter first updated late still gets t = 1."""
    o = opt.Adam(learning_rate=0.1)
    u = opt.get_updater(o)
    w0, w1 = mx.nd.array([1.0]), mx.nd.array([1.0])
    for _ in range(5):
        u(0, mx.nd.array([0.5]), w0)
    u(1, mx.nd.array([0.5]), w1)
    # t = 1: lr_t = lr*sqrt(1-b2)/(1-b1), m = (1-b1)g, v = (1-b2)g^2 -> step = lr*g/|g| = lr
    assert w1.asnumpy()[0] == pytest.approx(1.0 - 0.1, rel=1e-5)


def test_pickle_drops_param_dict_and_keeps_settings():
    """Optimizers pickle (kvstore sends them to servers) without Gluon's param_dict."""
    o = opt.Adam(learning_rate=0.02, wd=0.1, param_idx2name={0: "x_weight"}, param_dict={0: object()})
    o._update_count(0)
    back = pickle.loads(pickle.dumps(o))
    assert isinstance(back, opt.Adam) and back.param_dict == {}
    assert back.lr == 0.02 and back.num_update == 1 and back.idx2name == {0: "x_weight"}
    assert o.param_dict   # the original keeps its own


def test_clip_gradient_zero_or_none_is_off_for_sgd():
    """SGD passes clip_gradient only when truthy (None and 0 both mean no clipping)."""
    for clip in (None, 0):
        w = mx.nd.array([0.0])
        opt.get_updater(opt.SGD(learning_rate=1.0, clip_gradient=clip))(0, mx.nd.array([5.0]), w)
        assert w.asnumpy()[0] == -5.0
