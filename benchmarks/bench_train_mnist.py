"""MXNet's own ``example/image-classification/train_mnist.py`` (tag 1.9.1, unmodified) on mxref and
on MXNet 1.9.1, side by side: samples/s from the ``Speed:`` lines of MXNet's ``Speedometer``.

The example's files (``train_mnist.py``, ``common/``, ``symbols/``) are extracted at run time into
a temporary folder, from ``--mxnet-examples DIR`` (an ``example/image-classification`` checkout)
or else from the apache/mxnet git mirror at tag 1.9.1; nothing of MXNet's is kept in this
repository. The script reads MNIST's four ``idx`` files from ``data/`` under its working folder;
they are written from mxref's bundled 8x8 digits, each scaled up 3x (nearest) to 24x24 and padded
to 28x28, the training split tiled to ``--train-images`` images.

Each run is one process whose log goes to its own file; the systems alternate within a round, at
the same thread settings. A run's figure is the median of its ``Speed:`` lines after the first
epoch (the first epoch holds the warm-up); the table gives the median over rounds and the ratio.

    .venv/bin/python benchmarks/bench_train_mnist.py --rounds 3 --threads 2

Two things of the 2016 script need help on today's Python stack, and the same launcher (this file,
``--launch``) gives it to both systems: ``read_data`` calls ``numpy.fromstring`` on bytes, whose
binary mode numpy 2 removed (the launcher restores it as ``frombuffer(...).copy()``, what numpy 1
did, only where it is missing), and ``download_file`` imports ``requests`` even when the file is
already there (where ``requests`` is not installed, a module whose ``get`` refuses is put in its
place: the files are always written beforehand, so nothing is downloaded).
"""
from __future__ import annotations

import argparse
import gzip
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import types
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MXREF_PY = os.path.join(ROOT, ".venv", "bin", "python")
if not os.path.exists(MXREF_PY):
    MXREF_PY = sys.executable
MXNET_PY = os.environ.get("MXNET191_PYTHON", "/work/venvs/mxnet191/bin/python")
if not os.path.exists(MXNET_PY) and os.path.exists("/work/ref/mxvenv/bin/python"):
    MXNET_PY = "/work/ref/mxvenv/bin/python"
MIRROR = os.environ.get("MXNET_GIT_MIRROR", "/work/.mirror/apache+mxnet/repo")
TAG = "1.9.1"
EXAMPLE = "example/image-classification"
FILES = ("train_mnist.py", "common/__init__.py", "common/find_mxnet.py", "common/fit.py",
         "common/util.py", "symbols/__init__.py", "symbols/lenet.py")
SPEED = re.compile(r"Epoch\[(\d+)\] Batch \[[\d-]+\]\s+Speed: ([0-9.]+) samples/sec")


# -- the example's files and its data ----------------------------------------------------------
def extract_example(dest: str, examples_dir: str | None) -> None:
    """Copy the example's files into ``dest`` from ``examples_dir`` or the git mirror at 1.9.1."""
    for rel in FILES:
        os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
        if examples_dir:
            src = os.path.join(examples_dir, rel)
            if os.path.exists(src):
                shutil.copyfile(src, os.path.join(dest, rel))
            elif rel.endswith("__init__.py"):
                open(os.path.join(dest, rel), "w").close()
            else:
                raise SystemExit(f"{src} is missing")
            continue
        res = subprocess.run(["git", "-C", MIRROR, "show", f"{TAG}:{EXAMPLE}/{rel}"], capture_output=True)
        if res.returncode and rel.endswith("__init__.py"):
            res.stdout = b""          # symbols/ has no __init__.py at 1.9.1: a namespace package
        elif res.returncode:
            raise SystemExit(f"cannot read {EXAMPLE}/{rel} at {TAG} from {MIRROR}: "
                             f"{res.stderr.decode().strip()}")
        with open(os.path.join(dest, rel), "wb") as f:
            f.write(res.stdout)


def digits_28(split: str):
    """The bundled digits of ``split`` as MNIST-like uint8 28x28 images and uint8 labels."""
    import numpy as np  # noqa: PLC0415
    sys.path.insert(0, ROOT)
    from mxref.io.digits import load_digits  # noqa: PLC0415
    data, label = load_digits(split)                         # (N, 1, 8, 8) in [0, 1]
    big = np.kron(data[:, 0], np.ones((3, 3), np.float32))   # (N, 24, 24), nearest neighbour
    img = np.pad(big, ((0, 0), (2, 2), (2, 2)))
    return (img * 255).round().astype(np.uint8), label.astype(np.uint8)


def write_idx(path: str, array) -> None:
    """One gzipped ``idx`` file: magic (0, 0, ubyte, ndim), the sizes big-endian, the bytes."""
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">BBBB", 0, 0, 8, array.ndim))
        f.write(struct.pack(">" + "I" * array.ndim, *array.shape))
        f.write(array.tobytes())


