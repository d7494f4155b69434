"""``python -m mxref.tools.im2rec``: image folder -> ``.lst`` -> ``.rec``/``.idx``, as MXNet's im2rec.

Two steps, as MXNet's tool: ``--list`` walks ``root`` and writes ``prefix.lst`` (``index\\tlabel\\tpath``
lines; with ``--recursive`` each sub-folder is a class, numbered in sorted walk order; shuffled with
``random.seed(100)`` unless ``--no-shuffle``; ``--train-ratio``/``--test-ratio`` split it into
``_train``/``_val``/``_test`` lists). Without ``--list`` every ``prefix*.lst`` beside ``prefix`` is packed
into ``.rec``/``.idx`` (RecordIO records holding an ``IRHeader`` and the encoded image), after an
optional ``--center-crop`` (square) and ``--resize`` (shorter edge, bilinear as ``cv2.resize``).
``--num-thread`` encodes in a thread pool (Pillow releases the GIL); records are written in list
order whatever the thread count. The files are the ones MXNet's tool writes (byte-for-byte apart
from the JPEG/PNG encoder's own bytes), and each tool reads the other's.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
from concurrent.futures import ThreadPoolExecutor

from .. import recordio
from ..image.image import _decode
from ..ops.image.resample import resize as _resize


def list_image(root, recursive, exts):
    """Yield ``(index, relative path, label)`` for the images under ``root`` in sorted order."""
    i = 0
    if recursive:
        cat = {}
        for path, dirs, files in os.walk(root, followlinks=True):
            dirs.sort()
            files.sort()
            for fname in files:
                fpath = os.path.join(path, fname)
                if os.path.isfile(fpath) and os.path.splitext(fname)[1].lower() in exts:
                    if path not in cat:
                        cat[path] = len(cat)
                    yield (i, os.path.relpath(fpath, root), cat[path])
                    i += 1
        for k, v in sorted(cat.items(), key=lambda x: x[1]):
            print(os.path.relpath(k, root), v)
    else:
        for fname in sorted(os.listdir(root)):
            fpath = os.path.join(root, fname)
            if os.path.isfile(fpath) and os.path.splitext(fname)[1].lower() in exts:
                yield (i, os.path.relpath(fpath, root), 0)
                i += 1


def write_list(path_out, image_list):
    """Write ``index\\tlabel_1\\t...\\tpath`` lines (labels as ``%f``, as MXNet)."""
    with open(path_out, "w") as fout:
        for item in image_list:
            fout.write("%d\t" % item[0] + "".join("%f\t" % j for j in item[2:]) + "%s\n" % item[1])


def make_list(args):
    """Write ``prefix[_i][_train|_val|_test].lst`` for ``args.root``."""
    image_list = list(list_image(args.root, args.recursive, args.exts))
    if args.shuffle:
        random.seed(100)          # MXNet's fixed seed: the same folder gives the same list
        random.shuffle(image_list)
    n = len(image_list)
    chunk_size = (n + args.chunks - 1) // args.chunks
    for i in range(args.chunks):
        chunk = image_list[i * chunk_size:(i + 1) * chunk_size]
        str_chunk = "_%d" % i if args.chunks > 1 else ""
        sep = int(chunk_size * args.train_ratio)
        sep_test = int(chunk_size * args.test_ratio)
        if args.train_ratio == 1.0:
            write_list(args.prefix + str_chunk + ".lst", chunk)
        else:
            if args.test_ratio:
                write_list(args.prefix + str_chunk + "_test.lst", chunk[:sep_test])
            if args.train_ratio + args.test_ratio < 1.0:
                write_list(args.prefix + str_chunk + "_val.lst", chunk[sep_test + sep:])
            write_list(args.prefix + str_chunk + "_train.lst", chunk[sep_test:sep_test + sep])


def read_list(path_in):
    """Yield ``[index, path, label_1, ...]`` from a ``.lst`` file, skipping malformed lines."""
    with open(path_in) as fin:
        for line in fin:
            parts = [p.strip() for p in line.strip().split("\t")]
            if len(parts) < 3:
                print("lst should have at least three parts, but only has %d for %s" % (len(parts), parts))
                continue
            try:
                yield [int(parts[0]), parts[-1]] + [float(p) for p in parts[1:-1]]
            except ValueError as e:
                print("Parsing lst met error for %s, detail: %s" % (parts, e))


def image_encode(args, item):
    """Read, crop/resize and pack one list item; None (with a message) when the image is bad."""
    fullpath = os.path.join(args.root, item[1])
    label = item[2:] if len(item) > 3 and args.pack_label else item[2]
    header = recordio.IRHeader(0, label, item[0], 0)
    try:
        with open(fullpath, "rb") as fin:
            buf = fin.read()
        if args.pass_through:
            return recordio.pack(header, buf)
        img = _decode(buf, args.color != 0, to_rgb=False)      # BGR, as cv2.imread
    except Exception as e:  # noqa: BLE001 - report and skip the image, as MXNet's tool does
        print("imread error trying to load file: %s (%s)" % (fullpath, e))
        return None
    if args.color == 0:
        img = img[:, :, 0]
    h, w = img.shape[:2]
    if args.center_crop:
        if h > w:
            m = (h - w) // 2
            img = img[m:m + w]
        else:
            m = (w - h) // 2
            img = img[:, m:m + h]
        h, w = img.shape[:2]
    if args.resize:
        new_w, new_h = (args.resize, h * args.resize // w) if h > w else (w * args.resize // h, args.resize)
        img = _resize(img if img.ndim == 3 else img[:, :, None], new_w, new_h, 1)
        img = img if args.color != 0 else img[:, :, 0]
    return recordio.pack_img(header, img, quality=args.quality, img_fmt=args.encoding)


def write_record(args, lst_path, working_dir):
    """Pack the images of one ``.lst`` into ``<lst name>.rec`` and ``.idx`` in ``working_dir``."""
    base = os.path.splitext(os.path.basename(lst_path))[0]
    record = recordio.MXIndexedRecordIO(os.path.join(working_dir, base + ".idx"),
                                        os.path.join(working_dir, base + ".rec"), "w")
    items = list(read_list(lst_path))
    with ThreadPoolExecutor(max(1, args.num_thread)) as pool:
        # map keeps list order, so the .rec does not depend on the thread count
        for item, s in zip(items, pool.map(lambda it: image_encode(args, it), items)):
            if s is not None:
                record.write_idx(item[0], s)
    record.close()


def parse_args(argv=None):
    """MXNet's im2rec command line."""
    p = argparse.ArgumentParser(description="Create an image list or make a record database by reading "
                                "from an image list", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("prefix", help="prefix of input/output lst and rec files.")
    p.add_argument("root", help="path to folder containing images.")
    p.add_argument("--list", action="store_true", help="make <prefix>.lst from root instead of packing")
    p.add_argument("--exts", nargs="+", default=[".jpeg", ".jpg", ".png"], help="image extensions")
    p.add_argument("--chunks", type=int, default=1, help="number of chunks.")
    p.add_argument("--train-ratio", type=float, default=1.0, help="ratio of images for training.")
    p.add_argument("--test-ratio", type=float, default=0, help="ratio of images for testing.")
    p.add_argument("--recursive", action="store_true", help="one label per sub-folder")
    p.add_argument("--no-shuffle", dest="shuffle", action="store_false", help="keep the sorted order")
    p.add_argument("--pass-through", action="store_true", help="pack the files' bytes as they are")
    p.add_argument("--resize", type=int, default=0, help="resize the shorter edge to this size")
    p.add_argument("--center-crop", action="store_true", help="crop the center square first")
    p.add_argument("--quality", type=int, default=95, help="JPEG quality 1-100 (PNG compression 1-9)")
    p.add_argument("--num-thread", type=int, default=1, help="encoding threads")
    p.add_argument("--color", type=int, default=1, choices=[-1, 0, 1],
                   help="1 color, 0 gray, -1 as is (mxref drops an alpha channel: as 1)")
    p.add_argument("--encoding", type=str, default=".jpg", choices=[".jpg", ".png"], help="image encoding")
    p.add_argument("--pack-label", action="store_true", help="pack multi-dimensional labels")
    args = p.parse_args(argv)
    args.prefix, args.root = os.path.abspath(args.prefix), os.path.abspath(args.root)
    return args


def main(argv=None) -> int:
    """Run the tool; returns the exit status."""
    args = parse_args(argv)
    if args.list:
        make_list(args)
        return 0
    working_dir = args.prefix if os.path.isdir(args.prefix) else os.path.dirname(args.prefix)
    lists = sorted(os.path.join(working_dir, f) for f in os.listdir(working_dir)
                   if f.endswith(".lst") and os.path.join(working_dir, f).startswith(args.prefix))
    for lst in lists:
        print("Creating .rec file from", lst, "in", working_dir)
        write_record(args, lst, working_dir)
    if not lists:
        print("Did not find and list file with prefix %s" % args.prefix)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
