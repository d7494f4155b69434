"""gluon.contrib.estimator.Estimator: the fit/evaluate loops, default metrics and handlers, the
argument checks, fine-tuning initialization, custom batch processors and the event order."""
import warnings

import numpy as np
import pytest

import mxref as mx
from mxref import gluon
from mxref.gluon import nn
from mxref.gluon.contrib.estimator import (
    BatchBegin,
    BatchEnd,
    BatchProcessor,
    EpochBegin,
    EpochEnd,
    Estimator,
    GradientUpdateHandler,
    LoggingHandler,
    MetricHandler,
    StoppingHandler,
    TrainBegin,
    TrainEnd,
    ValidationHandler,
)
from mxref.gluon.contrib.estimator.event_handler import EarlyStoppingHandler


def separable(n=64, seed=0, batch_size=16):
    """Two classes split by the sign of x0 - x1, as a DataLoader (4 batches of 16)."""
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, size=(n, 4)).astype(np.float32)
    y = (x[:, 0] > x[:, 1]).astype(np.float32)
    return gluon.data.DataLoader(gluon.data.ArrayDataset(mx.nd.array(x), mx.nd.array(y)),
                                 batch_size=batch_size)


def classifier(lr=0.5, seed=0):
    mx.random.seed(seed)
    net = nn.Dense(2, in_units=4)
    net.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})
    return net, trainer


def quiet(est):
    """Silence an estimator's log (it prints to stdout)."""
    est.logger.handlers.clear()
    return est


