"""DataParallelExecutorGroup: batch slicing by workload, several CPU contexts, kvstore update paths."""
import numpy as np
import pytest

import mxref as mx
from mxref.io import DataBatch
from mxref.module import Module
from mxref.module.executor_group import split_input_slice


class SummingStore:
    """A minimal local store with MXNet's semantics: a pushed list is summed; with an optimizer
    the updater runs once on the sum, without one the sum replaces the stored value."""

    type = "local"

    def __init__(self, optimizer_capable=True):
        self.capable = optimizer_capable
        self.store, self.updater, self.pushes = {}, None, []

    def is_capable(self, what):
        return self.capable and what == "optimizer"

    def set_optimizer(self, optimizer):
        self.updater = mx.optimizer.get_updater(optimizer)

    def init(self, key, value):
        self.store[key] = value.copy()

    def push(self, key, values, priority=0):
        self.pushes.append((key, priority))
        total = values[0].copy()
        for v in values[1:]:
            total += v.as_in_context(total.context)
        if self.updater is not None:
            self.updater(key, total, self.store[key])
        else:
            self.store[key] = total

    def pull(self, key, out, priority=0):
        for o in out:
            self.store[key].copyto(o)


def mlp():
    data = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=8, name="fc1"), act_type="tanh")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name="fc2"), name="softmax")


def batches(n=3, size=12, seed=0):
    rng = np.random.RandomState(seed)
    return [DataBatch([mx.nd.array(rng.normal(size=(size, 5)))], [mx.nd.array(rng.randint(0, 3, size))])
            for _ in range(n)]


def train(contexts, kvstore, steps=3, workload=None):
    mod = Module(mlp(), context=contexts, work_load_list=workload)
    mod.bind(data_shapes=[("data", (12, 5))], label_shapes=[("softmax_label", (12,))])
    rng = np.random.RandomState(1)
    arg = {n: mx.nd.array(rng.uniform(-0.5, 0.5, s)) for n, s in
           zip(mlp().list_arguments(), mlp().infer_shape(data=(12, 5))[0]) if n.startswith("fc")}
    mod.init_params(arg_params=arg)
    mod.init_optimizer(kvstore=kvstore, optimizer_params={"learning_rate": 0.3, "momentum": 0.9})
    metric = mx.metric.Accuracy()
    for b in batches(steps):
        mod.forward_backward(b)
        mod.update()
        mod.update_metric(metric, b.label)
    return mod, metric


def test_split_input_slice_follows_workload():
    """Slices are contiguous, sized by workload, the last takes the rounding; empty slices raise."""
    assert split_input_slice(10, [1, 1]) == [slice(0, 5), slice(5, 10)]
    assert split_input_slice(12, [1, 3]) == [slice(0, 3), slice(3, 12)]
    assert split_input_slice(7, [1, 1, 1]) == [slice(0, 2), slice(2, 4), slice(4, 7)]
    with pytest.raises(mx.MXNetError, match="empty"):
        split_input_slice(2, [1, 1, 1])


@pytest.mark.parametrize("capable", [True, False], ids=["update_on_kvstore", "update_on_device"])
def test_two_cpu_contexts_with_a_store_equal_one_context(capable):
    """Two CPU executors, gradients summed by the store, give one executor's weights and metric."""
    single, m1 = train([mx.cpu(0)], None)
    store = SummingStore(optimizer_capable=capable)
    double, m2 = train([mx.cpu(0), mx.cpu(1)], store)
    assert double._update_on_kvstore is capable
    assert [e._ctx for e in double._exec_group.execs] == [mx.cpu(0), mx.cpu(1)]
    for name, want in single.get_params()[0].items():
        np.testing.assert_allclose(double.get_params()[0][name].asnumpy(), want.asnumpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=name)
    assert m1.get() == m2.get()
    # kvstore priority is -index so the first layers are exchanged first.
    assert store.pushes[:4] == [("fc1_weight", 0), ("fc1_bias", -1), ("fc2_weight", -2), ("fc2_bias", -3)]


@pytest.mark.parametrize("kind", ["local", "device"])
def test_two_cpu_contexts_with_mxref_kvstore(kind):
    """The real kvstore types, by name, give the single-context result too."""
    kvstore = pytest.importorskip("mxref.kvstore")
    single, _ = train([mx.cpu(0)], None)
    double, _ = train([mx.cpu(0), mx.cpu(1)], kind)
    assert isinstance(double._kvstore, kvstore.KVStore) and double._kvstore.type == kind
    for name, want in single.get_params()[0].items():
        np.testing.assert_allclose(double.get_params()[0][name].asnumpy(), want.asnumpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=name)


def test_uneven_workload_slices_batch_and_merges_outputs():
    """work_load_list [1, 3] binds 3 and 9 examples; outputs merge back in batch order."""
    mod, _ = train([mx.cpu(0), mx.cpu(1)], SummingStore(), steps=1, workload=[1, 3])
    execs = mod._exec_group.execs
    assert [e.arg_dict["data"].shape for e in execs] == [(3, 5), (9, 5)]
    b = batches(1, seed=5)[0]
    mod.forward(b, is_train=False)
    merged = mod.get_outputs()[0].asnumpy()
    parts = [o.asnumpy() for o in mod.get_outputs(merge_multi_context=False)[0]]
    np.testing.assert_array_equal(merged, np.concatenate(parts))
    single = Module(mlp())
    single.bind(data_shapes=[("data", (12, 5))], for_training=False)
    single.set_params(*mod.get_params())
    single.forward(b, is_train=False)
    np.testing.assert_allclose(merged, single.get_outputs()[0].asnumpy(), rtol=1e-5, atol=1e-6)


def test_no_kvstore_each_device_updates_alone():
    """kvstore=None with two devices: each copy steps on its own slice; get_params averages them."""
    mod, _ = train([mx.cpu(0), mx.cpu(1)], None, steps=1)
    assert mod._kvstore is None
    w0, w1 = (w.asnumpy() for w in mod._exec_group.param_arrays[0])
    assert not np.allclose(w0, w1)
    np.testing.assert_allclose(mod.get_params()[0]["fc1_weight"].asnumpy(), (w0 + w1) / 2, rtol=1e-6)
