"""Shape operators: MXNet's reshape codes table, permutations, tile/repeat, errors and gradients."""
import ast
import os
import re

import numpy as np
import pytest
from ops_check import check_numeric_grad, run_op

from mxref.base import MXNetError
from mxref.ops import registry
from mxref.ops.shape import infer_reshape

X = np.arange(24.0).reshape(2, 3, 4)


def _reshape_table():
    path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "reshape_codes_mxnet191.txt")
    rows = []
    for line in open(path):
        m = re.match(r"(\(.*?\)) (\(.*?\)) (True|False) (.*)", line.strip())
        rows.append((ast.literal_eval(m[1]), ast.literal_eval(m[2]), m[3] == "True", m[4]))
    return rows


@pytest.mark.parametrize("src,codes,reverse,want", _reshape_table(), ids=str)
def test_reshape_codes_match_mxnet(src, codes, reverse, want):
    """Codes 0, -1, -2, -3, -4 (and reverse=True) give MXNet 1.9.1's shapes, or an error where it errs."""
    if want == "ERR":
        with pytest.raises(MXNetError, match="Reshape"):
            infer_reshape(src, codes, reverse)
    else:
        assert infer_reshape(src, codes, reverse) == ast.literal_eval(want)


def test_reshape_kernel_and_deprecated_target_shape():
    """The kernel keeps element order; target_shape with 0 = infer still works."""
    np.testing.assert_array_equal(run_op("reshape", X, shape=(-3, 0))[0], X.reshape(6, 4))
    assert run_op("Reshape", X, target_shape=(0, 4))[0].shape == (6, 4)
    assert registry.get("Reshape").inplace_identity == (True,)


@pytest.mark.parametrize("name,params", [
    ("Reshape", dict(shape=(4, -1))), ("transpose", dict(axes=(1, 2, 0))), ("transpose", {}),
    ("expand_dims", dict(axis=-1)), ("Flatten", {}), ("SwapAxis", dict(dim1=0, dim2=2)),
    ("reverse", dict(axis=(0, 2))), ("tile", dict(reps=(2, 1, 1, 2))), ("tile", dict(reps=(3,))),
    ("repeat", dict(repeats=2)), ("repeat", dict(repeats=3, axis=-2))], ids=str)
def test_shape_op_gradients(name, params):
    """Data-movement ops send the head gradient back to where each element came from."""
    check_numeric_grad(name, X / 10, **params)


def test_squeeze_and_reshape_like(fdtype):
    """squeeze drops size-1 axes (all of them gives (1,)); reshape_like copies a range of dims."""
    x = np.ones((1, 3, 1), fdtype)
    assert run_op("squeeze", x)[0].shape == (3,)
    assert run_op("squeeze", np.ones((1, 1)))[0].shape == (1,)
    assert run_op("squeeze", x, axis=-1)[0].shape == (1, 3)
    y = run_op("reshape_like", np.ones((30, 7), fdtype), np.ones((15, 2, 4)), lhs_begin=0, lhs_end=1,
               rhs_begin=0, rhs_end=2)[0]
    assert y.shape == (15, 2, 7) and y.dtype == fdtype
    check_numeric_grad("squeeze", x, wrt=[0])
    check_numeric_grad("reshape_like", np.ones((6, 2)), np.ones((3, 4)), wrt=[0])


def test_shape_and_size_array():
    """shape_array / size_array give int64 data."""
    (s,) = run_op("shape_array", X)
    assert s.dtype == np.int64 and s.tolist() == [2, 3, 4]
    assert run_op("size_array", X)[0].tolist() == [24]


@pytest.mark.parametrize("name,params,match", [
    ("Reshape", dict(shape=(5, -1)), "Reshape"), ("Reshape", dict(shape=(-1, -1)), "more than one -1"),
    ("transpose", dict(axes=(0, 0, 1)), "transpose.*permutation"),
    ("expand_dims", dict(axis=5), "expand_dims"),
    ("squeeze", dict(axis=0), "squeeze.*size 2"), ("SwapAxis", dict(dim1=0, dim2=3), "SwapAxis"),
    ("repeat", dict(repeats=2, axis=3), "repeat"), ("Reshape", dict(shape=(-4, 5, -1, 0, 0)), "split")])
def test_shape_errors(name, params, match):
    """Impossible shapes raise MXNetError naming the op and the shapes."""
    with pytest.raises(MXNetError, match=match):
        run_op(name, X, **params)


def test_swapaxes_and_flatten_aliases():
    """MXNet's lowercase aliases resolve to the capitalised operators."""
    assert registry.get("swapaxes") is registry.get("SwapAxis")
    assert registry.get("flatten") is registry.get("Flatten")
    assert registry.get("flip") is registry.get("reverse")


def test_reshape_back_infers_one_unknown_input_dim():
    """A known output shape fills in the one unknown (0) input dim, as MXNet's reverse inference."""
    import mxref as mx
    net = mx.sym.elemwise_add(mx.sym.var("data").reshape((-1, 0)), mx.sym.ones(shape=(10, 3)))
    for held_out in ((2, 0, 5), (0, 3, 5), (2, 3, 0)):
        ins, outs, _ = net.infer_shape(data=held_out)
        assert ins == [(2, 3, 5)] and outs == [(10, 3)]


def test_transpose_and_unknown_creation_dims_infer_backwards():
    """sym.ones(shape=(-1, -1)) has unknown dims; transpose carries the known sum's shape back."""
    import mxref as mx
    for o2_shape in ((-1, -1), (3, -1)):
        b = mx.sym.ones(shape=(2, 3)) + mx.sym.transpose(mx.sym.ones(shape=o2_shape))
        assert b.bind(mx.cpu(), args={}).forward()[0].shape == (2, 3)
    t = mx.sym.transpose(mx.sym.var("x"), axes=(1, 2, 0))
    ins, outs, _ = mx.sym.elemwise_add(t, mx.sym.var("y")).infer_shape(x=(0, 4, 0), y=(4, 5, 6))
    assert ins[0] == (6, 4, 5) and outs == [(4, 5, 6)]
