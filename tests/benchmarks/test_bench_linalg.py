"""benchmarks/bench_linalg.py's mxref worker runs every workload and reports one time for each."""
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_linalg  # noqa: E402


def test_mxref_worker_times_every_workload(tmp_path):
    path = str(tmp_path / "linalg.npz")
    bench_linalg.make_data(path)
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_linalg.py"), "--worker", "mxref",
                          "--data", path, "--repeats", "1"], capture_output=True, text=True, timeout=300,
                         check=True, cwd=ROOT).stdout
    times = json.loads(out.strip().splitlines()[-1])
    assert sorted(times) == sorted(w[0] for w in bench_linalg.WORKLOADS)
    assert all(t > 0 for t in times.values())
