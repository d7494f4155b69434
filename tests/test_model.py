"""mx.model: checkpoint files in MXNet's format (both directions with MXNet 1.9.1), kvstore selection."""
import os
import subprocess
import textwrap

import numpy as np
import pytest

import mxref as mx
from mxref import model

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "module")
MXNET_PYTHON = "/work/venvs/mxnet191/bin/python"


def bn_net():
    data = mx.sym.Variable("data")
    h = mx.sym.BatchNorm(mx.sym.FullyConnected(data, num_hidden=4, name="fc1"), name="bn1")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=2, name="fc2"), name="softmax")


def params(seed=0):
    rng = np.random.RandomState(seed)
    net = bn_net()
    arg_shapes, _, aux_shapes = net.infer_shape(data=(3, 5))
    arg = {n: mx.nd.array(rng.normal(size=s)) for n, s in zip(net.list_arguments(), arg_shapes)
           if n not in ("data", "softmax_label")}
    aux = {n: mx.nd.array(rng.uniform(0.5, 1, s)) for n, s in zip(net.list_auxiliary_states(), aux_shapes)}
    return net, arg, aux


def test_save_and_load_checkpoint_roundtrip(tmp_path):
    """save_checkpoint writes prefix-symbol.json and prefix-%04d.params with arg:/aux: keys."""
    net, arg, aux = params()
    prefix = str(tmp_path / "net")
    model.save_checkpoint(prefix, 7, net, arg, aux)
    assert sorted(os.listdir(tmp_path)) == ["net-0007.params", "net-symbol.json"]
    raw = mx.nd.load(prefix + "-0007.params")
    assert sorted(raw) == sorted([f"arg:{k}" for k in arg] + [f"aux:{k}" for k in aux])
    sym, arg2, aux2 = model.load_checkpoint(prefix, 7)
    assert sym.tojson() == net.tojson()
    for src, dst in ((arg, arg2), (aux, aux2)):
        assert sorted(src) == sorted(dst)
        for k in src:
            np.testing.assert_array_equal(dst[k].asnumpy(), src[k].asnumpy())


def test_symbol_none_writes_only_params(tmp_path):
    """With symbol=None only the parameter file is written."""
    _, arg, aux = params()
    model.save_checkpoint(str(tmp_path / "p"), 1, None, arg, aux)
    assert os.listdir(tmp_path) == ["p-0001.params"]


def test_mxnet_checkpoint_loads():
    """A checkpoint written by MXNet 1.9.1 loads: symbol, arguments and BatchNorm auxiliary states."""
    sym, arg, aux = model.load_checkpoint(os.path.join(FIXTURES, "mxnet_bn_mlp"), 0)
    assert sym.list_arguments() == ["data", "fc1_weight", "fc1_bias", "bn1_gamma", "bn1_beta", "fc2_weight",
                                    "fc2_bias", "softmax_label"]
    assert sorted(arg) == ["bn1_beta", "bn1_gamma", "fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight"]
    assert sorted(aux) == ["bn1_moving_mean", "bn1_moving_var"]
    assert arg["fc1_weight"].shape == (5, 6) and aux["bn1_moving_var"].dtype == np.float32


def test_load_params_rejects_a_plain_list(tmp_path):
    """A parameter file holding an unnamed list is not a checkpoint."""
    mx.nd.save(str(tmp_path / "x-0000.params"), [mx.nd.ones((2,))])
    with pytest.raises(mx.MXNetError, match="arg:"):
        model.load_params(str(tmp_path / "x"), 0)


