"""benchmarks/bench_train_mnist.py: the MNIST files it writes, and a short mxref run of MXNet's
train_mnist.py (skipped where the apache/mxnet mirror is absent)."""
import gzip
import os
import pathlib
import struct
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_train_mnist as bench  # noqa: E402


def _read_idx(path):
    with gzip.open(path) as f:
        zero, dtype, ndim = struct.unpack(">HBB", f.read(4))
        shape = struct.unpack(">" + "I" * ndim, f.read(4 * ndim))
        return zero, dtype, np.frombuffer(f.read(), np.uint8).reshape(shape)


def test_the_mnist_files_hold_the_digits_at_28x28(tmp_path):
    bench.write_mnist(str(tmp_path), 3000)
    zero, dtype, img = _read_idx(tmp_path / "train-images-idx3-ubyte.gz")
    _, _, lbl = _read_idx(tmp_path / "train-labels-idx1-ubyte.gz")
    assert (zero, dtype) == (0, 8) and img.shape == (3000, 28, 28) and lbl.shape == (3000,)
    assert set(np.unique(lbl)) == set(range(10))
    assert img[:, :2].max() == 0 and img[:, :, -2:].max() == 0 and img.max() == 255   # padded, scaled
    # each 8x8 pixel became a 3x3 block
    np.testing.assert_array_equal(img[:, 2:26:3, 2:26:3], img[:, 4:26:3, 4:26:3])
    n_train = len(bench.digits_28("train")[0])
    np.testing.assert_array_equal(img[:n_train], img[n_train:2 * n_train])     # tiled
    _, _, val = _read_idx(tmp_path / "t10k-images-idx3-ubyte.gz")
    assert val.shape == (len(bench.digits_28("val")[0]), 28, 28)


@pytest.mark.skipif(not os.path.isdir(bench.MIRROR), reason="no apache/mxnet git mirror")
def test_train_mnist_runs_on_mxref_and_logs_speed(tmp_path):
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_train_mnist.py"), "--systems", "mxref",
           "--rounds", "1", "--num-epochs", "2", "--disp-batches", "2", "--train-images", "160",
           "--threads", "1", "--keep", str(tmp_path)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True, cwd=ROOT).stdout
    assert "mxref      median" in out
    log = (tmp_path / "mxref-round0.log").read_text()
    assert "Epoch[1] Batch [2-4]\tSpeed:" in log and "Validation-accuracy" in log
    assert not (ROOT / "benchmarks" / "train_mnist.py").exists()     # nothing of MXNet's is kept here
