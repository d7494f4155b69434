"""Metric checks shared by the Estimator and its event handlers."""
from __future__ import annotations

import warnings
from typing import List

import numpy as np

from ....metric import Accuracy, CompositeEvalMetric, EvalMetric
from ...loss import SoftmaxCrossEntropyLoss

__all__: List[str] = []


def _check_metrics(metrics) -> List[EvalMetric]:
    """``metrics`` as a flat list of EvalMetric (a CompositeEvalMetric is opened up)."""
    if isinstance(metrics, CompositeEvalMetric):
        return [m for metric in metrics.metrics for m in _check_metrics(metric)]
    if isinstance(metrics, EvalMetric):
        return [metrics]
    metrics = list(metrics or [])
    if not all(isinstance(metric, EvalMetric) for metric in metrics):
        raise ValueError("metrics must be a Metric or a list of Metric, "
                         f"refer to mxnet.metric.EvalMetric: {metrics}")
    return metrics


def _metric_references(handler):
    """The EvalMetric objects a handler holds in attributes named ``*metric*`` or ``*monitor*``."""
    for attribute in dir(handler):
        if "metric" not in attribute and "monitor" not in attribute:
            continue
        reference = getattr(handler, attribute, None)
        # NOTE: only metric objects count; ``monitor_op`` (a numpy ufunc) also matches by name
        for item in reference if isinstance(reference, (list, tuple)) else [reference]:
            if isinstance(item, EvalMetric):
                yield item


def _check_handler_metric_ref(handler, known_metrics) -> None:
    """Refuse a handler that watches a metric the Estimator never updates (its value stays NaN)."""
    for metric in _metric_references(handler):
        if metric not in known_metrics:
            raise ValueError(
                f"Event handler {type(handler).__name__} refers to a metric instance {metric} outside of "
                "the known training and validation metrics. Please use the metrics from "
                "estimator.train_metrics and estimator.val_metrics instead.")


def _suggest_metric_for_loss(loss):
    """The metric that goes with a loss by default: accuracy for softmax cross-entropy."""
    if isinstance(loss, SoftmaxCrossEntropyLoss):
        return Accuracy()
    return None


def _monitor_op(monitor: EvalMetric, mode: str, who: str):
    """``np.greater`` or ``np.less``: how ``who`` decides that ``monitor`` improved.

    ``'auto'`` picks ``greater`` for names holding ``acc`` or ``f1`` and ``less`` otherwise.
    NOTE: MXNet 1.9.1 tests ``'acc' or 'f1' in name``, which is always true, so it maximizes a
    monitored loss in auto mode; mxref does what the documentation says.
    """
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{who} mode {mode} is unknown, fallback to auto mode. {who} will use max mode "
                      "for f1 and accuracy metric comparison and use min mode otherwise",
                      RuntimeWarning, stacklevel=2)
        mode = "auto"
    if mode == "min":
        return np.less
    if mode == "max":
        return np.greater
    name = monitor.get()[0]
    if "acc" in name.lower() or "f1" in name.lower():
        warnings.warn(f"`greater` operator will be used to determine if {name} has improved. "
                      "Please specify `mode='min'` to use the `less` operator. "
                      "Specify `mode='max'` to disable this warning.", stacklevel=2)
        return np.greater
    warnings.warn(f"`less` operator will be used to determine if {name} has improved. "
                  "Please specify `mode='max'` to use the `greater` operator. "
                  "Specify `mode='min'` to disable this warning.", stacklevel=2)
    return np.less
