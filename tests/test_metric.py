"""Evaluation metrics: values vs numpy formulas and vs MXNet 1.9.1, local/global stats, create, names."""
import math

import numpy as np
import pytest

import mxref as mx
from mxref import metric

# The inputs given to MXNet 1.9.1 for the reference numbers: two batches of (label, pred).
PRED1 = np.array([[0.0378, 0.3865, 0.2172, 0.3585], [0.4680, 0.2577, 0.2398, 0.0345],
                  [0.1192, 0.2220, 0.3017, 0.3570], [0.2316, 0.0401, 0.1752, 0.5531],
                  [0.1316, 0.2788, 0.5742, 0.0154], [0.2578, 0.4079, 0.0989, 0.2355]], np.float32)
LAB1 = np.array([0, 1, 3, 2, 1, 0], np.float32)
PRED2 = np.array([[0.3925, 0.0575, 0.2260, 0.3240], [0.3651, 0.2553, 0.1118, 0.2678],
                  [0.1813, 0.2325, 0.1782, 0.4080], [0.3980, 0.1626, 0.2965, 0.1429],
                  [0.2470, 0.1925, 0.3585, 0.2020]], np.float32)
LAB2 = np.array([3, 3, 1, 0, 2], np.float32)
CLS = [([LAB1], [PRED1]), ([LAB2], [PRED2])]

R1L, R1P = np.array([1., 2., 3.], np.float32), np.array([[1.5], [2.], [2.]], np.float32)
R2L, R2P = np.array([0., 0., 0., 0., 4.], np.float32), np.array([1., -1., 0., 0., 2.], np.float32)
REG = [([R1L], [R1P]), ([R2L], [R2P])]

B1P = np.array([[.3, .7], [.6, .4], [.2, .8], [.9, .1], [.4, .6]], np.float32)
B1L = np.array([1, 0, 0, 1, 1], np.float32)
B2P = np.array([[.1, .9], [.8, .2], [.3, .7]], np.float32)
B2L = np.array([1, 1, 0], np.float32)
BIN = [([B1L], [B1P]), ([B2L], [B2P])]


class FakeND:
    """Stands for an NDArray: metrics must read anything with ``asnumpy()``."""

    def __init__(self, a):
        self._a = np.asarray(a)
        self.shape = self._a.shape
        self.size = self._a.size

    def asnumpy(self):
        return self._a.copy()

    def __len__(self):
        return len(self._a)


def run(m, batches, wrap=np.asarray):
    for labels, preds in batches:
        m.update([wrap(x) for x in labels], [wrap(x) for x in preds])
    return m.get()[1]


# Each value below was produced by MXNet 1.9.1: ``m = mx.metric.create(name, **kw)``, then
# ``m.update([mx.nd.array(l)], [mx.nd.array(p)])`` for each batch, then ``m.get()``.
@pytest.mark.parametrize("name,kw,batches,want", [
    ("acc", {}, CLS, 0.2727272727272727),
    ("top_k_accuracy", {"top_k": 2}, CLS, 0.8181818181818182),
    ("ce", {}, CLS, 1.4442367987199263),
    ("nll_loss", {}, CLS, 1.4442367987199263),
    ("perplexity", {"ignore_label": 1}, CLS, 4.368042845142421),
    ("perplexity", {"ignore_label": None}, CLS, 4.238615990909873),
    ("mae", {}, REG, 0.6500000059604645),
    ("mse", {}, REG, 0.8083333522081375),
    ("rmse", {}, REG, 0.870471179485321),
    ("f1", {"average": "macro"}, BIN, 0.5833333333333333),
    ("f1", {"average": "micro"}, BIN, 0.6),
    ("mcc", {"average": "macro"}, BIN, -0.16666666666666669),
    ("mcc", {"average": "micro"}, BIN, -0.06666666666666667),
])
def test_values_match_mxnet(name, kw, batches, want):
    """Every listed metric gives MXNet 1.9.1's number, from numpy arrays and from NDArray-likes."""
    assert run(metric.create(name, **kw), batches) == pytest.approx(want, rel=1e-5)
    assert run(metric.create(name, **kw), batches, FakeND) == pytest.approx(want, rel=1e-5)


