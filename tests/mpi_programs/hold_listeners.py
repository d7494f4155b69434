"""Ranks that hold the job open for the listener test: allreduce once (so every endpoint is up),
write ``$HOLD_DIR/ready.<rank>``, then wait for ``$HOLD_DIR/go`` before exiting."""
import os
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
out = np.zeros(4)
comm.Allreduce(np.ones(4), out)
folder = Path(os.environ["HOLD_DIR"])
(folder / f"ready.{comm.Get_rank()}").write_text(str(out.sum()))
deadline = time.monotonic() + 120          # the test's own timeout ends a lost job first
while not (folder / "go").exists() and time.monotonic() < deadline:
    time.sleep(0.05)
comm.Barrier()
