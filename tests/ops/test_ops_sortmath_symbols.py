"""The mx.sym forms of the sorting, indexing and math operators: shapes inferred from the inputs
equal what mx.nd computes, and a bound executor gives the same values; Gluon's F.<op> in a
hybridized block."""
import numpy as np
import pytest

import mxref as mx

RNG = np.random.default_rng(11)
X = RNG.uniform(0.2, 0.9, (3, 4)).astype(np.float32)
IDX = np.array([[1, 0, 2], [0, 3, 1]], np.float32)

# (function path, inputs {name: array}, params)
CASES = [
    ("topk", {"data": X}, {"k": 2, "ret_typ": "both"}),
    ("topk", {"data": X}, {"k": 2, "ret_typ": "mask", "axis": 0}),
    ("sort", {"data": X}, {"axis": None}),
    ("argsort", {"data": X}, {"is_ascend": False, "dtype": "int32"}),
    ("cumsum", {"a": X}, {"axis": 1}),
    ("diag", {"data": X}, {"k": 1}),
    ("gather_nd", {"data": X, "indices": IDX[:, :2]}, {}),
    ("scatter_nd", {"data": np.array([1.0, 2, 3], np.float32), "indices": IDX}, {"shape": (3, 4)}),
    ("ravel_multi_index", {"data": IDX}, {"shape": (3, 4)}),
    ("unravel_index", {"data": np.array([5.0, 11], np.float32)}, {"shape": (3, 4)}),
    ("batch_take", {"a": X, "indices": np.array([0, 3, 1], np.int32)}, {}),
    ("khatri_rao", {"a0": X, "a1": X[:2]}, {}),
    ("depth_to_space", {"data": RNG.standard_normal((1, 8, 2, 3)).astype(np.float32)}, {"block_size": 2}),
    ("space_to_depth", {"data": RNG.standard_normal((1, 2, 4, 6)).astype(np.float32)}, {"block_size": 2}),
    ("erf", {"data": X}, {}),
    ("erfinv", {"data": X}, {}),
    ("gamma", {"data": X}, {}),
    ("gammaln", {"data": X}, {}),
    ("hard_sigmoid", {"data": X}, {"alpha": 0.3}),
    ("smooth_l1", {"data": X}, {"scalar": 2.0}),
    ("softmin", {"data": X}, {"axis": 0}),
    ("moments", {"data": X}, {"axes": (1,)}),
    ("contrib.quadratic", {"data": X}, {"a": 1.0, "b": -1.0}),
    ("contrib.div_sqrt_dim", {"data": X}, {}),
    ("contrib.index_copy", {"old_tensor": X, "index_vector": np.array([2.0], np.float32),
                            "new_tensor": X[:1] * 10}, {}),
    ("contrib.index_array", {"data": X}, {"axes": (1,)}),
    ("contrib.arange_like", {"data": X}, {"start": 1.0, "axis": 0}),
    ("contrib.allclose", {"a": X, "b": X}, {}),
]


def _fn(space, path):
    for part in path.split("."):
        space = getattr(space, part)
    return space


@pytest.mark.parametrize("path,inputs,params", CASES, ids=[c[0] for c in CASES])
def test_symbol_matches_ndarray(path, inputs, params):
    """infer_shape/infer_type of mx.sym.<op> and a bound forward agree with mx.nd.<op>."""
    nd_in = [mx.nd.array(v, dtype=v.dtype) for v in inputs.values()]
    want = _fn(mx.nd, path)(*nd_in, **params)
    want = want if isinstance(want, list) else [want]
    names = list(inputs)
    sym = _fn(mx.sym, path)(*[mx.sym.var(n) for n in names], **params)
    _, out_shapes, _ = sym.infer_shape(**{n: v.shape for n, v in inputs.items()})
    _, out_types, _ = sym.infer_type(**{n: v.dtype for n, v in inputs.items()})
    assert [tuple(s) for s in out_shapes] == [w.shape for w in want]
    assert [np.dtype(t) for t in out_types] == [np.dtype(w.dtype) for w in want]
    ex = sym.bind(mx.cpu(), dict(zip(names, nd_in)))
    for got, w in zip(ex.forward(), want):
        np.testing.assert_allclose(got.asnumpy(), w.asnumpy(), rtol=1e-6)


class _Block(mx.gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        top = F.topk(x, k=2, ret_typ="value")
        return F.broadcast_add(F.erf(top), F.sum(F.gather_nd(x, F.zeros((1, 2)))))


def test_gluon_f_forms_hybridized():
    """F.topk / F.erf / F.gather_nd give the same result imperatively and hybridized."""
    net = _Block()
    x = mx.nd.array(X)
    eager = net(x).asnumpy()
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), eager, rtol=1e-6)
