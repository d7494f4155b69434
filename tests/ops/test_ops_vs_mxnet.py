"""Tensor operators give MXNet 1.9.1's values, shapes and dtypes on the recorded fixture cases.

The fixture (``tests/fixtures/tensor_ops_mxnet191.npz``) is made by ``make_tensor_ops_fixture.py``
running MXNet 1.9.1; each case names an op, its inputs and its parameters.
"""
import json
import os

import numpy as np
import pytest
from ops_check import run_op

_PATH = os.path.join(os.path.dirname(__file__), "..", "fixtures", "tensor_ops_mxnet191.npz")
_DATA = np.load(_PATH)
_SPECS = json.loads(str(_DATA["specs"]))


def _case_id(i):
    s = _SPECS[i]
    return f"{i}-{s['op']}-{'-'.join(s['inputs'])}"


@pytest.mark.parametrize("i", range(len(_SPECS)), ids=_case_id)
def test_matches_mxnet(i):
    """One recorded case: same output count, shapes, dtypes and values (float32 tolerance)."""
    spec = _SPECS[i]
    arrays = [_DATA[f"in_{n}"] for n in spec["inputs"]]
    if spec["op"] == "where":
        arrays[2] = -arrays[2]
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in spec["params"].items()}
    with np.errstate(all="ignore"):
        outs = run_op(spec["op"], *arrays, **params)
    assert len(outs) == spec["n_out"]
    for j, got in enumerate(outs):
        want = _DATA[f"out_{i}_{j}"]
        assert got.shape == want.shape, f"{spec}: shape {got.shape} != {want.shape}"
        assert got.dtype == want.dtype, f"{spec}: dtype {got.dtype} != {want.dtype}"
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6, err_msg=str(spec))
