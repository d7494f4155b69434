"""dist_sync rounds until one fails: for the partition test (one host's link taken down).

Every worker reports ``running`` after its first round, then pushes and pulls until a push fails;
it reports the error's message (one line) and raises it, which aborts the MPI job.
"""
from report import report

import mxref as mx
from mxref import kvstore


def main():
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
