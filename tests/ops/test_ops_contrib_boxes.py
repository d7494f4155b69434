"""box_nms, box_iou and bipartite_matching (``mxref/ops/contrib``): numpy references, MXNet 1.9.1
fixtures, the box_nms gradient by central differences, and the ``mx.nd`` / ``mx.sym`` forms."""
import json
import os

import numpy as np
import pytest
from ops_check import check_numeric_grad, grad_op, run_op

import mxref as mx
from mxref.base import MXNetError

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ops_contrib", "detection.npz")


def _cases(prefix):
    with np.load(FIXTURE) as f:
        data = dict(f)
    cases = {}
    for key, value in data.items():
        case, field = key.split("/", 1)
        if case.startswith(prefix):
            cases.setdefault(case, {})[field] = value
    return sorted(cases.items())


def _boxes(rng, *shape):
    lo = rng.uniform(0, 1, shape + (2,))
    return np.concatenate([lo, lo + rng.uniform(0.05, 0.6, shape + (2,))], -1)


def _iou_ref(a, b):
    """Plain-loop IoU of two corner boxes."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    return w * h / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h)


def _nms_ref(d, thresh, valid=0.0, topk=-1, id_index=-1, force=False):
    """Plain-loop NMS of one (N, 6) batch [id, score, x1, y1, x2, y2], corner format."""
    rows = [i for i in range(len(d)) if d[i, 1] > valid]
    rows = sorted(rows, key=lambda i: -d[i, 1])[:topk if topk > 0 else None]
    kept = []
    for i in rows:
        if all(_iou_ref(d[i, 2:], d[k, 2:]) <= thresh or (id_index >= 0 and not force and d[i, 0] != d[k, 0])
               for k in kept):
            kept.append(i)
    out = np.full_like(d, -1)
    out[:len(kept)] = d[kept]
    return out


@pytest.mark.parametrize("kw", [dict(overlap_thresh=0.5), dict(overlap_thresh=0.3, valid_thresh=0.3, topk=6),
                                dict(overlap_thresh=0.4, id_index=0, background_id=-5),
                                dict(overlap_thresh=0.4, id_index=0, background_id=-5, force_suppress=True)])
def test_box_nms_matches_plain_loop(kw):
    """box_nms keeps, per batch, the greedy survivors in score order and pads with -1 rows."""
    rng = np.random.RandomState(1)
    d = np.concatenate([rng.randint(0, 3, (3, 15, 1)), rng.uniform(0, 1, (3, 15, 1)), _boxes(rng, 3, 15)], -1)
    out, record = run_op("_contrib_box_nms", d, **kw)
    ref_kw = dict(thresh=kw["overlap_thresh"], valid=kw.get("valid_thresh", 0.0), topk=kw.get("topk", -1),
                  id_index=kw.get("id_index", -1), force=kw.get("force_suppress", False))
    for b in range(3):
        np.testing.assert_allclose(out[b], _nms_ref(d[b], **ref_kw))
        r = record[b, :, 0].astype(int)
        np.testing.assert_array_equal(d.reshape(-1, 6)[r[r >= 0]], out[b][r >= 0])


def test_box_nms_docstring_example_and_formats():
    """MXNet's docstring example; center output re-encodes kept rows only; topk=0 copies through."""
    x = np.array([[0, 0.5, 0.1, 0.1, 0.2, 0.2], [1, 0.4, 0.1, 0.1, 0.2, 0.2],
                  [0, 0.3, 0.1, 0.1, 0.14, 0.14], [2, 0.6, 0.5, 0.5, 0.7, 0.8]])
    want = np.array([[2, 0.6, 0.5, 0.5, 0.7, 0.8], [0, 0.5, 0.1, 0.1, 0.2, 0.2],
                     [-1] * 6, [-1] * 6])
    np.testing.assert_allclose(run_op("_contrib_box_nms", x, overlap_thresh=0.1)[0], want)
    want_id = want.copy()
    want_id[2] = x[2]
    out = mx.nd.contrib.box_non_maximum_suppression(mx.nd.array(x), overlap_thresh=0.1, id_index=0,
                                                    force_suppress=False, coord_start=2, score_index=1)
    np.testing.assert_allclose(out.asnumpy(), np.array([want[0], want[1], x[1], [-1] * 6]), rtol=1e-6)
    c = run_op("_contrib_box_nms", x, overlap_thresh=0.1, out_format="center")[0]
    np.testing.assert_allclose(c[0, 2:], [0.6, 0.65, 0.2, 0.3], rtol=1e-6)
    np.testing.assert_allclose(c[2], [-1] * 6)
    np.testing.assert_allclose(run_op("_contrib_box_nms", x, topk=0)[0], x)