class Recorder(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Writes down every event it sees."""

    def __init__(self):
        self.events = []

    def train_begin(self, estimator, *args, **kwargs):
        self.events.append("train_begin")

    def train_end(self, estimator, *args, **kwargs):
        self.events.append("train_end")

    def epoch_begin(self, estimator, *args, **kwargs):
        self.events.append("epoch_begin")

    def epoch_end(self, estimator, *args, **kwargs):
        self.events.append("epoch_end")
        return False

    def batch_begin(self, estimator, *args, **kwargs):
        self.events.append("batch_begin")

    def batch_end(self, estimator, *args, **kwargs):
        assert {"batch", "pred", "label", "loss"} <= set(kwargs)
        self.events.append("batch_end")
        return False


def test_fit_learns_a_separable_problem():
    """Ten epochs of SGD through the default handlers reach > 90% training accuracy, and the
    default metrics are accuracy plus the mean loss, named 'training ...'."""
    net, trainer = classifier()
    est = quiet(Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer))
    names = [m.name for m in est.train_metrics]
    assert names == ["training accuracy", "training softmaxcrossentropyloss"]
    assert [m.name for m in est.val_metrics] == [n.replace("training", "validation") for n in names]
    est.fit(separable(), epochs=1)
    first_loss = est.train_metrics[1].get()[1]
    est.fit(separable(), epochs=10)
    assert est.train_metrics[0].get()[1] > 0.9
    assert est.train_metrics[1].get()[1] < first_loss


def test_evaluate_matches_a_hand_computed_loss():
    """evaluate() resets and fills val_metrics: the mean loss equals the loss over all examples."""
    net, trainer = classifier()
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    est = quiet(Estimator(net, loss=loss, trainer=trainer))
    data = separable()
    est.evaluate(data)
    x = mx.nd.concat(*[b[0] for b in data], dim=0)
    y = mx.nd.concat(*[b[1] for b in data], dim=0)
    expect_loss = loss(net(x), y).asnumpy().mean()
    expect_acc = (net(x).asnumpy().argmax(axis=1) == y.asnumpy()).mean()
    assert est.val_metrics[1].get()[1] == pytest.approx(expect_loss, rel=1e-5)
    assert est.val_metrics[0].get()[1] == pytest.approx(expect_acc)
    est.evaluate(data)                                   # metrics are reset, not accumulated
    assert est.val_metrics[0].num_inst == 64


def test_fit_and_evaluate_argument_checks():
    net, trainer = classifier()
    est = quiet(Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer))
    data = separable()
    with pytest.raises(ValueError, match="exactly one type"):
        est.fit(data, epochs=1, batches=2)
    with pytest.raises(ValueError, match="exactly one type"):
        est.fit(data)
    with pytest.raises(ValueError, match="DataLoader"):
        est.fit(mx.io.NDArrayIter(np.zeros((4, 4)), np.zeros(4), batch_size=2), epochs=1)
    with pytest.raises(ValueError, match="DataLoader"):
        est.evaluate([mx.nd.ones((2, 4))])
    with pytest.raises(ValueError, match="EventHandler"):
        est.fit(data, epochs=1, event_handlers=["not a handler"])


def test_constructor_checks():
    """Loss, metrics, trainer, context and batch processor are checked as MXNet does."""
    net, trainer = classifier()
    loss = gluon.loss.L2Loss()
    with pytest.raises(ValueError, match="loss must be a Loss"):
        Estimator(net, loss="mse")
    with pytest.raises(ValueError, match="metrics must be"):
        Estimator(net, loss=loss, train_metrics="acc", trainer=trainer)
    with pytest.raises(ValueError, match="Trainer"):
        Estimator(net, loss=loss, trainer="sgd")
    with pytest.raises(ValueError, match="context must be"):
        Estimator(net, loss=loss, trainer=trainer, context="cpu")
    if mx.context.num_gpus() == 0:
        with pytest.raises(AssertionError, match="not available"):
            Estimator(net, loss=loss, trainer=trainer, context=[mx.gpu(0)])
    with pytest.raises(ValueError, match="fit_batch"):
        Estimator(net, loss=loss, trainer=trainer, batch_processor=object())
    est = Estimator(net, loss=loss, trainer=trainer, context=mx.cpu())
    assert est.context == [mx.cpu()] and isinstance(est.batch_processor, BatchProcessor)
    assert [m.name for m in est.train_metrics] == ["training l2loss"]   # no accuracy for L2
    composite = mx.metric.CompositeEvalMetric([mx.metric.MAE(), mx.metric.RMSE()])
    est = Estimator(net, loss=loss, trainer=trainer, train_metrics=composite)
    assert [m.name for m in est.train_metrics] == ["training mae", "training rmse"]


def test_default_trainer_and_initializer_warnings():
    net = nn.Dense(2, in_units=4)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        est = Estimator(net, loss=gluon.loss.L2Loss())
    assert any("No trainer specified" in str(x.message) for x in w)
    assert est.trainer.learning_rate == 0.001 and type(est.trainer.optimizer).__name__ == "SGD"
    assert net.weight.list_ctx() == [mx.cpu()]                    # the estimator initialized it
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        Estimator(net, loss=gluon.loss.L2Loss(), initializer=mx.init.One(), trainer=est.trainer)
    assert "Network already fully initialized" in str(w[-1].message)
    assert net.weight.data().asnumpy().std() > 0                  # not re-initialized to ones


def test_fine_tuning_initializes_only_the_new_head():
    """A net whose body is initialized and whose new output layer is not: the estimator
    initializes the head with its initializer and leaves the body's weights as they were."""
    mx.random.seed(1)
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(8, in_units=4, activation="relu"))
    net.initialize(mx.init.Xavier())
    body = net[0].weight.data().asnumpy().copy()
    with net.name_scope():
        net.add(nn.Dense(2, in_units=8))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # the default trainer's warning
        Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(), initializer=mx.init.One())
    np.testing.assert_array_equal(net[0].weight.data().asnumpy(), body)
    np.testing.assert_array_equal(net[1].weight.data().asnumpy(), np.ones((2, 8)))


def test_event_order_and_batches_limit():
    """Events come in MXNet's order; batches=6 over 4-batch epochs stops inside the 2nd epoch,
    and that epoch's end still runs."""
    net, trainer = classifier()
    est = quiet(Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer))
    rec = Recorder()
    est.fit(separable(), batches=6, event_handlers=[rec])
    batch = ["batch_begin", "batch_end"]
    assert rec.events == (["train_begin", "epoch_begin"] + batch * 4 + ["epoch_end", "epoch_begin"]
                          + batch * 2 + ["epoch_end", "train_end"])
    assert est.max_batch == 6 and est.max_epoch is None


