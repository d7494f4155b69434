"""dist_sync rounds until one fails: for the partition test (one host's link taken down).

Every worker reports ``running`` after its first round, then pushes and pulls until a push fails;
it reports the error's message (one line) and raises it, which aborts the MPI job. Every rank
(the server too) runs with a long ``MXREF_KV_TIMEOUT`` until the file ``$PARTITION_TIMEOUT_FILE``
appears, then with the number in it: a loaded machine may start the ranks seconds apart, which
must not count against the short timeout the test is about (it is read at every check).
"""
import os
import threading
import time

from report import report

import mxref as mx
from mxref import kvstore


def short_timeout_when_told():
    path = os.environ["PARTITION_TIMEOUT_FILE"]
    while not os.path.exists(path):
        time.sleep(0.02)
    with open(path) as f:
        os.environ["MXREF_KV_TIMEOUT"] = f.read().strip()


def main():
    threading.Thread(target=short_timeout_when_told, daemon=True).start()
    kv = kvstore.create("dist_sync")
    kv.init(0, mx.nd.zeros((1000,)))
    out = mx.nd.zeros((1000,))
    kv.push(0, mx.nd.ones((1000,)))
    kv.pull(0, out=out)
    out.wait_to_read()
    report(f"worker {kv.rank} running")
    while True:
        try:
            kv.push(0, mx.nd.ones((1000,)))
            kv.pull(0, out=out)
            out.wait_to_read()
        except mx.MXNetError as exc:
            report(f"worker {kv.rank} error: {str(exc).splitlines()[0]}")
            raise                     # uncaught: mxref aborts the MPI job (a plain exit would wait)


if __name__ == "__main__":
    main()
