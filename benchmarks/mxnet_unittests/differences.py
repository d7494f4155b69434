"""MXNet 1.9.1 unit tests that pass under MXNet and fail under mxref on purpose, each with its reason.

Keys are pytest node ids (``file::test``). A test belongs here only where mxref chose to behave
differently from MXNet and says so in ``docs/mxnet-complaints.md`` or ``docs/compatibility.md``;
a missing feature is a failure, not a difference.
"""
DIFFERENCES = {
    "test_higher_order_grad.py::test_arcsinh":
        "MXNet's second derivative of arcsinh has the wrong sign (+x/(x^2+1)^1.5; the true one is "
        "-x/(x^2+1)^1.5) and the test expects MXNet's; mxref gives the true derivative, checked by "
        "central differences (docs/mxnet-complaints.md, item 12)",
}
