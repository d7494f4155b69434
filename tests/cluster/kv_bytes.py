"""A known push/pull sequence for the link-counter test: one worker, one server, one key.

Worker 0 initialises a float32 key of ``KV_BYTES_N`` elements (one message of 4N bytes to the
server), then pushes it ``ROUNDS`` times and pulls it after each push (4N bytes each way), so the
worker's host sends (1 + ROUNDS) * 4N payload bytes and receives ROUNDS * 4N.
"""
import os
import socket

import numpy as np
from report import report

import mxref as mx
from mxref import kvstore

ROUNDS = 3


def main():
    n = int(os.environ["KV_BYTES_N"])
    kv = kvstore.create("dist_sync")
    kv.init("w", mx.nd.zeros((n,)))
    out = mx.nd.zeros((n,))
    for t in range(ROUNDS):
        kv.push("w", mx.nd.ones((n,)) * (t + 1))
        kv.pull("w", out=out)
        got = out.asnumpy()
        assert np.all(got == t + 1), (t, got[:3])     # no updater: the store keeps the push
    report(f"worker {kv.rank} on {socket.gethostname()}: OK")


if __name__ == "__main__":
    main()
