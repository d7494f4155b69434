"""Optimizer-state files are data-only: every optimizer round-trips exactly, pickles need an opt-in."""
import copy
import json
import os
import pickle

import numpy as np
import pytest

import mxref as mx
from mxref import gluon
from mxref import optimizer as opt
from mxref.optimizer import states_format


def _train(updater, weights, grads):
    for g in grads:
        for i, w in weights.items():
            updater(i, mx.nd.array(g * (i + 1), dtype=w.dtype), w)


CASES = [("sgd", {}), ("sgd", dict(momentum=0.9, wd=0.01)), ("nag", dict(momentum=0.9)),
         ("signum", dict(momentum=0.9)), ("adam", dict(wd=0.001)), ("lamb", {}), ("adagrad", {}),
         ("rmsprop", {}), ("rmsprop", dict(centered=True)), ("adadelta", {}), ("ftrl", {}),
         ("sgd", dict(momentum=0.9, multi_precision=True)), ("adam", dict(multi_precision=True)),
         ("sgd", dict(momentum=0.9, lr_scheduler=mx.lr_scheduler.FactorScheduler(2, 0.5))),
         ("adam", dict(lr_scheduler=mx.lr_scheduler.MultiFactorScheduler([2, 4], 0.5, base_lr=0.001))),
         ("sgd", dict(lr_scheduler=mx.lr_scheduler.CosineScheduler(10, 0.1, warmup_steps=2)))]


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{sorted(k)}" for n, k in CASES])
def test_every_optimizer_resumes_bit_identically(name, kw):
    """3 steps, states saved with the optimizer, a fresh Updater loads them and runs 3 more: the
    weights equal 6 uninterrupted steps bit for bit, as do the update counts."""
    rng = np.random.default_rng(11)
    grads = [rng.uniform(-1, 1, (2, 3)) for _ in range(6)]
    dtype = "float16" if kw.get("multi_precision") else "float32"
    w0 = rng.uniform(-1, 1, (2, 3))
    full = {i: mx.nd.array(w0, dtype=dtype) for i in range(3)}
    u_full = opt.get_updater(opt.create(name, **copy.deepcopy(kw)))
    _train(u_full, full, grads)
    part = {i: mx.nd.array(w0, dtype=dtype) for i in range(3)}
    u1 = opt.get_updater(opt.create(name, **copy.deepcopy(kw)))
    _train(u1, part, grads[:3])
    blob = u1.get_states(dump_optimizer=True)
    assert states_format.is_states_file(blob) and b"\x80\x04" not in blob[:2]
    u2 = opt.get_updater(opt.create("sgd", learning_rate=123.0))
    u2.set_states(blob)
    assert type(u2.optimizer) is type(u1.optimizer)
    _train(u2, part, grads[3:])
    for i in range(3):
        assert part[i].asnumpy().tobytes() == full[i].asnumpy().tobytes()
    assert u2.optimizer.num_update == u_full.optimizer.num_update == 6
    assert u2.optimizer._index_update_count is u2.optimizer._all_index_update_counts[0]
    assert u2.optimizer._index_update_count == u_full.optimizer._index_update_count


def test_the_file_is_an_ndarray_dict_with_a_json_entry(tmp_path):
    """mx.nd.load reads a states file: the JSON header plus one entry per state array."""
    u = opt.get_updater(opt.Adam())
    u(0, mx.nd.ones((2,)), mx.nd.zeros((2,)))
    path = tmp_path / "x.states"
    path.write_bytes(u.get_states())
    arrays = mx.nd.load(path)
    assert sorted(arrays) == ["0", "1", states_format.HEADER_KEY]
    assert arrays[states_format.HEADER_KEY].dtype == np.uint8


