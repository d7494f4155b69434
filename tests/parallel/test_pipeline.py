"""The GPipe ``Pipeline``: a step over m micro-batches on two devices equals the one-batch step
(up to float summation order: rtol 1e-5), and its profiler trace shows both devices busy at once."""
import json

import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError
from mxref.parallel import Pipeline
from mxref.parallel.trace import busy_intervals, overlap

RTOL, ATOL = 1e-5, 1e-6      # float32 sums over 8 vs 32 samples: the order differs, not the terms


def stages(hidden=16, classes=4):
    data = mx.sym.Variable("data")
    s0 = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=hidden, name="fc1"), act_type="tanh")
    s0 = mx.sym.Activation(mx.sym.FullyConnected(s0, num_hidden=hidden, name="fc2"), act_type="relu")
    s1 = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=hidden, name="fc3")
    s1 = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.tanh(s1), num_hidden=classes, name="fc4"),
                              name="softmax")
    return [s0, s1]


def make(contexts, m, batch=32, features=10):
    return Pipeline(stages(), contexts, {"data": (batch, features)}, {"softmax_label": (batch,)},
                    num_microbatches=m, optimizer="sgd",
                    optimizer_params={"learning_rate": 0.5, "momentum": 0.9})


def batches(n, batch=32, features=10):
    rng = np.random.RandomState(0)
    return [(rng.randn(batch, features).astype(np.float32), rng.randint(0, 4, batch).astype(np.float32))
            for _ in range(n)]


@pytest.fixture(params=["NaiveEngine", "ThreadedEnginePerDevice"], autouse=True)
def engine_type(request):
    old = mx.engine.get().name
    mx.engine.set_engine(request.param)
    yield request.param
    mx.engine.set_engine(old)


@pytest.mark.timeout(120)
def test_pipeline_equals_the_unsplit_batch():
    ref = make([mx.cpu(0), mx.cpu(0)], m=1)           # the whole batch at once, on one device
    pipe = make([mx.cpu(0), mx.cpu(1)], m=4)
    start = ref.get_params()[0]
    pipe.set_params(*ref.get_params())
    assert pipe.params[1]["fc4_weight"].context == mx.cpu(1)
    assert pipe.grads[0]["fc1_weight"].context == mx.cpu(0)
    for x, y in batches(3):
        out_ref = ref.step(data=x, softmax_label=y).asnumpy()
        grads_ref = {n: g.asnumpy() for s in ref.grads for n, g in s.items()}
        out = pipe.step(data=x, softmax_label=y).asnumpy()
        np.testing.assert_allclose(out, out_ref, rtol=RTOL, atol=ATOL)
        for stage in pipe.grads:
            for name, g in stage.items():
                np.testing.assert_allclose(g.asnumpy(), grads_ref[name], rtol=RTOL, atol=ATOL, err_msg=name)
    params_ref, params = ref.get_params()[0], pipe.get_params()[0]
    for name in params_ref:
        assert params[name].context == mx.cpu(0)
        np.testing.assert_allclose(params[name].asnumpy(), params_ref[name].asnumpy(), rtol=RTOL, atol=ATOL)
    assert not np.allclose(params_ref["fc1_weight"].asnumpy(), start["fc1_weight"].asnumpy())


@pytest.mark.timeout(120)
def test_three_stages_on_three_devices():
    def three():
        first = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=12, name="a"),
                                  act_type="tanh")
        middle = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=12, name="b"),
                                   act_type="relu")
        last = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4, name="c"),
                                    name="softmax")
        return [first, middle, last]

    def make3(ctxs, m):
        return Pipeline(three(), ctxs, {"data": (24, 10)}, {"softmax_label": (24,)}, num_microbatches=m,
                        optimizer_params={"learning_rate": 0.3})

    ref, pipe = make3([mx.cpu(0)] * 3, 1), make3([mx.cpu(0), mx.cpu(1), mx.cpu(2)], 3)
    pipe.set_params(*ref.get_params())
    for x, y in batches(2, batch=24):
        np.testing.assert_allclose(pipe.step(data=x, softmax_label=y).asnumpy(),
                                   ref.step(data=x, softmax_label=y).asnumpy(), rtol=RTOL, atol=ATOL)
    got = pipe.get_params()[0]
    for name, value in ref.get_params()[0].items():
        np.testing.assert_allclose(got[name].asnumpy(), value.asnumpy(), rtol=RTOL, atol=ATOL)
    assert pipe.params[2]["c_weight"].context == mx.cpu(2)


def test_pipeline_argument_errors():
    with pytest.raises(MXNetError, match="2 stages for 1 contexts"):
        Pipeline(stages(), [mx.cpu(0)], {"data": (8, 3)}, {"softmax_label": (8,)})
    with pytest.raises(MXNetError, match="batch size 10 is not divisible by num_microbatches=4"):
        Pipeline(stages(), [mx.cpu(0), mx.cpu(1)], {"data": (10, 3)}, {"softmax_label": (10,)})
    bad = [stages()[0], mx.sym.SoftmaxOutput(mx.sym.Variable("x"), name="softmax")]
    with pytest.raises(MXNetError, match="stage 1 has no argument 'data'"):
        Pipeline(bad, [mx.cpu(0), mx.cpu(1)], {"data": (8, 3)}, {"softmax_label": (8,)})


def profiled_pipeline(path):
    """Two profiled steps of a pipeline with big enough layers; the busy spans of both devices."""
    batch, features = 256, 512
    pipe = Pipeline(stages(hidden=512, classes=10), [mx.cpu(0), mx.cpu(1)], {"data": (batch, features)},
                    {"softmax_label": (batch,)}, num_microbatches=4)
    x = np.random.RandomState(1).randn(batch, features).astype(np.float32)
    y = np.zeros(batch, np.float32)
    pipe.step(data=x, softmax_label=y)                 # warm up: memory allocated, kernels chosen
    mx.nd.waitall()
    mx.profiler.dumps(reset=True)          # start from an empty record
    mx.profiler.set_config(profile_all=True, filename=path)
    mx.profiler.set_state("run")
    try:
        for _ in range(2):
            pipe.step(data=x, softmax_label=y)
        mx.nd.waitall()
    finally:
        mx.profiler.set_state("stop")
    mx.profiler.dump()
    with open(path) as f:
        trace = json.load(f)
    return busy_intervals(trace, "cpu(0)"), busy_intervals(trace, "cpu(1)")


@pytest.mark.timeout(120)
def test_trace_shows_both_devices_busy_at_once(tmp_path, engine_type):
    if engine_type == "NaiveEngine":
        pytest.skip("the naive engine runs one operation at a time by design")
    a, b = profiled_pipeline(str(tmp_path / "pipeline.json"))
    assert a and b
    assert overlap(a, b) > 0, "no moment at which both devices ran an operator"
