"""Online evaluation metrics (``mx.metric``): accumulate over batches, report ``(name, value)``.

Every metric keeps a *local* sum and count (cleared by ``reset_local``, e.g. every N batches for
logging) and a *global* one (cleared only by ``reset``, read by ``get_global``). Labels and
predictions may be NDArrays or numpy arrays; they are read with ``.asnumpy()`` when present.

NOTE: ``MSE``, ``RMSE`` and ``MAE`` average per ``update`` call (each call counts once, whatever
its batch size), and ``Accuracy`` takes the argmax only when prediction and label shapes differ.
An empty metric reports NaN.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from typing import Callable, List, Optional, Tuple

import numpy

from . import registry

__all__ = ["EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1", "MCC",
           "Perplexity", "MAE", "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood",
           "PearsonCorrelation", "Loss", "CustomMetric", "np", "create", "register", "alias",
           "check_label_shapes"]


def _is_array(x) -> bool:
    return hasattr(x, "asnumpy") or isinstance(x, numpy.ndarray)


def _np(x) -> numpy.ndarray:
    return x.asnumpy() if hasattr(x, "asnumpy") else numpy.asarray(x)


def check_label_shapes(labels, preds, wrap: bool = False, shape: bool = False):
    """Check that labels and predictions agree in number (or, with ``shape=True``, in shape).

    ``wrap=True`` turns a single array into a one-element list. Raises ``ValueError`` on mismatch.
    """
    if shape:
        label_shape, pred_shape = labels.shape, preds.shape
    else:
        label_shape, pred_shape = len(labels), len(preds)
    if label_shape != pred_shape:
        raise ValueError(f"Shape of labels {label_shape} does not match shape of predictions {pred_shape}")
    if wrap:
        labels = [labels] if _is_array(labels) else labels
        preds = [preds] if _is_array(preds) else preds
    return labels, preds


class EvalMetric:
    """Base class: ``update(labels, preds)`` accumulates, ``get()`` reports ``(name, value)``.

    Parameters
    ----------
    name : str
        The name shown in logs (``'accuracy'``, ``'mse'``, ...).
    output_names, label_names : list of str, optional
        Which predictions / labels ``update_dict`` passes on (default: all, in order).
    """

    def __init__(self, name: str, output_names: Optional[List[str]] = None,
                 label_names: Optional[List[str]] = None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return f"EvalMetric: {dict(self.get_name_value())}"

    def get_config(self) -> dict:
        """The constructor arguments, such that ``create(**config)`` rebuilds the metric."""
        config = dict(self._kwargs)
        config.update({"metric": type(self).__name__, "name": self.name,
                       "output_names": self.output_names, "label_names": self.label_names})
        return config

    def update_dict(self, label: dict, pred: dict) -> None:
        """``update`` with name -> array mappings, picking ``label_names`` / ``output_names``."""
        outs, labs = self.output_names, self.label_names
        preds = [pred[n] for n in outs] if outs is not None else list(pred.values())
        labels = [label[n] for n in labs] if labs is not None else list(label.values())
        self.update(labels, preds)

    def update(self, labels, preds) -> None:
        """Accumulate one batch: ``labels`` and ``preds`` are lists of arrays (or single arrays)."""
        raise NotImplementedError()

    def _add(self, value: float, count) -> None:
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def reset(self) -> None:
        """Clear local and global statistics."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self) -> None:
        """Clear the local statistics only."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self) -> Tuple[str, float]:
        """``(name, value)`` over the batches since the last ``reset_local``; NaN when empty."""
        if self.num_inst == 0:
            return self.name, float("nan")
        return self.name, self.sum_metric / self.num_inst

    def get_global(self) -> Tuple[str, float]:
        """``(name, value)`` over the batches since the last ``reset``; NaN when empty."""
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return self.name, float("nan")
        return self.name, self.global_sum_metric / self.global_num_inst

    @staticmethod
    def _pairs(name, value):
        names = name if isinstance(name, list) else [name]
        values = value if isinstance(value, list) else [value]
        return list(zip(names, values))

    def get_name_value(self) -> List[Tuple[str, float]]:
        """``get()`` as a list of ``(name, value)`` pairs."""
        return self._pairs(*self.get())

    def get_global_name_value(self) -> List[Tuple[str, float]]:
        """``get_global()`` as a list of ``(name, value)`` pairs."""
        return self._pairs(*self.get_global())


register = registry.get_register_func(EvalMetric, "metric")
alias = registry.get_alias_func(EvalMetric, "metric")
_create = registry.get_create_func(EvalMetric, "metric")


def create(metric, *args, **kwargs) -> EvalMetric:
    """A metric from a name (``'acc'``, ``'mse'``, ...), an instance, a list (a composite) or a
    function ``feval(label, pred)`` (a ``CustomMetric``). Extra arguments go to the constructor."""
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    return _create(metric, *args, **kwargs)


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get()`` returns lists of names and values."""

    def __init__(self, metrics=None, name: str = "composite", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.metrics = [create(m) for m in (metrics or [])]

    def add(self, metric) -> None:
        """Add a child metric (an instance or anything ``create`` accepts)."""
        self.metrics.append(create(metric))

    def get_metric(self, index: int) -> EvalMetric:
        """The child metric at ``index``."""
        if not -len(self.metrics) <= index < len(self.metrics):
            raise ValueError(f"Metric index {index} is out of range 0 and {len(self.metrics)}")
        return self.metrics[index]

    def update_dict(self, labels: dict, preds: dict) -> None:
        if self.label_names is not None:
            labels = OrderedDict(i for i in labels.items() if i[0] in self.label_names)
        if self.output_names is not None:
            preds = OrderedDict(i for i in preds.items() if i[0] in self.output_names)
        for m in self.metrics:
            m.update_dict(labels, preds)

    def update(self, labels, preds) -> None:
        for m in self.metrics:
            m.update(labels, preds)

    def reset(self) -> None:
        for m in getattr(self, "metrics", ()):   # called by the base __init__ before .metrics exists
            m.reset()

    def reset_local(self) -> None:
        for m in self.metrics:
            m.reset_local()

    def _collect(self, getter):
        names, values = [], []
        for m in self.metrics:
            name, value = getter(m)
            names.extend(name if isinstance(name, list) else [name])
            values.extend(value if isinstance(value, list) else [value])
        return names, values

    def get(self):
        return self._collect(lambda m: m.get())

    def get_global(self):
        return self._collect(lambda m: m.get_global())

    def get_config(self) -> dict:
        config = super().get_config()
        config["metrics"] = [m.get_config() for m in self.metrics]
        return config


@register
@alias("acc")
class Accuracy(EvalMetric):
    """Fraction of samples whose predicted class equals the label.

    When a prediction's shape differs from its label's, the class is the argmax over ``axis``;
    otherwise the prediction already holds class indices. Both are truncated to int32.
    """

    def __init__(self, axis: int = 1, name: str = "accuracy", output_names=None, label_names=None):
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _np(label), _np(pred)
            if pred.shape != label.shape:
                pred = numpy.argmax(pred, axis=self.axis)
            pred = pred.astype("int32").ravel()
            label = label.astype("int32").ravel()
            check_label_shapes(label, pred)
            self._add(int((pred == label).sum()), len(pred))


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the ``top_k`` highest-scored classes.

    The name gets the suffix ``_<top_k>`` (``'top_k_accuracy_5'``).
    """

    def __init__(self, top_k: int = 1, name: str = "top_k_accuracy", output_names=None,
                 label_names=None):
        super().__init__(name, top_k=top_k, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.top_k = top_k
        if self.top_k <= 1:
            raise ValueError("Please use Accuracy if top_k is no more than 1")
        self.name += f"_{self.top_k}"

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            pred = _np(pred).astype("float32")
            if pred.ndim > 2:
                raise ValueError(f"TopKAccuracy: predictions must have at most 2 dims, got {pred.shape}")
            label = _np(label).astype("int32").ravel()
            check_label_shapes(label, pred)
            order = numpy.argpartition(pred, -min(self.top_k, pred.shape[-1]), axis=-1)
            if pred.ndim == 1:
                correct = int((order == label).sum())
            else:
                k = min(pred.shape[1], self.top_k)
                correct = int((order[:, pred.shape[1] - k:] == label[:, None]).sum())
            self._add(correct, pred.shape[0])


class _BinaryStats:
    """Confusion counts (local and global) of a binary classifier; predictions are argmax over axis 1."""

    def __init__(self):
        self.local = numpy.zeros(4, dtype=numpy.int64)    # tp, fp, fn, tn
        self.glob = numpy.zeros(4, dtype=numpy.int64)

    def update(self, label, pred, who: str) -> None:
        pred, label = _np(pred), _np(label).astype("int32")
        check_label_shapes(label, pred)
        if len(numpy.unique(label)) > 2:
            raise ValueError(f"{who} currently only supports binary classification.")
        p = numpy.argmax(pred, axis=1) == 1
        t = label.ravel() == 1
        counts = numpy.array([(p & t).sum(), (p & ~t).sum(), (~p & t).sum(), (~p & ~t).sum()])
        self.local += counts
        self.glob += counts

    @staticmethod
    def fscore(c) -> float:
        tp, fp, fn, _ = (float(x) for x in c)
        precision = tp / (tp + fp) if tp + fp > 0 else 0.0
        recall = tp / (tp + fn) if tp + fn > 0 else 0.0
        return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0

    @staticmethod
    def mcc(c) -> float:
        tp, fp, fn, tn = (float(x) for x in c)
        if tp + fp + fn + tn == 0:
            return 0.0
        # Zero factors in the denominator are replaced by 1 (MXNet's convention).
        denom = 1.0
        for t in (tp + fp, tp + fn, tn + fp, tn + fn):
            denom *= t if t != 0 else 1.0
        return (tp * tn - fp * fn) / math.sqrt(denom)


class _BinaryMetric(EvalMetric):
    """F1 / MCC: ``average='macro'`` averages the per-batch score, 'micro' scores all counts at once."""

    _score: Callable = None

    def __init__(self, name, output_names=None, label_names=None, average="macro"):
        if average not in ("macro", "micro"):
            raise ValueError(f"average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        self._stats = _BinaryStats()
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self._stats.update(label, pred, type(self).__name__)
        s = self._stats
        if self.average == "macro":
            self._add(type(self)._score(s.local), 1)
            s.local[:] = 0
            s.glob[:] = 0
        else:
            n, gn = int(s.local.sum()), int(s.glob.sum())
            self.sum_metric, self.num_inst = type(self)._score(s.local) * n, n
            self.global_sum_metric, self.global_num_inst = type(self)._score(s.glob) * gn, gn

    def reset(self) -> None:
        super().reset()
        self._stats = _BinaryStats()

    def reset_local(self) -> None:
        super().reset_local()
        self._stats.local[:] = 0


@register
class F1(_BinaryMetric):
    """F1 score ``2 * precision * recall / (precision + recall)`` of a binary classifier."""

    _score = _BinaryStats.fscore

    def __init__(self, name: str = "f1", output_names=None, label_names=None, average: str = "macro"):
        super().__init__(name, output_names, label_names, average)


@register
class MCC(_BinaryMetric):
    """Matthews correlation ``(tp*tn - fp*fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn))``, binary only."""

    _score = _BinaryStats.mcc

    def __init__(self, name: str = "mcc", output_names=None, label_names=None, average: str = "macro"):
        super().__init__(name, output_names, label_names, average)


@register
class Perplexity(EvalMetric):
    """``exp(-mean(log p(label)))`` over all non-ignored labels; ``pred`` holds probabilities on ``axis``."""

    def __init__(self, ignore_label: Optional[int], axis: int = -1, name: str = "perplexity",
                 output_names=None, label_names=None):
        super().__init__(name, ignore_label=ignore_label, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds) -> None:
        if len(labels) != len(preds):
            raise ValueError(f"Perplexity: {len(labels)} labels but {len(preds)} predictions")
        loss, num = 0.0, 0
        for label, pred in zip(labels, preds):
            label, pred = _np(label), _np(pred)
            classes = pred.shape[self.axis]
            if label.size * classes != pred.size:
                raise ValueError(f"shape mismatch: {label.shape} vs. {pred.shape}")
            probs = numpy.moveaxis(pred, self.axis, -1).reshape(-1, classes)
            label = label.reshape(-1)
            # Out-of-range labels are clipped, as nd.pick(mode="clip") does.
            index = numpy.clip(label.astype("int64"), 0, classes - 1)[:, None]
            p = numpy.take_along_axis(probs, index, axis=1)[:, 0]
            if self.ignore_label is not None:
                ignore = label == self.ignore_label
                num -= int(ignore.sum())
                p = numpy.where(ignore, numpy.ones_like(p), p)
            loss -= float(numpy.log(numpy.maximum(p, p.dtype.type(1e-10))).sum())
            num += p.size
        self._add(loss, num)

    def get(self):
        if self.num_inst == 0:
            return self.name, float("nan")
        return self.name, math.exp(self.sum_metric / self.num_inst)

    def get_global(self):
        if self.global_num_inst == 0:
            return self.name, float("nan")
        return self.name, math.exp(self.global_sum_metric / self.global_num_inst)


class _Regression(EvalMetric):
    """MAE / MSE / RMSE: one value per (label, pred) pair of each ``update``, averaged over pairs."""

    def __init__(self, name, output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    @staticmethod
    def _value(diff: numpy.ndarray) -> float:
        raise NotImplementedError

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _np(label), _np(pred)
            # 1-D arrays become columns, so (n,) labels against (n, 1) predictions compare per row.
            label = label.reshape(label.shape[0], 1) if label.ndim == 1 else label
            pred = pred.reshape(pred.shape[0], 1) if pred.ndim == 1 else pred
            self._add(self._value(label - pred), 1)


@register
class MAE(_Regression):
    """Mean absolute error, averaged per update call."""

    def __init__(self, name: str = "mae", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _value(diff):
        return numpy.abs(diff).mean()


@register
class MSE(_Regression):
    """Mean squared error, averaged per update call."""

    def __init__(self, name: str = "mse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _value(diff):
        return (diff ** 2.0).mean()


@register
class RMSE(_Regression):
    """Root mean squared error of each update call, averaged over calls."""

    def __init__(self, name: str = "rmse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _value(diff):
        return numpy.sqrt((diff ** 2.0).mean())


@register
@alias("ce")
class CrossEntropy(EvalMetric):
    """Mean of ``-log(p[label] + eps)`` over samples; ``pred`` is ``(batch, classes)`` probabilities."""

    def __init__(self, eps: float = 1e-12, name: str = "cross-entropy", output_names=None,
                 label_names=None):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _np(label).ravel(), _np(pred)
            if label.shape[0] != pred.shape[0]:
                raise ValueError(f"{self.name}: {label.shape[0]} labels for {pred.shape[0]} predictions")
            prob = pred[numpy.arange(label.shape[0]), label.astype(numpy.int64)]
            self._add((-numpy.log(prob + self.eps)).sum(), label.shape[0])


@register
@alias("nll_loss")
class NegativeLogLikelihood(CrossEntropy):
    """Negative log-likelihood: the same sum as ``CrossEntropy``, named ``'nll-loss'``."""

    def __init__(self, eps: float = 1e-12, name: str = "nll-loss", output_names=None, label_names=None):
        super().__init__(eps=eps, name=name, output_names=output_names, label_names=label_names)


@register
@alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of labels and predictions.

    ``average='macro'`` averages the per-pair correlation; ``'micro'`` correlates everything seen
    so far, with running means and co-moments (Chan et al.'s batched update, exact per batch).
    """

    def __init__(self, name: str = "pearsonr", output_names=None, label_names=None,
                 average: str = "macro"):
        if average not in ("macro", "micro"):
            raise ValueError(f"average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def reset(self) -> None:
        super().reset()
        self._n, self._mean_l, self._mean_p = 0, 0.0, 0.0
        self._m2_l, self._m2_p, self._co = 0.0, 0.0, 0.0

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            check_label_shapes(label, pred, False, True)
            label = _np(label).ravel().astype(numpy.float64)
            pred = _np(pred).ravel().astype(numpy.float64)
            if self.average == "macro":
                self._add(numpy.corrcoef(pred, label)[0, 1], 1)
                continue
            self.num_inst += 1
            self.global_num_inst += 1
            n = self._n + label.size
            new_mean_l = self._mean_l + (label - self._mean_l).sum() / n
            new_mean_p = self._mean_p + (pred - self._mean_p).sum() / n
            # Old mean on one side, new mean on the other: exact for a whole batch at once.
            self._co += ((label - new_mean_l) * (pred - self._mean_p)).sum()
            self._m2_l += ((label - self._mean_l) * (label - new_mean_l)).sum()
            self._m2_p += ((pred - self._mean_p) * (pred - new_mean_p)).sum()
            self._n, self._mean_l, self._mean_p = n, new_mean_l, new_mean_p

    def get(self):
        if self.num_inst == 0:
            return self.name, float("nan")
        if self.average == "macro":
            return self.name, self.sum_metric / self.num_inst
        return self.name, self._co / math.sqrt(self._m2_p * self._m2_l)

    def get_global(self):
        return self.get() if self.average == "micro" else super().get_global()


@register
class Loss(EvalMetric):
    """Mean of the predictions themselves (the outputs are losses); labels are ignored."""

    def __init__(self, name: str = "loss", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, _, preds) -> None:
        for pred in ([preds] if _is_array(preds) else preds):
            pred = _np(pred)
            self._add(float(pred.sum()), pred.size)


@register
class Torch(Loss):
    """``Loss`` under the name MXNet gave losses computed by Torch criterions."""

    def __init__(self, name: str = "torch", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """``Loss`` under the name MXNet gave losses computed by Caffe layers."""

    def __init__(self, name: str = "caffe", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class PCC(EvalMetric):
    """Multiclass Matthews correlation (Gorodkin's R_K) from a K x K confusion matrix ``C``
    (rows: predicted class, columns: true class), with ``n = sum C``, ``x = C 1``, ``y = 1ᵀ C``::

        PCC = (n tr(C) - x·y) / sqrt((n² - x·x) (n² - y·y))

    Equals MCC for two classes; ``K`` grows with the largest class seen. NaN while a side of the
    matrix is constant. Predictions are class scores (argmax is taken) or class ids.
    """

    def __init__(self, name: str = "pcc", output_names=None, label_names=None, has_global_stats=True):
        self.k = 2
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=has_global_stats)

    def reset(self) -> None:
        self.global_num_inst = 0
        self.gcm = numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self) -> None:
        self.num_inst = 0
        self.lcm = numpy.zeros((self.k, self.k))

    @staticmethod
    def _corr(cm) -> float:
        n, x, y = cm.sum(), cm.sum(axis=1), cm.sum(axis=0)
        cov_xx, cov_yy = numpy.sum(x * (n - x)), numpy.sum(y * (n - y))
        if cov_xx == 0 or cov_yy == 0:
            return float("nan")
        return float(numpy.sum(cm.diagonal() * n - x * y) / math.sqrt(cov_xx * cov_yy))

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = _np(label).astype(numpy.int64).ravel()
            pred = _np(pred)
            pred = (pred.argmax(axis=1) if pred.shape != label.shape else pred).astype(numpy.int64).ravel()
            top = int(max(pred.max(initial=0), label.max(initial=0)))
            if top >= self.k:                       # a class not seen before: grow both matrices
                grow = top + 1 - self.k
                self.lcm = numpy.pad(self.lcm, ((0, grow), (0, grow)))
                self.gcm = numpy.pad(self.gcm, ((0, grow), (0, grow)))
                self.k += grow
            batch = numpy.zeros((self.k, self.k))
            numpy.add.at(batch, (pred, label), 1)
            self.lcm += batch
            self.gcm += batch
        self.num_inst += 1
        self.global_num_inst += 1

    @property
    def sum_metric(self) -> float:
        return self._corr(self.lcm) * self.num_inst

    @sum_metric.setter
    def sum_metric(self, value) -> None:      # EvalMetric.reset assigns it; the matrix is the state
        pass

    @property
    def global_sum_metric(self) -> float:
        return self._corr(self.gcm) * self.global_num_inst

    @global_sum_metric.setter
    def global_sum_metric(self, value) -> None:
        pass


@register
class CustomMetric(EvalMetric):
    """A metric from ``feval(label, pred)`` on numpy arrays, returning a value or ``(sum, count)``.

    Without ``name``, the name is ``feval.__name__`` (``'custom(<lambda>)'`` for lambdas).
    ``allow_extra_outputs`` lets predictions outnumber labels (RNN states among the outputs).
    """

    def __init__(self, feval: Callable, name: Optional[str] = None, allow_extra_outputs: bool = False,
                 output_names=None, label_names=None):
        if name is None:
            name = feval.__name__
            if "<" in name:
                name = f"custom({name})"
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names, has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds) -> None:
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels):
            result = self._feval(_np(label), _np(pred))
            if isinstance(result, tuple):
                self._add(*result)
            else:
                self._add(result, 1)

    def get_config(self):
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval: Callable, name: Optional[str] = None, allow_extra_outputs: bool = False) -> CustomMetric:
    """A ``CustomMetric`` from a function of numpy ``(label, pred)`` returning a float."""
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
