"""amp.convert_bucketing_module on a small bucketing LSTM (tests/fixtures/amp/bucketing_model.py).

MXNet 1.9.1's reference (tests/fixtures/amp/bucketing_mxnet191.json) holds its converted graphs,
parameter dtypes, float32 outputs and refusal messages. MXNet's CPU build refuses to run float16
FullyConnected ("float16 fully connected layer is currently only supported by CuDNN version"),
and mxref has no bfloat16 (numpy lacks it), so the float16 outputs are compared with the float32
outputs of both frameworks, within float16 accuracy, not with MXNet's float16 outputs.
"""
import json
import pathlib
import random
import sys

import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError
from mxref.contrib import amp

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "amp"
sys.path.insert(0, str(FIXTURES))
import bucketing_model as bm  # noqa: E402

REF = json.loads((FIXTURES / "bucketing_mxnet191.json").read_text())
KEYS = (bm.OTHER_KEY, bm.DEFAULT_KEY, bm.LATE_KEY)


@pytest.fixture
def model():
    sym_gen = bm.make_sym_gen(mx)
    return sym_gen, bm.bound_module(mx, sym_gen)


def _bind(conv):
    conv.bind([("data", (bm.BATCH, bm.DEFAULT_KEY))], [("softmax_label", (bm.BATCH, bm.DEFAULT_KEY))],
              for_training=False)


def _outputs(mod):
    out = {}
    for key in KEYS:
        mod.forward(bm.batch(mx, key), is_train=False)
        out[key] = mod.get_outputs()[0].asnumpy()
    return out


def _graph(sym):
    return json.loads(sym.tojson())


@pytest.mark.parametrize("cast_optional", [False, True])
def test_each_bucket_runs_convert_model_of_its_sym_gen_symbol(model, cast_optional):
    sym_gen, mod = model
    args, aux = mod.get_params()
    conv = amp.convert_bucketing_module(mod, cast_optional_params=cast_optional)
    _bind(conv)
    _outputs(conv)                       # binds OTHER_KEY and LATE_KEY (met after the conversion)
    assert sorted(conv._buckets) == sorted(KEYS)
    for key in KEYS:
        with mx.name.NameManager():
            sym = sym_gen(key)[0]
        want = amp.convert_model(sym, dict(args), dict(aux), cast_optional_params=cast_optional)[0]
        assert _graph(conv._buckets[key].symbol) == _graph(want)
        # convert_model is convert_symbol with the non-parameter inputs as data
        same = amp.convert_symbol(sym, data_names=["data", "softmax_label"],
                                  cast_optional_params=cast_optional)
        assert _graph(conv._buckets[key].symbol) == _graph(same)
        assert "pred_output_amp_cast_float32" in [n["name"] for n in _graph(same)["nodes"]]


@pytest.mark.parametrize("cast_optional", [False, True])
def test_graphs_and_parameter_dtypes_match_mxnet(model, cast_optional):
    _, mod = model
    ref = REF["converted"][str(cast_optional)]
    conv = amp.convert_bucketing_module(mod, cast_optional_params=cast_optional)
    _bind(conv)
    conv.switch_bucket(bm.OTHER_KEY, [("data", (bm.BATCH, bm.OTHER_KEY))],
                       [("softmax_label", (bm.BATCH, bm.OTHER_KEY))])
    for key, graph in ref["graphs"].items():
        assert _graph(conv._buckets[int(key)].symbol) == json.loads(graph), key
    args, aux = conv.get_params()
    assert {k: np.dtype(v.dtype).name for k, v in args.items()} == ref["arg_dtypes"]
    assert {k: np.dtype(v.dtype).name for k, v in aux.items()} == ref["aux_dtypes"]


@pytest.mark.parametrize("cast_optional", [False, True])
def test_outputs_close_to_the_float32_module(model, cast_optional):
    _, mod = model
    conv = amp.convert_bucketing_module(mod, cast_optional_params=cast_optional)
    _bind(conv)
    got, fp32 = _outputs(conv), _outputs(mod)
    for key in KEYS:
        mxnet_fp32 = np.array(REF["outputs"][str(key)], dtype=np.float32)
        np.testing.assert_allclose(fp32[key], mxnet_fp32, rtol=1e-5, atol=1e-6)
        assert got[key].dtype == np.float32 and got[key].shape == (bm.BATCH * key, bm.VOCAB)
        np.testing.assert_allclose(got[key], mxnet_fp32, rtol=2e-3, atol=1e-4)  # ~3e-4 relative seen
        assert not np.array_equal(got[key], fp32[key])     # float16 arithmetic did run
    exe = conv._buckets[bm.LATE_KEY]._exec_group.execs[0]
    weight = exe.arg_dict["pred_weight"]
    assert weight.dtype == (np.float16 if cast_optional else np.float32)