def write_mnist(data_dir: str, train_images: int) -> None:
    """The four files ``train_mnist.read_data`` opens, in ``data_dir``."""
    import numpy as np  # noqa: PLC0415
    os.makedirs(data_dir, exist_ok=True)
    img, lbl = digits_28("train")
    reps = -(-train_images // len(img))
    img, lbl = (np.concatenate([a] * reps)[:train_images] for a in (img, lbl))
    write_idx(os.path.join(data_dir, "train-images-idx3-ubyte.gz"), img)
    write_idx(os.path.join(data_dir, "train-labels-idx1-ubyte.gz"), lbl)
    img, lbl = digits_28("val")
    write_idx(os.path.join(data_dir, "t10k-images-idx3-ubyte.gz"), img)
    write_idx(os.path.join(data_dir, "t10k-labels-idx1-ubyte.gz"), lbl)


# -- the launcher: runs in the measured interpreter ----------------------------------------------
def launch(system: str, example_dir: str, argv: list) -> None:
    """Run ``train_mnist.py argv`` as ``__main__`` (``import mxnet`` is mxref for ``mxref``)."""
    import runpy  # noqa: PLC0415

    import numpy as np  # noqa: PLC0415
    if system.startswith("mxref"):
        root = os.environ.get("BENCH_MXREF_ROOT", ROOT)
        sys.path[:0] = [root, os.path.join(root, "benchmarks", "mxnet_unittests")]
        import mxnet_alias  # noqa: F401, PLC0415  (installs the import alias)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.fromstring(b"\0", dtype=np.uint8)
    except ValueError:                      # numpy 2: give back numpy 1's binary mode
        text_mode = np.fromstring

        def fromstring(string, dtype=float, count=-1, *, sep="", **kw):
            if sep == "":
                return np.frombuffer(string, dtype=dtype, count=count).copy()
            return text_mode(string, dtype=dtype, count=count, sep=sep, **kw)
        np.fromstring = fromstring
    try:
        import requests  # noqa: F401, PLC0415
    except ImportError:
        def get(url, *a, **kw):
            raise RuntimeError(f"bench_train_mnist runs offline; {url} should have been written beforehand")
        sys.modules["requests"] = types.SimpleNamespace(get=get)
    sys.path.insert(0, example_dir)
    sys.argv = [os.path.join(example_dir, "train_mnist.py")] + argv
    runpy.run_path(sys.argv[0], run_name="__main__")


# -- the driver ----------------------------------------------------------------------------------
def run_once(python: str, system: str, work: str, example_dir: str, args, log_path: str) -> list:
    """One training process; the ``(epoch, samples/s)`` pairs of its log."""
    t = str(args.threads)
    env = dict(os.environ, OMP_NUM_THREADS=t, OPENBLAS_NUM_THREADS=t, MKL_NUM_THREADS=t,
               MXNET_CPU_WORKER_NTHREADS="1", PYTHONHASHSEED="0")
    env.pop("PYTHONPATH", None)
    if system == "mxref-base":
        env["BENCH_MXREF_ROOT"] = os.path.abspath(args.base_root)
    argv = ["--network", "lenet", "--batch-size", str(args.batch_size), "--num-epochs", str(args.num_epochs),
            "--disp-batches", str(args.disp_batches), "--num-examples", str(args.train_images)]
    cmd = [python, os.path.abspath(__file__), "--launch", system, example_dir, "--"] + argv
    with open(log_path, "w") as log:
        res = subprocess.run(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT,
                             timeout=args.timeout)
    with open(log_path) as log:
        text = log.read()
    if res.returncode:
        raise SystemExit(f"{system} failed (exit {res.returncode}); log {log_path}:\n{text[-3000:]}")
    return [(int(e), float(s)) for e, s in SPEED.findall(text)]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mxnet-examples",
                   help="an example/image-classification folder (default: the git mirror)")
    p.add_argument("--systems", nargs="+", default=["mxref", "mxnet"],
                   choices=["mxref", "mxnet", "mxref-base"],
                   help="mxref-base: mxref from the tree --base-root (to compare two trees)")
    p.add_argument("--base-root", help="another mxref checkout, for the system mxref-base")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--num-epochs", type=int, default=5)
    p.add_argument("--disp-batches", type=int, default=50)
    p.add_argument("--train-images", type=int, default=9600, help="tiled from the digits' training split")
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--keep", help="work in this folder and keep the logs")
    p.add_argument("--launch", nargs=2, metavar=("SYSTEM", "EXAMPLE_DIR"), help=argparse.SUPPRESS)
    args, rest = p.parse_known_args(argv)
    if args.launch:
        launch(args.launch[0], args.launch[1], [a for a in rest if a != "--"])
        return
    work = args.keep or tempfile.mkdtemp(prefix="train_mnist_")
    os.makedirs(work, exist_ok=True)
    example_dir = os.path.join(work, "image-classification")
    extract_example(example_dir, args.mxnet_examples)
    write_mnist(os.path.join(work, "data"), args.train_images)
    pythons = {"mxref": MXREF_PY, "mxnet": MXNET_PY, "mxref-base": MXREF_PY}
    runs = {s: [] for s in args.systems}
    for r in range(args.rounds):
        for s in args.systems:
            t0 = time.perf_counter()
            pairs = run_once(pythons[s], s, work, example_dir, args, os.path.join(work, f"{s}-round{r}.log"))
            steady = [v for e, v in pairs if e > 0] or [v for _, v in pairs]
            runs[s].append(statistics.median(steady))
            print(f"round {r} {s:10s} {runs[s][-1]:9.1f} samples/s  ({len(steady)} Speed lines, "
                  f"{time.perf_counter() - t0:.1f} s)", flush=True)
    print(f"\ntrain_mnist.py --network lenet --batch-size {args.batch_size}, {args.threads} threads, "
          f"{args.rounds} rounds (logs in {work})")
    for s in args.systems:
        print(f"{s:10s} median {statistics.median(runs[s]):9.1f} samples/s  rounds: "
              + ", ".join(f"{v:.1f}" for v in runs[s]))
    if set(args.systems) == {"mxref", "mxnet"}:
        per = [a / b for a, b in zip(runs["mxref"], runs["mxnet"])]
        print(f"mxref / mxnet: {statistics.median(runs['mxref']) / statistics.median(runs['mxnet']):.2f}x "
              "(per round " + ", ".join(f"{v:.2f}x" for v in per) + ")")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
