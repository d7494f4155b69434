"""BatchProcessor: what the Estimator does with one batch (forward, loss, backward), as an override point."""
from __future__ import annotations

from .... import autograd
from ...utils import split_and_load

__all__ = ["BatchProcessor"]


class BatchProcessor:
    """The default ``fit_batch`` / ``evaluate_batch`` of an Estimator.

    Subclass it and hand the instance to ``Estimator(batch_processor=...)`` to change how a batch
    is trained or evaluated (several inputs, a different label layout, gradient accumulation, ...).
    Both methods return ``(data, label, pred, loss)``, each a list with one array per context.
    """

    def _get_data_and_label(self, batch, ctx, batch_axis=0):
        """Split the batch's data (``batch[0]``) and label (``batch[1]``) across ``ctx``."""
        data = split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis)
        label = split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis)
        return data, label

    def evaluate_batch(self, estimator, val_batch, batch_axis=0):
        """Predict with ``estimator.val_net`` and score with ``estimator.val_loss`` (no autograd)."""
        data, label = self._get_data_and_label(val_batch, estimator.context, batch_axis)
        pred = [estimator.val_net(x) for x in data]
        loss = [estimator.val_loss(y_hat, y) for y_hat, y in zip(pred, label)]
        return data, label, pred, loss

    def fit_batch(self, estimator, train_batch, batch_axis=0):
        """Forward and loss under ``autograd.record()``, then backward; the Trainer steps later.

        The optimizer step is not taken here: ``GradientUpdateHandler`` takes it at batch end, so a
        handler can inspect or change the gradients first.
        """
        data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
        with autograd.record():
            pred = [estimator.net(x) for x in data]
            loss = [estimator.loss(y_hat, y) for y_hat, y in zip(pred, label)]
        for value in loss:
            value.backward()
        return data, label, pred, loss