class _Payload:
    """Unpickling this creates a marker file: the proof that a pickle ran code."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _crafted(tmp_path):
    marker = str(tmp_path / "PWNED")
    path = tmp_path / "evil.states"
    path.write_bytes(pickle.dumps({0: _Payload(marker)}))
    return str(path), marker


def _trainer():
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize()
    tr = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9},
                       kvstore=None)
    return tr


def _module():
    data = mx.sym.Variable("data")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, num_hidden=2, name="fc"), name="softmax")
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.bind(data_shapes=[("data", (4, 3))], label_shapes=[("softmax_label", (4,))])
    mod.init_params()
    mod.init_optimizer(optimizer="sgd", optimizer_params={"momentum": 0.9})
    return mod


@pytest.mark.parametrize("entry", ["updater", "trainer", "module", "kvstore"])
def test_a_crafted_pickle_is_not_executed_without_the_opt_in(tmp_path, monkeypatch, entry):
    """Every way to load optimizer states refuses a pickle (naming the file and the opt-in)
    and the payload's marker file is never created."""
    monkeypatch.delenv("MXREF_ALLOW_PICKLE", raising=False)
    path, marker = _crafted(tmp_path)
    with pytest.raises(mx.MXNetError, match=r"evil\.states.*allow_pickle=True.*MXREF_ALLOW_PICKLE=1"):
        if entry == "updater":
            opt.get_updater(opt.SGD()).set_states(open(path, "rb").read(), source=path)
        elif entry == "trainer":
            _trainer().load_states(path)
        elif entry == "module":
            _module().load_optimizer_states(path)
        else:
            kv = mx.kv.create("local")
            kv.set_optimizer(opt.SGD())
            kv.load_optimizer_states(path)
    assert not os.path.exists(marker)
    monkeypatch.setenv("MXREF_ALLOW_PICKLE", "0")
    with pytest.raises(mx.MXNetError, match="allow_pickle"):
        opt.get_updater(opt.SGD()).set_states(open(path, "rb").read())
    assert not os.path.exists(marker)


def test_the_payload_does_run_when_pickles_are_allowed(tmp_path):
    """The crafted file is a real exploit: with the opt-in, unpickling it creates the marker."""
    path, marker = _crafted(tmp_path)
    opt.get_updater(opt.SGD()).set_states(open(path, "rb").read(), allow_pickle=True)
    assert os.path.exists(marker)


def test_old_pickled_states_load_only_with_the_opt_in(tmp_path, monkeypatch):
    """mxref's previous format (a pickle of (states, optimizer)) loads with allow_pickle=True or
    MXREF_ALLOW_PICKLE=1, and training continues from it."""
    monkeypatch.delenv("MXREF_ALLOW_PICKLE", raising=False)
    u = opt.get_updater(opt.SGD(momentum=0.5, learning_rate=0.1))
    w = mx.nd.array([1.0, 2.0])
    u(0, mx.nd.array([1.0, 1.0]), w)
    old = pickle.dumps((u.states, u.optimizer))
    u2 = opt.get_updater(opt.SGD(learning_rate=9.0))
    with pytest.raises(mx.MXNetError, match="pickled"):
        u2.set_states(old)
    u2.set_states(old, allow_pickle=True)
    assert u2.optimizer.lr == 0.1
    np.testing.assert_allclose(u2.states[0].asnumpy(), [-0.1, -0.1], rtol=1e-6)
    monkeypatch.setenv("MXREF_ALLOW_PICKLE", "1")
    u3 = opt.get_updater(opt.SGD(learning_rate=9.0))
    u3.set_states(old)
    assert u3.optimizer.lr == 0.1
    with pytest.raises(mx.MXNetError, match="pickled"):
        opt.get_updater(opt.SGD()).set_states(old, allow_pickle=False)   # the argument wins


def test_trainer_save_states_writes_the_data_only_format(tmp_path):
    tr = _trainer()
    with mx.autograd.record():
        loss = tr._params[0].data().sum()
    loss.backward()
    tr.step(1)
    fname = str(tmp_path / "t.states")
    tr.save_states(fname)
    assert states_format.is_states_file(open(fname, "rb").read())
    tr2 = _trainer()
    tr2.load_states(fname)
    assert tr2._optimizer.num_update == 1


def _doc_blob(doc, arrays=None):
    payload = {states_format.HEADER_KEY: mx.nd.array(np.frombuffer(json.dumps(doc).encode(), np.uint8),
                                                     dtype=np.uint8)}
    payload.update(arrays or {})
    return mx.nd.save_tobuffer(payload)


GOOD = {"format": "mxref.optimizer_states", "version": 1, "optimizer": None,
        "states": {"t": "dict", "id": 0, "items": []}}


@pytest.mark.parametrize("doc, pattern", [
    (dict(GOOD, format="other"), "does not name"),
    (dict(GOOD, version=2), "format version 2"),
    (dict(GOOD, states=[1]), "unexpected value"),
    (dict(GOOD, states={"t": "dict", "id": 0, "items": [[0, {"t": "nd", "key": "7"}]]}), "array '7'"),
    (dict(GOOD, states={"t": "dict", "id": 0, "items": [[0, {"t": "ref", "id": 5}]]}), "dict 5"),
    (dict(GOOD, states={"t": "dict", "id": 0, "items": [[0, {"t": "obj", "class": "os.system",
                                                            "state": {}}]]}), "not an imported LRScheduler"),
    (dict(GOOD, states={"t": "dict", "id": 0, "items": [[0, {"t": "eval", "v": "1"}]]}), "unknown value tag"),
    (dict(GOOD, optimizer={"name": "posix.system", "state": {}}), "not registered"),
    (dict(GOOD, states={"t": "tuple", "v": []}), "'states' must be a dict"),
])
def test_malformed_data_only_files_raise_mxneterror(doc, pattern):
    with pytest.raises(mx.MXNetError, match=pattern):
        opt.get_updater(opt.SGD()).set_states(_doc_blob(doc))