def test_parameters_are_carried_over_and_the_original_is_untouched(model):
    _, mod = model
    args, aux = mod.get_params()
    conv = amp.convert_bucketing_module(mod, cast_optional_params=True)
    assert not conv.binded and conv.params_initialized        # as MXNet returns it
    _bind(conv)
    got_args, got_aux = conv.get_params()
    assert sorted(got_args) == sorted(args) and sorted(got_aux) == sorted(aux)
    for name, value in args.items():
        want = value.asnumpy().astype(got_args[name].dtype)
        np.testing.assert_array_equal(got_args[name].asnumpy(), want)
    for name, value in aux.items():
        np.testing.assert_array_equal(got_aux[name].asnumpy(), value.asnumpy())
    after_args, _ = mod.get_params()
    assert all(v.dtype == np.float32 for v in after_args.values())
    assert "amp_cast" not in mod.symbol.tojson()
    assert mod._curr_module is mod._buckets[bm.OTHER_KEY]


def test_trained_parameters_are_taken_after_updates():
    """The values the devices hold after ``update()`` (not the ones set before training)."""
    sym_gen = bm.make_sym_gen(mx)
    mod = bm.bound_module(mx, sym_gen, for_training=True)
    before = mod.get_params()[0]["pred_weight"].asnumpy()
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    mod.forward(bm.batch(mx, bm.OTHER_KEY), is_train=True)
    mod.backward()
    mod.update()
    trained, _ = mod.get_params()
    assert not np.allclose(trained["pred_weight"].asnumpy(), before)
    conv = amp.convert_bucketing_module(mod)
    _bind(conv)
    np.testing.assert_array_equal(conv.get_params()[0]["pred_weight"].asnumpy(),
                                  trained["pred_weight"].asnumpy())


def test_new_module_keeps_the_settings_and_names():
    sym_gen = bm.make_sym_gen(mx)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=bm.DEFAULT_KEY, context=mx.cpu(0),
                                 fixed_param_names=["embed_weight"], state_names=[])
    mod.bind([("data", (bm.BATCH, bm.DEFAULT_KEY))], [("softmax_label", (bm.BATCH, bm.DEFAULT_KEY))])
    mod.init_params(mx.init.Xavier())
    conv = amp.convert_bucketing_module(mod, target_dtype_ops=["FullyConnected"], fp32_ops=[],
                                        conditional_fp32_ops=[], excluded_sym_names=["pred"])
    assert isinstance(conv, mx.mod.BucketingModule)
    assert conv._default_bucket_key == bm.DEFAULT_KEY and conv._context == mx.cpu(0)
    assert conv._fixed_param_names == ["embed_weight"] and conv.logger is mod.logger
    _bind(conv)
    names = [n["name"] for n in _graph(conv.symbol)["nodes"]]
    assert "lstm_i2h_weight_amp_cast_float16" in names
    assert "pred_weight_amp_cast_float16" not in names       # excluded
    assert "bn_output_amp_cast_float32" in names              # the excluded node's input
    assert "reshape1_0_amp_cast_float32" not in names         # SoftmaxOutput left alone: fp32_ops=[]
    assert amp.amp.convert_bucketing_module is amp.convert_bucketing_module
    assert "convert_bucketing_module" in amp.__all__


def test_refusals_are_mxnets(model):
    sym_gen, mod = model
    errors = REF["errors"]
    with pytest.raises(AssertionError, match=errors["not_bucketing"]):
        amp.convert_bucketing_module(mod.symbol)
    with pytest.raises(AssertionError, match=errors["empty"]):
        amp.convert_bucketing_module(mx.mod.BucketingModule(sym_gen, default_bucket_key=bm.DEFAULT_KEY))
    unset = mx.mod.BucketingModule(sym_gen, default_bucket_key=bm.DEFAULT_KEY)
    unset.bind([("data", (bm.BATCH, bm.DEFAULT_KEY))], [("softmax_label", (bm.BATCH, bm.DEFAULT_KEY))])
    with pytest.raises(AssertionError, match=errors["no_params"]):
        amp.convert_bucketing_module(unset)
    with pytest.raises(MXNetError, match="bfloat16"):
        amp.convert_bucketing_module(mod, target_dtype="bfloat16")
    with pytest.raises(ValueError, match="excluded_sym_names"):
        amp.convert_bucketing_module(mod, excluded_sym_names="pred")


