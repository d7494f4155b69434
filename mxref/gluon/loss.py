"""Gluon losses: each returns one value per sample (the mean over every axis but ``batch_axis``).

All are HybridBlocks ``loss(pred, label, sample_weight=None)``; ``weight`` is a global scale and
``sample_weight`` is broadcast-multiplied into the element-wise loss before the mean.
"""
from __future__ import annotations

import math
from numbers import Number

from .. import ndarray as nd
from ..base import MXNetError
from .block import HybridBlock

__all__ = ["Loss", "L1Loss", "L2Loss", "SigmoidBinaryCrossEntropyLoss", "SigmoidBCELoss",
           "SoftmaxCrossEntropyLoss", "SoftmaxCELoss", "KLDivLoss", "HuberLoss", "HingeLoss",
           "SquaredHingeLoss", "LogisticLoss", "TripletLoss", "PoissonNLLLoss", "CosineEmbeddingLoss",
           "SDMLLoss"]


def _apply_weighting(F, loss, weight=None, sample_weight=None):
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if not isinstance(weight, Number):
            raise MXNetError(f"Loss: weight must be a number, got {type(weight).__name__}")
        loss = loss * weight
    return loss


def _reshape_like(F, x, y):
    """``x`` in the shape of ``y`` (labels often come as ``(N,)`` for ``(N, 1)`` predictions)."""
    return x.reshape(y.shape) if F is nd else F.reshape_like(x, y)