@pytest.mark.parametrize("case", _cases("nms"), ids=lambda c: c[0])
def test_box_nms_vs_mxnet(case):
    """Outputs and the ``_backward_contrib_box_nms`` gradient equal MXNet 1.9.1's."""
    _, c = case
    kw = json.loads(str(c["params"]))
    x = mx.nd.array(c["in_data"])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.box_nms(x, **kw)
    y.backward(mx.nd.array(c["ograd0"]))
    np.testing.assert_allclose(y.asnumpy(), c["out0"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), c["grad_data"])


def test_box_nms_gradient_central_differences():
    """Away from ties the selection is locally constant, so the gradient routes dout to kept rows."""
    rng = np.random.RandomState(3)
    d = np.concatenate([rng.randint(0, 2, (2, 7, 1)), rng.uniform(0.1, 1, (2, 7, 1)), _boxes(rng, 2, 7)], -1)
    check_numeric_grad("_contrib_box_nms", d, overlap_thresh=0.3, id_index=0, topk=5)
    check_numeric_grad("_contrib_box_nms", d, overlap_thresh=0.3, in_format="center", out_format="center")
    # NOTE: with out_format != in_format MXNet's backward still copies dout unconverted; so do we.
    g_conv = grad_op("_contrib_box_nms", d, overlap_thresh=0.3, out_format="center")[0]
    np.testing.assert_array_equal(g_conv, grad_op("_contrib_box_nms", d, overlap_thresh=0.3)[0])
    g = grad_op("_contrib_box_nms", d, overlap_thresh=0.3)[0]
    out = run_op("_contrib_box_nms", d, overlap_thresh=0.3)[0]
    assert (g.sum(-1) != 0).sum() == (out[..., 1] >= 0).sum()


def test_box_nms_symbol_and_errors():
    """The symbol has one visible output, infers both shapes, and rejects bad layouts by name."""
    s = mx.sym.contrib.box_nms(mx.sym.var("data"), id_index=0)
    assert len(s.list_outputs()) == 1
    _, outs, _ = s.infer_shape(data=(2, 5, 6))
    assert outs == [(2, 5, 6)]
    x = np.random.RandomState(0).uniform(size=(2, 5, 6)).astype("f4")
    ex = s.bind(mx.cpu(), {"data": mx.nd.array(x)})
    want = mx.nd.contrib.box_nms(mx.nd.array(x), id_index=0).asnumpy()
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), want)
    with pytest.raises(MXNetError, match="box_nms.*data"):
        mx.nd.contrib.box_nms(mx.nd.zeros((3,)))
    with pytest.raises(MXNetError, match="box_nms.*id_index"):
        mx.nd.contrib.box_nms(mx.nd.zeros((2, 5, 6)), id_index=3)
    with pytest.raises(MXNetError, match="in_format"):
        mx.nd.contrib.box_nms(mx.nd.zeros((2, 5, 6)), in_format="xywh")


def test_box_iou_reference_and_shapes(fdtype):
    """box_iou pairs every lhs box with every rhs box; center boxes equal their corner form."""
    rng = np.random.RandomState(2)
    a, b = _boxes(rng, 2, 3).astype(fdtype), _boxes(rng, 4).astype(fdtype)
    out = run_op("_contrib_box_iou", a, b)[0]
    assert out.shape == (2, 3, 4) and out.dtype == fdtype
    want = np.array([[_iou_ref(x, y) for y in b] for x in a.reshape(-1, 4)]).reshape(2, 3, 4)
    np.testing.assert_allclose(out, want, rtol=1e-5)
    centre = lambda z: np.concatenate([(z[..., :2] + z[..., 2:]) / 2, z[..., 2:] - z[..., :2]], -1)  # noqa: E731
    np.testing.assert_allclose(run_op("_contrib_box_iou", centre(a), centre(b), format="center")[0], want,
                               rtol=1e-4, atol=1e-6)
    assert not grad_op("_contrib_box_iou", a, b)[0].any()
    _, outs, _ = mx.sym.contrib.box_iou(mx.sym.var("l"), mx.sym.var("r")).infer_shape(l=(5, 4), r=(2, 7, 4))
    assert outs == [(5, 2, 7)]
    with pytest.raises(MXNetError, match="box_iou.*rhs"):
        mx.nd.contrib.box_iou(mx.nd.zeros((2, 4)), mx.nd.zeros((2, 5)))


