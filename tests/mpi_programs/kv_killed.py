"""A worker that dies mid-training: the job ends quickly with a failure instead of hanging.

The last worker leaves with ``os._exit(3)`` after two rounds, without telling anyone. mpiexec
notices the dead process and ends the others; the pytest driver checks the exit status, the
time taken and that the output names the dead process. With ``-disable-auto-cleanup`` the
others live on, and the server's round timeout names the dead worker instead.
"""
import os

from report import report, stamp_death

import mxref as mx
from mxref import kvstore


def main():
    kv = kvstore.create("dist_sync")
    n, r = kv.num_workers, kv.rank
    kv.init(0, mx.nd.zeros((8,)))
    out = mx.nd.zeros((8,))
    for t in range(50):
        if r == n - 1 and t == 2:
            report(f"worker {r}: exiting abruptly")
            stamp_death()
            os._exit(3)
        kv.push(0, mx.nd.ones((8,)))
        kv.pull(0, out=out)
        out.wait_to_read()
    report(f"worker {r} of {n}: finished all rounds (unexpected)")


if __name__ == "__main__":
    main()