def test_pearson_macro_and_micro_match_mxnet():
    """PearsonCorrelation: MXNet 1.9.1 gives 0.8252449721685874 (macro) and 0.7971498867142988
    (micro) for the two regression batches with 1-D predictions."""
    batches = [([R1L], [R1P.ravel()]), ([R2L], [R2P])]
    assert run(metric.PearsonCorrelation(), batches) == pytest.approx(0.8252449721685874)
    micro = metric.PearsonCorrelation(average="micro")
    assert run(micro, batches) == pytest.approx(0.7971498867142988)
    all_l = np.concatenate([R1L, R2L]).astype(np.float64)
    all_p = np.concatenate([R1P.ravel(), R2P]).astype(np.float64)
    assert micro.get()[1] == pytest.approx(np.corrcoef(all_l, all_p)[0, 1])


def test_accuracy_numpy_formula_and_argmax_rule():
    """Accuracy = mean(argmax(pred) == label); a prediction shaped like the label is used as is."""
    m = metric.Accuracy()
    run(m, CLS)
    want = np.concatenate([PRED1.argmax(1) == LAB1, PRED2.argmax(1) == LAB2]).mean()
    assert m.get() == ("accuracy", pytest.approx(want))
    same = metric.Accuracy()
    same.update([np.array([1, 2, 3])], [np.array([1.7, 2.2, 0.0])])   # truncated to 1, 2, 0
    assert same.get()[1] == pytest.approx(2 / 3)


def test_regression_metrics_average_per_update_call():
    """MSE/RMSE/MAE average over update calls, not samples (item 14)."""
    mse = metric.MSE()
    run(mse, REG)
    per_call = [((R1L[:, None] - R1P) ** 2).mean(), ((R2L - R2P) ** 2).mean()]
    assert mse.get()[1] == pytest.approx(np.mean(per_call))
    assert mse.num_inst == 2
    rmse = metric.RMSE()
    run(rmse, REG)
    assert rmse.get()[1] == pytest.approx(np.mean(np.sqrt(per_call)))


def test_cross_entropy_numpy_formula():
    """CrossEntropy = mean over samples of -log(p[label] + eps)."""
    m = metric.CrossEntropy(eps=1e-3)
    run(m, CLS)
    p = np.concatenate([PRED1[np.arange(6), LAB1.astype(int)], PRED2[np.arange(5), LAB2.astype(int)]])
    assert m.get()[1] == pytest.approx(np.mean(-np.log(p + 1e-3)), rel=1e-6)


def test_empty_metric_is_nan_and_names():
    """An empty metric reports NaN; default names follow MXNet."""
    names = {"acc": "accuracy", "ce": "cross-entropy", "mse": "mse", "rmse": "rmse", "mae": "mae",
             "f1": "f1", "mcc": "mcc", "nll_loss": "nll-loss", "pearsonr": "pearsonr", "loss": "loss"}
    for key, name in names.items():
        got_name, value = metric.create(key).get()
        assert got_name == name and math.isnan(value)
    assert metric.create("top_k_acc", top_k=5).name == "top_k_accuracy_5"
    assert metric.Perplexity(None).name == "perplexity"


def test_local_and_global_statistics():
    """reset_local clears only the local window; get_global still covers everything since reset."""
    m = metric.Accuracy()
    m.update([np.array([0, 1])], [np.array([[1., 0.], [1., 0.]])])
    m.reset_local()
    m.update([np.array([1, 1])], [np.array([[0., 1.], [0., 1.]])])
    assert m.get()[1] == 1.0
    assert m.get_global()[1] == 0.75
    m.reset()
    assert math.isnan(m.get_global()[1])


def test_binary_metrics_reset_local_keep_global_micro():
    """F1 micro: the global score covers all batches, the local one only those after reset_local."""
    f1 = metric.F1(average="micro")
    f1.update([B1L], [B1P])
    f1.reset_local()
    f1.update([B2L], [B2P])
    tp, fp, fn = 1, 1, 1           # batch 2 alone: preds 1,0,1 vs labels 1,1,0
    assert f1.get()[1] == pytest.approx(2 * tp / (2 * tp + fp + fn))
    assert f1.get_global()[1] == pytest.approx(0.6)


def test_binary_metrics_refuse_multiclass():
    """F1 on three label values raises ValueError."""
    with pytest.raises(ValueError, match="binary"):
        metric.F1().update([np.array([0, 1, 2])], [np.eye(3)[:, :2]])


def test_loss_metric_and_shape_check():
    """Loss averages prediction values (MXNet 1.9.1: 2.5 for these); mismatched lists raise."""
    m = metric.Loss()
    m.update(None, [np.array([[1., 2.], [3., 4.5]])])
    m.update(None, np.array([2.]))
    assert m.get() == ("loss", pytest.approx(2.5))
    with pytest.raises(ValueError, match="does not match"):
        metric.Accuracy().update([np.zeros(2), np.zeros(2)], [np.zeros((2, 2))])