def test_an_ndarray_file_that_is_not_states_is_refused():
    with pytest.raises(mx.MXNetError, match="without the '__mxref_optimizer_states__' entry"):
        opt.get_updater(opt.SGD()).set_states(mx.nd.save_tobuffer({"a": mx.nd.ones(1)}))


FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "optimizer")


@pytest.mark.parametrize("fname, make", [
    ("mxnet191_sgd.states", lambda: opt.SGD(momentum=0.9, learning_rate=0.1, wd=0.01)),
    ("mxnet191_adam_opt.states", lambda: opt.SGD(learning_rate=123.0)),   # MXNet's Adam replaces it
])
def test_mxnet_states_files_load_with_the_opt_in_and_training_continues(fname, make, monkeypatch):
    """MXNet 1.9.1's pickled .states (states alone, and states + Adam + scheduler) are refused by
    default; with allow_pickle=True they load without MXNet installed, and one more step in mxref
    gives MXNet's third step."""
    monkeypatch.delenv("MXREF_ALLOW_PICKLE", raising=False)
    expected = json.load(open(os.path.join(FIXTURES, "mxnet191_states.json")))[fname]
    blob = open(os.path.join(FIXTURES, fname), "rb").read()
    with pytest.raises(mx.MXNetError, match=rf"{fname}.*allow_pickle=True"):
        opt.get_updater(make()).set_states(blob, source=fname)
    updater = opt.get_updater(make())
    updater.set_states(blob, allow_pickle=True, source=fname)
    assert all(isinstance(s, (mx.nd.NDArray, tuple)) for s in updater.states.values())
    weights = [mx.nd.array(w) for w in expected["after2"]]
    for i, w in enumerate(weights):
        updater(i, mx.nd.ones(w.shape) * (i + 1) * 3 * 0.5, w)
    for w, want in zip(weights, expected["after3"]):
        np.testing.assert_allclose(w.asnumpy(), np.array(want, np.float32), rtol=1e-6, atol=1e-7)
    if "adam" in fname:
        assert type(updater.optimizer).__name__ == "Adam" and updater.optimizer.num_update == 3


def test_an_mxnet_pickle_naming_an_unmapped_class_is_an_mxneterror():
    blob = b"\x80\x04\x8c\x0dmxnet.kvstore\x8c\x07KVStore\x93."   # PROTO 4, STACK_GLOBAL, STOP
    with pytest.raises(mx.MXNetError, match="mxnet.kvstore.KVStore has no mxref counterpart"):
        opt.get_updater(opt.SGD()).set_states(blob, allow_pickle=True)


def test_a_dumped_optimizer_attribute_of_the_wrong_kind_is_refused():
    """A data-only file cannot make the learning rate a string (the next update would fail with a
    TypeError far from the file); a missing attribute is filled from a default instance."""
    u = opt.get_updater(opt.SGD(momentum=0.9))
    u(0, mx.nd.ones((2,)), mx.nd.zeros((2,)))
    arrays = mx.nd.load_frombuffer(u.get_states(dump_optimizer=True))
    doc = json.loads(arrays[states_format.HEADER_KEY].asnumpy().tobytes())
    items = doc["optimizer"]["state"]["items"]

    def resave(edit):
        d = copy.deepcopy(doc)
        edit(d["optimizer"]["state"]["items"])
        blob = _doc_blob(d, {k: v for k, v in arrays.items() if k != states_format.HEADER_KEY})
        fresh = opt.get_updater(opt.SGD())
        fresh.set_states(blob)
        return fresh
    lr_at = [k for k, (key, _) in enumerate(items) if key == "lr"][0]
    with pytest.raises(mx.MXNetError, match="optimizer attribute 'lr' is a str"):
        resave(lambda it: it[lr_at].__setitem__(1, "0.1"))
    with pytest.raises(mx.MXNetError, match="optimizer attribute 'lr_mult' is a list"):
        resave(lambda it: it[[k for k, (key, _) in enumerate(it) if key == "lr_mult"][0]]
               .__setitem__(1, {"t": "list", "v": []}))
    fresh = resave(lambda it: it.pop([k for k, (key, _) in enumerate(it) if key == "momentum"][0]))
    assert fresh.optimizer.momentum == 0.0
