"""mx.rnn's unrolled graphs, names, shapes and values against MXNet 1.9.1's (tests/fixtures/rnn/graphs.json).

The cases are built by ``tests/fixtures/rnn/rnn_cases.py`` with mxref here and with MXNet by
``make_rnn_fixtures.py``; every node (op, name, attributes, inputs), the heads, the argument names,
the output names and the inferred shapes must be the same.
"""
import json
import pathlib
import random
import sys
import warnings

import numpy as np
import pytest

import mxref as mx

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "rnn"
sys.path.insert(0, str(FIXTURES))
import rnn_cases  # noqa: E402

EXPECTED = json.loads((FIXTURES / "graphs.json").read_text())


def _build(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # FusedRNNCell's "NTC layout detected"
        with mx.name.NameManager():
            return fn(mx)


def _nodes(graph):
    return [(n["op"], n["name"], n.get("attrs", {}), n["inputs"]) for n in graph["nodes"]]


@pytest.mark.parametrize("case", sorted(rnn_cases.GRAPHS))
def test_unrolled_graph_is_mxnets(case):
    sym, shapes = _build(rnn_cases.GRAPHS[case])
    exp, got = EXPECTED["graphs"][case], json.loads(sym.tojson())
    assert _nodes(got) == _nodes(exp["json"])
    assert got["heads"] == exp["json"]["heads"]
    assert got["arg_nodes"] == exp["json"]["arg_nodes"]
    assert sym.list_arguments() == exp["arguments"]
    assert sym.list_outputs() == exp["outputs"]
    assert sym.list_auxiliary_states() == exp["aux"]
    args, outs, _ = sym.infer_shape(**shapes)
    assert [list(s) for s in args] == exp["arg_shapes"]
    assert [list(s) for s in outs] == exp["out_shapes"]


def test_graph_json_round_trips():
    """MXNet's JSON of an unrolled LSTM loads into mxref and writes back the same nodes."""
    exp = EXPECTED["graphs"]["lstm_ntc"]["json"]
    sym = mx.sym.load_json(json.dumps(exp))
    assert _nodes(json.loads(sym.tojson())) == _nodes(exp)


@pytest.mark.parametrize("case", sorted(rnn_cases.UNPACK))
def test_fused_unpack_is_mxnets(case):
    cell_fn, size = rnn_cases.UNPACK[case]
    cell = cell_fn(mx)
    args = cell.unpack_weights({cell._parameter.name: mx.nd.arange(size)})
    exp = EXPECTED["unpack"][case]
    assert sorted(args) == sorted(exp)
    for name, value in exp.items():
        np.testing.assert_array_equal(args[name].asnumpy(), np.array(value, dtype=np.float32), err_msg=name)
    packed = cell.pack_weights(args)
    assert list(packed) == [cell._parameter.name]
    np.testing.assert_array_equal(packed[cell._parameter.name].asnumpy(), np.arange(size))


@pytest.mark.parametrize("case", sorted(rnn_cases.FORWARD))
def test_forward_values_are_mxnets(case):
    sym, values = _build(rnn_cases.FORWARD[case])
    got = sym.eval(**{k: mx.nd.array(v) for k, v in values.items()})
    exp = EXPECTED["forward"][case]
    assert len(got) == len(exp)
    for g, e in zip(got, exp):
        np.testing.assert_allclose(g.asnumpy(), np.array(e), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", sorted(rnn_cases.BUCKETS))
def test_bucket_sentence_iter_is_mxnets(case, capsys):
    random.seed(3)
    np.random.seed(3)
    it = mx.rnn.BucketSentenceIter(rnn_cases.SENTENCES, **rnn_cases.BUCKETS[case])
    exp = EXPECTED["bucket_iter"][case]
    assert it.buckets == exp["buckets"]
    assert it.default_bucket_key == exp["default_bucket_key"]
    assert [[d.name, list(d.shape), d.layout] for d in it.provide_data] == exp["provide_data"]
    batches = list(it)
    assert [b.bucket_key for b in batches] == [b["key"] for b in exp["batches"]]
    for got, want in zip(batches, exp["batches"]):
        np.testing.assert_array_equal(got.data[0].asnumpy(), want["data"])
        np.testing.assert_array_equal(got.label[0].asnumpy(), want["label"])
        assert got.provide_data[0].shape == got.data[0].shape
    assert "WARNING: discarded" in capsys.readouterr().out
