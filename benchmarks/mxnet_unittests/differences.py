"""MXNet 1.9.1 unit tests that pass under MXNet and fail under mxref on purpose, each with its reason.

Keys are pytest node ids (``file::test``). A test belongs here only where mxref chose to behave
differently from MXNet and says so in ``docs/mxnet-complaints.md`` or ``docs/compatibility.md``;
a missing feature is a failure, not a difference.
"""
DIFFERENCES = {
    "test_io.py::test_NDArrayIter_csr":
        "mxref's NDArrayIter pads and rolls over csr inputs; MXNet raises NotImplementedError for "
        "last_batch_handle other than 'discard' (docs/mxnet-complaints.md, complaint 12). The rest "
        "of the test passes.",
}
