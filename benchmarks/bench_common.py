"""Pieces shared by the throughput benchmarks: the timing loop, the clocks, the MLP/LeNet symbol
code, the launcher of one measuring subprocess, and the two launchers of the dist benchmarks.
Standard library only: the MXNet and PyTorch interpreters import it too (a script's own folder
is first on ``sys.path``)."""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}


def time_steps(step, sync, iters, repeats, batch, clock="wall"):
    """Samples/s of ``repeats`` blocks of ``iters`` calls of ``step`` (after 3 warm-up calls)."""
    now = CLOCK[clock]
    for _ in range(3):
        step()
    sync()
    rates = []
    for _ in range(repeats):
        t0 = now()
        for _ in range(iters):
            step()
        sync()
        rates.append(batch * iters / (now() - t0))
    return rates


def median_ms(fn, repeats: int, warmup: int = 1) -> float:
    """Median milliseconds of ``repeats`` calls of ``fn`` (which waits for its result), after
    ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    mid = len(times) // 2
    return 1e3 * (times[mid] if len(times) % 2 else (times[mid - 1] + times[mid]) / 2)


def symbol_net(sym, model):
    """The model as MXNet 1.x symbol code ending in ``SoftmaxOutput`` (``sym`` is ``mxnet.sym`` or
    ``mxref.sym``): ``mlp`` 784-512-512-10, ``lenet`` LeNet-5, ``tiny`` 50 x (FC(4) + ReLU)."""
    h = sym.Variable("data")
    if model == "tiny":
        for i in range(50):
            h = sym.Activation(sym.FullyConnected(h, num_hidden=4, name=f"fc{i}"), act_type="relu")
        return sym.SoftmaxOutput(h, name="softmax")
    if model == "mlp":
        for i, n in enumerate((512, 512)):
            h = sym.Activation(sym.FullyConnected(h, num_hidden=n, name=f"fc{i + 1}"), act_type="relu")
        return sym.SoftmaxOutput(sym.FullyConnected(h, num_hidden=10, name="fc3"), name="softmax")
    for i, nf in enumerate((20, 50)):
        h = sym.Convolution(h, kernel=(5, 5), num_filter=nf, name=f"conv{i + 1}")
        h = sym.Activation(h, act_type="tanh")
        h = sym.Pooling(h, pool_type="max", kernel=(2, 2), stride=(2, 2))
    h = sym.Activation(sym.FullyConnected(sym.Flatten(h), num_hidden=500, name="fc1"), act_type="tanh")
    return sym.SoftmaxOutput(sym.FullyConnected(h, num_hidden=10, name="fc2"), name="softmax")


def measure(python, script, system, model, threads, iters, repeats, clock="wall"):
    """Run ``script --worker system`` under ``python`` at ``threads`` threads; its JSON rates."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), MXNET_CPU_WORKER_NTHREADS="1",
               MXNET_ENGINE_TYPE="ThreadedEnginePerDevice")
    cmd = [python, os.path.abspath(script), "--worker", system, "--model", model,
           "--threads", str(threads), "--iters", str(iters), "--repeats", str(repeats), "--clock", clock]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def add_timing_arguments(parser, workers, block_help="calls per timed block (default per model)"):
    """The options both throughput benchmarks take, and the hidden ``--worker``/``--model`` of the
    subprocess that does the measuring (``workers``: the systems it can run)."""
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iters", type=int, default=0, help=block_help)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1, help="alternate the systems this many times")
    parser.add_argument("--clock", choices=sorted(CLOCK), default="wall",
                        help="'cpu' divides by the process's CPU time (all its threads): steadier than "
                             "wall time on a shared machine, fair only when no thread spins idle")
    parser.add_argument("--worker", choices=list(workers), help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)


def alternate(measure_fn, systems, model, args, iters):
    """Each system's rates over ``args.rounds`` rounds, the systems taking turns within a round
    (so load changes on a shared machine hit them all alike); ``measure_fn`` is the script's
    ``measure(system, model, threads, iters, repeats, clock)``."""
    rates = {s: [] for s in systems}
    for _ in range(args.rounds):
        for s in systems:
            rates[s] += measure_fn(s, model, args.threads, iters, args.repeats, args.clock)
    return rates


