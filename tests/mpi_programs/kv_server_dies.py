"""A server that dies mid-training under ``-disable-auto-cleanup``: the workers must not be left
silent (blocked for ever on a reply that cannot come).

Worker 0 writes ``$HOLD_DIR/round2`` after its second round; the server rank, which serves from
inside ``kvstore.create``, has a thread that waits for that file and then leaves with
``os._exit(3)``. The workers go on pushing and pulling until hydra's SIGUSR1 reaches them and
``mxref/kvstore/ps/failure.py`` names the dead server and ends them.
"""
import os
import threading
import time
from pathlib import Path

from report import report, stamp_death

import mxref as mx
from mxref import kvstore

HOLD = Path(os.environ["HOLD_DIR"])


def die_after_round_two():
    deadline = time.monotonic() + 60
    while not (HOLD / "round2").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    stamp_death()
    os._exit(3)


def main():
    if os.environ["PMI_RANK"] == "0":
        threading.Thread(target=die_after_round_two, daemon=True).start()
    kv = kvstore.create("dist_sync")
    kv.init(0, mx.nd.zeros((8,)))
    out = mx.nd.zeros((8,))
    for t in range(100000):
        kv.push(0, mx.nd.ones((8,)))
        kv.pull(0, out=out)
        out.wait_to_read()
        if t == 2 and kv.rank == 0:
            report(f"worker {kv.rank}: round 2 done")
            (HOLD / "round2").write_text("")
    report(f"worker {kv.rank}: finished all rounds (unexpected)")


if __name__ == "__main__":
    main()