def test_custom_metric_and_np():
    """CustomMetric: a float counts once, a (sum, n) tuple adds n; np() keeps the function's name."""
    def mean_abs(label, pred):
        return float(np.abs(label - pred).mean())
    m = metric.np(mean_abs)
    assert m.name == "mean_abs"
    m.update([np.array([1., 2.])], [np.array([2., 2.])])
    m.update([np.array([0.])], [np.array([1.])])
    assert m.get()[1] == pytest.approx((0.5 + 1.0) / 2)
    c = metric.create(lambda lab, p: (float((lab == p).sum()), lab.size))
    assert c.name == "custom(<lambda>)"
    c.update([np.array([1, 2, 3])], [np.array([1, 0, 3])])
    assert c.get()[1] == pytest.approx(2 / 3)
    extra = metric.CustomMetric(mean_abs, allow_extra_outputs=True)
    extra.update([np.zeros(2)], [np.ones(2), np.ones(5)])   # the state output is ignored
    assert extra.get()[1] == 1.0


def test_composite_and_create_forms():
    """create accepts names, aliases, lists, instances and JSON; composite reports lists."""
    comp = metric.create(["acc", metric.MSE()])
    assert isinstance(comp, metric.CompositeEvalMetric)
    assert comp.get()[0] == ["accuracy", "mse"]
    comp.update([np.array([0., 1.])], [np.array([[0.9, 0.1], [0.8, 0.2]])])
    names, values = comp.get()
    want_mse = ((np.array([[0.], [1.]]) - [[.9, .1], [.8, .2]]) ** 2).mean()
    assert values[0] == 0.5 and values[1] == pytest.approx(want_mse)
    assert comp.get_metric(1).name == "mse"
    assert comp.get_name_value()[0] == ("accuracy", 0.5)
    acc = metric.Accuracy()
    assert metric.create(acc) is acc
    assert isinstance(metric.create('["top_k_accuracy", {"top_k": 3}]'), metric.TopKAccuracy)
    rebuilt = metric.create(**metric.TopKAccuracy(top_k=3).get_config())
    assert isinstance(rebuilt, metric.TopKAccuracy) and rebuilt.top_k == 3
    with pytest.raises(ValueError, match="not registered"):
        metric.create("no_such_metric")


def test_update_dict_picks_named_outputs():
    """update_dict uses output_names/label_names to choose arrays."""
    m = metric.Accuracy(output_names=["out"], label_names=["lab"])
    m.update_dict({"lab": np.array([1.]), "other": np.array([0.])},
                  {"junk": np.array([[1., 0.]]), "out": np.array([[0., 1.]])})
    assert m.get()[1] == 1.0


def _rk(pred, label, k):
    """Gorodkin's R_K from one-hot indicators: sum of per-class covariances, normalised."""
    x = np.eye(k)[pred]
    y = np.eye(k)[label]
    xc, yc = x - x.mean(axis=0), y - y.mean(axis=0)
    return (xc * yc).sum() / np.sqrt((xc * xc).sum() * (yc * yc).sum())


def test_pcc_is_mcc_for_two_classes_and_r_k_beyond():
    """PCC: MXNet's docstring example (0.0191775...), equal to MCC; 3 classes match R_K; the
    matrix grows for new classes; local and global statistics split at reset_local."""
    fp, fn, tp, tn = 1000, 1, 10000, 1
    preds = [mx.nd.array([[.3, .7]] * fp + [[.7, .3]] * tn + [[.7, .3]] * fn + [[.3, .7]] * tp)]
    labels = [mx.nd.array([0] * (fp + tn) + [1] * (fn + tp))]
    pcc, mcc = mx.metric.create("pcc"), mx.metric.MCC()
    pcc.update(labels, preds)
    mcc.update(labels, preds)
    assert pcc.get()[1] == pytest.approx(0.01917751877733392) == mcc.get()[1]
    rng = np.random.RandomState(0)
    label, pred = rng.randint(0, 3, 50), rng.randint(0, 3, 50)
    m = mx.metric.PCC()
    m.update([mx.nd.array(label)], [mx.nd.array(pred)])       # class ids, not scores
    assert m.k == 3 and m.get()[1] == pytest.approx(_rk(pred, label, 3))
    m.reset_local()
    assert np.isnan(m.get()[1]) and m.get_global()[1] == pytest.approx(_rk(pred, label, 3))


def test_torch_and_caffe_are_loss_metrics():
    for name in ("torch", "caffe"):
        m = mx.metric.create(name)
        m.update(None, [mx.nd.array([1.0, 3.0])])
        assert m.get() == (name, 2.0)
