"""Pack an image folder into RecordIO with im2rec, then train a Module on ``ImageRecordIter``.

    python examples/imagerecord_module.py [--workdir DIR] [--image-size 32] [--num-epochs 3]

MXNet's classic image pipeline, end to end and offline:

1. The bundled digits are written as grayscale PNG files, ``images/{train,val}/<digit>/*.png``.
2. ``im2rec`` (``python -m mxref.tools.im2rec``, run in-process here) lists each folder
   (``--list --recursive``: one label per sub-folder, shuffled with MXNet's fixed seed) and packs
   the list into ``digits_<split>.rec`` + ``.idx``: one record per image, a header with the label
   and the PNG bytes. The command lines are printed, to run by hand.
3. ``mx.io.ImageRecordIter`` decodes the records in a thread pool, scales pixels to [0, 1] and
   batches them as NCHW float32 (``data_shape=(1, S, S)``: one channel, decoded as grayscale).
4. ``mx.mod.Module.fit`` trains a small convolutional network (a ``Symbol``) with SGD, reporting
   training and validation accuracy each epoch (``Speedometer`` prints throughput).
"""
import argparse
import logging
import os
import tempfile

import mxref as mx
from mxref.io.digits_images import save_digit_images
from mxref.tools import im2rec


def convnet_symbol(num_classes: int = 10):
    """Three 3x3 conv + BatchNorm + relu stages (16, 32, 64 filters; 2x2 max-pool after the first
    two), global average pooling, and a fully connected classifier."""
    h = mx.sym.Variable("data")
    for i, filters in enumerate((16, 32, 64), start=1):
        h = mx.sym.Convolution(h, kernel=(3, 3), pad=(1, 1), num_filter=filters, name=f"conv{i}")
        h = mx.sym.Activation(mx.sym.BatchNorm(h, name=f"bn{i}"), act_type="relu", name=f"relu{i}")
        if i < 3:
            h = mx.sym.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type="max", name=f"pool{i}")
    h = mx.sym.Pooling(h, global_pool=True, kernel=(1, 1), pool_type="avg", name="gap")
    h = mx.sym.FullyConnected(mx.sym.flatten(h), num_hidden=num_classes, name="fc")
    return mx.sym.SoftmaxOutput(h, name="softmax")


def pack(workdir: str, split: str, size: int, per_class) -> str:
    """Write ``split``'s PNGs and pack them; returns the ``.rec`` path (the ``.idx`` lies beside)."""
    root = os.path.join(workdir, "images", split)
    save_digit_images(root, split, size, per_class=per_class)
    prefix = os.path.join(workdir, f"digits_{split}")
    for argv in (["--list", "--recursive", prefix, root],
                 [prefix, root, "--encoding", ".png", "--color", "0", "--num-thread", "2"]):
        print("python -m mxref.tools.im2rec " + " ".join(argv))
        if im2rec.main(argv) != 0:
            raise SystemExit(f"im2rec failed for {split}")
    return prefix + ".rec"


def record_iter(rec: str, size: int, batch_size: int, shuffle: bool):
    return mx.io.ImageRecordIter(path_imgrec=rec, path_imgidx=rec[:-4] + ".idx", data_shape=(1, size, size),
                                 batch_size=batch_size, shuffle=shuffle, seed=0, scale=1.0 / 255,
                                 preprocess_threads=2)


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workdir", default="", help="where images and .rec files go (default: a temp dir)")
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--per-class", type=int, default=0, help="training images per digit (0: all)")
    p.add_argument("--num-epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.1)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    mx.random.seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or tmp
        train_rec = pack(workdir, "train", args.image_size, args.per_class or None)
        val_rec = pack(workdir, "val", args.image_size, None)
        train = record_iter(train_rec, args.image_size, args.batch_size, shuffle=True)
        val = record_iter(val_rec, args.image_size, args.batch_size, shuffle=False)
        print(f"train batches: {train.provide_data[0].shape} data, {train.provide_label[0].shape} label")

        mod = mx.mod.Module(convnet_symbol(), data_names=["data"], label_names=["softmax_label"])
        mod.fit(train, eval_data=val, eval_metric="acc", num_epoch=args.num_epochs,
                initializer=mx.init.Xavier(magnitude=2.0), optimizer="sgd",
                optimizer_params={"learning_rate": args.lr, "momentum": 0.9, "wd": 1e-4},
                batch_end_callback=mx.callback.Speedometer(args.batch_size, 20))
        accuracy = dict(mod.score(val, "acc"))["accuracy"]
    print(f"validation accuracy {accuracy:.4f}")
    return accuracy


if __name__ == "__main__":
    main()
