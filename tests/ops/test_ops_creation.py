"""Creation ops, Cast and random ops: shapes/dtypes from params, values, reproducibility, errors."""
import numpy as np
import pytest
from ops_check import check_numeric_grad, grad_op, run_op

from mxref.base import MXNetError
from mxref.ops import registry


def test_zeros_ones_full_eye(fdtype):
    """Zero-input ops take shape and dtype from parameters."""
    assert run_op("_zeros", shape=(2, 3), dtype=fdtype)[0].dtype == fdtype
    np.testing.assert_array_equal(run_op("_ones", shape=(2,))[0], [1, 1])
    (f,) = run_op("_full", shape=(2, 2), value=7.5, dtype="int32")
    assert f.dtype == np.int32 and (f == 7).all()
    np.testing.assert_array_equal(run_op("_eye", N=2, M=3, k=1)[0], np.eye(2, 3, 1))
    assert run_op("_zeros_without_dtype", shape=(2,))[0].dtype == np.float32


def test_arange_matches_mxnet_rules():
    """start + i*step, stop=None means [0, start), repeat repeats each value."""
    np.testing.assert_array_equal(run_op("_arange", start=2, stop=10, step=3, repeat=2)[0],
                                  [2, 2, 5, 5, 8, 8])
    np.testing.assert_array_equal(run_op("_arange", start=4, dtype="int32")[0], [0, 1, 2, 3])
    with pytest.raises(MXNetError, match="_arange.*step"):
        run_op("_arange", start=0, stop=3, step=0)


def test_arange_in_the_output_dtype():
    """As MXNet: start and step are cast to the dtype first (an integer arange truncates both and
    wraps around), and the float values are computed in the output dtype."""
    (r,) = run_op("_arange", start=1.3, stop=456.6, step=1.3, dtype="int32")
    assert r.shape == (351,) and r[0] == 1 and r[-1] == 351
    np.testing.assert_array_equal(run_op("_arange", start=0.5, stop=5.7, step=1.5, dtype="int32")[0],
                                  [0, 1, 2, 3])
    np.testing.assert_array_equal(run_op("_arange", start=-100, stop=-97, dtype="uint8")[0],
                                  [156, 157, 158])
    (f,) = run_op("_arange", start=0.1, stop=1.0, step=0.1)
    np.testing.assert_array_equal(f, np.float32(0.1) + np.arange(9, dtype=np.float32) * np.float32(0.1))


def test_like_ops_and_copy():
    """zeros_like/ones_like keep shape and dtype and read only the shape; _copy is identity."""
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    (z,) = run_op("ones_like", x)
    assert z.dtype == np.int32 and (z == 1).all()
    assert registry.get("zeros_like").ignore_inputs == (0,)
    np.testing.assert_array_equal(run_op("identity", x)[0], x)
    (g,) = grad_op("_copy", x.astype(np.float64))
    assert (g == 1).all()


def test_cast_truncates_and_gradient_casts_back():
    """Cast float -> int truncates toward zero; the gradient comes back in the input dtype."""
    (y,) = run_op("Cast", np.array([1.7, -1.7, 2.5], np.float32), dtype="int32")
    assert y.dtype == np.int32 and y.tolist() == [1, -1, 2]
    (g,) = grad_op("cast", np.ones(3, np.float32), dtype="float64")
    assert g.dtype == np.float32
    check_numeric_grad("Cast", np.arange(4.0), dtype="float64")
    with pytest.raises(MXNetError, match="Cast.*'dtype'"):
        run_op("Cast", np.ones(2), dtype="complex64")


def test_random_ops_shape_dtype_range_and_seed():
    """Draws follow the params; the same generator seed gives the same numbers."""
    (u,) = run_op("_random_uniform", low=2, high=3, shape=(1000,), seed=1)
    assert u.dtype == np.float32 and 2 <= u.min() and u.max() < 3
    np.testing.assert_array_equal(u, run_op("uniform", low=2, high=3, shape=(1000,), seed=1)[0])
    assert not np.array_equal(u, run_op("uniform", low=2, high=3, shape=(1000,), seed=2)[0])
    (n,) = run_op("normal", loc=5, scale=0.1, shape=(2000,), dtype="float64")
    assert n.dtype == np.float64 and abs(n.mean() - 5) < 0.01
    (r,) = run_op("_random_randint", low=-2, high=3, shape=(500,))
    assert r.dtype == np.int32 and set(np.unique(r)) == {-2, -1, 0, 1, 2}
    x = np.arange(10.0).reshape(5, 2)
    (s,) = run_op("shuffle", x)
    assert sorted(map(tuple, s)) == sorted(map(tuple, x)) and (s[:, 1] - s[:, 0] == 1).all()


def test_random_errors_are_raised_by_the_kernel():
    """A negative scale passes parameter parsing and shape inference, then the kernel raises."""
    op = registry.get("_random_normal")
    p = op.parse_params({"scale": -1, "shape": (2,)})
    assert op.infer_shape(p, [])[1] == [(2,)]
    with pytest.raises(MXNetError, match="scale"):
        run_op("_random_normal", scale=-1, shape=(2,))
    with pytest.raises(MXNetError, match="randint.*low"):
        run_op("_random_randint", low=3, high=3, shape=(2,))
    assert registry.get("_random_uniform").resources == ("random",)


def test_shape_parameters_accept_a_1d_numpy_array():
    """shape=np.array([6, 5, 6]) parses as a shape (MXNet 1.9.1's test_broadcast passes one)."""
    p = registry.get("_zeros").parse_params({"shape": np.array([6, 5, 6])})
    assert p["shape"] == (6, 5, 6)
