"""gluon.model_zoo.vision: every model's parameter names and shapes, and its forward, against MXNet's."""
import json
import pathlib

import numpy as np
import pytest

import mxref as mx
from mxref.gluon.model_zoo import vision

FIX = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "model_zoo"
TABLE = json.loads((FIX / "names_mxnet191.json").read_text())
OUTPUTS = np.load(FIX / "outputs_mxnet191.npz")
SMALL = sorted({k.split("/")[0] for k in OUTPUTS.files})


def fill_params(params, seed):
    """The fixture's weights: each parameter, in sorted structural order, from one RandomState."""
    rng = np.random.RandomState(seed)
    for name in sorted(params):
        shape = params[name].shape
        v = rng.uniform(0.5, 1.5, shape) if name.endswith("running_var") else rng.normal(0, 0.1, shape)
        params[name].set_data(mx.nd.array(v.astype(np.float32)))


def test_get_model_knows_exactly_mxnets_models():
    assert sorted(vision._models) == sorted(TABLE)
    with pytest.raises(ValueError, match="resnet19_v1 is not supported"):
        vision.get_model("resnet19_v1")


@pytest.mark.parametrize("name", sorted(TABLE))
def test_parameter_names_and_shapes_match_mxnet(name):
    """Structural names (what save_parameters writes) with shapes, and prefixed names, as in MXNet."""
    expect = TABLE[name]
    net = vision.get_model(name, classes=10)
    size = expect["input_size"]
    # Shapes by symbolic inference: no forward pass over a 224x224 image needed.
    sym = net(mx.sym.var("data"))
    args, outs, auxs = sym.infer_shape(data=(1, 3, size, size))
    shapes = dict(zip(sym.list_arguments(), args))
    shapes.update(zip(sym.list_auxiliary_states(), auxs))
    structural = {k: list(shapes[p.name]) for k, p in net._collect_params_with_prefix().items()}
    assert structural == expect["params"]
    # Prefixed names start with the model's own counter ('resnetv10_', 'resnetv11_', ...), which
    # depends on how many models the process built before; the rest must be MXNet's.
    assert net.prefix == net.prefix.split("_")[0] + "_"
    mine = [k[len(net.prefix):] for k in net.collect_params()]
    assert mine == [k.split("_", 1)[1] for k in expect["prefixed"]]
    assert list(outs[0]) == expect["output_shape"]


@pytest.mark.parametrize("name", SMALL)
def test_forward_equals_mxnet_with_the_same_weights(name):
    seed = int(OUTPUTS[name + "/seed"])
    x = np.random.RandomState(100 + seed).uniform(-1, 1, OUTPUTS[name + "/input_shape"]).astype(np.float32)
    net = vision.get_model(name, classes=10)
    net.initialize()
    net(mx.nd.array(x))
    fill_params(net._collect_params_with_prefix(), seed)
    out = net(mx.nd.array(x)).asnumpy()
    np.testing.assert_allclose(out, OUTPUTS[name + "/output"], rtol=1e-4, atol=1e-4)


def test_hybridized_equals_imperative_and_exports_json(tmp_path):
    net = vision.get_model("resnet18_v2", classes=10, thumbnail=True)
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (2, 3, 32, 32)))
    ref = net(x).asnumpy()
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), ref, rtol=1e-5, atol=1e-6)
    net.export(str(tmp_path / "r18"))
    loaded = mx.gluon.SymbolBlock.imports(str(tmp_path / "r18-symbol.json"), ["data"],
                                          str(tmp_path / "r18-0000.params"))
    np.testing.assert_allclose(loaded(x).asnumpy(), ref, rtol=1e-5, atol=1e-6)
