"""ImageRecordIter throughput: decode + augment images/s, mxref against MXNet 1.9.1.

500 JPEG images 64x64 (random smooth content, quality 90) are packed once into a ``.rec``/``.idx``;
each system then iterates full epochs with batch 32, ``resize=60``, ``rand_crop``, ``rand_mirror``,
mean/std normalization, ``data_shape=(3, 56, 56)`` and ``preprocess_threads=N``. Reported: the
median images/s over all timed epochs (``--epochs`` per run, after a warm-up epoch) of
``--runs`` runs per system, each run its own subprocess, the systems taking turns (the load of a
shared machine drifts), and mxref / MXNet; also the median process CPU time per image (all
threads), which a busy machine moves much less than the rate.

    python benchmarks/bench_image_record_iter.py [--threads 2] [--epochs 5] [--runs 3] [--mxnet /path/python]

Each run executes this same file under its system's interpreter with ``--worker mxref|mxnet``.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time

from bench_common import import_system, interleaved_runs

KW = dict(data_shape=(3, 56, 56), batch_size=32, resize=60, rand_crop=True, rand_mirror=True,
          mean_r=123.0, mean_g=117.0, mean_b=104.0, std_r=58.0, std_g=57.0, std_b=57.0)


def pack(folder, n=500):
    """Write n 64x64 JPEG records with mxref's recordio (the same bytes MXNet's would hold)."""
    import numpy as np
    from PIL import Image

    mx = import_system("mxref")
    rs = np.random.RandomState(0)
    rec = mx.recordio.MXIndexedRecordIO(os.path.join(folder, "b.idx"), os.path.join(folder, "b.rec"), "w")
    yy, xx = np.mgrid[0:64, 0:64]
    for i in range(n):
        base = rs.randint(0, 255, (1, 1, 3))
        noise = rs.randint(-20, 20, (64, 64, 3))
        img = np.clip(base + 40 * np.sin((xx + i) / 7.0)[..., None] + noise, 0, 255)
        buf = io.BytesIO()
        Image.fromarray(img.astype(np.uint8)).save(buf, "JPEG", quality=90)
        rec.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, float(i % 10), i, 0), buf.getvalue()))
    rec.close()


def measure(side, folder, threads, rounds):
    """``{"rates": images/s, "cpu_us": process CPU µs per image}`` of each round (one full epoch)
    with ``side``'s ImageRecordIter."""
    mx = import_system(side)        # mxref from this checkout, not whichever one is installed
    it = mx.io.ImageRecordIter(path_imgrec=os.path.join(folder, "b.rec"),
                               path_imgidx=os.path.join(folder, "b.idx"), preprocess_threads=threads, **KW)
    rates, cpu = [], []
    for r in range(rounds + 1):
        it.reset()
        t0, c0, n = time.perf_counter(), time.process_time(), 0
        for batch in it:
            batch.data[0].asnumpy()
            n += KW["batch_size"] - batch.pad
        if r:                       # round 0 warms up (threads, caches)
            rates.append(n / (time.perf_counter() - t0))
            cpu.append((time.process_time() - c0) / n * 1e6)
    return {"rates": rates, "cpu_us": cpu}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", "--rounds", type=int, default=5, help="timed epochs per run")
    ap.add_argument("--runs", type=int, default=3, help="runs per system, taking turns")
    ap.add_argument("--mxnet", default="/work/ref/mxvenv/bin/python", help="the MXNet 1.9.1 interpreter")
    ap.add_argument("--worker", "--side", choices=["mxref", "mxnet"], default=None, help=argparse.SUPPRESS)
    ap.add_argument("--folder", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(measure(a.worker, a.folder, a.threads, a.epochs)))
        return
    systems = [("mxref", sys.executable)] + ([("mxnet", a.mxnet)] if os.path.exists(a.mxnet) else [])
    with tempfile.TemporaryDirectory() as folder:
        pack(folder)
        runs = interleaved_runs(__file__, systems, ["--folder", folder, "--threads", str(a.threads),
                                                    "--epochs", str(a.epochs)], a.runs)
    med = {s: statistics.median([r for run in rs for r in run["rates"]]) for s, rs in runs.items()}
    cpu = {s: statistics.median([c for run in rs for c in run["cpu_us"]]) for s, rs in runs.items()}
    print(f"threads={a.threads}, median of {a.epochs} epochs x {a.runs} runs, "
          f"load average {os.getloadavg()[0]:.1f}")
    for s, _ in systems:
        if s in med:
            print(f"{'mxref' if s == 'mxref' else 'MXNet 1.9.1':12} {med[s]:10,.0f} images/s "
                  f"{cpu[s]:8.0f} µs of process CPU per image")
    if "mxnet" not in med:
        print("MXNet interpreter not found: no ratio")
        return
    print(f"mxref / MXNet: {med['mxref'] / med['mxnet']:.2f}x (target >= 0.8x); "
          f"CPU per image, MXNet / mxref: {cpu['mxnet'] / cpu['mxref']:.2f}x")


if __name__ == "__main__":
    main()