def test_buckets_that_store_a_shared_parameter_differently_are_refused():
    """With cast_optional_params, ``w_weight`` is stored in float16 where FullyConnected reads it
    and in float32 where it reaches FullyConnected through ``exp`` (a float32 operator), as
    MXNet's pass types it in both graphs; one shared array cannot be both."""
    def sym_gen(key):
        # shape and dtype given: mxref's inference does not run backward through exp to w
        data, w = mx.sym.var("data"), mx.sym.var("w_weight", shape=(2, 4), dtype="float32")
        weight = mx.sym.exp(w, name="e") if key == 3 else w
        fc = mx.sym.FullyConnected(data, weight=weight, num_hidden=2, no_bias=True, name="fc")
        return fc, ("data",), ()
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=4)
    mod.bind([("data", (1, 4))], for_training=False)
    mod.init_params(mx.init.Xavier())
    conv = amp.convert_bucketing_module(mod, cast_optional_params=True)
    assert conv._preloaded[0]["w_weight"].dtype == np.float16
    conv.bind([("data", (1, 4))], for_training=False)
    with pytest.raises(MXNetError, match="bucket 3 stores parameter .w_weight. as float32"):
        conv.switch_bucket(3, [("data", (1, 4))])
    mod.switch_bucket(3, [("data", (1, 4))])
    with pytest.raises(MXNetError, match="convert without cast_optional_params"):
        amp.convert_bucketing_module(mod, cast_optional_params=True)
    conv = amp.convert_bucketing_module(mod)              # without it every parameter stays float32
    conv.bind([("data", (1, 4))], for_training=False)
    conv.switch_bucket(3, [("data", (1, 4))])


def test_score_after_fit_as_mxnets_amp_test_does():
    """MXNet's check_amp_convert_bucketing_module, small: fit a 2-layer LSTM on random sentences
    with BucketSentenceIter, convert, bind for prediction and score perplexity."""
    random.seed(0)
    mx.random.seed(0)
    np.random.seed(0)
    buckets, vocab, hidden = [4, 8], 12, 8
    sentences = [[random.randint(1, vocab - 1) for _ in range(random.randint(3, 7))] for _ in range(48)]
    train = mx.rnn.BucketSentenceIter(sentences, 8, buckets=buckets, invalid_label=-1)
    stack = mx.rnn.SequentialRNNCell()
    for i in range(2):
        stack.add(mx.rnn.LSTMCell(num_hidden=hidden, prefix="lstm_l%d_" % i))

    def sym_gen(seq_len):
        embed = mx.sym.Embedding(mx.sym.var("data"), input_dim=vocab, output_dim=hidden, name="embed")
        stack.reset()
        outputs, _ = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.FullyConnected(mx.sym.Reshape(outputs, shape=(-1, hidden)), num_hidden=vocab,
                                     name="pred")
        label = mx.sym.Reshape(mx.sym.var("softmax_label"), shape=(-1,))
        return mx.sym.SoftmaxOutput(pred, label, name="softmax"), ("data",), ("softmax_label",)

    model = mx.mod.BucketingModule(sym_gen, default_bucket_key=train.default_bucket_key)
    model.fit(train, num_epoch=1, optimizer="sgd", optimizer_params={"learning_rate": 0.1},
              initializer=mx.init.Xavier(factor_type="in", magnitude=2.34))
    train.reset()
    fp32 = dict(model.score(train, mx.metric.Perplexity(-1)))["perplexity"]
    result = amp.convert_bucketing_module(model)
    result.bind(train.provide_data, train.provide_label, for_training=False)
    train.reset()
    fp16 = dict(result.score(train, mx.metric.Perplexity(-1)))["perplexity"]
    assert np.isfinite(fp16) and abs(fp16 - fp32) < 1e-2 * fp32


def test_a_module_loaded_from_a_checkpoint_converts(model, tmp_path):
    """``BucketingModule.load`` leaves the module unbound with its parameters aside (MXNet's
    makes unbound buckets from the saved symbols); it converts like the bound original."""
    sym_gen, mod = model
    prefix = str(tmp_path / "lm")
    mod.save_checkpoint(prefix, 3)
    loaded = mx.mod.BucketingModule.load(prefix, 3, sym_gen=sym_gen, default_bucket_key=bm.DEFAULT_KEY)
    conv = amp.convert_bucketing_module(loaded, cast_optional_params=True)
    want = amp.convert_bucketing_module(mod, cast_optional_params=True)
    _bind(conv)
    _bind(want)
    got, ref = _outputs(conv), _outputs(want)
    for key in KEYS:
        np.testing.assert_array_equal(got[key], ref[key])
    assert conv.get_params()[0]["pred_weight"].dtype == np.float16
