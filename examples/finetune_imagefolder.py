"""Fine-tune a model-zoo ResNet-18 on an image folder with the Gluon Estimator.

    python examples/finetune_imagefolder.py [--workdir DIR] [--image-size 32] [--epochs 4]

Fine-tuning reuses a network trained on one task as the starting point for another: keep its
feature extractor (``net.features``), put a new output layer (``net.output``) for the new classes
on top, and train mostly (here: only) the new layer. It pays when the new task has few labels.

1. Data. The bundled 8x8 digits are written as PNG files (``--image-size`` pixels square) into
   two image folders: ``pretrain/`` holds digits 0-4, ``finetune/`` digits 5-9, with only
   ``--per-class`` training images each (the "few labels" task). ``ImageFolderDataset`` reads
   them (grayscale PNGs come back as 3 channels) and ``transforms`` make normalized CHW tensors.
2. The body. If ``$MXNET_HOME/models`` holds MXNet's published ``resnet18_v1-a0666292.params``
   (ImageNet weights; mxref never downloads), ``resnet18_v1(pretrained=True)`` supplies it.
   Otherwise (the usual offline case) the example makes its own "pretrained" model: it trains
   ``resnet18_v1(classes=5)`` on digits 0-4 and saves ``net.features``' parameters. Digits 0-4
   teach strokes and loops that digits 5-9 are made of, which ImageNet photographs of 32x32
   pixels would teach less well anyway.
3. Fine-tuning. ``resnet18_v1(classes=5)`` for digits 5-9 loads those features, freezes them
   (``grad_req='null'``: no gradient, no update; ``--train-all`` trains them too, at a tenth of
   the head's learning rate, slower) and trains the new head with an ``Estimator``: a custom
   ``BatchProcessor`` runs the frozen body in inference mode, a progress bar per epoch, validation
   after each epoch, and a ``CheckpointHandler`` that keeps the parameters of the best validation
   accuracy, which are reloaded at the end. ``--compare-scratch`` trains the same head on frozen
   *random* features, to see what the pretraining bought.
4. A plot of loss and accuracy per epoch, ``finetune_history.png`` in ``--workdir`` (or in the current
   folder when the work folder is a temporary one), when matplotlib is installed.
"""
import argparse
import os
import tempfile
import time
import warnings

import numpy as np

import mxref as mx
from mxref import autograd, gluon
from mxref.gluon.contrib.estimator import (
    BatchProcessor,
    CheckpointHandler,
    EpochEnd,
    Estimator,
    LoggingHandler,
)
from mxref.gluon.data.vision import ImageFolderDataset, transforms
from mxref.gluon.model_zoo import model_store, vision
from mxref.io.digits_images import save_digit_images

# ImageNet statistics: normalize as the body was trained (the digits body is trained with them too)
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def write_folders(workdir, size, per_class, pretrain_per_class):
    """``workdir/{pretrain,finetune}/{train,val}/<digit>/*.png``; returns the four folders."""
    folders = {}
    tasks = (("pretrain", range(5), pretrain_per_class), ("finetune", range(5, 10), per_class))
    for task, digits, limit in tasks:
        for split in ("train", "val"):
            root = os.path.join(workdir, task, split)
            save_digit_images(root, split, size, digits, per_class=limit if split == "train" else None)
            folders[task, split] = root
    return folders