# -- dist benchmarks: mxref ranks under mpiexec, MXNet's ps-lite job, their JSON result lines -----
MXNET_PY = "/work/venvs/mxnet191/bin/python"
MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def workers_json(out: str) -> list:
    """The ``{"worker": ...}`` objects the ranks printed, by worker. The ranks share one stdout, so
    two lines may arrive glued together: find the objects themselves."""
    return sorted((json.loads(m) for m in re.findall(r'\{"worker"[^}]*\}', out)), key=lambda r: r["worker"])


def mpi_ranks(script: str, nprocs: int, argv: list, timeout: float, env=None) -> list:
    """``script argv`` on ``nprocs`` loopback ranks (one server); every worker's result object."""
    cmd = [MPIEXEC, "-launcher", "fork", "-iface", "lo", "-n", str(nprocs), sys.executable, script,
           *argv]
    environ = dict(os.environ, FI_TCP_IFACE="lo", MXREF_NUM_SERVERS="1", PYTHONPATH=REPO, **(env or {}))
    proc = subprocess.run(cmd, env=environ, capture_output=True, text=True, timeout=timeout)
    if proc.returncode:
        raise SystemExit(f"{' '.join(argv[:2])} failed:\n{(proc.stdout + proc.stderr)[-3000:]}")
    return workers_json(proc.stdout)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mxnet_ps(script: str, argv: list, timeout: float) -> list:
    """MXNet 1.9.1's scheduler, one server and two workers running ``script argv``, all on
    127.0.0.1 (its own launcher would advertise the host's address); every worker's result."""
    env = dict(os.environ, DMLC_PS_ROOT_URI="127.0.0.1", DMLC_PS_ROOT_PORT=str(_free_port()),
               DMLC_NUM_SERVER="1", DMLC_NUM_WORKER="2", DMLC_NODE_HOST="127.0.0.1",
               DMLC_INTERFACE="lo")
    # scheduler and server run the whole job inside "import mxnet" and exit when the workers finish
    others = [subprocess.Popen([MXNET_PY, "-c", "import mxnet"], env=dict(env, DMLC_ROLE=role),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
              for role in ("scheduler", "server")]
    workers = [subprocess.Popen([MXNET_PY, script, *argv], env=dict(env, DMLC_ROLE="worker"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(2)]
    try:
        outs = [w.communicate(timeout=timeout) for w in workers]
        for p in others:
            p.wait(timeout=60)
    finally:
        for p in others + workers:
            if p.poll() is None:
                p.kill()
    if any(w.returncode for w in workers):
        raise SystemExit("MXNet workers failed:\n" + "\n".join(e[-2000:] for _, e in outs))
    return workers_json("".join(o for o, _ in outs))


# -- benchmarks that run each system in its own subprocess on one data file ---------------------

def import_system(system: str):
    """The ``mx`` module a worker subprocess measures: MXNet 1.9.1 for ``'mxnet'``, else mxref
    from this checkout."""
    if system == "mxnet":
        import mxnet as mx  # noqa: PLC0415 - only the MXNet interpreter has it
        return mx
    sys.path.insert(0, REPO)
    import mxref as mx  # noqa: PLC0415 - from this checkout, put first on sys.path just above
    return mx


def interleaved_runs(script: str, systems, worker_args, rounds: int, env=None, timeout: float = 1200,
                     tail: int = 1500) -> dict:
    """``{system: [the JSON line of each run]}``: ``script --worker <system> *worker_args`` under
    each ``(system, python)``, the systems taking turns in each of ``rounds`` rounds (the machine's
    load drifts). A failed run is reported and left out."""
    runs = {}
    for _ in range(rounds):
        for name, python in systems:
            cmd = [python, os.path.abspath(script), "--worker", name, *worker_args]
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
            if out.returncode != 0:
                print(f"{name}: failed\n{out.stderr[-tail:]}")
                continue
            runs.setdefault(name, []).append(json.loads(out.stdout.strip().splitlines()[-1]))
    return runs
