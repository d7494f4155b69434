"""A robust-engine job for the launcher tests; ``KILL_AT=rank,iteration`` SIGKILLs that rank once.

    python -m mxref.tools.launch -n 3 --engine robust -- python tests/mpi_programs/collective_robust_prog.py
Each rank reports one JSON line with its final model, local model and version (``report.py``:
its own file under ``MXREF_TEST_REPORT_DIR``, and stdout).
"""
import json
import os
import signal

import numpy as np
from report import report

from mxref import collective as rabit

ITERS = 4


def main():
    rabit.init()
    rank, world = rabit.get_rank(), rabit.get_world_size()
    kill = tuple(int(x) for x in os.environ["KILL_AT"].split(",")) if os.environ.get("KILL_AT") else None
    version, model, local = rabit.load_checkpoint()
    if model is None:
        model, local = np.zeros(4), 0
    for it in range(version, ITERS):
        grad = np.arange(4.0) * (rank + 1) + it
        rabit.allreduce(grad, rabit.SUM)                    # small: the tree
        big = np.full(100003, rank + it, np.float32)
        rabit.allreduce(big, rabit.MAX)                     # large: the ring
        if kill == (rank, it) and os.environ.get("MXREF_NUM_ATTEMPT") == "0":
            os.kill(os.getpid(), signal.SIGKILL)            # no cleanup, no goodbye
        model = model * 0.5 + grad + float(big[-1])
        local += rank + 1
        rabit.checkpoint(model, local)
    line = json.dumps({"rank": rank, "model": model.tolist(), "local": local,
                       "version": rabit.version_number(), "world": world})
    report(line)
    rabit.finalize()


main()
