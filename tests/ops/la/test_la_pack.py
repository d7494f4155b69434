"""linalg.extractdiag / makediag / extracttrian / maketrian: offsets, packing order, round trips,
gradients (each is the other's transpose), shapes and errors."""
import numpy as np
import pytest

import mxref as mx
from mxref import op_check
from mxref.base import MXNetError

RNG = np.random.default_rng(16)
M = np.arange(16.0).reshape(4, 4)


@pytest.mark.parametrize("offset", [-3, -1, 0, 2])
def test_diag_extract_make_and_gradients(offset):
    """extractdiag is numpy's diagonal on the last two axes; makediag puts it back; both gradients."""
    a = RNG.standard_normal((2, 3, 4, 4))
    (d,) = op_check.run_op("_linalg_extractdiag", [a], {"offset": offset})
    np.testing.assert_array_equal(d, np.diagonal(a, offset, -2, -1))
    (m,) = op_check.run_op("_linalg_makediag", [d], {"offset": offset})
    np.testing.assert_array_equal(m[1, 2], np.diagflat(d[1, 2], offset))
    op_check.check_op_gradient("_linalg_extractdiag", [a[0]], {"offset": offset}, is_train=False)
    op_check.check_op_gradient("_linalg_makediag", [d[0]], {"offset": offset}, is_train=False)


@pytest.mark.parametrize("offset,lower,want", [
    (0, True, [0, 4, 5, 8, 9, 10, 12, 13, 14, 15]), (0, False, [0, 1, 5, 2, 6, 10, 3, 7, 11, 15]),
    (-1, True, [4, 8, 9, 12, 13, 14]), (1, True, [1, 2, 6, 3, 7, 11]), (2, False, [2, 3, 7])])
def test_trian_packing_order(offset, lower, want):
    """MXNet's order (as MXNet 1.9.1 prints it): lower row by row, upper column by column."""
    (t,) = op_check.run_op("_linalg_extracttrian", [M], {"offset": offset, "lower": lower})
    np.testing.assert_array_equal(t, want)


@pytest.mark.parametrize("offset,lower", [(0, True), (0, False), (-2, True), (1, False), (3, True)])
def test_trian_round_trip_and_gradients(offset, lower):
    """maketrian(extracttrian(A)) keeps exactly the triangle (tril/triu with the offset); gradients."""
    a = RNG.standard_normal((2, 4, 4))
    p = {"offset": offset, "lower": lower}
    (t,) = op_check.run_op("_linalg_extracttrian", [a], p)
    (back,) = op_check.run_op("_linalg_maketrian", [t], p)
    keep_lower = offset < 0 or (offset == 0 and lower)
    np.testing.assert_array_equal(back, np.tril(a, offset) if keep_lower else np.triu(a, offset))
    op_check.check_op_gradient("_linalg_extracttrian", [a], p, is_train=False)
    op_check.check_op_gradient("_linalg_maketrian", [t], p, is_train=False)


def test_documented_maketrian_examples():
    """MXNet's docstring examples of maketrian."""
    a = mx.nd.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(mx.nd.linalg.maketrian(a).asnumpy(), [[1, 0], [2, 3]])
    np.testing.assert_array_equal(mx.nd.linalg.maketrian(a, lower=False).asnumpy(), [[1, 2], [0, 3]])
    np.testing.assert_array_equal(mx.nd.linalg.maketrian(a, offset=1).asnumpy(),
                                  [[0, 1, 2], [0, 0, 3], [0, 0, 0]])
    np.testing.assert_array_equal(mx.nd.linalg.maketrian(a, offset=-1).asnumpy(),
                                  [[0, 0, 0], [1, 0, 0], [2, 3, 0]])


def test_shapes_and_errors():
    """Offsets past the matrix, non-square inputs, lengths that are no triangle's; symbolic shapes."""
    with pytest.raises(MXNetError, match=r"linalg.extractdiag.*offset 4.*\(4, 4\)"):
        op_check.run_op("_linalg_extractdiag", [M], {"offset": 4})
    with pytest.raises(MXNetError, match=r"linalg.extracttrian.*square.*\(3, 4\)"):
        op_check.run_op("_linalg_extracttrian", [np.ones((3, 4))])
    with pytest.raises(MXNetError, match=r"linalg.maketrian.*\(2, 5\)"):
        op_check.run_op("_linalg_maketrian", [np.ones((2, 5))])
    s = mx.sym.linalg.maketrian(mx.sym.linalg.extracttrian(mx.sym.var("a"), offset=-1), offset=-1)
    assert s.infer_shape(a=(3, 5, 5))[1] == [(3, 5, 5)]
    assert mx.sym.linalg.makediag(mx.sym.var("v"), offset=2).infer_shape(v=(3,))[1] == [(5, 5)]
