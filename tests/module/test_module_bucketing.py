"""BucketingModule: one module per bucket key, parameters and optimizer shared, same steps as Module."""
import numpy as np
import pytest

import mxref as mx
from mxref.io import DataBatch, DataDesc
from mxref.module import BucketingModule, Module


def net():
    """Sequences (batch, T, 4) summed over time: the parameters do not depend on T."""
    data = mx.sym.Variable("data")
    h = mx.sym.FullyConnected(mx.sym.sum(data, axis=1), num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(h, name="softmax")


def sym_gen(seq_len):
    return net(), ("data",), ("softmax_label",)


def make_batch(seq_len, seed):
    rng = np.random.RandomState(seed)
    x = rng.normal(size=(6, seq_len, 4)).astype(np.float32)
    y = rng.randint(0, 3, 6).astype(np.float32)
    return DataBatch([mx.nd.array(x)], [mx.nd.array(y)], bucket_key=seq_len,
                     provide_data=[DataDesc("data", x.shape)],
                     provide_label=[DataDesc("softmax_label", y.shape)])


INIT = {"fc_weight": np.linspace(-0.3, 0.3, 12, dtype=np.float32).reshape(3, 4),
        "fc_bias": np.array([0.1, 0.0, -0.1], np.float32)}


def setup(mod):
    mod.bind(data_shapes=[("data", (6, 5, 4))], label_shapes=[("softmax_label", (6,))])
    mod.init_params(arg_params={k: mx.nd.array(v) for k, v in INIT.items()})
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    return mod


def test_buckets_share_parameters_and_match_a_reshaping_module():
    """Training across buckets 5, 3, 5, 2 equals a plain Module that re-binds for each shape."""
    bucketing = setup(BucketingModule(sym_gen, default_bucket_key=5))
    plain = setup(Module(net()))
    keys = [5, 3, 5, 2]
    for i, key in enumerate(keys):
        for mod in (bucketing, plain):
            mod.forward(make_batch(key, i), is_train=True)
            mod.backward()
            mod.update()
    assert sorted(bucketing._buckets) == [2, 3, 5]
    default = bucketing._buckets[5]
    for key in (2, 3):
        other = bucketing._buckets[key]
        shared = default._exec_group.execs[0].arg_dict["fc_weight"]
        assert other._exec_group.execs[0].arg_dict["fc_weight"] is shared
        assert other._updater is default._updater
    for name in INIT:
        np.testing.assert_allclose(bucketing.get_params()[0][name].asnumpy(),
                                   plain.get_params()[0][name].asnumpy(), rtol=1e-5, atol=1e-6)


def test_switch_and_outputs_follow_the_current_bucket():
    """forward switches bucket by batch.bucket_key; outputs, symbol and shapes are the bucket's."""
    mod = setup(BucketingModule(sym_gen, default_bucket_key=5))
    mod.forward(make_batch(3, 0), is_train=False)
    assert mod._curr_bucket_key == 3
    assert mod.data_shapes[0].shape == (6, 3, 4)
    assert mod.get_outputs()[0].shape == (6, 3)
    mod.prepare(make_batch(7, 1))              # binds bucket 7 ahead, keeps 3 current
    assert mod._curr_bucket_key == 3 and 7 in mod._buckets
    assert mod.output_names == ["softmax_output"]


def test_bucketing_errors():
    """A default key is required; using the module before bind raises MXNetError."""
    with pytest.raises(mx.MXNetError, match="default_bucket_key"):
        BucketingModule(sym_gen)
    mod = BucketingModule(sym_gen, default_bucket_key=5)
    with pytest.raises(mx.MXNetError, match="bind"):
        mod.forward(make_batch(5, 0))


def test_checkpoint_saves_every_bucket_and_loads(tmp_path):
    """save_checkpoint writes params, one symbol per bucket and the key list; load resumes the params."""
    mod = setup(BucketingModule(sym_gen, default_bucket_key=5))
    for i, key in enumerate((5, 3)):
        mod.forward(make_batch(key, i), is_train=True)
        mod.backward()
        mod.update()
    prefix = str(tmp_path / "bk")
    mod.save_checkpoint(prefix, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bk-0002.params", "bk-3-symbol.json",
                                                         "bk-5-symbol.json", "bk.buckets"]
    assert sorted(mx.nd.load(prefix + ".buckets")[0].asnumpy().tolist()) == [3, 5]
    loaded = BucketingModule.load(prefix, 2, sym_gen=sym_gen, default_bucket_key=5)
    loaded.bind(data_shapes=[("data", (6, 5, 4))], label_shapes=[("softmax_label", (6,))])
    for name, value in mod.get_params()[0].items():
        np.testing.assert_array_equal(loaded.get_params()[0][name].asnumpy(), value.asnumpy())


def test_unnamed_layers_get_the_same_names_in_every_bucket():
    """sym_gen runs under a fresh NameManager (as MXNet): an unnamed layer is ``embedding0``
    whatever was built before, so every bucket shares its weight."""
    def gen(seq_len):
        emb = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=5, output_dim=4)
        h = mx.sym.FullyConnected(mx.sym.sum(emb, axis=1), num_hidden=3)
        return mx.sym.SoftmaxOutput(h, name="softmax"), ("data",), ("softmax_label",)

    mx.sym.Embedding(mx.sym.Variable("x"), input_dim=2, output_dim=2)     # advances the counter
    mod = BucketingModule(gen, default_bucket_key=5)
    mod.bind(data_shapes=[("data", (6, 5))], label_shapes=[("softmax_label", (6,))])
    mod.init_params()
    assert mod.symbol.list_arguments()[:2] == ["data", "embedding0_weight"]
    mod.switch_bucket(3, [("data", (6, 3))], [("softmax_label", (6,))])
    assert mod.symbol.list_arguments()[1] == "embedding0_weight"
    assert sorted(mod.get_params()[0]) == ["embedding0_weight", "fullyconnected0_bias",
                                          "fullyconnected0_weight"]
