"""One rank of the cluster experiments' synthetic data-parallel job (started by common.run_job).

Each worker runs ``--layers`` tanh layers of ``--dim`` x ``--dim`` weights on a batch, and its
gradients go through ``--kv-store`` (``dist_sync``, ``dist_async``, ...; or ``allreduce:ring`` /
``allreduce:tree`` for the collective) from ``--devices`` contexts (a list of values per key:
the store sums them in the process first). It times compute alone, communication alone and
whole steps, and writes ``$RESULT_DIR/rank<R>.json``; ``--steps-log`` also records each step's
end time (the partition experiment reads the stalls from it).
"""
import argparse
import json
import os
import socket
import sys
import time

import numpy as np

import mxref as mx


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--kv-store", default="dist_sync")
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--devices", type=int, default=1)
    p.add_argument("--compression", default="none")
    p.add_argument("--phases", default="compute,comm,step")
    p.add_argument("--steps-log", action="store_true")
    p.add_argument("--pace", type=float, default=0.0, help="seconds to sleep in each step (slower jobs)")
    return p.parse_args()


def write(rank, result):
    result["host"] = socket.gethostname()
    path = os.path.join(os.environ["RESULT_DIR"], f"rank{rank}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(path + ".tmp", path)


def running(rank):
    """Mark this rank as past its first step (the partition experiment waits for every rank)."""
    open(os.path.join(os.environ["RESULT_DIR"], f"running{rank}"), "w").close()


def collective_main(args):
    from mxref import collective as rabit
    algo = args.kv_store.split(":")[1]
    # ring_mincount picks the algorithm: 1 = the ring for every size, huge = the tree for every size
    rabit.init(ring_mincount=1 if algo == "ring" else 1 << 40)
    grads = [np.ones(args.dim * args.dim, np.float32) for _ in range(args.layers)]
    ends = []
    for _ in range(args.steps):
        for g in grads:
            rabit.allreduce(g, rabit.SUM)
        time.sleep(args.pace)
        ends.append(time.time())
        if len(ends) == 1:
            running(rabit.get_rank())
    comm = (ends[-1] - ends[0]) / max(len(ends) - 1, 1)
    write(rabit.get_rank(), {"comm": comm, "ends": ends, "bytes": args.layers * args.dim * args.dim * 4})
    rabit.finalize()


def main():
    args = parse()
    if args.kv_store.startswith("allreduce"):
        return collective_main(args)
    kv = mx.kv.create(args.kv_store)
    d, layers = args.dim, args.layers
    if args.compression != "none":
        kv.set_gradient_compression({"type": args.compression, "threshold": 0.5})
    rng = np.random.default_rng(kv.rank)
    keys = list(range(layers))
    kv.init(keys, [mx.nd.array(rng.standard_normal((d, d)).astype(np.float32) / d ** 0.5) for _ in keys])
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=1e-3))
    weights = [mx.nd.zeros((d, d)) for _ in keys]
    ctxs = [mx.cpu(i) for i in range(args.devices)]
    x = rng.standard_normal((args.batch, d)).astype(np.float32)

    def compute():
        h, grads = x, []
        for w in weights:
            h = np.tanh(h @ w.asnumpy())
            g = h.T @ h / args.batch
            grads.append([mx.nd.array(g, ctx=c) for c in ctxs])
        return grads

    def comm(grads):
        for k in keys:
            kv.push(k, grads[k] if len(ctxs) > 1 else grads[k][0], priority=-k)
            kv.pull(k, out=weights[k], priority=-k)
        mx.nd.waitall()

    def timed(fn, n):
        kv._barrier()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t0) / n

    grads = compute()
    comm(grads)
    result = {"worker": kv.rank, "bytes": layers * d * d * 4}
    phases = args.phases.split(",")
    if "compute" in phases:
        result["compute"] = timed(compute, args.steps)
    if "comm" in phases:
        result["comm"] = timed(lambda: comm(grads), args.steps)
    if "step" in phases:
        ends = []
        kv._barrier()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            comm(compute())
            time.sleep(args.pace)
            ends.append(time.time())
            if len(ends) == 1:
                running(kv.rank)
        result["step"] = (time.perf_counter() - t0) / args.steps
        if args.steps_log:
            result["ends"] = ends
    write(kv.rank, result)


if __name__ == "__main__":
    main()
    sys.stdout.flush()