@pytest.mark.skipif(not os.path.exists(MXNET_PYTHON), reason="MXNet 1.9.1 is not installed")
def test_checkpoint_loads_in_mxnet(tmp_path):
    """MXNet 1.9.1 loads mxref's checkpoint and computes the same forward output."""
    net, arg, aux = params(seed=2)
    prefix = str(tmp_path / "ours")
    model.save_checkpoint(prefix, 3, net, arg, aux)
    x = np.random.RandomState(3).normal(size=(3, 5)).astype(np.float32)
    np.save(str(tmp_path / "x.npy"), x)
    ex = net.bind(mx.cpu(), dict(arg, data=mx.nd.array(x), softmax_label=mx.nd.zeros((3,))), aux_states=aux,
                  grad_req="null")
    ours = ex.forward(is_train=False)[0].asnumpy()
    script = textwrap.dedent(f"""
        import numpy as np, mxnet as mx
        sym, arg, aux = mx.model.load_checkpoint({prefix!r}, 3)
        x = np.load({str(tmp_path / 'x.npy')!r})
        arg.update(data=mx.nd.array(x), softmax_label=mx.nd.zeros((3,)))
        ex = sym.bind(mx.cpu(), arg, aux_states=aux, grad_req="null")
        np.save({str(tmp_path / 'theirs.npy')!r}, ex.forward(is_train=False)[0].asnumpy())
    """)
    env = dict(os.environ, MXNET_SUBGRAPH_BACKEND="NONE")
    subprocess.run([MXNET_PYTHON, "-c", script], check=True, timeout=120, env=env, capture_output=True)
    np.testing.assert_allclose(np.load(str(tmp_path / "theirs.npy")), ours, rtol=1e-5, atol=1e-6)


def test_create_kvstore_choices():
    """No store for None or one local device; 'local' above 16M elements updates on the devices."""
    assert model._create_kvstore(None, 2, {}) == (None, False)
    assert model._create_kvstore("local", 1, {}) == (None, False)
    with pytest.raises(TypeError, match="kvstore"):
        model._create_kvstore(3, 1, {})

    class Store:
        def push(self, *a, **k):
            pass

        def pull(self, *a, **k):
            pass

        def is_capable(self, what):
            return False

    store = Store()
    assert model._create_kvstore(store, 1, {}) == (store, False)


def test_load_checkpoint_names_the_file_in_every_error(tmp_path):
    """Bad UTF-8 or JSON in the symbol file, a truncated parameter file: each error names its file."""
    net, arg, aux = params()
    prefix = str(tmp_path / "net")
    model.save_checkpoint(prefix, 1, net, arg, aux)
    good_json = open(prefix + "-symbol.json", "rb").read()
    with open(prefix + "-symbol.json", "wb") as f:
        f.write(good_json[:40] + b"\xc3\x28" + good_json[40:])
    with pytest.raises(mx.MXNetError, match=r"net-symbol\.json is not UTF-8"):
        model.load_checkpoint(prefix, 1)
    with open(prefix + "-symbol.json", "wb") as f:
        f.write(good_json[:-3])
    with pytest.raises(mx.MXNetError, match=r"not valid JSON.*net-symbol\.json"):
        model.load_checkpoint(prefix, 1)
    with open(prefix + "-symbol.json", "wb") as f:
        f.write(good_json)
    blob = open(prefix + "-0001.params", "rb").read()
    with open(prefix + "-0001.params", "wb") as f:
        f.write(blob[:100])
    with pytest.raises(mx.MXNetError, match=r"net-0001\.params"):
        model.load_checkpoint(prefix, 1)


def test_load_checkpoint_rejects_a_dtype_the_network_does_not_declare(tmp_path):
    """A float16 network with float32 weights in its parameter file is refused, naming both."""
    data = mx.sym.Variable("data", dtype="float16")
    weight = mx.sym.Variable("fc_weight", dtype="float16")
    net = mx.sym.FullyConnected(data, weight=weight, num_hidden=2, no_bias=True, name="fc")
    prefix = str(tmp_path / "half")
    model.save_checkpoint(prefix, 0, net, {"fc_weight": mx.nd.ones((2, 3), dtype="float32")}, {})
    with pytest.raises(mx.MXNetError, match=r"half-0000\.params: 'arg:fc_weight' is float32, but the "
                                            r"network in .*half-symbol\.json declares float16"):
        model.load_checkpoint(prefix, 0)
    model.save_checkpoint(prefix, 0, net, {"fc_weight": mx.nd.ones((2, 3), dtype="float16")}, {})
    _, arg2, _ = model.load_checkpoint(prefix, 0)
    assert arg2["fc_weight"].dtype == np.float16
