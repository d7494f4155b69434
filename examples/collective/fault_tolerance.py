"""A worker is killed with SIGKILL mid-run, restarted by the launcher, and the job still finishes right.

Run (the robust engine needs the launcher, which starts the tracker and restarts dead workers)::

    python -m mxref.tools.launch -n 3 --engine robust --max-restarts 2 -- \\
        python examples/collective/fault_tolerance.py

Rank 1 kills itself in iteration 3 of its first life. The survivors block inside their next
collective; the launcher restarts rank 1, whose ``load_checkpoint`` returns version 3 from a
survivor's memory; it replays its calls (answered from the survivors' caches) and all ranks end
with the same model as a failure-free run, which every rank checks in closed form.
"""
import os
import signal
import time

import numpy as np

from mxref import collective as rabit

ITERS, N = 6, 1 << 16

rabit.init()
rank, world = rabit.get_rank(), rabit.get_world_size()
attempt = int(os.environ.get("MXREF_NUM_ATTEMPT", 0))
t0 = time.time()
version, model, _ = rabit.load_checkpoint()
if version > 0:
    rabit.tracker_print(f"restarted (attempt {attempt}): resuming from checkpoint version {version} "
                        f"after {time.time() - t0:.2f}s of recovery")
if model is None:
    model = np.zeros(N)
for it in range(version, ITERS):
    grad = np.full(N, rank + 1.0 + it)
    rabit.allreduce(grad, rabit.SUM)
    if rank == 1 and it == 3 and attempt == 0:
        rabit.tracker_print("killing myself with SIGKILL")
        os.kill(os.getpid(), signal.SIGKILL)
    model += grad
    rabit.checkpoint(model)

want = sum(world * (world + 1) / 2 + world * it for it in range(ITERS))
assert np.all(model == want), (model[:3], want)
rabit.tracker_print(f"done: model[0] = {model[0]} (expected {want}), version {rabit.version_number()}")
rabit.finalize()
