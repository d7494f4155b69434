"""Storage-type rules and values against MXNet 1.9.1 (subprocess into its venv; skipped without it):
the same calls on the same arrays give the same output stypes and values."""
import json
import os
import subprocess
import textwrap

import numpy as np
import pytest

import mxref as mx

MXNET_PY = "/work/venvs/mxnet191/bin/python"

# (name, python expression over nd, c (csr), r (row_sparse), d (dense 6x4), w (dense 4x3), v (dense 6x3))
CASES = [
    ("dot_csr_dns", "nd.sparse.dot(c, w)"),
    ("dot_csrT_dns", "nd.sparse.dot(c, v, transpose_a=True)"),
    ("dot_dns_csr", "nd.sparse.dot(v.T, c)"),
    ("dot_csr_rsp", "nd.sparse.dot(c, r2)"),
    ("add_rsp", "nd.elemwise_add(r, r)"),
    ("add_n_rsp", "nd.add_n(r, r, r)"),
    ("add_dns_rsp", "nd.elemwise_add(d, r)"),
    ("abs_csr", "nd.abs(c)"),
    ("sqrt_rsp", "nd.sqrt(nd.abs(r))"),
    ("mul_scalar_csr", "c * 3"),
    ("div_scalar_rsp", "r / 2"),
    ("sum_csr_0", "nd.sum(c, axis=0)"),
    ("sum_csr_1", "nd.sum(c, axis=1)"),
    ("mean_csr_0", "nd.mean(c, axis=0)"),
    ("retain", "nd.sparse.retain(r, nd.array([0, 3], dtype='int64'))"),
    ("slice_csr", "c[1:4]"),
    ("cast_rsp", "nd.cast_storage(d, stype='row_sparse')"),
]

SETUP = """
import numpy as np
rng = np.random.RandomState(0)
D = rng.randn(6, 4).astype(np.float32); D[rng.rand(6, 4) > 0.4] = 0; D[2] = 0
W = rng.randn(4, 3).astype(np.float32)
V = rng.randn(6, 3).astype(np.float32)
c = nd.array(D).tostype('csr'); r = nd.array(D).tostype('row_sparse'); d = nd.array(D)
w = nd.array(W); v = nd.array(V); W2 = W.copy(); W2[1] = 0; r2 = nd.array(W2).tostype('row_sparse')
"""


def _run(nd):
    scope = {"nd": nd}
    exec(SETUP, scope)
    out = {}
    for name, expr in CASES:
        res = eval(expr, scope)
        out[name] = (res.stype, res.asnumpy().tolist())
    return out


@pytest.mark.timeout(120)
@pytest.mark.skipif(not os.path.exists(MXNET_PY), reason="MXNet 1.9.1 venv not present")
def test_storage_rules_and_values_match_mxnet(tmp_path):
    script = textwrap.dedent(f"""
        import json, mxnet as mx
        nd = mx.nd
        scope = {{"nd": nd}}
        exec({SETUP!r}, scope)
        out = {{}}
        for name, expr in {CASES!r}:
            res = eval(expr, scope)
            out[name] = (res.stype, res.asnumpy().tolist())
        print(json.dumps(out))
    """)
    proc = subprocess.run([MXNET_PY, "-c", script], capture_output=True, text=True, timeout=100)
    assert proc.returncode == 0, proc.stderr[-2000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    ours = _run(mx.nd)
    for name, _ in CASES:
        assert ours[name][0] == theirs[name][0], (name, ours[name][0], theirs[name][0])
        np.testing.assert_allclose(ours[name][1], theirs[name][1], rtol=1e-5, atol=1e-6, err_msg=name)
