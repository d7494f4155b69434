"""A worker that never pushes: the others fail with an error naming it, nobody hangs.

The last worker sleeps instead of pushing. With ``MXREF_KV_TIMEOUT`` small, the server's round
times out and every waiting worker's pull raises ``MXNetError`` naming the missing worker's rank
(worker rank and MPI rank). Then every process exits normally.
"""
import os
import time

from report import report

import mxref as mx
from mxref import kvstore


def main():
    kv = kvstore.create("dist_sync")
    n, r = kv.num_workers, kv.rank
    kv.init(1, mx.nd.zeros((4,)))
    late = n - 1
    if r == late:
        time.sleep(1.5 * float(os.environ["MXREF_KV_TIMEOUT"]))
        report(f"worker {r} of {n}: OK (slept)")
        return
    kv.push(1, mx.nd.ones((4,)))
    out = mx.nd.zeros((4,))
    kv.pull(1, out=out)
    try:
        out.asnumpy()
    except mx.MXNetError as e:
        text = str(e)
        servers = int(os.environ.get("MXREF_NUM_SERVERS", "1"))
        name = f"worker {late} (MPI rank {late + servers})"
        assert name in text and "did not push" in text, text
        report(f"worker {r} of {n}: OK ({text.splitlines()[0]})")
    else:
        raise AssertionError("a round missing a worker completed")


if __name__ == "__main__":
    main()