def loaders(folders, task, batch_size):
    to_tensor = transforms.Compose([transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    train = ImageFolderDataset(folders[task, "train"]).transform_first(to_tensor)
    val = ImageFolderDataset(folders[task, "val"]).transform_first(to_tensor)
    return (gluon.data.DataLoader(train, batch_size, shuffle=True),
            gluon.data.DataLoader(val, batch_size))


def quiet_estimator(net, trainer, show_log, batch_processor=None):
    est = Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer,
                    batch_processor=batch_processor)
    if not show_log:
        est.logger.handlers.clear()
    return est


class FrozenBody(BatchProcessor):
    """``fit_batch`` for a frozen body: the body runs outside ``autograd.record()``, so in inference
    mode (BatchNorm normalizes with its running statistics, exactly as at validation, instead of
    each batch's own) and without recording a graph to differentiate; only the head is recorded."""

    def fit_batch(self, estimator, train_batch, batch_axis=0):
        data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
        features = [estimator.net.features(x) for x in data]
        with autograd.record():
            pred = [estimator.net.output(f) for f in features]
            loss = [estimator.loss(p, y) for p, y in zip(pred, label)]
        for value in loss:
            value.backward()
        return data, label, pred, loss


class History(EpochEnd):
    """Records the training and validation metrics at every epoch end (after validation ran)."""

    def __init__(self, est):
        self.est, self.rows = est, []

    def epoch_end(self, estimator, *args, **kwargs):
        self.rows.append({m.name: m.get()[1] for m in self.est.train_metrics + self.est.val_metrics})
        return False


def pretrained_features(folders, args):
    """The body's parameters file and a sentence saying where it came from."""
    try:
        path = model_store.get_model_file("resnet18_v1")
    except mx.MXNetError:
        path = None
    if path is not None and not args.no_zoo:
        net = vision.resnet18_v1(pretrained=True)
        out = os.path.join(args.workdir, "resnet18_v1_imagenet-features.params")
        net.features.save_parameters(out)
        return out, f"ImageNet weights from {path}"
    print(f"no {model_store.default_root()}/resnet18_v1-{model_store.short_hash('resnet18_v1')}.params: "
          "pretraining the body on digits 0-4 instead")
    train, val = loaders(folders, "pretrain", args.batch_size)
    net = vision.resnet18_v1(classes=5)
    net.initialize(mx.init.Xavier(magnitude=2.0))
    net.hybridize()
    # Adam: a deep network trained from scratch for a couple of epochs needs its per-weight step sizes
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": args.pretrain_lr})
    est = quiet_estimator(net, trainer, args.verbose)
    tic = time.time()
    est.fit(train, val_data=val, epochs=args.pretrain_epochs,
            event_handlers=[LoggingHandler(metrics=est.train_metrics, progress_bar=True)])
    acc = est.val_metrics[0].get()[1]
    out = os.path.join(args.workdir, "resnet18_v1_digits04-features.params")
    net.features.save_parameters(out)
    print(f"pretrained on digits 0-4 in {time.time() - tic:.0f}s: validation accuracy {acc:.4f}")
    return out, f"pretrained here on digits 0-4 (validation accuracy {acc:.4f})"


def finetune(folders, features_file, args, tag):
    """Train a new 5-class head on ``features_file``'s frozen body; the best validation accuracy."""
    train, val = loaders(folders, "finetune", args.batch_size)
    net = vision.resnet18_v1(classes=5)
    if features_file:
        net.features.load_parameters(features_file)
    else:
        net.features.initialize(mx.init.Xavier(magnitude=2.0))
    if args.train_all:
        net.features.collect_params().setattr("lr_mult", 0.1)       # move the trained body gently
    else:
        net.features.collect_params().setattr("grad_req", "null")   # frozen: no gradient, no update
    # a new head; Estimator(initializer=...) would also initialize just the missing layer
    net.output.initialize(mx.init.Xavier())
    net.hybridize()
    params = net.collect_params() if args.train_all else net.output.collect_params()
    trainer = gluon.Trainer(params, "adam", {"learning_rate": args.lr})
    est = quiet_estimator(net, trainer, args.verbose, None if args.train_all else FrozenBody())
    history = History(est)
    ckpt_dir = os.path.join(args.workdir, "checkpoints")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")           # save_best's note that 'accuracy' is maximized
        best = CheckpointHandler(ckpt_dir, model_prefix=tag, monitor=est.val_metrics[0], save_best=True,
                                 max_checkpoints=1)
    est.fit(train, val_data=val, epochs=args.epochs,
            event_handlers=[history, best, LoggingHandler(metrics=est.train_metrics, progress_bar=True)])
    net.load_parameters(os.path.join(ckpt_dir, tag + "-best.params"))
    est.evaluate(val, event_handlers=[LoggingHandler(metrics=est.val_metrics)] if args.verbose else [])
    return est.val_metrics[0].get()[1], history.rows


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: skipping the plot")
        return
    epochs = np.arange(1, len(rows) + 1)
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(9, 3.5))
    for split in ("training", "validation"):
        ax_loss.plot(epochs, [r[f"{split} softmaxcrossentropyloss"] for r in rows], "o-", label=split)
        ax_acc.plot(epochs, [r[f"{split} accuracy"] for r in rows], "o-", label=split)
    ax_loss.set(xlabel="epoch", ylabel="loss", title="fine-tuning: loss")
    ax_acc.set(xlabel="epoch", ylabel="accuracy", title="fine-tuning: accuracy", ylim=(0, 1))
    ax_acc.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"plot written to {path}")


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workdir", default="", help="images, parameters, plot (default: a temp dir)")
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--per-class", type=int, default=40, help="fine-tuning training images per digit")
    p.add_argument("--pretrain-per-class", type=int, default=0, help="pretraining images per digit (0: all)")
    p.add_argument("--pretrain-epochs", type=int, default=2)
    p.add_argument("--epochs", type=int, default=6, help="fine-tuning epochs")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--pretrain-lr", type=float, default=1e-3, help="Adam's learning rate for pretraining")
    p.add_argument("--lr", type=float, default=0.01, help="Adam's learning rate for fine-tuning")
    p.add_argument("--train-all", action="store_true", help="fine-tune the body too, not only the head")
    p.add_argument("--compare-scratch", action="store_true", help="also train the head on random features")
    p.add_argument("--no-zoo", action="store_true", help="ignore a model-zoo file even if present")
    p.add_argument("--verbose", action="store_true", help="print the Estimator's log lines too")
    args = p.parse_args(argv)
    mx.random.seed(0)
    np.random.seed(0)                               # the DataLoader's shuffle
    with tempfile.TemporaryDirectory() as tmp:
        args.workdir = args.workdir or tmp
        folders = write_folders(args.workdir, args.image_size, args.per_class,
                                args.pretrain_per_class or None)
        features_file, origin = pretrained_features(folders, args)
        print(f"body: {origin}")
        tic = time.time()
        accuracy, rows = finetune(folders, features_file, args, "finetune")
        for i, row in enumerate(rows):
            print(f"epoch {i}: training accuracy {row['training accuracy']:.4f} "
                  f"validation accuracy {row['validation accuracy']:.4f}")
        print(f"fine-tuned validation accuracy {accuracy:.4f} (digits 5-9, best epoch, "
              f"{time.time() - tic:.0f}s)")
        if args.compare_scratch:
            scratch, _ = finetune(folders, None, args, "scratch")
            print(f"same head on random features: validation accuracy {scratch:.4f}")
        plot(rows, os.path.join(args.workdir if args.workdir != tmp else ".", "finetune_history.png"))
    return accuracy


if __name__ == "__main__":
    main()
