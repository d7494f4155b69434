"""A robust-engine job across cluster hosts; ``KILL_AT=r:i,r:i`` SIGKILLs rank r at iteration i once.

Each rank reports (``report.py``) its host, final model and version; the model has a closed form
(``expected`` in test_cluster.py), so every rank's line can be checked alone.
"""
import os
import signal
import socket

import numpy as np
from report import report

from mxref import collective as rabit

ITERS = 4


def main():
    rabit.init()
    rank = rabit.get_rank()
    kills = {tuple(int(x) for x in pair.split(":")) for pair in os.environ.get("KILL_AT", "").split(",")
             if pair}
    version, model = rabit.load_checkpoint()[:2]
    if model is None:
        model = np.zeros(4)
    for it in range(version, ITERS):
        grad = np.arange(4.0) * (rank + 1) + it
        rabit.allreduce(grad, rabit.SUM)                     # small: the tree
        big = np.full(200003, rank + it, np.float32)
        rabit.allreduce(big, rabit.MAX)                      # large: the ring
        if (rank, it) in kills and os.environ.get("MXREF_NUM_ATTEMPT") == "0":
            os.kill(os.getpid(), signal.SIGKILL)             # no cleanup, no goodbye
        model = model * 0.5 + grad + float(big[-1])
        rabit.checkpoint(model)
    report(f"rank {rank} host {socket.gethostname()} attempt {os.environ.get('MXREF_NUM_ATTEMPT')} "
           f"version {rabit.version_number()} model {' '.join(map(str, model.tolist()))}")
    rabit.finalize()


main()