@pytest.mark.parametrize("case", _cases("iou") + _cases("match"), ids=lambda c: c[0])
def test_iou_and_matching_vs_mxnet(case):
    """box_iou and bipartite_matching equal MXNet 1.9.1 on the recorded cases."""
    _, c = case
    op = str(c["op"])
    ins = [c[k] for k in ("in_lhs", "in_rhs", "in_data") if k in c]
    outs = run_op(op, *ins, **json.loads(str(c["params"])))
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o, c[f"out{i}"], rtol=1e-6)


def test_bipartite_matching_docstring_example_and_topk():
    """MXNet's docstring example; ``topk`` stops after topk + 1 matches (MXNet's count > topk)."""
    s = np.array([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]])
    rows, cols = run_op("_contrib_bipartite_matching", s, threshold=1e-12)
    np.testing.assert_array_equal(rows, [1, -1, 0])
    np.testing.assert_array_equal(cols, [2, 0])
    rows, cols = mx.nd.contrib.bipartite_matching(mx.nd.array(s), threshold=0.35)
    np.testing.assert_array_equal(rows.asnumpy(), [1, -1, -1])
    r_asc, _ = run_op("_contrib_bipartite_matching", s, threshold=0.45, is_ascend=True)
    np.testing.assert_array_equal(r_asc, [-1, 0, 1])
    big = np.random.RandomState(0).uniform(0.5, 1, (6, 6))
    assert (run_op("_contrib_bipartite_matching", big, threshold=0.1, topk=2)[0] >= 0).sum() == 3
    sym = mx.sym.contrib.bipartite_matching(mx.sym.var("x"), threshold=0.1)
    assert sym.infer_shape(x=(4, 3, 5))[1] == [(4, 3), (4, 5)]
    with pytest.raises(MXNetError, match="threshold"):
        mx.nd.contrib.bipartite_matching(mx.nd.array(s))


def test_box_encode_decode_round_trip():
    """box_decode(box_encode(ref)) gives the matched reference boxes back for positive samples."""
    rng = np.random.RandomState(4)
    anchors, refs = _boxes(rng, 2, 5), _boxes(rng, 2, 3)
    samples = np.array([[1, 0, 1, -1, 1], [1, 1, 0, 0, 1]], "f8")
    matches = rng.randint(0, 3, (2, 5)).astype("f8")
    means, stds = np.array([0.1, -0.1, 0.0, 0.2]), np.array([0.1, 0.1, 0.2, 0.2])
    t, m = run_op("_contrib_box_encode", samples, matches, anchors, refs, means, stds)
    np.testing.assert_array_equal(m[..., 0], samples > 0.5)
    assert not t[samples <= 0.5].any()
    for b in range(2):
        dec = run_op("_contrib_box_decode", (t[b:b + 1] * stds + means) * (samples[b:b + 1, :, None] > 0.5),
                     anchors[b:b + 1], format="corner")[0][0]
        for i in np.flatnonzero(samples[b] > 0.5):
            np.testing.assert_allclose(dec[i], refs[b, int(matches[b, i])], rtol=1e-6, atol=1e-9)
    anchor = np.array([[[0.5, 0.5, 0.2, 0.2]]])
    clipped = run_op("_contrib_box_decode", np.full((1, 1, 4), 5.0), anchor, clip=1.0)[0]
    np.testing.assert_allclose(clipped[0, 0, 2] - clipped[0, 0, 0], 0.2 * np.e, rtol=1e-6)
    zero = grad_op("_contrib_box_encode", samples, matches, anchors, refs, means, stds)
    assert not any(g.any() for g in zero)
    sym = mx.sym.contrib.box_encode(*[mx.sym.var(n) for n in ("s", "m", "a", "r", "mu", "sd")])
    assert sym.infer_shape(s=(2, 5), m=(2, 5), a=(2, 5, 4), r=(2, 3, 4))[1] == [(2, 5, 4), (2, 5, 4)]
    with pytest.raises(MXNetError, match="box_decode.*anchors"):
        mx.nd.contrib.box_decode(mx.nd.zeros((1, 2, 4)), mx.nd.zeros((2, 4)))
