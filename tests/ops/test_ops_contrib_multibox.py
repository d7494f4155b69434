"""MultiBoxPrior, MultiBoxTarget and MultiBoxDetection (``mxref/ops/contrib``): hand-worked cases,
MXNet 1.9.1 fixtures, zero gradients and the ``mx.sym`` forms."""
import json
import os

import numpy as np
import pytest
from ops_check import grad_op, run_op

import mxref as mx
from mxref.base import MXNetError

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ops_contrib", "detection.npz")


def _cases(*prefixes):
    with np.load(FIXTURE) as f:
        data = dict(f)
    cases = {}
    for key, value in data.items():
        case, field = key.split("/", 1)
        if case.startswith(prefixes):
            cases.setdefault(case, {})[field] = value
    return sorted(cases.items())


@pytest.mark.parametrize("case", _cases("prior", "target", "detect"), ids=lambda c: c[0])
def test_multibox_vs_mxnet(case):
    """Every output equals what MXNet 1.9.1 computed for the recorded case."""
    _, c = case
    op = str(c["op"])
    names = mx.ops.registry.get(op).list_arguments({})
    outs = run_op(op, *[c["in_" + n] for n in names], **json.loads(str(c["params"])))
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o, c[f"out{i}"], rtol=1e-5, atol=1e-6, err_msg=f"out{i}")


def test_multibox_prior_by_hand():
    """A 2x4 map: centres at (c + .5)/4, (r + .5)/2; widths scaled by H/W; sizes then ratios."""
    x = np.zeros((1, 3, 2, 4), "f4")
    out = run_op("_contrib_MultiBoxPrior", x, sizes=(0.5, 0.25), ratios=(1, 4))[0]
    assert out.shape == (1, 2 * 4 * 3, 4)
    first = out[0, :3]
    cx, cy = 0.125, 0.25
    for box, (w, h) in zip(first, [(0.5 * 0.5 / 2, 0.25), (0.25 * 0.5 / 2, 0.125), (0.5 * 0.5, 0.125)]):
        np.testing.assert_allclose(box, [cx - w, cy - h, cx + w, cy + h], rtol=1e-6)
    np.testing.assert_allclose(out[0, 3 * 5, :2] + out[0, 3 * 5, 2:], [2 * 0.375, 2 * 0.75], rtol=1e-6)
    clipped = mx.nd.contrib.MultiBoxPrior(mx.nd.array(x), sizes=(0.9,), clip=True).asnumpy()
    assert clipped.min() >= 0 and clipped.max() <= 1
    stepped = run_op("_contrib_MultiBoxPrior", x, sizes=(0.1,), steps=(0.1, 0.2), offsets=(0, 1))[0]
    centre = (stepped[0, 5, :2] + stepped[0, 5, 2:]) / 2
    np.testing.assert_allclose(centre, [(1 + 1) * 0.2, 1 * 0.1], rtol=1e-6)   # cell (1, 1)
    assert not grad_op("_contrib_MultiBoxPrior", x)[0].any()
    sym = mx.sym.contrib.MultiBoxPrior(mx.sym.var("data"), sizes=(0.2, 0.3), ratios=(1, 2, 3))
    assert sym.infer_shape(data=(8, 16, 5, 7))[1] == [(1, 5 * 7 * 4, 4)]
    with pytest.raises(MXNetError, match="MultiBoxPrior.*offsets"):
        mx.nd.contrib.MultiBoxPrior(mx.nd.array(x), offsets=(0.5, 1.5))


def test_multibox_target_by_hand():
    """One gt: the best anchor and anchors over the threshold are positive, encoded with variances."""
    anchor = np.array([[[0, 0, .5, .5], [.5, .5, 1, 1], [0, 0, .6, .6], [.8, 0, 1, .2]]], "f4")
    label = np.array([[[2, 0.05, 0.05, 0.55, 0.5], [-1] * 5]], "f4")
    pred = np.zeros((1, 3, 4), "f4")
    loc, mask, cls = run_op("_contrib_MultiBoxTarget", anchor, label, pred, overlap_threshold=0.5)
    np.testing.assert_array_equal(cls, [[3, 0, 3, 0]])
    np.testing.assert_array_equal(mask.reshape(4, 4)[:, 0], [1, 0, 1, 0])
    g, a = label[0, 0, 1:], anchor[0, 0]
    want = [((g[0] + g[2]) - (a[0] + a[2])) / 2 / .5 / .1, ((g[1] + g[3]) - (a[1] + a[3])) / 2 / .5 / .1,
            np.log((g[2] - g[0]) / .5) / .2, np.log((g[3] - g[1]) / .5) / .2]
    np.testing.assert_allclose(loc[0, :4], want, rtol=1e-5)
    # Hard negative mining keeps int(2 * 0.5) = 1 negative: the lowest background probability;
    # the other non-positive anchors are ignored.
    pred[0, 0] = [0, 5, 0, -5]
    _, _, cls = run_op("_contrib_MultiBoxTarget", anchor, label, pred, negative_mining_ratio=0.5,
                       ignore_label=-7)
    np.testing.assert_array_equal(cls, [[3, -7, 3, 0]])
    empty = np.full((1, 2, 5), -1, "f4")
    loc, mask, cls = run_op("_contrib_MultiBoxTarget", anchor, empty, pred)
    assert not loc.any() and not mask.any() and (cls == -1).all()
    assert not any(g.any() for g in grad_op("_contrib_MultiBoxTarget", anchor, label, pred))