class Loss(HybridBlock):
    """Base class: keeps ``weight`` and ``batch_axis``."""

    def __init__(self, weight, batch_axis: int, **kwargs):
        super().__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self) -> str:
        return f"{type(self).__name__}(batch_axis={self._batch_axis}, w={self._weight})"

    def _mean(self, F, loss):
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class L2Loss(Loss):
    """``0.5 * (label - pred)^2`` (``weight`` defaults to 1 and is halved)."""

    def __init__(self, weight: float = 1.0, batch_axis: int = 0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.square(label - pred)
        return self._mean(F, _apply_weighting(F, loss, self._weight / 2, sample_weight))


class L1Loss(Loss):
    """``|label - pred|``."""

    def __init__(self, weight=None, batch_axis: int = 0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


class SigmoidBinaryCrossEntropyLoss(Loss):
    """``-(z log p + (1-z) log(1-p))`` with ``p = sigmoid(pred)``, computed stably from the logits
    as ``max(x, 0) - x z + log(1 + exp(-|x|))``; ``from_sigmoid=True`` takes probabilities."""

    def __init__(self, from_sigmoid: bool = False, weight=None, batch_axis: int = 0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F, pred, label, sample_weight=None, pos_weight=None):
        label = _reshape_like(F, label, pred)
        if not self._from_sigmoid:
            softplus = F.Activation(-F.abs(pred), act_type="softrelu")
            if pos_weight is None:
                loss = F.relu(pred) - pred * label + softplus
            else:
                log_weight = 1 + F.broadcast_mul(pos_weight - 1, label)
                loss = pred - pred * label + log_weight * (softplus + F.relu(-pred))
        else:
            eps = 1e-12
            if pos_weight is None:
                loss = -(F.log(pred + eps) * label + F.log(1. - pred + eps) * (1. - label))
            else:
                loss = -(F.broadcast_mul(F.log(pred + eps) * label, pos_weight)
                         + F.log(1. - pred + eps) * (1. - label))
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    """``-sum(label * log_softmax(pred))`` over ``axis``.

    ``sparse_label=True`` (default): labels are class indices; else probability vectors.
    ``from_logits=True``: ``pred`` is already a log-probability.
    """

    def __init__(self, axis: int = -1, sparse_label: bool = True, from_logits: bool = False, weight=None,
                 batch_axis: int = 0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if (F is nd and self._sparse_label and not self._from_logits and sample_weight is None
                and pred.ndim == 2 and self._batch_axis == 0 and self._axis in (-1, 1)):
            # One fused operator instead of log_softmax, pick, negative and mean: a quarter of the
            # engine operations and recorded nodes (traced graphs keep MXNet's operators).
            loss = nd._internal._softmax_cross_entropy_pick(pred, label, axis=self._axis)
            return _apply_weighting(F, loss, self._weight)
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        if self._sparse_label:
            loss = -F.pick(pred, label, axis=self._axis, keepdims=True)
        else:
            label = _reshape_like(F, label, pred)
            loss = -F.sum(pred * label, axis=self._axis, keepdims=True)
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    """``sum(label * (log(label) - pred))``, ``pred`` a log-probability (``from_logits=True``, default).

    NOTE: summed over the non-batch axes, not averaged like the other losses (as MXNet 1.9.1).
    """

    def __init__(self, from_logits: bool = True, axis: int = -1, weight=None, batch_axis: int = 0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.sum(loss, axis=self._batch_axis, exclude=True)


class HuberLoss(Loss):
    """``0.5/rho * d^2`` where ``d = |label - pred| <= rho``, else ``d - 0.5 * rho``."""

    def __init__(self, rho: float = 1, weight=None, batch_axis: int = 0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        loss = F.where(loss > self._rho, loss - 0.5 * self._rho, (0.5 / self._rho) * F.square(loss))
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


class HingeLoss(Loss):
    """``max(0, margin - pred * label)`` with labels in {-1, 1}."""

    def __init__(self, margin: float = 1, weight=None, batch_axis: int = 0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.relu(self._margin - pred * label)
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


class SquaredHingeLoss(HingeLoss):
    """``max(0, margin - pred * label)^2``."""

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.square(F.relu(self._margin - pred * label))
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


class LogisticLoss(Loss):
    """``log(1 + exp(-pred * label))``; ``label_format`` 'signed' ({-1, 1}) or 'binary' ({0, 1})."""

    def __init__(self, weight=None, batch_axis: int = 0, label_format: str = "signed", **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        if label_format not in ("signed", "binary"):
            raise ValueError(f"label_format can only be signed or binary, received {label_format}.")
        self._label_format = label_format

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        if self._label_format == "binary":
            label = 2 * label - 1
        z = pred * label
        loss = F.relu(-z) + F.Activation(-F.abs(z), act_type="softrelu")
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


# -- CTCLoss -------------------------------------------------------------------------------------

__all__ += ["CTCLoss"]


class CTCLoss(Loss):
    """Connectionist temporal classification loss over the ``CTCLoss`` operator, one value per sample.

    ``pred`` is ``(N, T, C)`` (``layout='NTC'``) or ``(T, N, C)`` (``'TNC'``) of unnormalised
    scores whose last class is the blank; ``label`` is ``(N, L)`` (``label_layout='NT'``) or
    ``(L, N)`` (``'TN'``), padded with -1. ``pred_lengths`` / ``label_lengths`` (optional, ``(N,)``)
    give each sample's lengths.
    """

    def __init__(self, layout: str = "NTC", label_layout: str = "NT", weight=None, **kwargs):
        if layout not in ("NTC", "TNC"):
            raise ValueError(f"Only 'NTC' and 'TNC' layouts for pred are supported. Got: {layout}")
        if label_layout not in ("NT", "TN"):
            raise ValueError(f"Only 'NT' and 'TN' layouts for label are supported. Got: {label_layout}")
        self._layout, self._label_layout = layout, label_layout
        super().__init__(weight, label_layout.find("N"), **kwargs)

    def hybrid_forward(self, F, pred, label, pred_lengths=None, label_lengths=None, sample_weight=None):
        if self._layout == "NTC":
            pred = F.swapaxes(pred, dim1=0, dim2=1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, dim1=0, dim2=1)
        inputs = [pred, label] + [x for x in (pred_lengths, label_lengths) if x is not None]
        loss = F.CTCLoss(*inputs, use_data_lengths=pred_lengths is not None,
                         use_label_lengths=label_lengths is not None, blank_label="last")
        return _apply_weighting(F, loss, self._weight, sample_weight)
# -- metric-learning and count losses (MXNet 1.9.1's TripletLoss, PoissonNLLLoss, CosineEmbeddingLoss,
#    SDMLLoss) ----------------------------------------------------------------------------------

class TripletLoss(Loss):
    """``max(sum(|positive - pred|^2) - sum(|negative - pred|^2) + margin, 0)`` over the non-batch
    axes; ``positive`` and ``negative`` are reshaped like ``pred``. One value per sample."""

    def __init__(self, margin: float = 1, weight=None, batch_axis: int = 0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, positive, negative):
        positive = _reshape_like(F, positive, pred)
        negative = _reshape_like(F, negative, pred)
        loss = F.sum(F.square(positive - pred) - F.square(negative - pred), axis=self._batch_axis,
                     exclude=True)
        return _apply_weighting(F, F.relu(loss + self._margin), self._weight, None)


class PoissonNLLLoss(Loss):
    """Poisson negative log-likelihood, averaged over *every* element (a shape ``(1,)`` result)::

        from_logits:   exp(pred) - target * pred
        else:          pred - target * log(pred + epsilon)
        compute_full:  + [target > 1] * (target log(target) - target + 0.5 log(2 pi target))   (Stirling)
    """

    def __init__(self, weight=None, from_logits: bool = True, batch_axis: int = 0, compute_full: bool = False,
                 **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(self, F, pred, target, sample_weight=None, epsilon=1e-08):
        target = _reshape_like(F, target, pred)
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            stirling = target * F.log(target) - target + 0.5 * F.log(2 * math.pi * target)
            loss = loss + stirling * (target > 1)
        return F.mean(_apply_weighting(F, loss, self._weight, sample_weight))


class CosineEmbeddingLoss(Loss):
    """With ``c = cos(input1_i, input2_i)`` over the last axis (norms floored at 1e-12)::

        loss_i = 1 - c               if label_i == 1
               = max(0, c - margin)  if label_i == -1         (0 for any other label)

    Shape ``(batch, 1)``, as MXNet returns it (no mean).
    """

    def __init__(self, weight=None, batch_axis: int = 0, margin: float = 0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, input1, input2, label, sample_weight=None):
        input1 = _reshape_like(F, input1, input2)
        label = F.reshape(label, shape=(-1, 1))
        norms = F.reshape(F.norm(input1, axis=-1) * F.norm(input2, axis=-1), shape=(-1, 1))
        cos = F.reshape(F.sum(input1 * input2, axis=-1), shape=(-1, 1)) / F.broadcast_maximum(
            norms, F.ones_like(norms) * 1e-12)
        loss = (1 - cos) * (label == 1) + F.relu((label == -1) * (cos - self._margin))
        return _apply_weighting(F, loss, self._weight, sample_weight)


class SDMLLoss(Loss):
    """Smoothed Deep Metric Learning loss (Bonadiman et al., 2019) for aligned batches ``x1, x2 (B, D)``,
    where ``x2[i]`` is the positive for ``x1[i]`` and every other row a negative::

        d_ij = |x1_i - x2_j|^2,   p_i = log_softmax(-d_i),   q = eye(B) (1 - s) + (1 - eye(B)) s / (B - 1)
        loss_i = KLDivLoss(from_logits=True)(p_i, q_i)

    NOTE: like MXNet's, it reads ``x1.shape``, so it runs on NDArrays (not on a hybridized graph),
    and ``weight`` is accepted but not applied.
    """

    def __init__(self, smoothing_parameter: float = 0.3, weight=1., batch_axis: int = 0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self.kl_loss = KLDivLoss(from_logits=True)
        self.smoothing_parameter = smoothing_parameter

    def _compute_distances(self, x1, x2):
        if x1.shape != x2.shape:
            raise MXNetError(f"SDMLLoss: x1 {x1.shape} and x2 {x2.shape} must have the same shape")
        b, d = x1.shape
        diff = x1.expand_dims(1).broadcast_to((b, b, d)) - x2.expand_dims(0).broadcast_to((b, b, d))
        return (diff ** 2).sum(axis=2)

    def _compute_labels(self, F, batch_size):
        gold = F.eye(batch_size)
        s = self.smoothing_parameter
        return gold * (1 - s) + (1 - gold) * s / (batch_size - 1)

    def hybrid_forward(self, F, x1, x2):
        labels = self._compute_labels(F, x1.shape[0]).astype(x1.dtype)   # float64 batches too
        distances = self._compute_distances(x1, x2)
        log_probabilities = F.log_softmax(-distances, axis=1)
        return self.kl_loss(log_probabilities, labels.as_in_context(distances.context))
