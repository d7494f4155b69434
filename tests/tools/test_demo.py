"""The main demo (python -m mxref.tools.demo) and the engine demo run end to end with tiny settings."""
import os
import re
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(args, timeout=240):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_help_lists_the_knobs():
    """--help explains network, epochs, batch size, lr, context, kvstore, engine and output folder."""
    out = run(["mxref.tools.demo", "--help"], timeout=60)
    for knob in ("--network", "--num-epochs", "--batch-size", "--lr", "--ctx", "--kv-store", "--engine",
                 "--out"):
        assert knob in out


def test_one_epoch_writes_every_output(tmp_path):
    """One epoch: accuracy, samples/s, memory plan, an MXNet-format checkpoint, curve and trace."""
    out = run(["mxref.tools.demo", "--num-epochs", "1", "--batch-size", "100", "--network", "mlp",
               "--out", str(tmp_path), "--engine", "ThreadedEnginePerDevice"])
    accuracy = float(re.search(r"validation accuracy : ([0-9.]+)", out).group(1))
    assert 0.0 <= accuracy <= 1.0
    speed = float(re.search(r"training speed\s+: ([0-9,.]+) samples/s", out).group(1).replace(",", ""))
    assert speed > 0
    plan = re.search(r"memory plan\s+: ([0-9.]+) MB planned vs ([0-9.]+) MB", out)
    planned, unshared = float(plan.group(1)), float(plan.group(2))
    assert 0 < planned <= unshared
    assert "reloads with the same predictions: True" in out
    files = set(os.listdir(tmp_path))
    assert {"mlp-symbol.json", "mlp-0001.params", "training_curve.csv", "profile.json"} <= files
    rows = np.loadtxt(tmp_path / "training_curve.csv", delimiter=",", skiprows=1, ndmin=2)
    assert rows.shape == (1, 3) and abs(rows[0, 2] - accuracy) < 1e-4
    assert (tmp_path / "profile.json").stat().st_size > 100


def test_engine_demo_runs():
    """The engine showcase (moved to engine_demo) still runs and finds the same results both ways."""
    out = run(["mxref.tools.engine_demo", "--size", "64", "--steps", "2", "--repeats", "1", "--profile",
               os.devnull], timeout=120)
    assert "same results        : True" in out