def test_multibox_detection_by_hand():
    """Decoding, thresholding, class-wise NMS and the -1 filler rows."""
    anchor = np.array([[[0, 0, .5, .5], [.05, 0, .55, .5], [.5, .5, 1, 1]]], "f4")
    prob = np.array([[[.1, .2, .9], [.8, .7, .05], [.1, .1, .05]]], "f4")      # classes x anchors
    loc = np.zeros((1, 12), "f4")
    out = run_op("_contrib_MultiBoxDetection", prob, loc, anchor, threshold=0.1)[0][0]
    np.testing.assert_allclose(out[0], [0, .8, 0, 0, .5, .5], rtol=1e-6)
    np.testing.assert_allclose(out[1, :2], [-1, .7], rtol=1e-6)           # suppressed by anchor 0
    np.testing.assert_allclose(out[2], [-1] * 6)                          # background row
    kept = run_op("_contrib_MultiBoxDetection", prob, loc, anchor, nms_threshold=0.95)[0][0]
    np.testing.assert_allclose(kept[:2, 0], [0, 0])
    loc[0, 4:8] = [1, 0, np.log(2) / 0.2, 0]
    dec = mx.nd.contrib.MultiBoxDetection(mx.nd.array(prob), mx.nd.array(loc), mx.nd.array(anchor),
                                          clip=False, nms_threshold=0).asnumpy()[0]
    np.testing.assert_allclose(dec[1, 2:], [0.3 + 0.05 - 0.5, 0, 0.3 + 0.05 + 0.5, 0.5], rtol=1e-5)
    assert not any(g.any() for g in grad_op("_contrib_MultiBoxDetection", prob, loc, anchor))
    sym = mx.sym.contrib.MultiBoxDetection(mx.sym.var("c"), mx.sym.var("l"), mx.sym.var("a"))
    assert sym.infer_shape(c=(2, 5, 30), a=(1, 30, 4))[1] == [(2, 30, 6)]
    with pytest.raises(MXNetError, match="MultiBoxDetection.*loc_pred"):
        mx.nd.contrib.MultiBoxDetection(mx.nd.array(prob), mx.nd.zeros((1, 5)), mx.nd.array(anchor))


def test_ssd_head_symbol_runs():
    """Prior -> Target -> Detection as one symbol graph binds, infers shapes and runs forward."""
    data, label, cls_pred, loc_pred = (mx.sym.var(n) for n in ("data", "label", "cls_pred", "loc_pred"))
    anchors = mx.sym.contrib.MultiBoxPrior(data, sizes=(0.3, 0.6), ratios=(1, 2))
    target = mx.sym.contrib.MultiBoxTarget(anchors, label, cls_pred)
    det = mx.sym.contrib.MultiBoxDetection(mx.sym.softmax(cls_pred, axis=1), loc_pred, anchors)
    group = mx.sym.Group(list(target) + [det])
    rng = np.random.RandomState(0)
    feed = {"data": mx.nd.zeros((2, 1, 3, 3)),
            "label": mx.nd.array([[[1, .1, .1, .5, .6]], [[0, .4, .3, .9, .9]]]),
            "cls_pred": mx.nd.array(rng.normal(size=(2, 3, 27))),
            "loc_pred": mx.nd.array(rng.normal(size=(2, 108)))}
    outs = group.bind(mx.cpu(), feed).forward()
    assert [o.shape for o in outs] == [(2, 108), (2, 108), (2, 27), (2, 27, 6)]
    assert (outs[2].asnumpy() > 0).any()


def test_symbol_output_and_argument_names_as_mxnet():
    """Output and argument names of every detection symbol are MXNet 1.9.1's."""
    v, c = mx.sym.var, mx.sym.contrib
    want = [
        (c.box_nms(v("d"), name="n"), ["n_output0"], ["d"]),
        (c.box_iou(v("a"), v("b"), name="i"), ["i_output"], ["a", "b"]),
        (c.bipartite_matching(v("d"), threshold=0.1, name="m"), ["m_output0", "m_output1"], ["d"]),
        (c.box_encode(*[v(n) for n in ("s", "m", "a", "r", "mu", "sd")], name="e"),
         ["e_output0", "e_output1"], ["s", "m", "a", "r", "mu", "sd"]),
        (c.box_decode(v("d"), v("a"), name="dd"), ["dd_output"], ["d", "a"]),
        (c.MultiBoxPrior(v("d"), name="p"), ["p_output"], ["d"]),
        (c.MultiBoxTarget(v("a"), v("l"), v("c"), name="t"),
         ["t_loc_target", "t_loc_mask", "t_cls_target"], ["a", "l", "c"]),
        (c.MultiBoxDetection(v("c"), v("l"), v("a"), name="x"), ["x_output"], ["c", "l", "a"]),
    ]
    for sym, outs, args in want:
        assert (sym.list_outputs(), sym.list_arguments()) == (outs, args)