def test_default_handlers_are_added_and_sorted():
    """fit adds what is missing, sorted by priority; a handler watching an unknown metric is refused."""
    net, trainer = classifier()
    est = quiet(Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer))
    est.max_epoch, est.max_batch = 1, None
    handlers = est._prepare_default_handlers(separable(), None)
    kinds = [type(h) for h in handlers]
    assert kinds == [GradientUpdateHandler, MetricHandler, ValidationHandler, StoppingHandler,
                     LoggingHandler]
    mine = MetricHandler(metrics=est.train_metrics)
    handlers = est._prepare_default_handlers(None, [mine])
    assert mine in handlers and sum(isinstance(h, MetricHandler) for h in handlers) == 1
    with pytest.raises(ValueError, match="outside of the known"):
        est.fit(separable(), epochs=1, event_handlers=[LoggingHandler(metrics=[mx.metric.Accuracy()])])
    # the monitor of an early-stopping handler is checked too (its monitor_op is not a metric)
    stranger = mx.metric.Accuracy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        early = EarlyStoppingHandler(monitor=stranger)
    with pytest.raises(ValueError, match="EarlyStoppingHandler"):
        est.fit(separable(), epochs=1, event_handlers=[early])


def test_gradient_update_steps_with_the_batch_size():
    """One batch of fit equals one hand-written SGD step with rescale 1/batch_size."""
    net, trainer = classifier(lr=0.1)
    twin = nn.Dense(2, in_units=4)
    twin.initialize()
    for p, q in zip(net.collect_params().values(), twin.collect_params().values()):
        q.set_data(p.data())
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    est = quiet(Estimator(net, loss=loss, trainer=trainer))
    data = separable()
    x, y = next(iter(data))
    with mx.autograd.record():
        out = loss(twin(x), y)
    out.backward()
    gluon.Trainer(twin.collect_params(), "sgd", {"learning_rate": 0.1}).step(16)
    est.fit(data, batches=1)
    np.testing.assert_allclose(net.weight.data().asnumpy(), twin.weight.data().asnumpy(), rtol=1e-5)


def test_custom_batch_processor_and_val_net():
    """fit and evaluate go through the batch processor; validation uses val_net and val_loss."""
    calls = {"fit": 0, "eval": 0}

    class Counting(BatchProcessor):
        def fit_batch(self, estimator, train_batch, batch_axis=0):
            calls["fit"] += 1
            return super().fit_batch(estimator, train_batch, batch_axis)

        def evaluate_batch(self, estimator, val_batch, batch_axis=0):
            calls["eval"] += 1
            return super().evaluate_batch(estimator, val_batch, batch_axis)

    net, trainer = classifier()
    val_net = nn.Dense(2, in_units=4, params=net.collect_params())
    est = quiet(Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer,
                          val_net=val_net, val_loss=gluon.loss.SoftmaxCrossEntropyLoss(weight=0.0),
                          batch_processor=Counting()))
    assert est.val_net is val_net and est.val_loss is not est.loss
    est.fit(separable(), val_data=separable(n=32), epochs=2)
    assert calls == {"fit": 8, "eval": 4}
    assert est.val_metrics[0].num_inst == 32
    assert est.val_metrics[1].get()[1] == 0.0                     # the weight-0 val_loss was used


def test_epoch_end_returning_true_stops_training():
    class StopAfter(EpochEnd):
        def __init__(self):
            self.seen = 0

        def epoch_end(self, estimator, *args, **kwargs):
            self.seen += 1
            return self.seen == 2

    net, trainer = classifier()
    est = quiet(Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer))
    stop = StopAfter()
    est.fit(separable(), epochs=10, event_handlers=[stop])
    assert stop.seen == 2


def test_two_contexts_step_as_one():
    """context=[cpu(0), cpu(1)]: each batch is split across the two, the losses of both halves set
    the batch size, and the step equals the one-context step on the whole batch."""
    weights = []
    for ctx in ([mx.cpu(0)], [mx.cpu(0), mx.cpu(1)]):
        mx.random.seed(3)
        net = nn.Dense(2, in_units=4)
        net.initialize(mx.init.Xavier(), ctx=ctx)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
        est = quiet(Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer, context=ctx))
        est.fit(separable(), batches=3)
        assert est.train_metrics[0].num_inst == 48
        weights.append([net.weight.data(c).asnumpy() for c in ctx])
    for w in weights[1]:
        np.testing.assert_allclose(w, weights[0][0], rtol=1e-5, atol=1e-6)
